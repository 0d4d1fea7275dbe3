/* tests/ops/softmax.c — op cases: softmax and log_softmax over the last axis
 * of (1,1), (5), (4,10), (2,3,17) inputs (softmax_grad and log_softmax_grad run
 * in the appended backward pass), and a large-logit row that needs the max
 * subtraction. */
#include "cases.h"

/* variants: 0 (1,1), 1 (5), 2 (4,10), 3 (2,3,17), 4 (3,6) with logits up to 60 */
static loom_tensor *input(loom_graph *g, loom_dtype dt, int v) {
    switch (v) {
    case 0: return tc_param(g, "x", dt, TC_DIMS(1, 1), -2, 2);
    case 1: return tc_param(g, "x", dt, TC_DIMS(5), -2, 2);
    case 2: return tc_param(g, "x", dt, TC_DIMS(4, 10), -3, 3);
    case 3: return tc_param(g, "x", dt, TC_DIMS(2, 3, 17), -3, 3);
    default: return loom_scale(g, tc_param(g, "x", dt, TC_DIMS(3, 6), 0.9, 1.1), 55.0);
    }
}

/* A single-element row makes softmax exactly 1 and log_softmax exactly 0 with
 * a zero gradient; multiply by x so the checked output and gradient are not
 * identically zero (the softmax gradient op still runs). */
static loom_tensor *softmax(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *x = input(g, dt, v);
    loom_tensor *y = loom_softmax(g, x);
    return v == 0 ? loom_mul(g, y, x) : y;
}
static loom_tensor *log_softmax(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *x = input(g, dt, v);
    loom_tensor *y = loom_log_softmax(g, x);
    return v == 0 ? loom_add(g, y, x) : y;
}

const loom_op_case loom_cases_softmax[] = {
    {"softmax (1,1) * x", softmax, 0, 0, 0, 0},
    {"softmax (5)", softmax, 1, 0, 0, 0},
    {"softmax (4,10)", softmax, 2, 0, 0, 0},
    {"softmax (2,3,17)", softmax, 3, 0, 0, 0},
    {"softmax (3,6) large logits", softmax, 4, 0, TC_NO_16BIT, 0},
    {"log_softmax (1,1) + x", log_softmax, 0, 0, 0, 0},
    {"log_softmax (5)", log_softmax, 1, 0, 0, 0},
    {"log_softmax (4,10)", log_softmax, 2, 0, 0, 0},
    {"log_softmax (2,3,17)", log_softmax, 3, 0, 0, 0},
    {"log_softmax (3,6) large logits", log_softmax, 4, 0, TC_NO_16BIT, 0},
    {0},
};
