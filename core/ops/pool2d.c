/* core/ops/pool2d.c — PLACEHOLDER: builders and backward rules of the pool2d family. */
#include "../impl.h"

loom_tensor *loom_max_pool2d(loom_graph *g, loom_tensor *x, const loom_pool2d_desc *desc) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "max_pool2d: not implemented yet");
}

loom_tensor *loom_avg_pool2d(loom_graph *g, loom_tensor *x, const loom_pool2d_desc *desc) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "avg_pool2d: not implemented yet");
}

loom_tensor *loom_adaptive_avg_pool2d(loom_graph *g, loom_tensor *x, int out_h, int out_w) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "adaptive_avg_pool2d: not implemented yet");
}

loom_tensor *loom_global_avg_pool2d(loom_graph *g, loom_tensor *x) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "global_avg_pool2d: not implemented yet");
}

loom_status loom__bw_max_pool2d(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "max_pool2d: backward not implemented yet");
}

loom_status loom__bw_avg_pool2d(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "avg_pool2d: backward not implemented yet");
}

loom_status loom__bw_adaptive_avg_pool2d(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "adaptive_avg_pool2d: backward not implemented yet");
}
