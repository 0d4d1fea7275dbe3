/* backends/cuda/ops/pool2d.cu — max, average and adaptive average pooling
 * and their gradients, a port of backends/opencl/kernels/pool2d.cl (as
 * backends/cpu/ops/pool2d.c; parameters in core/ops/pool2d.c). One thread
 * per output element; the gradients are gathers (one thread per dx element
 * finds the windows covering it, in the CPU's (i, j) order), so there are no
 * atomics. Max-pool's gradient recomputes each covering window's argmax
 * exactly as the forward does. 2x2 stride-2 unpadded max pooling of even
 * planes runs one thread per window (max2_k, max2_grad_k: the window loaded
 * once, the gradient's four dx values written by its thread), the same rule
 * (arg4 = pool_argmax on a 2x2 window) and the same bits. */
#include <math.h>

#include "../common.cuh"

/* geometry table g: LOOM_G_POOL_* (core/params.h) */
typedef loom__cu_tab<LOOM_G_POOL_LEN> pgeom;

__device__ __forceinline__ int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ __forceinline__ int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

/* window of output (i, j) clipped to x: rows [h0, h1), cols [w0, w1);
 * returns torch's avg divisor (as window() in the CPU file) */
__device__ __forceinline__ int64_t pool_window(const pgeom &g, int64_t i, int64_t j, int64_t *h0, int64_t *h1,
                                               int64_t *w0, int64_t *w1) {
    int64_t H = g.v[LOOM_G_POOL_H], W = g.v[LOOM_G_POOL_W];
    int64_t hs = i * g.v[LOOM_G_POOL_SH] - g.v[LOOM_G_POOL_PH], ws = j * g.v[LOOM_G_POOL_SW] - g.v[LOOM_G_POOL_PW];
    int64_t he = imin(hs + g.v[LOOM_G_POOL_KH], H + g.v[LOOM_G_POOL_PH]),
            we = imin(ws + g.v[LOOM_G_POOL_KW], W + g.v[LOOM_G_POOL_PW]);
    int64_t padded = (he - hs) * (we - ws);
    *h0 = imax(hs, 0), *w0 = imax(ws, 0);
    *h1 = imin(he, H), *w1 = imin(we, W);
    return g.v[LOOM_G_POOL_INCL] ? padded : (*h1 - *h0) * (*w1 - *w0);
}

/* index in the plane x (H, W) of window (i, j)'s first maximum; NaN wins */
template <typename T>
__device__ __forceinline__ int64_t pool_argmax(const pgeom &g, const T *x, int64_t i, int64_t j) {
    int64_t h0, h1, w0, w1, W = g.v[LOOM_G_POOL_W];
    pool_window(g, i, j, &h0, &h1, &w0, &w1);
    int64_t best = h0 * W + w0;
    float m = -INFINITY;
    for (int64_t h = h0; h < h1; h++)
        for (int64_t w = w0; w < w1; w++) {
            float v = ldf(x[h * W + w]);
            if (v > m || isnan(v)) m = v, best = h * W + w;
        }
    return best;
}

/* output rows i (or cols) whose window covers input row h: [*i0, *i1) */
__device__ __forceinline__ void pool_cover(int64_t h, int64_t k, int64_t s, int64_t p, int64_t O, int64_t *i0,
                                           int64_t *i1) {
    int64_t a = h + p - k + 1; /* i * s >= a */
    *i0 = a <= 0 ? 0 : (a + s - 1) / s;
    *i1 = imin((h + p) / s + 1, O);
}

/* adaptive bins: [floor(i*in/out), ceil((i+1)*in/out)) */
__device__ __forceinline__ int64_t pool_bin_start(int64_t i, int64_t in, int64_t out) { return i * in / out; }
__device__ __forceinline__ int64_t pool_bin_end(int64_t i, int64_t in, int64_t out) {
    return ((i + 1) * in + out - 1) / out;
}

/* x (P, H, W) -> y (P, OH, OW) */
template <typename T>
__global__ void pool2d_k(const T *x, T *y, pgeom g, int kind) {
    int64_t OH = g.v[LOOM_G_POOL_OH], OW = g.v[LOOM_G_POOL_OW], H = g.v[LOOM_G_POOL_H], W = g.v[LOOM_G_POOL_W];
    int64_t k = gid1();
    if (k >= g.v[LOOM_G_POOL_PLANES] * OH * OW) return;
    int64_t j = k % OW, i = (k / OW) % OH, p = k / (OH * OW);
    x += p * H * W;
    if (kind == LOOM_K_POOL_MAX) {
        y[k] = x[pool_argmax(g, x, i, j)];
        return;
    }
    int64_t h0, h1, w0, w1, div;
    if (kind == LOOM_K_POOL_AVG) {
        div = pool_window(g, i, j, &h0, &h1, &w0, &w1);
    } else {
        h0 = pool_bin_start(i, H, OH), h1 = pool_bin_end(i, H, OH);
        w0 = pool_bin_start(j, W, OW), w1 = pool_bin_end(j, W, OW);
        div = (h1 - h0) * (w1 - w0);
    }
    float s = 0.0f;
    for (int64_t h = h0; h < h1; h++)
        for (int64_t w = w0; w < w1; w++) s += ldf(x[h * W + w]);
    st(y, k, div > 0 ? s / (float)div : 0.0f);
}

/* dy (P, OH, OW) [, x (P, H, W) for max] -> dx (P, H, W), one thread per dx element */
template <typename T>
__global__ void pool2d_grad_k(const T *x, const T *dy, T *dx, pgeom g, int kind) {
    int64_t OH = g.v[LOOM_G_POOL_OH], OW = g.v[LOOM_G_POOL_OW], H = g.v[LOOM_G_POOL_H], W = g.v[LOOM_G_POOL_W];
    int64_t k = gid1();
    if (k >= g.v[LOOM_G_POOL_PLANES] * H * W) return;
    int64_t w = k % W, h = (k / W) % H, p = k / (H * W);
    dy += p * OH * OW;
    float acc = 0.0f;
    if (kind == LOOM_K_POOL_ADAPTIVE) {
        /* bins containing h: i in [floor(h*OH/H), ceil((h+1)*OH/H)), checked */
        int64_t i0 = imax(h * OH / H - 1, 0), i1 = imin(((h + 1) * OH + H - 1) / H + 1, OH);
        int64_t j0 = imax(w * OW / W - 1, 0), j1 = imin(((w + 1) * OW + W - 1) / W + 1, OW);
        for (int64_t i = i0; i < i1; i++) {
            int64_t a0 = pool_bin_start(i, H, OH), a1 = pool_bin_end(i, H, OH);
            if (h < a0 || h >= a1) continue;
            for (int64_t j = j0; j < j1; j++) {
                int64_t b0 = pool_bin_start(j, W, OW), b1 = pool_bin_end(j, W, OW);
                if (w < b0 || w >= b1) continue;
                acc += ldf(dy[i * OW + j]) / (float)((a1 - a0) * (b1 - b0));
            }
        }
    } else {
        int64_t i0, i1, j0, j1;
        pool_cover(h, g.v[LOOM_G_POOL_KH], g.v[LOOM_G_POOL_SH], g.v[LOOM_G_POOL_PH], OH, &i0, &i1);
        pool_cover(w, g.v[LOOM_G_POOL_KW], g.v[LOOM_G_POOL_SW], g.v[LOOM_G_POOL_PW], OW, &j0, &j1);
        if (kind == LOOM_K_POOL_MAX) x += p * H * W;
        for (int64_t i = i0; i < i1; i++)
            for (int64_t j = j0; j < j1; j++) {
                if (kind == LOOM_K_POOL_MAX) {
                    if (pool_argmax(g, x, i, j) == h * W + w) acc += ldf(dy[i * OW + j]);
                } else {
                    int64_t h0, h1, w0, w1, div = pool_window(g, i, j, &h0, &h1, &w0, &w1);
                    if (div > 0 && h >= h0 && h < h1 && w >= w0 && w < w1) acc += ldf(dy[i * OW + j]) / (float)div;
                }
            }
    }
    st(dx, k, acc);
}

/* the first maximum of a, b (top row), c, d; a NaN replaces the maximum so far */
__device__ __forceinline__ int arg4(float a, float b, float c, float d) {
    int k = 0;
    float m = a;
    if (b > m || isnan(b)) m = b, k = 1;
    if (c > m || isnan(c)) m = c, k = 2;
    if (d > m || isnan(d)) k = 3;
    return k;
}

/* window k = (p * OH + i) * OW + j of x (P, 2 OH, W = 2 OW): its top-left at r * 2W + 2j, r = k / OW */
template <typename T>
__global__ void max2_k(const T *x, T *y, int64_t windows, int64_t W, int64_t OW) {
    int64_t k = gid1();
    if (k >= windows) return;
    int64_t top = (k / OW) * 2 * W + 2 * (k % OW);
    T v[4] = {x[top], x[top + 1], x[top + W], x[top + W + 1]};
    y[k] = v[arg4(ldf(v[0]), ldf(v[1]), ldf(v[2]), ldf(v[3]))];
}

template <typename T>
__global__ void max2_grad_k(const T *x, const T *dy, T *dx, int64_t windows, int64_t W, int64_t OW) {
    int64_t k = gid1();
    if (k >= windows) return;
    int64_t top = (k / OW) * 2 * W + 2 * (k % OW);
    int q = arg4(ldf(x[top]), ldf(x[top + 1]), ldf(x[top + W]), ldf(x[top + W + 1]));
    T g = dy[k], z = stf<T>(0.0f);
    dx[top] = q == 0 ? g : z;
    dx[top + 1] = q == 1 ? g : z;
    dx[top + W] = q == 2 ? g : z;
    dx[top + W + 1] = q == 3 ? g : z;
}

/* geometry table from x's and y's shapes */
static pgeom geom(const loom_tensor *t, const int64_t *xd, const int64_t *yd) {
    pgeom g;
    loom__pool_geom(t, xd, yd, g.v);
    return g;
}

template <typename T>
static loom_status forward(loom__cu_op *o, int kind) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t n = loom_tensor_numel(y), nw;
    if (kind == LOOM_K_POOL_MAX && loom__pool_max2(y, x->dims, &nw))
        return loom__cu_launch(o, max2_k<T>, loom__cu_grid1d(nw), LOOM__CU_THREADS, 0, loom__cu_ptr<T>(o, x),
                               loom__cu_ptr<T>(o, y), nw, x->dims[3], x->dims[3] / 2);
    return loom__cu_launch(o, pool2d_k<T>, loom__cu_grid1d(n), LOOM__CU_THREADS, 0, loom__cu_ptr<T>(o, x),
                           loom__cu_ptr<T>(o, y), geom(y, x->dims, y->dims), kind);
}

/* dx = the node (x's shape); max: src (x, dy), avg/adaptive: src (dy) */
template <typename T>
static loom_status backward(loom__cu_op *o, int kind) {
    const loom_tensor *dx = o->t, *x = o->t->src[0], *dy = kind == LOOM_K_POOL_MAX ? o->t->src[1] : o->t->src[0];
    int64_t n = loom_tensor_numel(dx), nw;
    if (kind == LOOM_K_POOL_MAX && loom__pool_max2(dx, dx->dims, &nw))
        return loom__cu_launch(o, max2_grad_k<T>, loom__cu_grid1d(nw), LOOM__CU_THREADS, 0, loom__cu_ptr<T>(o, x),
                               loom__cu_ptr<T>(o, dy), loom__cu_ptr<T>(o, dx), nw, dx->dims[3], dx->dims[3] / 2);
    return loom__cu_launch(o, pool2d_grad_k<T>, loom__cu_grid1d(n), LOOM__CU_THREADS, 0, loom__cu_ptr<T>(o, x),
                           loom__cu_ptr<T>(o, dy), loom__cu_ptr<T>(o, dx), geom(dx, dx->dims, dy->dims), kind);
}

loom_status loom__cu_max_pool2d(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, forward, o, LOOM_K_POOL_MAX); }
loom_status loom__cu_avg_pool2d(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, forward, o, LOOM_K_POOL_AVG); }
loom_status loom__cu_adaptive_avg_pool2d(loom__cu_op *o) {
    return LOOM_CU_DISPATCH(o->t->dtype, forward, o, LOOM_K_POOL_ADAPTIVE);
}
loom_status loom__cu_max_pool2d_grad(loom__cu_op *o) {
    return LOOM_CU_DISPATCH(o->t->dtype, backward, o, LOOM_K_POOL_MAX);
}
loom_status loom__cu_avg_pool2d_grad(loom__cu_op *o) {
    return LOOM_CU_DISPATCH(o->t->dtype, backward, o, LOOM_K_POOL_AVG);
}
loom_status loom__cu_adaptive_avg_pool2d_grad(loom__cu_op *o) {
    return LOOM_CU_DISPATCH(o->t->dtype, backward, o, LOOM_K_POOL_ADAPTIVE);
}
