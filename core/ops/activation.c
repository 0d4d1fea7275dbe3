/* core/ops/activation.c — PLACEHOLDER: builders and backward rules of the activation family. */
#include "../impl.h"

loom_tensor *loom_relu(loom_graph *g, loom_tensor *x) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "relu: not implemented yet");
}

loom_tensor *loom_leaky_relu(loom_graph *g, loom_tensor *x, double slope) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "leaky_relu: not implemented yet");
}

loom_tensor *loom_gelu(loom_graph *g, loom_tensor *x) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "gelu: not implemented yet");
}

loom_tensor *loom_silu(loom_graph *g, loom_tensor *x) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "silu: not implemented yet");
}

loom_tensor *loom_tanh(loom_graph *g, loom_tensor *x) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "tanh: not implemented yet");
}

loom_tensor *loom_sigmoid(loom_graph *g, loom_tensor *x) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "sigmoid: not implemented yet");
}

loom_status loom__bw_relu(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "relu: backward not implemented yet");
}

loom_status loom__bw_leaky_relu(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "leaky_relu: backward not implemented yet");
}

loom_status loom__bw_gelu(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "gelu: backward not implemented yet");
}

loom_status loom__bw_silu(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "silu: backward not implemented yet");
}

loom_status loom__bw_tanh(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "tanh: backward not implemented yet");
}

loom_status loom__bw_sigmoid(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "sigmoid: backward not implemented yet");
}
