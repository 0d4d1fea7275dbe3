/* core/ops/shape.c — PLACEHOLDER: builders and backward rules of the shape family. */
#include "../impl.h"

loom_tensor *loom_reshape(loom_graph *g, loom_tensor *x, int ndim, const int64_t *dims) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "reshape: not implemented yet");
}

loom_tensor *loom_flatten(loom_graph *g, loom_tensor *x, int start, int end) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "flatten: not implemented yet");
}

loom_tensor *loom_permute(loom_graph *g, loom_tensor *x, const int *perm) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "permute: not implemented yet");
}

loom_tensor *loom_transpose(loom_graph *g, loom_tensor *x, int axis0, int axis1) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "transpose: not implemented yet");
}

loom_tensor *loom_concat(loom_graph *g, loom_tensor *const *xs, int n, int axis) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "concat: not implemented yet");
}

loom_tensor *loom_slice(loom_graph *g, loom_tensor *x, int axis, int64_t start, int64_t end) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "slice: not implemented yet");
}

loom_status loom__bw_reshape(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "reshape: backward not implemented yet");
}

loom_status loom__bw_permute(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "permute: backward not implemented yet");
}

loom_status loom__bw_concat(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "concat: backward not implemented yet");
}

loom_status loom__bw_slice(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "slice: backward not implemented yet");
}
