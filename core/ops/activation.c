/* core/ops/activation.c — elementwise activations (relu, leaky_relu, gelu,
 * silu, tanh, sigmoid) and their backward-only gradient ops: builders and
 * backward rules.
 *
 * Parameters: leaky_relu and leaky_relu_grad f[LOOM_F_LEAKY_SLOPE] =
 * negative slope.
 * gelu is the exact form 0.5 x (1 + erf(x / sqrt 2)) (torch's default).
 *
 * Gradient ops (created only by the backward rules below):
 *   relu_grad(x, dy), leaky_relu_grad(x, dy), gelu_grad(x, dy), silu_grad(x, dy)
 *       read the forward input x;
 *   tanh_grad(y, dy), sigmoid_grad(y, dy) read the forward output y, so the
 *       forward node may overwrite x in place.
 * Every gradient op has the shape and dtype of its first input. */
#include <math.h>

#include "../impl.h"
#include "../params.h"

static loom_tensor *unary(loom_graph *g, int op, loom_tensor *x) {
    if (!loom__ok(g, 1, x)) return NULL;
    if (!loom_dtype_is_float(x->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "%s: '%s' has dtype %s, a float dtype is required", loom_op_name(op),
                          x->name, loom_dtype_name(x->dtype));
    return loom__node(g, op, x->dtype, x->ndim, x->dims, 1, &x);
}

loom_tensor *loom_relu(loom_graph *g, loom_tensor *x) { return unary(g, LOOM_OP_RELU, x); }
loom_tensor *loom_gelu(loom_graph *g, loom_tensor *x) { return unary(g, LOOM_OP_GELU, x); }
loom_tensor *loom_silu(loom_graph *g, loom_tensor *x) { return unary(g, LOOM_OP_SILU, x); }
loom_tensor *loom_tanh(loom_graph *g, loom_tensor *x) { return unary(g, LOOM_OP_TANH, x); }
loom_tensor *loom_sigmoid(loom_graph *g, loom_tensor *x) { return unary(g, LOOM_OP_SIGMOID, x); }

loom_tensor *loom_leaky_relu(loom_graph *g, loom_tensor *x, double slope) {
    if (g && g->status == LOOM_OK && !isfinite(slope))
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "leaky_relu: slope must be finite, got %g", slope);
    loom_tensor *y = unary(g, LOOM_OP_LEAKY_RELU, x);
    if (y) y->f[LOOM_F_LEAKY_SLOPE] = slope;
    return y;
}

/* op(a, dy) with a's shape; a is the forward input or output, dy the
 * gradient of the forward output (same shape, by construction). */
static loom_tensor *grad_op(loom_graph *g, int op, loom_tensor *a, loom_tensor *dy) {
    if (!loom__ok(g, 2, a, dy)) return NULL;
    LOOM__ASSERT(loom__same_shape(a, dy) && a->dtype == dy->dtype);
    loom_tensor *src[2] = {a, dy};
    return loom__node(g, op, a->dtype, a->ndim, a->dims, 2, src);
}

/* ---- backward rules ---- */
loom_status loom__bw_relu(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    dx[0] = grad_op(g, LOOM_OP_RELU_GRAD, y->src[0], dy);
    return g->status;
}

loom_status loom__bw_leaky_relu(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    dx[0] = grad_op(g, LOOM_OP_LEAKY_RELU_GRAD, y->src[0], dy);
    if (dx[0]) dx[0]->f[LOOM_F_LEAKY_SLOPE] = y->f[LOOM_F_LEAKY_SLOPE];
    return g->status;
}

loom_status loom__bw_gelu(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    dx[0] = grad_op(g, LOOM_OP_GELU_GRAD, y->src[0], dy);
    return g->status;
}

loom_status loom__bw_silu(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    dx[0] = grad_op(g, LOOM_OP_SILU_GRAD, y->src[0], dy);
    return g->status;
}

/* dx = dy (1 - y^2) */
loom_status loom__bw_tanh(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    dx[0] = grad_op(g, LOOM_OP_TANH_GRAD, y, dy);
    return g->status;
}

/* dx = dy y (1 - y) */
loom_status loom__bw_sigmoid(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    dx[0] = grad_op(g, LOOM_OP_SIGMOID_GRAD, y, dy);
    return g->status;
}
