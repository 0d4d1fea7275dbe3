/* core/ops/softmax.c — softmax and log_softmax over the last axis, and their
 * backward-only gradient ops: builders and backward rules.
 *
 * No parameters. Inputs of any ndim >= 1 and a float dtype; the output has
 * the input's shape. Gradient ops (created only by the backward rules):
 *   softmax_grad(y, dy):     dx = y (dy - sum(dy y))     (sum over the last axis)
 *   log_softmax_grad(y, dy): dx = dy - exp(y) sum(dy)
 * where y is the forward output. */
#include "../impl.h"

static loom_tensor *softmax_op(loom_graph *g, int op, loom_tensor *x) {
    if (!loom__ok(g, 1, x)) return NULL;
    loom__autocast(g, op, 1, &x);
    if (!loom_dtype_is_float(x->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "%s: '%s' has dtype %s, a float dtype is required", loom_op_name(op),
                          x->name, loom_dtype_name(x->dtype));
    if (x->ndim < 1)
        return loom__fail(g, LOOM_ERR_SHAPE, "%s: '%s' is a scalar (shape []); at least 1 dimension is required",
                          loom_op_name(op), x->name);
    return loom__node(g, op, x->dtype, x->ndim, x->dims, 1, &x);
}

loom_tensor *loom_softmax(loom_graph *g, loom_tensor *x) { return softmax_op(g, LOOM_OP_SOFTMAX, x); }
loom_tensor *loom_log_softmax(loom_graph *g, loom_tensor *x) { return softmax_op(g, LOOM_OP_LOG_SOFTMAX, x); }

static loom_tensor *grad_op(loom_graph *g, int op, loom_tensor *y, loom_tensor *dy) {
    if (!loom__ok(g, 2, y, dy)) return NULL;
    LOOM__ASSERT(loom__same_shape(y, dy) && y->dtype == dy->dtype);
    loom_tensor *src[2] = {y, dy};
    return loom__node(g, op, y->dtype, y->ndim, y->dims, 2, src);
}

/* ---- backward rules ---- */
loom_status loom__bw_softmax(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    dx[0] = grad_op(g, LOOM_OP_SOFTMAX_GRAD, y, dy);
    return g->status;
}

loom_status loom__bw_log_softmax(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    dx[0] = grad_op(g, LOOM_OP_LOG_SOFTMAX_GRAD, y, dy);
    return g->status;
}
