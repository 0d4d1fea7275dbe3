/* backends/cuda/ops/shape.cu — permute, concat, slice and slice_grad, a
 * port of backends/opencl/kernels/shape.cl: pure data movement by element
 * size (u8, u16, u32 words), so any dtype moves bit-exactly. One thread per
 * output element. Parameters in core/ops/shape.c. */
#include "../common.cuh"

/* y (g[1..nd]) reads x at sum(i_k * g[6 + k]) (x's strides permuted); g = {nd, ydims[5], s[5]} */
template <typename U>
__global__ void permute_k(loom__cu_tab<11> g, const U *x, U *y, int64_t n) {
    int64_t i = gid1();
    if (i >= n) return;
    int nd = (int)g.v[0];
    int64_t r = i, off = 0;
    for (int d = nd - 1; d >= 0; d--) {
        off += (r % g.v[1 + d]) * g.v[6 + d];
        r /= g.v[1 + d];
    }
    y[i] = x[off];
}

/* the sources of a concat (up to LOOM_MAX_SRC) */
template <typename U> struct concat_src {
    const U *x[LOOM_MAX_SRC];
};

/* y (outer, L, inner) = concat of x_s (outer, len_s, inner) along the middle axis;
 * g = {nsrc, inner, L, start[0..nsrc]} with start[s] the first row of x_s in y */
template <typename U>
__global__ void concat_k(loom__cu_tab<4 + LOOM_MAX_SRC> g, U *y, int64_t n, concat_src<U> xs) {
    int64_t i = gid1();
    if (i >= n) return;
    int64_t inner = g.v[1], L = g.v[2];
    int64_t in = i % inner, c = (i / inner) % L, out = i / (inner * L);
    int s = 0;
    while (s + 1 < (int)g.v[0] && c >= g.v[4 + s]) s++;
    int64_t len = g.v[4 + s] - g.v[3 + s], k = (out * len + (c - g.v[3 + s])) * inner + in;
    y[i] = xs.x[s][k];
}

/* y (outer, len, inner) = x (outer, xlen, inner)[:, start:start+len, :] */
template <typename U>
__global__ void slice_k(const U *x, U *y, int64_t n, int64_t inner, int64_t len, int64_t xlen, int64_t start) {
    int64_t i = gid1();
    if (i >= n) return;
    int64_t in = i % inner, c = (i / inner) % len, out = i / (inner * len);
    y[i] = x[(out * xlen + start + c) * inner + in];
}

/* y (outer, ylen, inner) = 0 with dy (outer, len, inner) at rows [start, start + len) */
template <typename U>
__global__ void slice_grad_k(const U *dy, U *y, int64_t n, int64_t inner, int64_t len, int64_t ylen, int64_t start) {
    int64_t i = gid1();
    if (i >= n) return;
    int64_t in = i % inner, c = (i / inner) % ylen, out = i / (inner * ylen);
    y[i] = c >= start && c < start + len ? dy[(out * len + c - start) * inner + in] : (U)0;
}

/* F<uint8_t/uint16_t/uint32_t>(args) by t's element size */
#define BY_SIZE(t, F, ...)                                                                   \
    (loom_dtype_size((t)->dtype) == 1   ? F<uint8_t>(__VA_ARGS__)                            \
     : loom_dtype_size((t)->dtype) == 2 ? F<uint16_t>(__VA_ARGS__)                           \
                                        : F<uint32_t>(__VA_ARGS__))

static void axis_split(const loom_tensor *t, int ax, int64_t *outer, int64_t *inner) {
    *outer = 1, *inner = 1;
    for (int i = 0; i < ax; i++) *outer *= t->dims[i];
    for (int i = ax + 1; i < t->ndim; i++) *inner *= t->dims[i];
}

template <typename U>
static loom_status run_permute(loom__cu_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    loom__cu_tab<11> g = {};
    int64_t xs[LOOM_MAX_DIMS], s = 1;
    for (int i = x->ndim - 1; i >= 0; i--) xs[i] = s, s *= x->dims[i];
    g.v[0] = y->ndim;
    for (int i = 0; i < y->ndim; i++) g.v[1 + i] = y->dims[i], g.v[6 + i] = xs[y->p[LOOM_P_PERMUTE_PERM + i]];
    int64_t n = loom_tensor_numel(y);
    return loom__cu_launch(o, permute_k<U>, loom__cu_grid1d(n), LOOM__CU_THREADS, 0, g, loom__cu_ptr<U>(o, x),
                           loom__cu_ptr<U>(o, y), n);
}

template <typename U>
static loom_status run_concat(loom__cu_op *o) {
    const loom_tensor *y = o->t;
    int ax = (int)y->p[LOOM_P_CONCAT_AXIS];
    int64_t outer, inner;
    axis_split(y, ax, &outer, &inner);
    loom__cu_tab<4 + LOOM_MAX_SRC> g = {};
    g.v[0] = y->nsrc, g.v[1] = inner, g.v[2] = y->dims[ax], g.v[3] = 0;
    for (int i = 0; i < y->nsrc; i++) g.v[4 + i] = g.v[3 + i] + y->src[i]->dims[ax];
    concat_src<U> xs = {};
    for (int i = 0; i < LOOM_MAX_SRC; i++) xs.x[i] = loom__cu_ptr<U>(o, y->src[i < y->nsrc ? i : 0]);
    int64_t n = loom_tensor_numel(y);
    return loom__cu_launch(o, concat_k<U>, loom__cu_grid1d(n), LOOM__CU_THREADS, 0, g, loom__cu_ptr<U>(o, y), n, xs);
}

/* slice: big = x, small = y; slice_grad: big = y, small = dy */
template <typename U>
static loom_status run_slice(loom__cu_op *o, bool grad) {
    const loom_tensor *y = o->t, *src = y->src[0], *big = grad ? y : src, *small = grad ? src : y;
    int ax = (int)y->p[LOOM_P_SLICE_AXIS];
    int64_t outer, inner, n = loom_tensor_numel(y);
    axis_split(big, ax, &outer, &inner);
    return loom__cu_launch(o, grad ? slice_grad_k<U> : slice_k<U>, loom__cu_grid1d(n), LOOM__CU_THREADS, 0,
                           loom__cu_ptr<U>(o, src), loom__cu_ptr<U>(o, y), n, inner, small->dims[ax], big->dims[ax],
                           y->p[LOOM_P_SLICE_START]);
}

loom_status loom__cu_permute(loom__cu_op *o) { return BY_SIZE(o->t, run_permute, o); }
loom_status loom__cu_concat(loom__cu_op *o) { return BY_SIZE(o->t, run_concat, o); }
loom_status loom__cu_slice(loom__cu_op *o) { return BY_SIZE(o->t, run_slice, o, false); }
loom_status loom__cu_slice_grad(loom__cu_op *o) { return BY_SIZE(o->t, run_slice, o, true); }
