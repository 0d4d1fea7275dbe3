/* backends/opencl/kernels/norm.cl — batch norm, layer norm and their
 * gradient ops, as backends/cpu/ops/norm.c (parameters: core/ops/norm.c).
 * Statistics are two-pass (mean, then the sum of squared deviations) with
 * float work-group tree sums: one work-group per channel (batch norm), per
 * row (layer norm) or per column (layer-norm parameter gradients). Running
 * statistics and the (4, C) batch-norm statistics are f32 whatever T is.
 * Absent optional inputs (has_* = 0) are bound to some valid buffer and
 * never read. */

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

/* dx, one item per element: train: g invstd (dy - sum(dy)/M - xhat sum(dy xhat)/M);
 * eval: g invstd dy (stats from batch_norm_grad_params) */
__kernel void batch_norm_grad(__global const T *x, ulong xo, __global const T *gm, ulong gmo, __global const T *dy,
                              ulong dyo, __global const float *st, ulong sto, __global T *dx, ulong dxo, long N, long C,
                              long S, int train, int has_g) {
    long k = get_global_id(0);
    if (k >= N * C * S) return;
    long c = (k / S) % C;
    st += sto;
    float M = (float)(N * S);
    float sdx = st[c] / M, sd = st[C + c] / M, mean = st[2 * C + c], invstd = st[3 * C + c];
    float g = has_g ? LD(gm + gmo, c) : 1.0f, d = LD(dy + dyo, k);
    float xh = (LD(x + xo, k) - mean) * invstd;
    ST(dx + dxo, k, train ? g * invstd * (d - sd - xh * sdx) : g * invstd * d);
}

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
