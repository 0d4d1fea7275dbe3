/* core/ops/softmax.c — PLACEHOLDER: builders and backward rules of the softmax family. */
#include "../impl.h"

loom_tensor *loom_softmax(loom_graph *g, loom_tensor *x) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "softmax: not implemented yet");
}

loom_tensor *loom_log_softmax(loom_graph *g, loom_tensor *x) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "log_softmax: not implemented yet");
}

loom_status loom__bw_softmax(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "softmax: backward not implemented yet");
}

loom_status loom__bw_log_softmax(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "log_softmax: backward not implemented yet");
}
