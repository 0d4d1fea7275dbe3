/* core/ops/norm.c — PLACEHOLDER: builders and backward rules of the norm family. */
#include "../impl.h"

loom_tensor *loom_batch_norm(loom_graph *g, loom_tensor *x, loom_tensor *gamma, loom_tensor *beta, loom_tensor *running_mean, loom_tensor *running_var, bool train, double momentum, double eps) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "batch_norm: not implemented yet");
}

loom_tensor *loom_layer_norm(loom_graph *g, loom_tensor *x, int norm_dims, loom_tensor *gamma, loom_tensor *beta, double eps) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "layer_norm: not implemented yet");
}

loom_status loom__bw_batch_norm(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "batch_norm: backward not implemented yet");
}

loom_status loom__bw_layer_norm(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "layer_norm: backward not implemented yet");
}
