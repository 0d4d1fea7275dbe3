/* backends/opencl/kernels/pool2d.cl — max, average and adaptive average
 * pooling and their gradients, as backends/cpu/ops/pool2d.c (parameters:
 * core/ops/pool2d.c). One work-item per output element; the gradients are
 * gathers (one work-item per dx element finds the windows covering it, in
 * the CPU's (i, j) order), so there are no atomics. Max-pool's gradient
 * recomputes each covering window's argmax exactly as the forward does.
 * max2 / max2_grad: 2x2 stride-2 unpadded max pooling of even planes, one
 * work-item per window (the forward loads the window once; the gradient
 * writes its four dx values: dy at the argmax, 0 at the others); the same
 * rule (arg4 = pool_argmax on a 2x2 window), the same bits.
 *
 * Geometry table g (__constant long): LOOM_G_POOL_* (core/params.h). */

/* window of output (i, j) clipped to x: rows [h0, h1), cols [w0, w1);
 * returns torch's avg divisor (as window() in the CPU file) */
inline long pool_window(__constant long *g, long i, long j, long *h0, long *h1, long *w0, long *w1) {
    long H = g[LOOM_G_POOL_H], W = g[LOOM_G_POOL_W];
    long hs = i * g[LOOM_G_POOL_SH] - g[LOOM_G_POOL_PH], ws = j * g[LOOM_G_POOL_SW] - g[LOOM_G_POOL_PW];
    long he = min(hs + g[LOOM_G_POOL_KH], H + g[LOOM_G_POOL_PH]);
    long we = min(ws + g[LOOM_G_POOL_KW], W + g[LOOM_G_POOL_PW]);
    long padded = (he - hs) * (we - ws);
    *h0 = max(hs, 0L), *w0 = max(ws, 0L);
    *h1 = min(he, H), *w1 = min(we, W);
    return g[LOOM_G_POOL_INCL] ? padded : (*h1 - *h0) * (*w1 - *w0);
}

/* index in the plane x (H, W) of window (i, j)'s first maximum; NaN wins */
inline long pool_argmax(__constant long *g, __global const T *x, long i, long j) {
    long h0, h1, w0, w1, W = g[LOOM_G_POOL_W];
    pool_window(g, i, j, &h0, &h1, &w0, &w1);
    long best = h0 * W + w0;
    float m = -INFINITY;
    for (long h = h0; h < h1; h++)
        for (long w = w0; w < w1; w++) {
            float v = LD(x, h * W + w);
            if (v > m || isnan(v)) m = v, best = h * W + w;
        }
    return best;
}

/* output rows i (or cols) whose window covers input row h: [*i0, *i1) */
inline void pool_cover(long h, long k, long s, long p, long O, long *i0, long *i1) {
    long a = h + p - k + 1; /* i * s >= a */
    *i0 = a <= 0 ? 0 : (a + s - 1) / s;
    *i1 = min((h + p) / s + 1, O);
}

/* adaptive bins: [floor(i*in/out), ceil((i+1)*in/out)) */
inline long pool_bin_start(long i, long in, long out) { return i * in / out; }
inline long pool_bin_end(long i, long in, long out) { return ((i + 1) * in + out - 1) / out; }

/* x (P, H, W) -> y (P, OH, OW) */
__kernel void pool2d(__global const T *x, ulong xo, __global T *y, ulong yo, __constant long *g, int kind) {
    long OH = g[LOOM_G_POOL_OH], OW = g[LOOM_G_POOL_OW], H = g[LOOM_G_POOL_H], W = g[LOOM_G_POOL_W];
    long k = get_global_id(0);
    if (k >= g[LOOM_G_POOL_PLANES] * OH * OW) return;
    long j = k % OW, i = (k / OW) % OH, p = k / (OH * OW);
    x += xo + p * H * W;
    if (kind == LOOM_K_POOL_MAX) {
        ST(y + yo, k, LD(x, pool_argmax(g, x, i, j)));
        return;
    }
    long h0, h1, w0, w1, div;
    if (kind == LOOM_K_POOL_AVG) {
        div = pool_window(g, i, j, &h0, &h1, &w0, &w1);
    } else {
        h0 = pool_bin_start(i, H, OH), h1 = pool_bin_end(i, H, OH), w0 = pool_bin_start(j, W, OW), w1 = pool_bin_end(j, W, OW);
        div = (h1 - h0) * (w1 - w0);
    }
    float s = 0.0f;
    for (long h = h0; h < h1; h++)
        for (long w = w0; w < w1; w++) s += LD(x, h * W + w);
    ST(y + yo, k, div > 0 ? s / (float)div : 0.0f);
}

/* dy (P, OH, OW) [, x (P, H, W) for max] -> dx (P, H, W), one item per dx element */
__kernel void pool2d_grad(__global const T *x, ulong xo, __global const T *dy, ulong dyo, __global T *dx, ulong dxo,
                          __constant long *g, int kind) {
    long OH = g[LOOM_G_POOL_OH], OW = g[LOOM_G_POOL_OW], H = g[LOOM_G_POOL_H], W = g[LOOM_G_POOL_W];
    long k = get_global_id(0);
    if (k >= g[LOOM_G_POOL_PLANES] * H * W) return;
    long w = k % W, h = (k / W) % H, p = k / (H * W);
    dy += dyo + p * OH * OW;
    float acc = 0.0f;
    if (kind == LOOM_K_POOL_ADAPTIVE) {
        /* bins containing h: i in [floor(h*OH/H), ceil((h+1)*OH/H)), checked */
        long i0 = max(h * OH / H - 1, 0L), i1 = min(((h + 1) * OH + H - 1) / H + 1, OH);
        long j0 = max(w * OW / W - 1, 0L), j1 = min(((w + 1) * OW + W - 1) / W + 1, OW);
        for (long i = i0; i < i1; i++) {
            long a0 = pool_bin_start(i, H, OH), a1 = pool_bin_end(i, H, OH);
            if (h < a0 || h >= a1) continue;
            for (long j = j0; j < j1; j++) {
                long b0 = pool_bin_start(j, W, OW), b1 = pool_bin_end(j, W, OW);
                if (w < b0 || w >= b1) continue;
                acc += LD(dy, i * OW + j) / (float)((a1 - a0) * (b1 - b0));
            }
        }
    } else {
        long i0, i1, j0, j1;
        pool_cover(h, g[LOOM_G_POOL_KH], g[LOOM_G_POOL_SH], g[LOOM_G_POOL_PH], OH, &i0, &i1);
        pool_cover(w, g[LOOM_G_POOL_KW], g[LOOM_G_POOL_SW], g[LOOM_G_POOL_PW], OW, &j0, &j1);
        if (kind == LOOM_K_POOL_MAX) x += xo + p * H * W;
        for (long i = i0; i < i1; i++)
            for (long j = j0; j < j1; j++) {
                if (kind == LOOM_K_POOL_MAX) {
                    if (pool_argmax(g, x, i, j) == h * W + w) acc += LD(dy, i * OW + j);
                } else {
                    long h0, h1, w0, w1, div = pool_window(g, i, j, &h0, &h1, &w0, &w1);
                    if (div > 0 && h >= h0 && h < h1 && w >= w0 && w < w1) acc += LD(dy, i * OW + j) / (float)div;
                }
            }
    }
    ST(dx + dxo, k, acc);
}

/* the first maximum of a, b (top row), c, d; a NaN replaces the maximum so
 * far. Selects, not branches, and x != x for isnan: PoCL vectorizes the
 * work-group loop over them (the branching form ran scalar) */
inline int arg4(float a, float b, float c, float d) {
    bool tb = b > a || b != b;
    float m = tb ? b : a;
    int k = tb ? 1 : 0;
    bool tc = c > m || c != c;
    m = tc ? c : m;
    k = tc ? 2 : k;
    bool td = d > m || d != d;
    return td ? 3 : k;
}

/* the value arg4 picks (the forward) */
inline float max4(float a, float b, float c, float d) {
    float m = b > a || b != b ? b : a;
    m = c > m || c != c ? c : m;
    return d > m || d != d ? d : m;
}

/* window k = (p * OH + i) * OW + j of x (P, 2 OH, W = 2 OW): its top-left at r * 2W + 2j, r = k / OW */
__kernel void max2(__global const T *x, ulong xo, __global T *y, ulong yo, long windows, long W, long OW) {
    long k = get_global_id(0);
    if (k >= windows) return;
    long top = (k / OW) * 2 * W + 2 * (k % OW);
    x += xo;
    ST(y + yo, k, max4(LD(x, top), LD(x, top + 1), LD(x, top + W), LD(x, top + W + 1)));
}

/* max2 over a 2-D range (j, r): window j of window row r (CPU devices:
 * neighbouring work-items read x at stride 2, which PoCL loads as vectors,
 * where max2's k / OW, k % OW leave it gathering lane by lane) */
__kernel void max2_2d(__global const T *x, ulong xo, __global T *y, ulong yo, long rows, long W, long OW) {
    long j = get_global_id(0), r = get_global_id(1);
    if (j >= OW || r >= rows) return;
    long top = r * 2 * W + 2 * j;
    x += xo;
    ST(y + yo, r * OW + j, max4(LD(x, top), LD(x, top + 1), LD(x, top + W), LD(x, top + W + 1)));
}

__kernel void max2_grad(__global const T *x, ulong xo, __global const T *dy, ulong dyo, __global T *dx, ulong dxo,
                        long windows, long W, long OW) {
    long k = get_global_id(0);
    if (k >= windows) return;
    long top = (k / OW) * 2 * W + 2 * (k % OW);
    x += xo, dx += dxo;
    int q = arg4(LD(x, top), LD(x, top + 1), LD(x, top + W), LD(x, top + W + 1));
    float g = LD(dy + dyo, k);
    ST(dx, top, q == 0 ? g : 0.0f);
    ST(dx, top + 1, q == 1 ? g : 0.0f);
    ST(dx, top + W, q == 2 ? g : 0.0f);
    ST(dx, top + W + 1, q == 3 ? g : 0.0f);
}

/* relu_grad -> max2_grad of a fused group (core/fuse.h; ops/pool2d.c
 * loom__cl_relu_max2_grad): the pooled gradient is relu_grad of rx (relu's
 * input) and dy, written as relu_grad's output rg, then routed as max2_grad */
__kernel void max2_grad_relu(__global const T *x, ulong xo, __global const T *dy, ulong dyo, __global T *dx, ulong dxo,
                             __global const T *rx, ulong rxo, __global T *rg, ulong rgo, long windows, long W, long OW) {
    long k = get_global_id(0);
    if (k >= windows) return;
    long top = (k / OW) * 2 * W + 2 * (k % OW);
    x += xo, dx += dxo;
    int q = arg4(LD(x, top), LD(x, top + 1), LD(x, top + W), LD(x, top + W + 1));
    float v = LD(rx + rxo, k), d = LD(dy + dyo, k), g = v > 0.0f || v != v ? d : 0.0f;
    ST(rg + rgo, k, g);
    ST(dx, top, q == 0 ? g : 0.0f);
    ST(dx, top + 1, q == 1 ? g : 0.0f);
    ST(dx, top + W, q == 2 ? g : 0.0f);
    ST(dx, top + W + 1, q == 3 ? g : 0.0f);
}

/* max2_grad_relu with explicit vectors, MAX2_V8_ROWS window rows per work-group (CPU devices: the
 * per-window form stores its four dx values lane by lane): 8 windows at a time, their two x rows
 * loaded as 16 values each, arg4 and the relu gradient on the 8 at once (the same selects), dx's two
 * rows stored as 16 values each; a row's last windows (fewer than 8) through the same vectors, whole
 * (MAX2_V8_WHOLE) or loaded and stored element by element */
inline int8 arg4_8(float8 a, float8 b, float8 c, float8 d) {
    int8 tb = isgreater(b, a) | isnan(b);
    float8 m = select(a, b, tb);
    int8 k = select((int8)(0), (int8)(1), tb);
    int8 tc = isgreater(c, m) | isnan(c);
    m = select(m, c, tc);
    k = select(k, (int8)(2), tc);
    int8 td = isgreater(d, m) | isnan(d);
    return select(k, (int8)(3), td);
}

/* the value arg4_8 picks (max4 on 8 lanes) */
inline float8 max4_8(float8 a, float8 b, float8 c, float8 d) {
    float8 m = select(a, b, isgreater(b, a) | isnan(b));
    m = select(m, c, isgreater(c, m) | isnan(c));
    return select(m, d, isgreater(d, m) | isnan(d));
}

#define MAX2_V8_ROWS LOOM_CL_MAX2_V8_ROWS /* window rows per work-group (kernel_sizes.h) */
/* 8 windows from (row r, window j0) on, n of them inside the row */
#define MAX2_V8_STEP(LD16, LD8, ST16, ST8)                                                               \
    {                                                                                                    \
        long top = r * 2 * W + 2 * j0, k0 = r * OW + j0;                                                 \
        float16 t = LD16(x + top, 2 * n), b = LD16(x + top + W, 2 * n);                                  \
        int8 q = arg4_8(t.even, t.odd, b.even, b.odd);                                                   \
        float8 v = LD8(rx + k0, n), g = select(z, LD8(dy + k0, n), isgreater(v, 0.0f) | isnan(v));       \
        ST8(rg + k0, n, g);                                                                              \
        ST16(dx + top, 2 * n, shuffle2(select(z, g, q == 0), select(z, g, q == 1), il));                 \
        ST16(dx + top + W, 2 * n, shuffle2(select(z, g, q == 2), select(z, g, q == 3), il));             \
    }
/* A row's last windows (OW % 8 of them) in whole vectors, for every row's windows after the first 8 at
 * a time: with OW > 8 a step that ends at the row's end (its first windows again: the same values
 * written again); with OW < 8 (W = 2 OW) one step whose extra lanes run past the row into the next rows
 * of this work-group's, which it writes after (over them); the loads stay inside the tensors (r1 <= the
 * rows). Otherwise (the group's last rows, OW < 8), and when the full-size output lies over the
 * full-size input (`whole` 0: those steps would read values already overwritten; today's planner puts
 * neither op's output in place, the host checks anyway), the lanes one by one. */
#define MAX2_V8_WHOLE(r, r1) \
    (whole && W == 2 * OW && (OW > 8 || ((2 * (r) + 1) * W + 16 <= 2 * (r1) * W && (r) * OW + 8 <= (r1) * OW)))
#define MAX2_LD16(p, n) LDV(16, p)
#define MAX2_LD8(p, n) LDV(8, p)
#define MAX2_ST16(p, n, x) STV(16, x, p)
#define MAX2_ST8(p, n, x) STV(8, x, p)

__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void max2_grad_relu_v8(
    __global const T *x, ulong xo, __global const T *dy, ulong dyo, __global T *dx, ulong dxo, __global const T *rx,
    ulong rxo, __global T *rg, ulong rgo, long rows, long W, long OW, int whole) {
    x += xo, dx += dxo, dy += dyo, rx += rxo, rg += rgo;
    const uint16 il = (uint16)(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    const float8 z = (float8)(0.0f);
    long r1 = min(rows, (long)(get_group_id(0) + 1) * MAX2_V8_ROWS);
    for (long r = get_group_id(0) * MAX2_V8_ROWS; r < r1; r++) {
        long j0 = 0, n = 8;
        for (; j0 + 8 <= OW; j0 += 8) MAX2_V8_STEP(MAX2_LD16, MAX2_LD8, MAX2_ST16, MAX2_ST8)
        if (j0 == OW) continue;
        if (MAX2_V8_WHOLE(r, r1)) { /* the last windows in whole vectors (MAX2_V8_WHOLE) */
            j0 = OW > 8 ? OW - 8 : 0;
            MAX2_V8_STEP(MAX2_LD16, MAX2_LD8, MAX2_ST16, MAX2_ST8)
        } else if ((n = OW - j0) > 0) {
            MAX2_V8_STEP(ldv_edge16, ldv_edge8, stv_part16, stv_part8) /* lane by lane */
        }
    }
}

/* batch norm's apply (norm.cl's bn_apply) fused with the 2x2 max pooling
 * after it and, with RELU, relu of the maximum (a fused group; ops/norm.c
 * loom__cl_bn_fused): a 2-D range (window j, window row r = p OH + i) as
 * max2_2d, every output written */
#define BN_APPLY_POOL_KERNEL(name, RELU)                                                                         \
    __kernel void name(__global const T *x, ulong xo, __global const T *gm, ulong gmo, __global const T *bt,      \
                       ulong bto, __global const float *st, __global T *y, ulong yo, __global T *yp, ulong po,   \
                       __global T *yr, ulong ro, long rows, long C, long OH, long W, long OW, int has_g,         \
                       int has_b) {                                                                              \
        long j = get_global_id(0), r = get_global_id(1), c = (r / OH) % C;                                      \
        if (j >= OW || r >= rows) return;                                                                        \
        long top = r * 2 * W + 2 * j;                                                                            \
        float g = has_g ? LD(gm + gmo, c) : 1.0f, b = has_b ? LD(bt + bto, c) : 0.0f;                           \
        x += xo, y += yo;                                                                                        \
        float a0 = (LD(x, top) - st[c]) * st[C + c] * g + b, a1 = (LD(x, top + 1) - st[c]) * st[C + c] * g + b; \
        float a2 = (LD(x, top + W) - st[c]) * st[C + c] * g + b;                                                 \
        float a3 = (LD(x, top + W + 1) - st[c]) * st[C + c] * g + b;                                             \
        ST(y, top, a0), ST(y, top + 1, a1), ST(y, top + W, a2), ST(y, top + W + 1, a3);                         \
        float m = max4(a0, a1, a2, a3);                                                                          \
        ST(yp + po, r * OW + j, m);                                                                              \
        if (RELU) ST(yr + ro, r * OW + j, m > 0.0f || m != m ? m : 0.0f);                                       \
    }
BN_APPLY_POOL_KERNEL(bn_apply_pool, 0)
BN_APPLY_POOL_KERNEL(bn_apply_pool_relu, 1)

/* bn_apply_pool[_relu] with explicit vectors, MAX2_V8_ROWS window rows per work-group (CPU devices, as
 * max2_grad_relu_v8): 8 windows at a time, their two x rows (16 values each) normalised, stored to y
 * and pooled (max4 on the even and odd lanes: the same selects), the 8 maxima (and their relu) stored;
 * a row's last windows (fewer than 8) as max2_grad_relu_v8's */
#define BN_POOL_V8_STEP(LD16, ST16, ST8, RELU)                                                              \
    {                                                                                                    \
        long top = r * 2 * W + 2 * j0, k0 = r * OW + j0;                                                 \
        float16 t = ((LD16(x + top, 2 * n) - mu) * is) * g + b, u = ((LD16(x + top + W, 2 * n) - mu) * is) * g + b; \
        ST16(y + top, 2 * n, t);                                                                         \
        ST16(y + top + W, 2 * n, u);                                                                     \
        float8 m = max4_8(t.even, t.odd, u.even, u.odd);                                                 \
        ST8(yp + k0, n, m);                                                                              \
        if (RELU) ST8(yr + k0, n, select((float8)(0.0f), m, isgreater(m, 0.0f) | isnan(m)));            \
    }
#define BN_APPLY_POOL_V8_KERNEL(name, RELU)                                                                       \
    __kernel __attribute__((reqd_work_group_size(1, 1, 1))) void name(                                           \
        __global const T *x, ulong xo, __global const T *gm, ulong gmo, __global const T *bt, ulong bto,          \
        __global const float *st, __global T *y, ulong yo, __global T *yp, ulong po, __global T *yr, ulong ro,    \
        long rows, long C, long OH, long W, long OW, int has_g, int has_b, int whole) {                           \
        x += xo, y += yo, yp += po, yr += ro;                                                                     \
        long r1 = min(rows, (long)(get_group_id(0) + 1) * MAX2_V8_ROWS);                                          \
        for (long r = get_group_id(0) * MAX2_V8_ROWS; r < r1; r++) {                                              \
            long c = (r / OH) % C, j0 = 0, n = 8;                                                                 \
            float g = has_g ? LD(gm + gmo, c) : 1.0f, b = has_b ? LD(bt + bto, c) : 0.0f, mu = st[c], is = st[C + c]; \
            for (; j0 + 8 <= OW; j0 += 8) BN_POOL_V8_STEP(MAX2_LD16, MAX2_ST16, MAX2_ST8, RELU)                   \
            if (j0 < OW && MAX2_V8_WHOLE(r, r1)) {                                                                \
                j0 = OW > 8 ? OW - 8 : 0;                                                                         \
                BN_POOL_V8_STEP(MAX2_LD16, MAX2_ST16, MAX2_ST8, RELU)                                             \
            } else if ((n = OW - j0) > 0) {                                                                       \
                BN_POOL_V8_STEP(ldv_edge16, stv_part16, stv_part8, RELU)                                          \
            }                                                                                                     \
        }                                                                                                         \
    }
BN_APPLY_POOL_V8_KERNEL(bn_apply_pool_v8, 0)
BN_APPLY_POOL_V8_KERNEL(bn_apply_pool_relu_v8, 1)
