/* tests/ops/reduce.c — op cases: sum and mean over axis sets. */
#include "cases.h"

/* variant: axes mask in the low byte, keepdim in bit 8 */
static loom_tensor *sum(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *x = tc_param(g, "x", dt, TC_DIMS(3, 4, 5, 2), -1, 1);
    return loom_sum(g, x, (unsigned)v & 0xff, v >> 8);
}
static loom_tensor *mean(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *x = tc_param(g, "x", dt, TC_DIMS(3, 4, 5, 2), -1, 1);
    return loom_mean(g, x, (unsigned)v & 0xff, v >> 8);
}
static loom_tensor *sum_long(loom_graph *g, loom_dtype dt, int v) {
    (void)v;
    loom_tensor *x = tc_param(g, "x", dt, TC_DIMS(2, 3001), -1, 1);
    return loom_sum(g, x, 2u, false);
}

/* long contiguous runs (the GPU backends' chunked form: a run in several
 * parts): x (3, 25000); variant: the axes mask, mean in bit 8 */
static loom_tensor *sum_runs(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *x = tc_param(g, "x", dt, TC_DIMS(3, 25000), -1, 1);
    return v & 0x100 ? loom_mean(g, x, (unsigned)v & 0xff, false) : loom_sum(g, x, (unsigned)v & 0xff, false);
}

/* at least 64 outputs (the GPU backends' one-invocation-per-output form on CPU
 * devices): x (6, 70, 3, 4); variant: the axes mask */
static loom_tensor *sum_wide(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *x = tc_param(g, "x", dt, TC_DIMS(6, 70, 3, 4), -1, 1);
    return v & 0x100 ? loom_mean(g, x, (unsigned)v & 0xff, false) : loom_sum(g, x, (unsigned)v & 0xff, false);
}

const loom_op_case loom_cases_reduce[] = {
    {"sum all", sum, 0, 0, 0},
    {"sum axis 0", sum, 0x1, 0, 0},
    {"sum last axis keepdim", sum, 0x8 | 0x100, 0, 0},
    {"sum axes 1,2", sum, 0x6, 0, 0},
    {"sum axes 0,2,3 keepdim", sum, 0xd | 0x100, 0, 0},
    {"sum 3001 long rows", sum_long, 0, 0, 0},
    {"mean all", mean, 0, 0, 0},
    {"mean axes 0,3", mean, 0x9, 0, 0},
    {"mean axis 1 keepdim", mean, 0x2 | 0x100, 0, 0},
    {"sum axis 0, 840 outputs", sum_wide, 0x1, 0, 0},
    {"sum axes 0,2,3, 70 outputs", sum_wide, 0xd, 0, 0},
    {"mean axes 0,2, 280 outputs", sum_wide, 0x5 | 0x100, 0, 0},
    {"sum all, 75000 values in parts", sum_runs, 0x3, 0, 0},
    {"mean rows of 25000 in parts", sum_runs, 0x2 | 0x100, 0, 0},
    {0},
};
