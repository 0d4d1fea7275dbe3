/* backends/opencl/kernels/softmax.cl — softmax, log_softmax and their
 * gradient ops over the last axis, as backends/cpu/ops/softmax.c (row sums
 * in float here, a tree per row): one work-group per row of C elements. */

/* x, dy, y viewed as (R, C); x is the forward output y for the gradient kinds */
__kernel void softmax(__global const T *x, ulong xo, __global const T *dy, ulong dyo, __global T *y, ulong yo,
                      long C, int kind, __local float *s) {
    long r = get_group_id(0);
    int l = get_local_id(0), nl = get_local_size(0);
    x += xo + r * C, dy += dyo + r * C, y += yo + r * C;
    if (kind == LOOM_K_SOFTMAX || kind == LOOM_K_LOG_SOFTMAX) {
        float m = LD(x, 0);
        for (long c = l; c < C; c += nl) m = LD(x, c) > m ? LD(x, c) : m;
        m = group_max(s, m);
        float se = 0.0f;
        for (long c = l; c < C; c += nl) se += exp(LD(x, c) - m);
        se = group_sum(s, se);
        if (kind == LOOM_K_SOFTMAX) { /* y = exp(x - max) / sum exp(x - max) */
            float inv = 1.0f / se;
            for (long c = l; c < C; c += nl) ST(y, c, exp(LD(x, c) - m) * inv);
        } else { /* y = x - max - log sum exp(x - max) */
            float lse = m + log(se);
            for (long c = l; c < C; c += nl) ST(y, c, LD(x, c) - lse);
        }
    } else if (kind == LOOM_K_SOFTMAX_GRAD) { /* dx = y (dy - sum(dy y)) */
        float d = 0.0f;
        for (long c = l; c < C; c += nl) d += LD(dy, c) * LD(x, c);
        d = group_sum(s, d);
        for (long c = l; c < C; c += nl) ST(y, c, LD(x, c) * (LD(dy, c) - d));
    } else { /* dx = dy - exp(y) sum(dy) */
        float d = 0.0f;
        for (long c = l; c < C; c += nl) d += LD(dy, c);
        d = group_sum(s, d);
        for (long c = l; c < C; c += nl) ST(y, c, LD(dy, c) - exp(LD(x, c)) * d);
    }
}
