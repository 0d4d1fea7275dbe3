/* core/autodiff.c — reverse-mode differentiation as a graph transform.
 *
 * loom_backward walks the nodes in reverse creation order (a topological
 * order, since a node's sources are always older) and calls each op's
 * backward rule, which appends ordinary nodes. Where a tensor feeds several
 * nodes, its gradient contributions are summed with add nodes.
 */
#include "impl.h"

static loom_status accumulate(loom_graph *g, loom_tensor **slot, loom_tensor *contrib, const loom_tensor *src,
                              const loom_tensor *y) {
    char a[96], b[96];
    if (!contrib) return g->status != LOOM_OK ? g->status : loom__err(g->ctx, LOOM_ERR_STATE, "backward: no gradient");
    if (!loom__same_shape(contrib, src) || contrib->dtype != src->dtype) {
        loom__fail(g, LOOM_ERR_SHAPE,
                   "backward of '%s': gradient for '%s' has shape %s %s, expected %s %s (internal rule error)",
                   loom_op_name(y->op), src->name, loom_tensor_shape_str(contrib, a, sizeof a),
                   loom_dtype_name(contrib->dtype), loom_tensor_shape_str(src, b, sizeof b),
                   loom_dtype_name(src->dtype));
        return g->status;
    }
    *slot = *slot ? loom_add(g, *slot, contrib) : contrib;
    return *slot ? LOOM_OK : g->status;
}

static loom_status backward(loom_graph *g, loom_tensor *loss);

/* Gradients follow their tensors' dtypes exactly: autocast is off while the
 * backward pass is built. */
loom_status loom_backward(loom_graph *g, loom_tensor *loss) {
    if (!g) return LOOM_ERR_INVALID_ARG;
    loom_dtype ac = g->autocast;
    g->autocast = LOOM_F32;
    loom_status st = backward(g, loss);
    g->autocast = ac;
    return st;
}

static loom_status backward(loom_graph *g, loom_tensor *loss) {
    if (g->status != LOOM_OK)
        return loom__err(g->ctx, g->status, "backward: the graph has a failed builder: %s", g->error);
    if (!loss || loss->g != g) return loom__err(g->ctx, LOOM_ERR_INVALID_ARG, "backward: loss is NULL or foreign");
    if (g->has_backward) return loom__err(g->ctx, LOOM_ERR_STATE, "backward: already called on this graph");
    if (loom_tensor_numel(loss) != 1 || !loom_dtype_is_float(loss->dtype)) {
        char s[96];
        return loom__err(g->ctx, LOOM_ERR_SHAPE, "backward: loss '%s' must be one float element, got %s %s",
                         loss->name, loom_tensor_shape_str(loss, s, sizeof s), loom_dtype_name(loss->dtype));
    }
    if (!loss->requires_grad)
        return loom__err(g->ctx, LOOM_ERR_STATE, "backward: loss '%s' does not depend on any trainable parameter",
                         loss->name);
    g->has_backward = true;
    g->backward_start = g->n;

    int n = loss->id + 1;
    loom_tensor **grads = calloc((size_t)n, sizeof *grads);
    if (!grads) return loom__err(g->ctx, LOOM_ERR_OOM, "backward: out of memory");
    loom_status st = LOOM_OK;
    grads[loss->id] = loom_fill(g, loss->dtype, loss->ndim, loss->dims, 1.0);
    if (!grads[loss->id]) st = g->status;

    for (int i = loss->id; i >= 0 && st == LOOM_OK; i--) {
        loom_tensor *y = g->nodes[i];
        loom_tensor *dy = grads[i];
        if (!dy || !y->requires_grad) continue;
        y->grad = dy;
        if (y->op == LOOM__OP_LEAF) continue;
        loom_tensor *dx[LOOM_MAX_SRC] = {0};
        st = loom__ops[y->op].backward(g, y, dy, dx);
        if (st == LOOM_OK && g->status != LOOM_OK) st = g->status;
        for (int k = 0; k < y->nsrc && st == LOOM_OK; k++) {
            loom_tensor *s = y->src[k];
            if (!loom__needs_grad(s)) continue;
            if (!dx[k]) {
                st = loom__err(g->ctx, LOOM_ERR_STATE, "backward of '%s': no gradient produced for input %d ('%s')",
                               loom_op_name(y->op), k, s->name);
                break;
            }
            st = accumulate(g, &grads[s->id], dx[k], s, y);
        }
    }
    free(grads);
    if (st != LOOM_OK && g->status == LOOM_OK) {
        g->status = st;
        snprintf(g->error, sizeof g->error, "%s", loom_last_error(g->ctx));
    }
    return st;
}
