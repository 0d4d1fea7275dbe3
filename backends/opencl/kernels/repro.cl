/* backends/opencl/kernels/repro.cl — reproducible mode's canonical kernels
 * (core/repro.h is the contract, the CPU's loom__cpu_*_repro kernels the reference):
 * sum/mean, the batch-norm statistics, cross-entropy and its gradient, with
 * the chunked sums csum / cdot and the polynomial exp / log of core/repro.h
 * (prepended to the program source: the same text as the C side), in single
 * roundings (no fma, no contraction).
 * Compiled only into -DLOOM_REPRO programs (program.c); f32. The GEMM
 * family's canonical form is in gemm.cl and conv2d.cl under the same define;
 * batch_norm_grad's ordinary kernel (norm.cl) is already the canonical
 * formula.
 *
 * csum over n values in one work-group: item l sums chunks l, l + nl, ...
 * (each chunk from its first element, in order); item 0 adds the chunk sums
 * in chunk order (t = p0; t = t + p1 ...): the bits of the sequential
 * definition, whatever the work-group size. */
#ifdef LOOM_REPRO

#pragma OPENCL FP_CONTRACT OFF /* every product and sum rounds on its own (core/repro.h) */

/* TOT = csum over e in [0, n) (cdot when BODY adds products): BODY accumulates
 * element e into the chunk sum p_ (p_ = p_ + v, or p_ = p_ + a * b).
 * s: __local float[local size]; every item gets TOT; every item reaches
 * every barrier (the loop bounds are uniform). */
#define REPRO_CSUM(s, n, TOT, BODY)                                                                          \
    {                                                                                                        \
        int l_ = get_local_id(0), nl_ = get_local_size(0);                                                   \
        long n_ = (n), nc_ = (n_ + LOOM__REPRO_CHUNK - 1) / LOOM__REPRO_CHUNK;                               \
        float t_ = 0.0f;                                                                                     \
        for (long cb_ = 0; cb_ < nc_; cb_ += nl_) {                                                          \
            float p_ = 0.0f;                                                                                 \
            long c_ = cb_ + l_;                                                                              \
            if (c_ < nc_) {                                                                                  \
                long e1_ = min((c_ + 1) * LOOM__REPRO_CHUNK, n_);                                            \
                for (long e = c_ * LOOM__REPRO_CHUNK; e < e1_; e++) {                                        \
                    BODY;                                                                                    \
                }                                                                                            \
            }                                                                                                \
            s[l_] = p_;                                                                                      \
            barrier(CLK_LOCAL_MEM_FENCE);                                                                    \
            if (l_ == 0)                                                                                     \
                for (long j_ = 0; j_ < nl_ && cb_ + j_ < nc_; j_++) t_ = cb_ + j_ == 0 ? s[j_] : t_ + s[j_]; \
            barrier(CLK_LOCAL_MEM_FENCE);                                                                    \
        }                                                                                                    \
        if (l_ == 0) s[0] = t_;                                                                              \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                        \
        TOT = s[0];                                                                                          \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                        \
    }

/* MX = the sequential max m = x0; m = v > m ? v : m over e in [0, n) of
 * v = ELEM (first of equals; a NaN x0 stays, later NaNs are skipped): each
 * chunk starts from x0, the chunk maxima are folded in order the same way. */
#define REPRO_CMAX(s, n, x0, MX, ELEM)                                                            \
    {                                                                                             \
        int l_ = get_local_id(0), nl_ = get_local_size(0);                                        \
        long n_ = (n), nc_ = (n_ + LOOM__REPRO_CHUNK - 1) / LOOM__REPRO_CHUNK;                    \
        float t_ = (x0);                                                                          \
        for (long cb_ = 0; cb_ < nc_; cb_ += nl_) {                                               \
            float p_ = (x0);                                                                      \
            long c_ = cb_ + l_;                                                                   \
            if (c_ < nc_) {                                                                       \
                long e1_ = min((c_ + 1) * LOOM__REPRO_CHUNK, n_);                                 \
                for (long e = c_ * LOOM__REPRO_CHUNK; e < e1_; e++) {                             \
                    float v_ = (ELEM);                                                            \
                    p_ = v_ > p_ ? v_ : p_;                                                       \
                }                                                                                 \
            }                                                                                     \
            s[l_] = p_;                                                                           \
            barrier(CLK_LOCAL_MEM_FENCE);                                                         \
            if (l_ == 0)                                                                          \
                for (long j_ = 0; j_ < nl_ && cb_ + j_ < nc_; j_++) t_ = s[j_] > t_ ? s[j_] : t_; \
            barrier(CLK_LOCAL_MEM_FENCE);                                                         \
        }                                                                                         \
        if (l_ == 0) s[0] = t_;                                                                   \
        barrier(CLK_LOCAL_MEM_FENCE);                                                             \
        MX = s[0];                                                                                \
        barrier(CLK_LOCAL_MEM_FENCE);                                                             \
    }

/* ---- sum, mean: y (nout) = csum over the reduced elements of x in row-major
 * order of the reduced axes [/ (float)count]; one work-group per output.
 * g = {nkeep, kdims[5], kstr[5], nred, rdims[5], rstr[5], count} (reduce.cl) */
__kernel void repro_reduce(__constant long *g, __global const T *x, ulong xo, __global T *y, ulong yo, int mean,
                           __local float *s) {
    long o = get_group_id(0);
    x += xo, y += yo;
    int nkeep = (int)g[0], nred = (int)g[11];
    long base = 0, r = o;
    for (int i = nkeep - 1; i >= 0; i--) {
        base += (r % g[1 + i]) * g[6 + i];
        r /= g[1 + i];
    }
    long count = g[22];
    float t;
    REPRO_CSUM(s, count, t, {
        long off = base; /* no comma at this level: a macro argument */
        long q = e;
        for (int i = nred - 1; i >= 0; i--) {
            off += (q % g[12 + i]) * g[17 + i];
            q /= g[12 + i];
        }
        p_ = p_ + LD(x, off);
    });
    if (get_local_id(0) == 0) ST(y, o, mean ? t / (float)count : t);
}

/* ---- batch norm: x (N, C, S); channel c's elements in (n, s) order, one
 * work-group per channel ---- */
#define BN_K(e) (((e) / S * C + c) * S + (e) % S)

/* mean = csum(x) / M, var = cdot(d, d) / M, d = x - mean, over the first
 * Mt (M in train mode, 0 in eval mode: no reads, barriers still reached) */
#define BN_STATS(x, Mt, Mf, mean, var)                                               \
    {                                                                                \
        float sum_, sq_;                                                             \
        REPRO_CSUM(s, Mt, sum_, p_ = p_ + LD(x, BN_K(e)));                           \
        mean = sum_ / (Mf);                                                          \
        REPRO_CSUM(s, Mt, sq_, float d_ = LD(x, BN_K(e)) - mean; p_ = p_ + d_ * d_); \
        var = sq_ / (Mf);                                                            \
    }

/* y = ((x - mean) invstd) gamma + beta; train: batch statistics and (has_run)
 * r = mo_a r + mo_b v (v = mean, or var * unbias); eval: the running
 * statistics. mo_a = (float)(1 - momentum), mo_b = (float)momentum,
 * unbias = (float)(M / (M - 1)) (1 when M <= 1), formed on the host. */
__kernel void repro_batch_norm(__global const T *x, ulong xo, __global const T *gm, ulong gmo, __global const T *bt,
                               ulong bto, __global float *rm, ulong rmo, __global float *rv, ulong rvo, __global T *y,
                               ulong yo, long N, long C, long S, int train, int has_g, int has_b, int has_run,
                               float eps, float mo_a, float mo_b, float unbias, __local float *s) {
    long c = get_group_id(0);
    int l = get_local_id(0), nl = get_local_size(0);
    x += xo, y += yo, rm += rmo, rv += rvo;
    long M = N * S;
    float Mf = (float)M, mean, var;
    BN_STATS(x, train ? M : 0, Mf, mean, var);
    if (train) {
        if (has_run && l == 0) {
            rm[c] = mo_a * rm[c] + mo_b * mean;
            rv[c] = mo_a * rv[c] + mo_b * (var * unbias);
        }
    } else {
        mean = rm[c], var = rv[c];
    }
    float invstd = 1.0f / sqrt(var + eps);
    float g = has_g ? LD(gm + gmo, c) : 1.0f, b = has_b ? LD(bt + bto, c) : 0.0f;
    for (long e = l; e < M; e += nl) {
        long k = BN_K(e);
        ST(y, k, ((LD(x, k) - mean) * invstd) * g + b);
    }
}

/* out (4, C) f32: cdot(dy, xh), csum(dy), mean, invstd; xh = (x - mean) * invstd */
__kernel void repro_batch_norm_grad_params(__global const T *x, ulong xo, __global const T *dy, ulong dyo,
                                           __global const float *rm, ulong rmo, __global const float *rv, ulong rvo,
                                           __global float *out, ulong outo, long N, long C, long S, int train,
                                           float eps, __local float *s) {
    long c = get_group_id(0);
    x += xo, dy += dyo, out += outo;
    long M = N * S;
    float Mf = (float)M, mean, var;
    BN_STATS(x, train ? M : 0, Mf, mean, var);
    if (!train) mean = rm[rmo + c], var = rv[rvo + c];
    float invstd = 1.0f / sqrt(var + eps), sdx, sdy;
    REPRO_CSUM(s, M, sdx, long k = BN_K(e); p_ = p_ + LD(dy, k) * ((LD(x, k) - mean) * invstd));
    REPRO_CSUM(s, M, sdy, p_ = p_ + LD(dy, BN_K(e)));
    if (get_local_id(0) == 0) out[c] = sdx, out[C + c] = sdy, out[2 * C + c] = mean, out[3 * C + c] = invstd;
}
#undef BN_K

/* ---- cross-entropy: logits x (N, C), targets (N); one work-group per row ---- */

/* whether row i counts: false if ignored or bad (item 0 flags a bad row in err[slot]) */
inline bool repro_ce_valid(int t, int ignore, long C, long i, __global int *err, int slot) {
    if (t == ignore) return false;
    if (t < 0 || t >= C) {
        if (get_local_id(0) == 0) atomic_min(err + slot, (int)i);
        return false;
    }
    return true;
}

/* m = the row's max, se = csum(exp(x - m)) over its first n (C, or 0 for a skipped row) */
#define CE_ROW(x, n, m, se)                                   \
    REPRO_CMAX(s, n, (n) > 0 ? LD(x, 0) : 0.0f, m, LD(x, e)); \
    REPRO_CSUM(s, n, se, p_ = p_ + loom__repro_exp(LD(x, e) - m))

/* part (N): l = -(a1 (x[t] - lse)) - a2 (csum(x) / C - lse), lse = m + log(se);
 * 0 for rows that do not count. a1 = (float)(1 - eps), a2 = (float)eps. */
__kernel void repro_ce_rows(__global const T *x, ulong xo, __global const int *tg, ulong to, __global float *part,
                            long C, int ignore, float a1, float a2, __global int *err, int slot, __local float *s) {
    long i = get_group_id(0);
    int t = tg[to + i];
    bool ok = repro_ce_valid(t, ignore, C, i, err, slot);
    long n = ok ? C : 0; /* skipped rows still reach every barrier */
    x += xo + i * C;
    float m, se, sx;
    CE_ROW(x, n, m, se);
    REPRO_CSUM(s, n, sx, p_ = p_ + LD(x, e));
    if (get_local_id(0) == 0) {
        float lse = m + loom__repro_log(se);
        part[i] = ok ? -(a1 * (LD(x, t) - lse)) - a2 * (sx / (float)C - lse) : 0.0f;
    }
}

/* y () = csum over all rows of part (0 for a row that does not count), in
 * row order, / (float)count of the rows that count (0 if none); one item */
__kernel void repro_ce_final(__global const float *part, __global const int *tg, ulong to, __global T *y, ulong yo,
                             long N, long C, int ignore) {
    float tot = 0.0f, p = 0.0f;
    long count = 0, in_chunk = 0;
    bool any = false;
    for (long i = 0; i < N; i++) {
        int t = tg[to + i];
        count += t != ignore && t >= 0 && t < C;
        p = p + part[i];
        if (++in_chunk == LOOM__REPRO_CHUNK) tot = any ? tot + p : p, any = true, p = 0.0f, in_chunk = 0;
    }
    if (in_chunk > 0 || !any) tot = any ? tot + p : p;
    ST(y + yo, 0, count ? tot / (float)count : 0.0f);
}

/* dx (N, C) = (exp(x - m) * (1 / se) - q) * scale[0], q = on at the target,
 * off elsewhere; 0 on rows that do not count. scale[0] = dloss / count
 * (ce_scale in loss.cl). */
__kernel void repro_ce_grad_rows(__global const T *x, ulong xo, __global const int *tg, ulong to,
                                 __global const float *scale, __global T *dx, ulong dxo, long C, int ignore, float on,
                                 float off, __global int *err, int slot, __local float *s) {
    long i = get_group_id(0);
    int l = get_local_id(0), nl = get_local_size(0);
    int t = tg[to + i];
    x += xo + i * C, dx += dxo + i * C;
    bool ok = repro_ce_valid(t, ignore, C, i, err, slot);
    long n = ok ? C : 0;
    float m, se;
    CE_ROW(x, n, m, se);
    float inv = 1.0f / se, k = scale[0];
    for (long c = l; c < C; c += nl) ST(dx, c, ok ? (loom__repro_exp(LD(x, c) - m) * inv - (c == t ? on : off)) * k : 0.0f);
}
#undef CE_ROW

#endif
