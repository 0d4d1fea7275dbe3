/* backends/cpu/ops/shape.c — CPU kernels for permute, concat, slice and
 * slice_grad. Pure data movement for any dtype: element size from a->dt
 * (16-bit nodes arrive as f32). Reference loops, also the fast path. */
#include "../cpu_impl.h"

/* y = x.permute(perm): y index (i0..in-1) reads x at sum(i_k * xstride[perm[k]]).
 * Split across the thread pool by runs of y's last axis; a run whose
 * elements are adjacent in x too (the last axis kept, as the gpt's head
 * split and merge keep it) is one memcpy. */
typedef struct pjob {
    int nd;
    int64_t dims[LOOM_MAX_DIMS], s[LOOM_MAX_DIMS], inner;
    size_t es;
    const char *X;
    char *Y;
} pjob;

static void permute_runs(void *v, int64_t r0, int64_t r1) {
    const pjob *j = v;
    const int nd = j->nd;
    const int64_t inner = j->inner, last = j->s[nd - 1];
    const size_t es = j->es;
    int64_t idx[LOOM_MAX_DIMS] = {0}, r = r0;
    for (int i = nd - 2; i >= 0; i--) idx[i] = r % j->dims[i], r /= j->dims[i];
    for (int64_t run = r0; run < r1; run++) {
        int64_t off = 0;
        for (int i = 0; i < nd - 1; i++) off += idx[i] * j->s[i];
        char *py = j->Y + (size_t)(run * inner) * es;
        if (last == 1) memcpy(py, j->X + (size_t)off * es, (size_t)inner * es);
        else if (es == 4)
            for (int64_t k = 0; k < inner; k++) ((uint32_t *)py)[k] = ((const uint32_t *)j->X)[off + k * last];
        else
            for (int64_t k = 0; k < inner; k++) memcpy(py + k * es, j->X + (size_t)(off + k * last) * es, es);
        for (int i = nd - 2; i >= 0; i--) {
            if (++idx[i] < j->dims[i]) break;
            idx[i] = 0;
        }
    }
}

loom_status loom__cpu_permute(const loom__cpu_args *a) {
    const loom_tensor *y = a->node, *x = y->src[0];
    pjob j = {.nd = y->ndim, .es = loom_dtype_size(a->dt), .X = a->x[0], .Y = a->y};
    int64_t xs[LOOM_MAX_DIMS], st = 1;
    for (int i = x->ndim - 1; i >= 0; i--) xs[i] = st, st *= x->dims[i];
    for (int i = 0; i < j.nd; i++) j.s[i] = xs[y->p[LOOM_P_PERMUTE_PERM + i]], j.dims[i] = y->dims[i];
    j.inner = y->dims[j.nd - 1];
    int64_t n = loom_tensor_numel(y);
    if (n == 0) return LOOM_OK;
    int64_t runs = n / j.inner, grain = j.inner >= 16384 ? 1 : 16384 / j.inner;
    loom__cpu_parallel(a->cpu, runs, grain, permute_runs, &j);
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
