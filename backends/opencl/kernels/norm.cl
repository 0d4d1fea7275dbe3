/* backends/opencl/kernels/norm.cl — batch norm, layer norm and their
 * gradient ops, as backends/cpu/ops/norm.c (parameters: core/ops/norm.c).
 * Statistics are two-pass (mean, then the sum of squared deviations) with
 * float work-group tree sums: one work-group per channel (batch norm), per
 * row (layer norm) or per column (layer-norm parameter gradients). Running
 * statistics and the (4, C) batch-norm statistics are f32 whatever T is.
 * Absent optional inputs (has_* = 0) are bound to some valid buffer and
 * never read. LD4 / ST4: common.cl. */

/* ---- batch norm: x (N, C, S), channel c of element (n, i) at (n C + c) S + i ---- */

/* batch mean and biased variance of channel c over its first M (N S, or 0
 * to skip: every item still reaches every barrier) elements */
inline void bn_stats(__global const T *x, long M, long C, long S, long c, __local float *s, float *mean, float *var) {
    int l = get_local_id(0), nl = get_local_size(0);
    float sum = 0.0f;
    for (long e = l; e < M; e += nl) sum += LD(x, ((e / S) * C + c) * S + e % S);
    float m = group_sum(s, sum) / (float)M;
    float q = 0.0f;
    for (long e = l; e < M; e += nl) {
        float d = LD(x, ((e / S) * C + c) * S + e % S) - m;
        q += d * d;
    }
    *mean = m, *var = group_sum(s, q) / (float)M;
}

/* y = (x - mean) invstd gamma + beta per channel; train: batch statistics,
 * and (has_run) running = (1 - momentum) running + momentum stat, with the
 * unbiased variance; eval: the running statistics. One group per channel. */
__kernel void batch_norm(__global const T *x, ulong xo, __global const T *gm, ulong gmo, __global const T *bt, ulong bto,
                         __global float *rm, ulong rmo, __global float *rv, ulong rvo, __global T *y, ulong yo, long N,
                         long C, long S, int train, int has_g, int has_b, int has_run, float eps, float momentum,
                         __local float *s) {
    long c = get_group_id(0);
    int l = get_local_id(0), nl = get_local_size(0);
    x += xo, y += yo, rm += rmo, rv += rvo;
    long M = N * S;
    float mean, var;
    bn_stats(x, train ? M : 0, C, S, c, s, &mean, &var); /* no barrier under a condition (PoCL) */
    if (train) {
        if (has_run && l == 0) {
            float mf = (float)M;
            rm[c] = (1.0f - momentum) * rm[c] + momentum * mean;
            rv[c] = (1.0f - momentum) * rv[c] + momentum * (var * mf / (mf - 1.0f));
        }
    } else {
        mean = rm[c], var = rv[c];
    }
    float invstd = 1.0f / sqrt(var + eps);
    float g = has_g ? LD(gm + gmo, c) : 1.0f, b = has_b ? LD(bt + bto, c) : 0.0f;
    for (long e = l; e < M; e += nl) {
        long k = ((e / S) * C + c) * S + e % S;
        ST(y, k, (LD(x, k) - mean) * invstd * g + b);
    }
}

/* stats (4, C) f32: sum(dy xhat), sum(dy), mean, invstd (batch statistics in
 * train mode, running ones in eval mode). One group per channel. */
__kernel void batch_norm_grad_params(__global const T *x, ulong xo, __global const T *dy, ulong dyo,
                                     __global const float *rm, ulong rmo, __global const float *rv, ulong rvo,
                                     __global float *out, ulong outo, long N, long C, long S, int train, float eps,
                                     __local float *s) {
    long c = get_group_id(0);
    int l = get_local_id(0), nl = get_local_size(0);
    x += xo, dy += dyo, out += outo;
    long M = N * S;
    float mean, var;
    bn_stats(x, train ? M : 0, C, S, c, s, &mean, &var); /* no barrier under a condition (PoCL) */
    if (!train) mean = rm[rmo + c], var = rv[rvo + c];
    float invstd = 1.0f / sqrt(var + eps);
    float sd = 0.0f, sdx = 0.0f;
    for (long e = l; e < M; e += nl) {
        long k = ((e / S) * C + c) * S + e % S;
        float g = LD(dy, k);
        sd += g;
        sdx += g * (LD(x, k) - mean);
    }
    sd = group_sum(s, sd);
    sdx = group_sum(s, sdx);
    if (l == 0) out[c] = sdx * invstd, out[C + c] = sd, out[2 * C + c] = mean, out[3 * C + c] = invstd;
}

/* dx: train: g invstd (dy - sum(dy)/M - xhat sum(dy xhat)/M); eval: g
 * invstd dy (stats from batch_norm_grad_params). A 2-D range (S, N C): item
 * (i, plane) is element plane S + i, its channel the same for a whole
 * work-group (a 64-bit division per element was 60% of this kernel's time
 * on PoCL) */
/* channel c's coefficients from st (4, C) and gamma, and dx of dy d at xhat xh (every form) */
#define BN_GRAD_COEF                                                                         \
    st += sto;                                                                               \
    float M = (float)(N * S);                                                                \
    float sdx = st[c] / M, sd = st[C + c] / M, mean = st[2 * C + c], invstd = st[3 * C + c]; \
    float g = has_g ? LD(gm + gmo, c) : 1.0f;
#define BN_GRAD_DX(d, xh) (train ? g * invstd * ((d) - sd - (xh) * sdx) : g * invstd * (d))
#define BN_GRAD_KERNEL(name, W, VT, LDW, STW)                                                                 \
    __kernel void name(__global const T *x, ulong xo, __global const T *gm, ulong gmo, __global const T *dy,        \
                       ulong dyo, __global const float *st, ulong sto, __global T *dx, ulong dxo, long N, long C,   \
                       long S, int train, int has_g) {                                                           \
        long i = W * get_global_id(0), plane = get_global_id(1), c = plane % C, k = plane * S + i;              \
        if (i >= S || plane >= N * C) return;                                                                    \
        BN_GRAD_COEF                                                                                             \
        VT d = LDW(dy + dyo, k), xh = (LDW(x + xo, k) - mean) * invstd;                                          \
        STW(dx + dxo, k, BN_GRAD_DX(d, xh));                                                                     \
    }
BN_GRAD_KERNEL(batch_norm_grad, 1, float, LD, ST)
/* the same, four elements per item (S a multiple of 4): a 2-D range (S / 4, N C) */
BN_GRAD_KERNEL(batch_norm_grad4, 4, float4, LD4, ST4)
/* eight (S a multiple of 8; 8-wide devices, AVX2) */
BN_GRAD_KERNEL(batch_norm_grad8, 8, float8, LD8, ST8)
/* the same by planes (CPU devices, ops/norm.c bn_planes): one item per plane (n, c), its S elements 8 at
 * a time, the last S % 8 through the same lanes */
#define BN_GRAD_V8(LDP, STP)                                                      \
    {                                                                             \
        float8 d = LDP(dyp + i, S - i), xh = (LDP(xp + i, S - i) - mean) * invstd; \
        STP(dxp + i, S - i, BN_GRAD_DX(d, xh));                                   \
    }
#define BN_LDV8(p, have) LDV(8, p)
#define BN_STV8(p, have, v) STV(8, (v), (p))
__kernel void batch_norm_grad_planes8(__global const T *x, ulong xo, __global const T *gm, ulong gmo,
                                      __global const T *dy, ulong dyo, __global const float *st, ulong sto,
                                      __global T *dx, ulong dxo, long N, long C, long S, int train, int has_g) {
    long plane = get_global_id(0), c = plane % C, i = 0;
    if (plane >= N * C) return;
    BN_GRAD_COEF
    __global const T *xp = x + xo + plane * S, *dyp = dy + dyo + plane * S;
    __global T *dxp = dx + dxo + plane * S;
    for (; i + 8 <= S; i += 8) BN_GRAD_V8(BN_LDV8, BN_STV8)
    if (i < S) BN_GRAD_V8(ldv_edge8, stv_part8)
}

/* ---- batch norm in training, split for CPU-hosted devices (ops/norm.c) ----
 * One group per channel loops each item over a strided run of the channel's
 * N S elements and meets its group at barriers: PoCL ran those kernels at
 * ~3 ns per element, 8x its elementwise kernels. Here no kernel has a
 * barrier or a per-element division:
 *   bn_colsum  one item per (c, i) of an image's C x S block: the sums over
 *              the N images of d = x - x[0, c, 0] and d^2 (with dy: also dy
 *              and dy d) at position i of channel c, into cs (4, C, S) f32;
 *              every item's loop has the same trip count and neighbouring
 *              items read neighbouring elements; on CPU devices bn_planesum8
 *              instead: one item per plane (n, c), the sums over its S
 *              positions, into cs (4, C, N);
 *   bn_finish  one item per channel: the column sums -> mean and biased
 *              variance (shifted by s = x[0, c, 0]: mean = s + E[d], var =
 *              E[d^2] - E[d]^2, s one of the channel's own values), then
 *              mode 0 (forward): st (2, C) = mean, invstd and the running
 *              statistics; mode 1 (gradient): out (4, C) = sum(dy xhat),
 *              sum(dy), mean, invstd as batch_norm_grad_params;
 *   bn_apply   a 2-D range (S, N C): y = (x - mean) invstd gamma + beta.
 * bn_colsum and bn_apply (and batch_norm_grad above) are written once for a
 * width W: W = 1 (float), and W = 4 (float4, the *4 kernels, S a multiple of
 * 4): PoCL does not vectorize a loop inside an item across its items, so
 * each item carries four positions. */
/* the sums' step for d = x - s and dy g (DY: with the dy sums), every form */
#define BN_SUMS_ADD(d, g, DY)                     \
    {                                             \
        a += (d), b += (d) * (d);                 \
        if (DY) e += (g), f += (g) * (d);         \
    }
#define BN_COLSUM_KERNEL(name, W, VT, LDW, CSW, SHIFT)                                                        \
    __kernel void name(__global const T *x, ulong xo, __global const T *dy, ulong dyo, __global float *cs, long N, \
                       long C, long S, int with_dy) {                                                            \
        long at = W * get_global_id(0), plane = C * S; /* at = c S + i: an image's (C, S) block */              \
        if (at >= plane) return;                                                                                 \
        x += xo, dy += dyo;                                                                                      \
        SHIFT(VT, s)                                                                                             \
        VT a = (VT)(0.0f), b = a, e = a, f = a;                                                                  \
        if (with_dy) {                                                                                           \
            for (long n = 0, k = at; n < N; n++, k += plane) {                                                   \
                VT d = LDW(x, k) - s, g = LDW(dy, k);                                                            \
                BN_SUMS_ADD(d, g, 1)                                                                             \
            }                                                                                                    \
        } else {                                                                                                 \
            for (long n = 0, k = at; n < N; n++, k += plane) {                                                   \
                VT d = LDW(x, k) - s;                                                                            \
                BN_SUMS_ADD(d, d, 0)                                                                             \
            }                                                                                                    \
        }                                                                                                        \
        CSW(cs + at, a), CSW(cs + plane + at, b);                                                                \
        if (with_dy) CSW(cs + 2 * plane + at, e), CSW(cs + 3 * plane + at, f);                                   \
    }
#define CS1(p, v) (*(p) = (v))
#define CS4(p, v) vstore4((v), 0, (p))
#define CS8(p, v) vstore8((v), 0, (p))
#define CS16(p, v) vstore16((v), 0, (p))
/* the shift s: the channel's x[0, c, 0], for an item inside one channel (S a multiple of W) */
#define BN_SHIFT1(VT, s) float s = LD(x, at / S * S);
/* per lane, for an item that may reach into the next channel (C S a multiple of 8, S of 4) */
#define BN_SHIFT8(VT, s)                                                                                 \
    long c0_ = at / S;                                                                                   \
    VT s = select((VT)(LD(x, c0_ * S)), (VT)(LD(x, min(c0_ + 1, C - 1) * S)),                            \
                  (int8)(0, 1, 2, 3, 4, 5, 6, 7) >= (int8)((int)((c0_ + 1) * S - at)));
BN_COLSUM_KERNEL(bn_colsum, 1, float, LD, CS1, BN_SHIFT1)
BN_COLSUM_KERNEL(bn_colsum4, 4, float4, LD4, CS4, BN_SHIFT1)
/* eight positions per item (8-wide devices, AVX2; C S a multiple of 8 and S of 4: an item may reach
 * into the next channel, its lanes there shifted by that channel's value), likewise */
BN_COLSUM_KERNEL(bn_colsum8, 8, float8, LD8, CS8, BN_SHIFT8)
/* sixteen positions per item (S a multiple of 16; devices whose native float vector is 16 wide):
 * the same sums lane by lane as the narrower forms, a quarter of their loop's instructions */
BN_COLSUM_KERNEL(bn_colsum16, 16, float16, LD16, CS16, BN_SHIFT1)

/* bn_planesum8: bn_colsum's sums by planes (CPU devices, ops/norm.c: a plane is one contiguous run,
 * read as a stream, where bn_colsum's items read N elements a plane apart): one item per plane (n, c),
 * the sums over its S positions of d = x - s (s = x[0, c, 0]) and d^2 (with dy: dy and dy d) in 8 lanes,
 * then across them, into cs (4, C, N) at [k][c][n]: bn_finish's columns are the N images */
__kernel void bn_planesum8(__global const T *x, ulong xo, __global const T *dy, ulong dyo, __global float *cs, long N,
                           long C, long S, int with_dy) {
    long pl = get_global_id(0);
    if (pl >= N * C) return;
    long c = pl % C, n = pl / C, full = S / 8 * 8;
    x += xo, dy += dyo;
    float8 s = (float8)(LD(x, c * S)), a = (float8)(0.0f), b = a, e = a, f = a;
    __global const T *xp = x + pl * S, *gp = dy + pl * S;
    if (with_dy) {
        for (long i = 0; i < full; i += 8) {
            float8 d = LDV(8, xp + i) - s, g = LDV(8, gp + i);
            BN_SUMS_ADD(d, g, 1)
        }
    } else {
        for (long i = 0; i < full; i += 8) {
            float8 d = LDV(8, xp + i) - s;
            BN_SUMS_ADD(d, d, 0)
        }
    }
    if (full < S) { /* the last S % 8 positions; the lanes after them 0 */
        int8 m = (int8)(0, 1, 2, 3, 4, 5, 6, 7) < (int8)((int)(S - full));
        float8 d = select((float8)(0.0f), ldv_edge8(xp + full, S - full) - s, m);
        float8 g = with_dy ? ldv_edge8(gp + full, S - full) : d;
        BN_SUMS_ADD(d, g, with_dy)
    }
    long at = c * N + n, plane = C * N;
    cs[at] = hsum8(a), cs[plane + at] = hsum8(b);
    if (with_dy) cs[2 * plane + at] = hsum8(e), cs[3 * plane + at] = hsum8(f);
}

/* cols: the columns of cs per channel (S after bn_colsum, N after bn_planesum8) */
__kernel void bn_finish(__global const T *x, ulong xo, __global const float *cs, __global float *rm, ulong rmo,
                        __global float *rv, ulong rvo, __global float *out, ulong outo, long N, long C, long S,
                        long cols, int mode, int has_run, float eps, float momentum) {
    long c = get_global_id(0);
    if (c >= C) return;
    long plane = C * cols;
    float a = 0.0f, b = 0.0f, e = 0.0f, f = 0.0f;
    for (long i = 0; i < cols; i++) {
        a += cs[c * cols + i], b += cs[plane + c * cols + i];
        if (mode) e += cs[2 * plane + c * cols + i], f += cs[3 * plane + c * cols + i];
    }
    float M = (float)(N * S), s = LD(x + xo, c * S), md = a / M;
    float mean = s + md, var = fmax(b / M - md * md, 0.0f), invstd = 1.0f / sqrt(var + eps);
    out += outo;
    if (mode == 0) {
        out[c] = mean, out[C + c] = invstd;
        if (has_run) {
            rm[rmo + c] = (1.0f - momentum) * rm[rmo + c] + momentum * mean;
            rv[rvo + c] = (1.0f - momentum) * rv[rvo + c] + momentum * (var * M / (M - 1.0f));
        }
    } else {
        /* sum(dy (x - mean)) = sum(dy d) - (mean - s) sum(dy) */
        out[c] = (f - md * e) * invstd, out[C + c] = e, out[2 * C + c] = mean, out[3 * C + c] = invstd;
    }
}

#define BN_APPLY_KERNEL(name, W, VT, LDW, STW)                                                                \
    __kernel void name(__global const T *x, ulong xo, __global const T *gm, ulong gmo, __global const T *bt,      \
                       ulong bto, __global const float *st, __global T *y, ulong yo, long N, long C, long S,     \
                       int has_g, int has_b) {                                                                   \
        long i = W * get_global_id(0), plane = get_global_id(1), c = plane % C, k = plane * S + i;              \
        if (i >= S || plane >= N * C) return;                                                                    \
        float g = has_g ? LD(gm + gmo, c) : 1.0f, b = has_b ? LD(bt + bto, c) : 0.0f;                           \
        STW(y + yo, k, (LDW(x + xo, k) - st[c]) * st[C + c] * g + b);                                            \
    }
BN_APPLY_KERNEL(bn_apply, 1, float, LD, ST)
BN_APPLY_KERNEL(bn_apply4, 4, float4, LD4, ST4)
BN_APPLY_KERNEL(bn_apply8, 8, float8, LD8, ST8)

/* Fused groups (core/fuse.h; ops/norm.c loom__cl_bn_fused): bn_apply, then
 * the add of a same-shape tensor (ADD: y + other) and/or relu (RELU, as
 * act_relu), each output written, as the add and relu kernels would one after
 * the other. One kernel per combination, no run-time flag to branch on
 * (PoCL runs such kernels scalar). The pooled form is pool2d.cl's
 * bn_apply_pool. */
#define BN_RELU(v) ((v) > 0.0f || (v) != (v) ? (v) : 0.0f)
#define BN_APPLY_FUSE_KERNEL(name, W, VT, LDW, STW, ADD, RELU)                                                   \
    __kernel void name(__global const T *x, ulong xo, __global const T *gm, ulong gmo, __global const T *bt,      \
                       ulong bto, __global const float *st, __global T *y, ulong yo, __global const T *other,    \
                       ulong oo, __global T *ya, ulong ao, __global T *yr, ulong ro, long N, long C, long S,     \
                       int has_g, int has_b) {                                                                   \
        long i = W * get_global_id(0), plane = get_global_id(1), c = plane % C, k = plane * S + i;              \
        if (i >= S || plane >= N * C) return;                                                                    \
        float g = has_g ? LD(gm + gmo, c) : 1.0f, b = has_b ? LD(bt + bto, c) : 0.0f;                           \
        VT v = (LDW(x + xo, k) - st[c]) * st[C + c] * g + b;                                                     \
        STW(y + yo, k, v);                                                                                       \
        if (ADD) {                                                                                               \
            v = v + LDW(other + oo, k);                                                                          \
            STW(ya + ao, k, v);                                                                                  \
        }                                                                                                        \
        if (RELU) STW(yr + ro, k, BN_RELU(v));                                                                   \
    }
BN_APPLY_FUSE_KERNEL(bn_apply_relu, 1, float, LD, ST, 0, 1)
BN_APPLY_FUSE_KERNEL(bn_apply_relu4, 4, float4, LD4, ST4, 0, 1)
BN_APPLY_FUSE_KERNEL(bn_apply_relu8, 8, float8, LD8, ST8, 0, 1)
BN_APPLY_FUSE_KERNEL(bn_apply_add, 1, float, LD, ST, 1, 0)
BN_APPLY_FUSE_KERNEL(bn_apply_add4, 4, float4, LD4, ST4, 1, 0)
BN_APPLY_FUSE_KERNEL(bn_apply_add8, 8, float8, LD8, ST8, 1, 0)
BN_APPLY_FUSE_KERNEL(bn_apply_add_relu, 1, float, LD, ST, 1, 1)
BN_APPLY_FUSE_KERNEL(bn_apply_add_relu4, 4, float4, LD4, ST4, 1, 1)
BN_APPLY_FUSE_KERNEL(bn_apply_add_relu8, 8, float8, LD8, ST8, 1, 1)

/* ---- layer norm: x (R, D), one group per row ---- */

/* mean and invstd of row x (D) (every item gets them) */
inline void ln_stats(__global const T *x, long D, float eps, __local float *s, float *mean, float *invstd) {
    int l = get_local_id(0), nl = get_local_size(0);
    float sum = 0.0f;
    for (long i = l; i < D; i += nl) sum += LD(x, i);
    float m = group_sum(s, sum) / (float)D;
    float q = 0.0f;
    for (long i = l; i < D; i += nl) {
        float d = LD(x, i) - m;
        q += d * d;
    }
    *mean = m, *invstd = 1.0f / sqrt(group_sum(s, q) / (float)D + eps);
}

/* y[r, i] = (x[r, i] - mean_r) invstd_r gamma[i] + beta[i] */
__kernel void layer_norm(__global const T *x, ulong xo, __global const T *gm, ulong gmo, __global const T *bt,
                         ulong bto, __global T *y, ulong yo, long D, int has_g, int has_b, float eps,
                         __local float *s) {
    long r = get_group_id(0);
    int l = get_local_id(0), nl = get_local_size(0);
    x += xo + r * D, y += yo + r * D, gm += gmo, bt += bto;
    float mean, invstd;
    ln_stats(x, D, eps, s, &mean, &invstd);
    for (long i = l; i < D; i += nl)
        ST(y, i, (LD(x, i) - mean) * invstd * (has_g ? LD(gm, i) : 1.0f) + (has_b ? LD(bt, i) : 0.0f));
}

/* dx = invstd (g dy - mean(g dy) - xhat mean(g dy xhat)) per row */
__kernel void layer_norm_grad(__global const T *x, ulong xo, __global const T *gm, ulong gmo, __global const T *dy,
                              ulong dyo, __global T *dx, ulong dxo, long D, int has_g, float eps, __local float *s) {
    long r = get_group_id(0);
    int l = get_local_id(0), nl = get_local_size(0);
    x += xo + r * D, dy += dyo + r * D, dx += dxo + r * D, gm += gmo;
    float mean, invstd;
    ln_stats(x, D, eps, s, &mean, &invstd);
    float a = 0.0f, b = 0.0f;
    for (long i = l; i < D; i += nl) {
        float gd = LD(dy, i) * (has_g ? LD(gm, i) : 1.0f);
        a += gd;
        b += gd * (LD(x, i) - mean) * invstd;
    }
    a = group_sum(s, a) / (float)D;
    b = group_sum(s, b) / (float)D;
    for (long i = l; i < D; i += nl) {
        float gd = LD(dy, i) * (has_g ? LD(gm, i) : 1.0f);
        ST(dx, i, invstd * (gd - a - (LD(x, i) - mean) * invstd * b));
    }
}

/* st (2, R) f32: mean and invstd of each row (one group per row) */
__kernel void ln_rowstats(__global const T *x, ulong xo, __global float *st, long R, long D, float eps,
                          __local float *s) {
    long r = get_group_id(0);
    float mean, invstd;
    ln_stats(x + xo + r * D, D, eps, s, &mean, &invstd);
    if (get_local_id(0) == 0) st[r] = mean, st[R + r] = invstd;
}

/* out (2, D): out[0, i] = sum_r dy xhat, out[1, i] = sum_r dy; one group per column i */
__kernel void layer_norm_grad_params(__global const T *x, ulong xo, __global const T *dy, ulong dyo,
                                     __global const float *st, __global T *out, ulong outo, long R, long D,
                                     __local float *s) {
    long i = get_group_id(0);
    int l = get_local_id(0), nl = get_local_size(0);
    x += xo, dy += dyo, out += outo;
    float dg = 0.0f, db = 0.0f;
    for (long r = l; r < R; r += nl) {
        long k = r * D + i;
        float g = LD(dy, k);
        dg += g * (LD(x, k) - st[r]) * st[R + r];
        db += g;
    }
    dg = group_sum(s, dg);
    db = group_sum(s, db);
    if (l == 0) ST(out, i, dg), ST(out, D + i, db);
}
