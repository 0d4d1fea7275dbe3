/* core/ops/conv2d.c — PLACEHOLDER: builders and backward rules of the conv2d family. */
#include "../impl.h"

loom_tensor *loom_conv2d(loom_graph *g, loom_tensor *x, loom_tensor *w, loom_tensor *bias, const loom_conv2d_desc *desc) {
    return loom__fail(g, LOOM_ERR_UNSUPPORTED, "conv2d: not implemented yet");
}

loom_status loom__bw_conv2d(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "conv2d: backward not implemented yet");
}
