/* core/ops/dropout.c — PLACEHOLDER: builders and backward rules of the dropout family. */
#include "../impl.h"

loom_tensor *loom_dropout(loom_graph *g, loom_tensor *x, double p) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "dropout: not implemented yet");
}

loom_status loom__bw_dropout(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "dropout: backward not implemented yet");
}
