/* core/ops/reduce.c — PLACEHOLDER: builders and backward rules of the reduce family. */
#include "../impl.h"

loom_tensor *loom_sum(loom_graph *g, loom_tensor *x, unsigned axes_mask, bool keepdim) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "sum: not implemented yet");
}

loom_tensor *loom_mean(loom_graph *g, loom_tensor *x, unsigned axes_mask, bool keepdim) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "mean: not implemented yet");
}

loom_status loom__bw_sum(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "sum: backward not implemented yet");
}

loom_status loom__bw_mean(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "mean: backward not implemented yet");
}
