/* backends/opencl/ops/shape.c — host side of permute, concat, slice and
 * slice_grad (kernels/shape.cl): data movement by element size, any dtype
 * (parameters in core/ops/shape.c); permute and slice one item per output
 * row of at least ROWS_MIN elements where loom__cl_rows says (CPU devices). */
#include "../opencl.h"

#define ROWS_MIN 4

/* "permute_u32" etc. for t's element size */
static const char *kname(const char *stem, const loom_tensor *t, char *buf, size_t n) {
    size_t es = loom_dtype_size(t->dtype);
    snprintf(buf, n, "%s_%s", stem, es == 1 ? "u8" : es == 2 ? "u16" : "u32");
    LOOM__ASSERT(es == 1 || es == 2 || es == 4);
    return buf;
}

static void axis_split(const loom_tensor *t, int ax, int64_t *outer, int64_t *inner) {
    *outer = 1, *inner = 1;
    for (int i = 0; i < ax; i++) *outer *= t->dims[i];
    for (int i = ax + 1; i < t->ndim; i++) *inner *= t->dims[i];
}

static loom_status get_kernel(loom__cl_op *o, const char *stem, cl_kernel *k) {
    char name[48];
    return loom__cl_kernel(o, LOOM_F32, kname(stem, o->t, name, sizeof name), k);
}

loom_status loom__cl_permute(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t g[11] = {y->ndim}, xs[LOOM_MAX_DIMS], st = 1;
    for (int i = x->ndim - 1; i >= 0; i--) xs[i] = st, st *= x->dims[i];
    for (int i = 0; i < y->ndim; i++) g[1 + i] = y->dims[i], g[6 + i] = xs[y->p[LOOM_P_PERMUTE_PERM + i]];
    cl_mem gm;
    cl_kernel k;
    loom_status s;
    int64_t L = y->ndim ? y->dims[y->ndim - 1] : 1, n = loom_tensor_numel(y);
    bool rows = L >= ROWS_MIN && loom__cl_rows(o->cl);
    if ((s = loom__cl_meta(o, g, 11, &gm)) != LOOM_OK ||
        (s = get_kernel(o, rows ? "permute_rows" : "permute", &k)) != LOOM_OK)
        return s;
    n = rows ? n / L : n;
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_mem(&ar, gm), loom__cl_arg_t(&ar, x), loom__cl_arg_t(&ar, y);
    loom__cl_arg_i64(&ar, n);
    if ((s = loom__cl_args_end(&ar)) != LOOM_OK) return s;
    return loom__cl_launch_1d(o, k, n);
}

loom_status loom__cl_concat(loom__cl_op *o) {
    const loom_tensor *y = o->t;
    int ax = (int)y->p[LOOM_P_CONCAT_AXIS];
    int64_t outer, inner, g[3 + LOOM_MAX_SRC + 1] = {y->nsrc};
    axis_split(y, ax, &outer, &inner);
    g[1] = inner, g[2] = y->dims[ax], g[3] = 0;
    for (int i = 0; i < y->nsrc; i++) g[4 + i] = g[3 + i] + y->src[i]->dims[ax];
    cl_mem gm;
    cl_kernel k;
    loom_status s;
    if ((s = loom__cl_meta(o, g, 4 + y->nsrc, &gm)) != LOOM_OK || (s = get_kernel(o, "concat", &k)) != LOOM_OK)
        return s;
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_mem(&ar, gm), loom__cl_arg_t(&ar, y), loom__cl_arg_i64(&ar, loom_tensor_numel(y));
    for (int i = 0; i < LOOM_MAX_SRC; i++) loom__cl_arg_t(&ar, y->src[i < y->nsrc ? i : 0]);
    if ((s = loom__cl_args_end(&ar)) != LOOM_OK) return s;
    return loom__cl_launch_1d(o, k, loom_tensor_numel(y));
}

/* slice: big = x, small = y; slice_grad: big = y, small = dy */
static loom_status run_slice(loom__cl_op *o, const char *stem, const loom_tensor *src, const loom_tensor *big,
                             const loom_tensor *small) {
    const loom_tensor *y = o->t;
    int ax = (int)y->p[LOOM_P_SLICE_AXIS];
    int64_t outer, inner;
    axis_split(big, ax, &outer, &inner);
    /* rows of inner elements, or with inner 1 (the last axis) the outer rows of the axis */
    bool rows = (inner >= ROWS_MIN || (inner == 1 && small->dims[ax] >= ROWS_MIN)) && loom__cl_rows(o->cl);
    int64_t n = !rows ? loom_tensor_numel(y) : inner == 1 ? outer : loom_tensor_numel(y) / inner;
    char name[24];
    snprintf(name, sizeof name, "%s%s", stem, rows ? "_rows" : "");
    cl_kernel k;
    loom_status s = get_kernel(o, name, &k);
    if (s != LOOM_OK) return s;
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&ar, src), loom__cl_arg_t(&ar, y);
    loom__cl_arg_i64(&ar, n), loom__cl_arg_i64(&ar, inner);
    loom__cl_arg_i64(&ar, small->dims[ax]), loom__cl_arg_i64(&ar, big->dims[ax]),
        loom__cl_arg_i64(&ar, y->p[LOOM_P_SLICE_START]);
    if ((s = loom__cl_args_end(&ar)) != LOOM_OK) return s;
    return loom__cl_launch_1d(o, k, n);
}

loom_status loom__cl_slice(loom__cl_op *o) { return run_slice(o, "slice", o->t->src[0], o->t->src[0], o->t); }
loom_status loom__cl_slice_grad(loom__cl_op *o) { return run_slice(o, "slice_grad", o->t->src[0], o->t, o->t->src[0]); }
