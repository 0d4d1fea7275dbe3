/* tests/ops/activation.c — op cases: relu, leaky_relu, gelu, silu, tanh,
 * sigmoid on several shapes (their gradient ops run in the appended backward
 * pass), and chains where the activation overwrites its input in place. */
#include "cases.h"

/* variants: 0 (7), 1 (3,5), 2 (2,3,4) */
static loom_tensor *input(loom_graph *g, loom_dtype dt, int v, double lo, double hi) {
    switch (v) {
    case 0: return tc_param(g, "x", dt, TC_DIMS(7), lo, hi);
    case 1: return tc_param(g, "x", dt, TC_DIMS(3, 5), lo, hi);
    default: return tc_param(g, "x", dt, TC_DIMS(2, 3, 4), lo, hi);
    }
}

static loom_tensor *relu(loom_graph *g, loom_dtype dt, int v) { return loom_relu(g, input(g, dt, v, -2, 2)); }
static loom_tensor *leaky_relu(loom_graph *g, loom_dtype dt, int v) {
    return loom_leaky_relu(g, input(g, dt, v, -2, 2), v == 1 ? 0.2 : 0.01);
}
static loom_tensor *gelu(loom_graph *g, loom_dtype dt, int v) { return loom_gelu(g, input(g, dt, v, -3, 3)); }
static loom_tensor *silu(loom_graph *g, loom_dtype dt, int v) { return loom_silu(g, input(g, dt, v, -4, 4)); }
static loom_tensor *tanh_(loom_graph *g, loom_dtype dt, int v) { return loom_tanh(g, input(g, dt, v, -2.5, 2.5)); }
static loom_tensor *sigmoid(loom_graph *g, loom_dtype dt, int v) { return loom_sigmoid(g, input(g, dt, v, -5, 5)); }

/* Activations of an intermediate: the planner may run them in place (tanh and
 * sigmoid keep their output for the backward pass, so x's buffer is free;
 * the others feed their input to the backward pass and keep it). */
static loom_tensor *chain(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *x = loom_scale(g, input(g, dt, 2, -2, 2), 1.5);
    switch (v) {
    case 0: return loom_sigmoid(g, loom_tanh(g, x));
    case 1: return loom_tanh(g, loom_gelu(g, loom_silu(g, x)));
    default: return loom_gelu(g, loom_leaky_relu(g, loom_tanh(g, x), 0.3));
    }
}

const loom_op_case loom_cases_activation[] = {
    {"relu (7)", relu, 0, 0, 0, 0},
    {"relu (3,5)", relu, 1, 0, 0, 0},
    {"relu (2,3,4)", relu, 2, 0, 0, 0},
    {"leaky_relu 0.01 (7)", leaky_relu, 0, 0, 0, 0},
    {"leaky_relu 0.2 (3,5)", leaky_relu, 1, 0, 0, 0},
    {"leaky_relu 0.01 (2,3,4)", leaky_relu, 2, 0, 0, 0},
    {"gelu (7)", gelu, 0, 0, 0, 0},
    {"gelu (3,5)", gelu, 1, 0, 0, 0},
    {"gelu (2,3,4)", gelu, 2, 0, 0, 0},
    {"silu (7)", silu, 0, 0, 0, 0},
    {"silu (3,5)", silu, 1, 0, 0, 0},
    {"silu (2,3,4)", silu, 2, 0, 0, 0},
    {"tanh (7)", tanh_, 0, 0, 0, 0},
    {"tanh (3,5)", tanh_, 1, 0, 0, 0},
    {"tanh (2,3,4)", tanh_, 2, 0, 0, 0},
    {"sigmoid (7)", sigmoid, 0, 0, 0, 0},
    {"sigmoid (3,5)", sigmoid, 1, 0, 0, 0},
    {"sigmoid (2,3,4)", sigmoid, 2, 0, 0, 0},
    {"sigmoid(tanh(1.5x)) in place", chain, 0, 0, 0, 0},
    {"tanh(gelu(silu(1.5x))) in place", chain, 1, 0, 0, 0},
    {"gelu(leaky_relu(tanh(1.5x), 0.3))", chain, 2, 0, 0, 0},
    {0},
};
