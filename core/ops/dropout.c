/* core/ops/dropout.c — inverted dropout: builder and backward rule.
 *
 * Parameters: f[LOOM_F_DROP_P] = p, the drop probability in [0, 1); p[LOOM_P_DROP_STREAM] = the node's
 * Philox stream (taken from g->next_stream when the forward node is built).
 *
 * Mask (every backend computes the same bits): element i of a tensor is kept
 * iff loom_u32_to_unit(w[i % 4]) >= p, i.e. (w[i % 4] >> 8) >= ceil(p * 2^24),
 * where w = loom_philox(seed = graph seed, stream = p[LOOM_P_DROP_STREAM],
 *                        counter = ((step mod 2^24) << 40) | (i / 4))
 * and step is the plan step. (seed, stream, step, i) map to distinct Philox
 * inputs for tensors of fewer than 2^40 elements; masks repeat after 2^24
 * steps. Kept elements are scaled by 1 / (1 - p), dropped ones are 0.
 *
 * The backward pass is a dropout node on dy with the same stream and p: the
 * mask is regenerated, not stored. */
#include <math.h>

#include "../impl.h"
#include "../params.h"

static loom_tensor *dropout_node(loom_graph *g, loom_tensor *x, double p, int64_t stream) {
    loom_tensor *y = loom__node(g, LOOM_OP_DROPOUT, x->dtype, x->ndim, x->dims, 1, &x);
    if (!y) return NULL;
    y->f[LOOM_F_DROP_P] = p;
    y->p[LOOM_P_DROP_STREAM] = stream;
    return y;
}

loom_tensor *loom_dropout(loom_graph *g, loom_tensor *x, double p) {
    if (!loom__ok(g, 1, x)) return NULL;
    if (!loom_dtype_is_float(x->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "dropout: x '%s' has dtype %s, a float dtype is required", x->name,
                          loom_dtype_name(x->dtype));
    if (!(p >= 0 && p < 1))
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "dropout: p = %g on x '%s'; p must be in [0, 1)", p, x->name);
    if (p == 0) return x;
    return dropout_node(g, x, p, (int64_t)g->next_stream++);
}

loom_status loom__bw_dropout(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    dx[0] = dropout_node(g, dy, y->f[LOOM_F_DROP_P], y->p[LOOM_P_DROP_STREAM]);
    return g->status;
}
