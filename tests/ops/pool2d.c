/* tests/ops/pool2d.c — op cases: max and average pooling (odd sizes,
 * padding, stride != kernel, non-square kernels, exclude pad and 1),
 * adaptive average pooling (divisible, non-divisible, output larger than the
 * input) and global average pooling. max_pool2d_grad, avg_pool2d_grad and
 * adaptive_avg_pool2d_grad run in the appended backward pass.
 *
 * Max pooling routes the gradient to each window's maximum: with 16-bit
 * storage two nearby values can round to a tie (or swap), and the gradient
 * goes elsewhere than in f64. The plain random max cases are therefore
 * f32/f64 only; the "separated" case adds a constant whose values are distinct
 * by several 16-bit ulps, so every window has one clear maximum in any dtype. */
#include "cases.h"

#include <stdlib.h>

typedef struct pool_spec {
    int64_t x[4];
    loom_pool2d_desc d; /* kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, exclude_pad */
} pool_spec;

static const pool_spec specs[] = {
    /* 0: 2x2, default stride (= kernel), even size */
    {{2, 3, 6, 6}, {2, 2, 0, 0, 0, 0, 1}},
    /* 1: 3x3 stride 2 pad 1 on an odd size, include pad */
    {{2, 2, 7, 5}, {3, 3, 2, 2, 1, 1, 0}},
    /* 2: the same with exclude pad */
    {{2, 2, 7, 5}, {3, 3, 2, 2, 1, 1, 1}},
    /* 3: 3x2 kernel, stride (1,2) (overlapping rows), pad (1,1), exclude pad */
    {{1, 3, 5, 7}, {3, 2, 1, 2, 1, 1, 1}},
    /* 4: 2x3 kernel, stride 2 (windows do not cover the last row/column), no pad */
    {{2, 2, 7, 8}, {2, 3, 2, 2, 0, 0, 0}},
    /* 5: 3x3 stride 1 pad 1 (same size), include pad */
    {{1, 2, 5, 6}, {3, 3, 1, 1, 1, 1, 0}},
    /* 6: 2x2 stride 2 on odd sizes (the CPU fast path; last row and column unused) */
    {{2, 3, 7, 5}, {2, 2, 2, 2, 0, 0, 0}},
};

static loom_tensor *max_pool(loom_graph *g, loom_dtype dt, int v) {
    return loom_max_pool2d(g, tc_param(g, "x", dt, 4, specs[v].x, -1, 1), &specs[v].d);
}

static loom_tensor *avg_pool(loom_graph *g, loom_dtype dt, int v) {
    return loom_avg_pool2d(g, tc_param(g, "x", dt, 4, specs[v].x, -1, 1), &specs[v].d);
}

/* x + c, c a constant holding 0.5 * (a permutation of 0..n-1) - n/4: any two
 * values differ by >= 0.5 - 0.2, more than two bf16 ulps at |c| < 64 */
static loom_tensor *max_pool_separated(loom_graph *g, loom_dtype dt, int v) {
    const int64_t *dims = specs[v].x;
    int64_t n = dims[0] * dims[1] * dims[2] * dims[3];
    double *c = malloc((size_t)n * sizeof *c);
    void *cd = malloc((size_t)n * 8);
    loom_tensor *sep = NULL;
    if (c && cd) {
        for (int64_t i = 0; i < n; i++) c[i] = 0.5 * (double)((i * 7919) % n) - 0.25 * (double)n; /* 7919 prime > n */
        loom_convert(c, LOOM_F64, cd, dt, (size_t)n);
        sep = loom_constant(g, "sep", dt, 4, dims, cd);
    }
    free(c);
    free(cd);
    loom_tensor *x = tc_param(g, "x", dt, 4, dims, -0.1, 0.1);
    return loom_max_pool2d(g, loom_add(g, x, sep), &specs[v].d);
}

/* variants: 0 7x5 -> 3x2, 1 6x6 -> 3x3 (divisible), 2 5x4 -> 7x6 (overlapping bins), 3 9x7 -> 4x5 */
static loom_tensor *adaptive(loom_graph *g, loom_dtype dt, int v) {
    static const int64_t X[][4] = {{2, 3, 7, 5}, {1, 2, 6, 6}, {1, 2, 5, 4}, {2, 2, 9, 7}};
    static const int O[][2] = {{3, 2}, {3, 3}, {7, 6}, {4, 5}};
    return loom_adaptive_avg_pool2d(g, tc_param(g, "x", dt, 4, X[v], -1, 1), O[v][0], O[v][1]);
}

static loom_tensor *global(loom_graph *g, loom_dtype dt, int v) {
    (void)v;
    return loom_global_avg_pool2d(g, tc_param(g, "x", dt, TC_DIMS(2, 4, 5, 3), -1, 1));
}

const loom_op_case loom_cases_pool2d[] = {
    {"max_pool2d 2x2 (6x6)", max_pool, 0, 0, TC_NO_16BIT, 0},
    {"max_pool2d 3x3 stride 2 pad 1 (7x5)", max_pool, 1, 0, TC_NO_16BIT, 0},
    {"max_pool2d 3x2 stride (1,2) pad 1 (5x7)", max_pool, 3, 0, TC_NO_16BIT, 0},
    {"max_pool2d 2x3 stride 2 (7x8)", max_pool, 4, 0, TC_NO_16BIT, 0},
    {"max_pool2d 3x3 stride 1 pad 1 (5x6)", max_pool, 5, 0, TC_NO_16BIT, 0},
    {"max_pool2d 2x2 stride 2 (7x5, odd)", max_pool, 6, 0, TC_NO_16BIT, 0},
    {"max_pool2d 2x2 (6x6), separated values", max_pool_separated, 0, 0, 0, 0},
    {"max_pool2d 3x3 stride 2 pad 1, separated values", max_pool_separated, 1, 0, 0, 0},
    {"max_pool2d 3x2 stride (1,2) pad 1, separated values", max_pool_separated, 3, 0, 0, 0},
    {"avg_pool2d 2x2 (6x6)", avg_pool, 0, 0, 0, 0},
    {"avg_pool2d 3x3 stride 2 pad 1 include_pad (7x5)", avg_pool, 1, 0, 0, 0},
    {"avg_pool2d 3x3 stride 2 pad 1 exclude_pad (7x5)", avg_pool, 2, 0, 0, 0},
    {"avg_pool2d 3x2 stride (1,2) pad 1 exclude_pad (5x7)", avg_pool, 3, 0, 0, 0},
    {"avg_pool2d 2x3 stride 2 (7x8)", avg_pool, 4, 0, 0, 0},
    {"avg_pool2d 3x3 stride 1 pad 1 include_pad (5x6)", avg_pool, 5, 0, 0, 0},
    {"adaptive_avg_pool2d 7x5 -> 3x2", adaptive, 0, 0, 0, 0},
    {"adaptive_avg_pool2d 6x6 -> 3x3", adaptive, 1, 0, 0, 0},
    {"adaptive_avg_pool2d 5x4 -> 7x6", adaptive, 2, 0, 0, 0},
    {"adaptive_avg_pool2d 9x7 -> 4x5", adaptive, 3, 0, 0, 0},
    {"global_avg_pool2d (2,4,5,3)", global, 0, 0, 0, 0},
    {0},
};
