/* tests/ops/nan.c — op cases with NaN and infinite inputs: relu, leaky_relu
 * and max_pool2d propagate NaN as PyTorch does (relu(NaN) = NaN, a max-pool
 * window holding a NaN gives NaN), on every backend the same positions as on
 * the CPU (the op-check counts a NaN or infinity in the same place in both as
 * equal). The input is x + M, M a constant that is NaN, +inf or -inf at a few
 * places and 0 elsewhere; the gradients (relu's passes the incoming gradient
 * at a NaN, max-pool's goes to the NaN) stay finite and are compared as usual.
 * No finite differences through NaN: TC_NO_GRADCHECK. */
#include "cases.h"

#include <math.h>
#include <stdlib.h>

/* x (U(-2, 2)) + M of the same shape */
static loom_tensor *with_nan(loom_graph *g, loom_dtype dt, int ndim, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= dims[i];
    double *m = malloc((size_t)n * sizeof *m);
    void *md = malloc((size_t)n * 8);
    loom_tensor *c = NULL;
    if (m && md) {
        for (int64_t i = 0; i < n; i++) m[i] = i % 7 == 3 ? NAN : i % 11 == 5 ? INFINITY : i % 13 == 8 ? -INFINITY : 0;
        loom_convert(m, LOOM_F64, md, dt, (size_t)n);
        c = loom_constant(g, "nan_mask", dt, ndim, dims, md);
    }
    free(m);
    free(md);
    loom_tensor *x = tc_param(g, "x", dt, ndim, dims, -2, 2);
    return c ? loom_add(g, x, c) : NULL;
}

static loom_tensor *relu(loom_graph *g, loom_dtype dt, int v) {
    return v ? loom_relu(g, with_nan(g, dt, TC_DIMS(2, 3, 4))) : loom_relu(g, with_nan(g, dt, TC_DIMS(3, 5)));
}
static loom_tensor *leaky_relu(loom_graph *g, loom_dtype dt, int v) {
    return loom_leaky_relu(g, v ? with_nan(g, dt, TC_DIMS(2, 3, 4)) : with_nan(g, dt, TC_DIMS(3, 5)), 0.1);
}
static loom_tensor *max_pool(loom_graph *g, loom_dtype dt, int v) {
    loom_pool2d_desc d2 = {.kernel_h = 2, .kernel_w = 2};
    loom_pool2d_desc d3 = {.kernel_h = 3, .kernel_w = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1};
    return v ? loom_max_pool2d(g, with_nan(g, dt, TC_DIMS(2, 2, 7, 5)), &d3)
             : loom_max_pool2d(g, with_nan(g, dt, TC_DIMS(2, 3, 6, 6)), &d2);
}

const loom_op_case loom_cases_nan[] = {
    {"relu with NaN and inf (3,5)", relu, 0, 0, TC_NO_GRADCHECK, 0},
    {"relu with NaN and inf (2,3,4)", relu, 1, 0, TC_NO_GRADCHECK, 0},
    {"leaky_relu 0.1 with NaN and inf (3,5)", leaky_relu, 0, 0, TC_NO_GRADCHECK, 0},
    {"leaky_relu 0.1 with NaN and inf (2,3,4)", leaky_relu, 1, 0, TC_NO_GRADCHECK, 0},
    {"max_pool2d 2x2 with NaN and inf (6x6)", max_pool, 0, 0, TC_NO_GRADCHECK | TC_NO_16BIT, 0},
    {"max_pool2d 3x3 stride 2 pad 1 with NaN and inf (7x5)", max_pool, 1, 0, TC_NO_GRADCHECK | TC_NO_16BIT, 0},
    {0},
};
