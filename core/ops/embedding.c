/* core/ops/embedding.c — PLACEHOLDER: builders and backward rules of the embedding family. */
#include "../impl.h"

loom_tensor *loom_embedding(loom_graph *g, loom_tensor *weight, loom_tensor *idx) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "embedding: not implemented yet");
}

loom_status loom__bw_embedding(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "embedding: backward not implemented yet");
}
