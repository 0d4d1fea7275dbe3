/* core/ops/loss.c — PLACEHOLDER: builders and backward rules of the loss family. */
#include "../impl.h"

loom_tensor *loom_cross_entropy(loom_graph *g, loom_tensor *logits, loom_tensor *targets, double label_smoothing, int ignore_index) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "cross_entropy: not implemented yet");
}

loom_tensor *loom_mse(loom_graph *g, loom_tensor *a, loom_tensor *b) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "mse: not implemented yet");
}

loom_status loom__bw_cross_entropy(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "cross_entropy: backward not implemented yet");
}

loom_status loom__bw_mse(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "mse: backward not implemented yet");
}
