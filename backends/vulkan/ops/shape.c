/* backends/vulkan/ops/shape.c — host side of permute, concat, slice and
 * slice_grad (shaders/shape.comp): data movement by element size (variants
 * <kernel>_u8 / _u16 / _u32), so any dtype moves bit-exactly; one invocation
 * per output element, or for permute and slice, where loom__vk_rows says (CPU
 * devices) and rows hold at least ROWS_MIN elements, one per output row (the
 * *_rows variants: their index divisions once per row). Parameters in
 * core/ops/shape.c. */
#include "../vulkan.h"

/* start a dispatch of "<stem>_u8" etc. for t's element size */
static void begin(loom__vk_op *o, loom__vk_call *c, const char *stem, const loom_tensor *t) {
    size_t es = loom_dtype_size(t->dtype);
    char name[48];
    LOOM__ASSERT(es == 1 || es == 2 || es == 4);
    snprintf(name, sizeof name, "%s_%s", stem, es == 1 ? "u8" : es == 2 ? "u16" : "u32");
    loom__vk_begin(o, c, name, LOOM__VK_NODT);
}

#define ROWS_MIN 4

static void axis_split(const loom_tensor *t, int ax, int64_t *outer, int64_t *inner) {
    *outer = 1, *inner = 1;
    for (int i = 0; i < ax; i++) *outer *= t->dims[i];
    for (int i = ax + 1; i < t->ndim; i++) *inner *= t->dims[i];
}

/* y (dims) reads x at sum(i_k * xstride[perm[k]]); meta g = {nd, ydims[5], s[5]} */
loom_status loom__vk_permute(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t g[11] = {y->ndim}, xs[LOOM_MAX_DIMS], st = 1;
    for (int i = x->ndim - 1; i >= 0; i--) xs[i] = st, st *= x->dims[i];
    for (int i = 0; i < y->ndim; i++) g[1 + i] = y->dims[i], g[6 + i] = xs[y->p[LOOM_P_PERMUTE_PERM + i]];
    loom__buffer *gm;
    loom_status s = loom__vk_meta(o, g, 11, &gm);
    if (s != LOOM_OK) return s;
    loom__vk_call c;
    int64_t L = y->ndim ? y->dims[y->ndim - 1] : 1, n = loom_tensor_numel(y);
    bool rows = L >= ROWS_MIN && loom__vk_rows(o);
    begin(o, &c, rows ? "permute_rows" : "permute", y);
    loom__vk_buf(&c, gm, LOOM__VK_R);
    loom__vk_in(&c, x), loom__vk_out(&c, y);
    n = rows ? n / L : n;
    loom__vk_u32(&c, (uint32_t)n);
    return loom__vk_run_1d(&c, n);
}

_Static_assert(LOOM_MAX_SRC <= 8, "shape.comp's concat has 8 source bindings");

/* y (outer, L, inner) from up to LOOM_MAX_SRC (8) sources in one dispatch;
 * meta g = {nsrc, inner, L, start[0..nsrc]}; unused source bindings repeat src[0] */
loom_status loom__vk_concat(loom__vk_op *o) {
    const loom_tensor *y = o->t;
    int ax = (int)y->p[LOOM_P_CONCAT_AXIS];
    int64_t outer, inner, g[4 + LOOM_MAX_SRC] = {y->nsrc};
    LOOM__ASSERT(y->nsrc >= 1 && y->nsrc <= 8);
    axis_split(y, ax, &outer, &inner);
    g[1] = inner, g[2] = y->dims[ax], g[3] = 0;
    for (int i = 0; i < y->nsrc; i++) g[4 + i] = g[3 + i] + y->src[i]->dims[ax];
    loom__buffer *gm;
    loom_status s = loom__vk_meta(o, g, 4 + y->nsrc, &gm);
    if (s != LOOM_OK) return s;
    loom__vk_call c;
    begin(o, &c, "concat", y);
    loom__vk_buf(&c, gm, LOOM__VK_R);
    loom__vk_out(&c, y);
    for (int i = 0; i < 8; i++) loom__vk_in(&c, y->src[i < y->nsrc ? i : 0]);
    loom__vk_u32(&c, (uint32_t)loom_tensor_numel(y));
    return loom__vk_run_1d(&c, loom_tensor_numel(y));
}

/* slice: big = x, small = y; slice_grad: big = y, small = dy (src[0]) */
static loom_status run_slice(loom__vk_op *o, const char *stem, const loom_tensor *big, const loom_tensor *small) {
    const loom_tensor *y = o->t;
    int ax = (int)y->p[LOOM_P_SLICE_AXIS];
    int64_t outer, inner;
    axis_split(big, ax, &outer, &inner);
    loom__vk_call c;
    /* rows of inner elements, or with inner 1 (the last axis) the outer rows of the axis */
    bool rows = (inner >= ROWS_MIN || (inner == 1 && small->dims[ax] >= ROWS_MIN)) && loom__vk_rows(o);
    char name[24];
    snprintf(name, sizeof name, "%s%s", stem, rows ? "_rows" : "");
    begin(o, &c, name, y);
    loom__vk_in(&c, y->src[0]), loom__vk_out(&c, y);
    int64_t n = !rows ? loom_tensor_numel(y) : inner == 1 ? outer : loom_tensor_numel(y) / inner;
    loom__vk_u32(&c, (uint32_t)n), loom__vk_u32(&c, (uint32_t)inner);
    loom__vk_u32(&c, (uint32_t)small->dims[ax]), loom__vk_u32(&c, (uint32_t)big->dims[ax]);
    loom__vk_u32(&c, (uint32_t)y->p[LOOM_P_SLICE_START]);
    return loom__vk_run_1d(&c, n);
}

loom_status loom__vk_slice(loom__vk_op *o) { return run_slice(o, "slice", o->t->src[0], o->t); }
loom_status loom__vk_slice_grad(loom__vk_op *o) { return run_slice(o, "slice_grad", o->t, o->t->src[0]); }
