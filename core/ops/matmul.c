/* core/ops/matmul.c — PLACEHOLDER: builders and backward rules of the matmul family. */
#include "../impl.h"

loom_tensor *loom_matmul(loom_graph *g, loom_tensor *a, loom_tensor *b, bool trans_a, bool trans_b) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "matmul: not implemented yet");
}

loom_tensor *loom_linear(loom_graph *g, loom_tensor *x, loom_tensor *w, loom_tensor *bias) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "linear: not implemented yet");
}

loom_status loom__bw_matmul(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "matmul: backward not implemented yet");
}

loom_status loom__bw_linear(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "linear: backward not implemented yet");
}
