/* backends/cpu/ops/shape.c — CPU kernels for permute, concat, slice and
 * slice_grad. Pure data movement for any dtype: element size from a->dt
 * (16-bit nodes arrive as f32). Reference loops, also the fast path. */
#include "../cpu_impl.h"

/* y = x.permute(perm): y index (i0..in-1) reads x at sum(i_k * xstride[perm[k]]) */
loom_status loom__cpu_permute(const loom__cpu_args *a) {
    const loom_tensor *y = a->node, *x = y->src[0];
    size_t es = loom_dtype_size(a->dt);
    int nd = y->ndim;
    int64_t xs[LOOM_MAX_DIMS], st = 1, s[LOOM_MAX_DIMS];
    for (int i = x->ndim - 1; i >= 0; i--) xs[i] = st, st *= x->dims[i];
    for (int i = 0; i < nd; i++) s[i] = xs[y->p[LOOM_P_PERMUTE_PERM + i]];
    int64_t n = loom_tensor_numel(y), inner = y->dims[nd - 1], idx[LOOM_MAX_DIMS] = {0};
    const char *X = a->x[0];
    char *Y = a->y;
    for (int64_t o = 0; o < n; o += inner) {
        int64_t off = 0;
        for (int i = 0; i < nd - 1; i++) off += idx[i] * s[i];
        char *py = Y + (size_t)o * es;
        if (es == 4)
            for (int64_t k = 0; k < inner; k++) ((uint32_t *)py)[k] = ((const uint32_t *)X)[off + k * s[nd - 1]];
        else
            for (int64_t k = 0; k < inner; k++) memcpy(py + k * es, X + (size_t)(off + k * s[nd - 1]) * es, es);
        for (int i = nd - 2; i >= 0; i--) {
            if (++idx[i] < y->dims[i]) break;
            idx[i] = 0;
        }
    }
    return LOOM_OK;
}

/* Copy a (outer, len_a * inner) block layout: for each outer index, `rows`
 * contiguous bytes from src to dst at the given strides. */
static void copy_blocks(char *dst, size_t dst_stride, const char *src, size_t src_stride, int64_t outer,
                        size_t bytes) {
    for (int64_t o = 0; o < outer; o++) memcpy(dst + (size_t)o * dst_stride, src + (size_t)o * src_stride, bytes);
}

static void axis_split(const loom_tensor *t, int ax, int64_t *outer, int64_t *inner) {
    *outer = 1, *inner = 1;
    for (int i = 0; i < ax; i++) *outer *= t->dims[i];
    for (int i = ax + 1; i < t->ndim; i++) *inner *= t->dims[i];
}

/* y (.., sum of len_i, ..) = concat of x_i (.., len_i, ..) along the axis p[LOOM_P_CONCAT_AXIS] */
loom_status loom__cpu_concat(const loom__cpu_args *a) {
    const loom_tensor *y = a->node;
    int ax = (int)y->p[LOOM_P_CONCAT_AXIS];
    size_t es = loom_dtype_size(a->dt);
    int64_t outer, inner;
    axis_split(y, ax, &outer, &inner);
    size_t ystride = (size_t)(y->dims[ax] * inner) * es, at = 0;
    for (int i = 0; i < y->nsrc; i++) {
        size_t bytes = (size_t)(y->src[i]->dims[ax] * inner) * es;
        copy_blocks((char *)a->y + at, ystride, a->x[i], bytes, outer, bytes);
        at += bytes;
    }
    return LOOM_OK;
}

/* y = x[..., start:end, ...] along the axis p[LOOM_P_SLICE_AXIS] */
loom_status loom__cpu_slice(const loom__cpu_args *a) {
    const loom_tensor *y = a->node, *x = y->src[0];
    int ax = (int)y->p[LOOM_P_SLICE_AXIS];
    size_t es = loom_dtype_size(a->dt);
    int64_t outer, inner;
    axis_split(x, ax, &outer, &inner);
    size_t bytes = (size_t)(y->dims[ax] * inner) * es;
    copy_blocks(a->y, bytes, (const char *)a->x[0] + (size_t)(y->p[LOOM_P_SLICE_START] * inner) * es,
                (size_t)(x->dims[ax] * inner) * es, outer, bytes);
    return LOOM_OK;
}

/* y (x's shape) = zeros, with dy placed at [start, start + len) along the axis p[LOOM_P_SLICE_AXIS] */
loom_status loom__cpu_slice_grad(const loom__cpu_args *a) {
    const loom_tensor *y = a->node, *dy = y->src[0];
    int ax = (int)y->p[LOOM_P_SLICE_AXIS];
    size_t es = loom_dtype_size(a->dt);
    int64_t outer, inner;
    axis_split(y, ax, &outer, &inner);
    memset(a->y, 0, (size_t)loom_tensor_numel(y) * es);
    size_t bytes = (size_t)(dy->dims[ax] * inner) * es;
    copy_blocks((char *)a->y + (size_t)(y->p[LOOM_P_SLICE_START] * inner) * es, (size_t)(y->dims[ax] * inner) * es,
                a->x[0], bytes, outer, bytes);
    return LOOM_OK;
}
