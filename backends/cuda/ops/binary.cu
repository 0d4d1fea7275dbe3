/* backends/cuda/ops/binary.cu — add/sub/mul/div (flat when the shapes
 * match, else broadcast strides), expand, scale, fill and cast. A port of
 * backends/opencl/kernels/binary.cl, matching backends/cpu/ops/binary.c: one
 * float operation per element, one rounding to the storage dtype. */
#include <limits.h>

#include "../common.cuh"

__device__ __forceinline__ float bin_op(int kind, float a, float b) {
    switch (kind) {
    case LOOM_K_BIN_ADD: return a + b;
    case LOOM_K_BIN_SUB: return a - b;
    case LOOM_K_BIN_MUL: return a * b;
    case LOOM_K_BIN_DIV: return a / b;
    default: return a;
    }
}

/* a, b, y (n) flat, same shape */
template <typename T>
__global__ void binary_flat(const T *a, const T *b, T *y, int64_t n, int kind) {
    int64_t i = gid1();
    if (i >= n) return;
    st(y, i, bin_op(kind, ldf(a[i]), ldf(b[i])));
}

/* y (g[1..nd]) = a op b with broadcasting; g = {nd, dims[5], sa[5], sb[5]}:
 * element strides of a and b per y axis (0 on broadcast axes). For expand
 * (LOOM_K_BIN_COPY) b is a again and unused. */
template <typename T>
__global__ void binary_bcast(loom__cu_tab<16> g, const T *a, const T *b, T *y, int64_t n, int kind) {
    int64_t i = gid1();
    if (i >= n) return;
    int nd = (int)g.v[0];
    int64_t r = i, oa = 0, ob = 0;
    for (int d = nd - 1; d >= 0; d--) {
        int64_t k = r % g.v[1 + d];
        r /= g.v[1 + d];
        oa += k * g.v[6 + d];
        ob += k * g.v[11 + d];
    }
    st(y, i, bin_op(kind, ldf(a[oa]), kind == LOOM_K_BIN_COPY ? 0.0f : ldf(b[ob])));
}

/* y (n) = s * x */
template <typename T>
__global__ void scale_k(const T *x, T *y, int64_t n, float s) {
    int64_t i = gid1();
    if (i >= n) return;
    st(y, i, s * ldf(x[i]));
}

/* y (n) = v */
template <typename T>
__global__ void fill_k(T *y, int64_t n, float v) {
    int64_t i = gid1();
    if (i >= n) return;
    st(y, i, v);
}

/* y (n, dtype ddt) = x (n, dtype sdt), as loom_convert: floats round to
 * nearest even; to i32/u8 truncate toward zero and saturate, NaN -> 0. A
 * 16-bit destination from i32 goes through f32 (two roundings), as the CPU's
 * 16-bit wrapper does. Byte pointers. */
__global__ void cast_k(const unsigned char *x, int sdt, unsigned char *y, int ddt, int64_t n) {
    int64_t i = gid1();
    if (i >= n) return;
    float v = 0.0f;
    int iv = 0;
    bool is_int = sdt == LOOM_K_DT_I32 || sdt == LOOM_K_DT_U8;
    if (sdt == LOOM_K_DT_I32)
        iv = ((const int *)x)[i];
    else if (sdt == LOOM_K_DT_U8)
        iv = x[i];
    else v = ld_any(x, sdt, i);
    if (ddt == LOOM_K_DT_I32 || ddt == LOOM_K_DT_U8) {
        int r;
        if (is_int) {
            r = iv;
        } else if (isnan(v)) {
            r = 0;
        } else if (ddt == LOOM_K_DT_I32) {
            r = v >= 2147483647.0f ? INT_MAX : v <= -2147483648.0f ? INT_MIN : (int)v;
        } else {
            r = v <= 0.0f ? 0 : v >= 255.0f ? 255 : (int)v;
        }
        if (ddt == LOOM_K_DT_U8)
            y[i] = (unsigned char)(r <= 0 ? 0 : r >= 255 ? 255 : r);
        else ((int *)y)[i] = r;
        return;
    }
    if (is_int) v = (float)iv;
    switch (ddt) {
    case LOOM_K_DT_F16: st((__half *)y, i, v); break;
    case LOOM_K_DT_BF16: st((loom__bf16 *)y, i, v); break;
    default: st((float *)y, i, v); break;
    }
}

template <typename T>
static loom_status run_binary(loom__cu_op *o, int kind) {
    const loom_tensor *y = o->t, *a = y->src[0], *b = kind == LOOM_K_BIN_COPY ? a : y->src[1];
    int64_t n = loom_tensor_numel(y);
    if (kind != LOOM_K_BIN_COPY && loom__same_shape(a, y) && loom__same_shape(b, y))
        return loom__cu_launch(o, binary_flat<T>, loom__cu_grid1d(n), LOOM__CU_THREADS, 0, loom__cu_ptr<T>(o, a),
                               loom__cu_ptr<T>(o, b), loom__cu_ptr<T>(o, y), n, kind);
    loom__cu_tab<16> g = {};
    g.v[0] = y->ndim;
    for (int i = 0; i < y->ndim; i++) g.v[1 + i] = y->dims[i];
    loom__broadcast_strides(a, y, g.v + 6);
    loom__broadcast_strides(b, y, g.v + 11);
    return loom__cu_launch(o, binary_bcast<T>, loom__cu_grid1d(n), LOOM__CU_THREADS, 0, g, loom__cu_ptr<T>(o, a),
                           loom__cu_ptr<T>(o, b), loom__cu_ptr<T>(o, y), n, kind);
}

loom_status loom__cu_add(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_binary, o, LOOM_K_BIN_ADD); }
loom_status loom__cu_sub(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_binary, o, LOOM_K_BIN_SUB); }
loom_status loom__cu_mul(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_binary, o, LOOM_K_BIN_MUL); }
loom_status loom__cu_div(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_binary, o, LOOM_K_BIN_DIV); }
loom_status loom__cu_expand(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_binary, o, LOOM_K_BIN_COPY); }

template <typename T>
static loom_status run_scale(loom__cu_op *o) {
    const loom_tensor *y = o->t;
    int64_t n = loom_tensor_numel(y);
    return loom__cu_launch(o, scale_k<T>, loom__cu_grid1d(n), LOOM__CU_THREADS, 0, loom__cu_ptr<T>(o, y->src[0]),
                           loom__cu_ptr<T>(o, y), n, (float)y->f[LOOM_F_SCALE_S]);
}

template <typename T>
static loom_status run_fill(loom__cu_op *o) {
    const loom_tensor *y = o->t;
    int64_t n = loom_tensor_numel(y);
    return loom__cu_launch(o, fill_k<T>, loom__cu_grid1d(n), LOOM__CU_THREADS, 0, loom__cu_ptr<T>(o, y), n,
                           (float)y->f[LOOM_F_FILL_VALUE]);
}

loom_status loom__cu_scale(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_scale, o); }
loom_status loom__cu_fill(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_fill, o); }

loom_status loom__cu_cast(loom__cu_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    if (x->dtype == LOOM_F64)
        return loom__err(o->cu->ctx, LOOM_ERR_UNSUPPORTED,
                         "cuda: cast of '%s' from f64 to %s: the CUDA backend has no f64 (node '%s')", x->name,
                         loom_dtype_name(y->dtype), y->name);
    int64_t n = loom_tensor_numel(y);
    return loom__cu_launch(o, cast_k, loom__cu_grid1d(n), LOOM__CU_THREADS, 0,
                           loom__cu_ptr<const unsigned char>(o, x), (int)x->dtype, loom__cu_ptr<unsigned char>(o, y),
                           (int)y->dtype, n);
}
