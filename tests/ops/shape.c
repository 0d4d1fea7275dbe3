/* tests/ops/shape.c — op cases: reshape/flatten (views), permute/transpose,
 * concat, slice. Each output is scaled or combined so views and copies are
 * read through real ops too. */
#include "cases.h"

static loom_tensor *reshape(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *x = tc_param(g, "x", dt, TC_DIMS(2, 3, 4), -1, 1);
    loom_tensor *r = v == 0 ? loom_reshape(g, x, TC_DIMS(4, -1)) : loom_flatten(g, x, 1, -1);
    /* through a second use of the view and of its source */
    loom_tensor *w = tc_param(g, "w", dt, TC_DIMS(v == 0 ? 6 : 12), -1, 1);
    return loom_mul(g, r, w);
}
/* the last: a gpt's head split, the last axis kept (the CPU copies runs), with runs enough for threads */
static const int perms[][5] = {{1, 0}, {0, 2, 1}, {2, 0, 1}, {3, 1, 0, 2}, {4, 3, 2, 1, 0}, {0, 2, 1, 3}};
static loom_tensor *permute(loom_graph *g, loom_dtype dt, int v) {
    static const int64_t shapes[][5] = {{5, 3}, {2, 3, 7}, {4, 1, 3}, {2, 3, 4, 5}, {2, 1, 3, 2, 2}, {2, 40, 6, 300}};
    static const int nd[] = {2, 3, 3, 4, 5, 4};
    loom_tensor *x = tc_param(g, "x", dt, nd[v], shapes[v], -1, 1);
    return loom_permute(g, x, perms[v]);
}
static loom_tensor *transpose(loom_graph *g, loom_dtype dt, int v) {
    (void)v;
    return loom_transpose(g, tc_param(g, "x", dt, TC_DIMS(3, 4, 5), -1, 1), -1, 0);
}
static loom_tensor *concat(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *xs[3];
    if (v == 0) { /* axis 0 */
        xs[0] = tc_param(g, "a", dt, TC_DIMS(2, 3), -1, 1);
        xs[1] = tc_param(g, "b", dt, TC_DIMS(1, 3), -1, 1);
        xs[2] = tc_param(g, "c", dt, TC_DIMS(4, 3), -1, 1);
        return loom_concat(g, xs, 3, 0);
    }
    xs[0] = tc_param(g, "a", dt, TC_DIMS(2, 3, 5), -1, 1); /* middle axis */
    xs[1] = tc_param(g, "b", dt, TC_DIMS(2, 1, 5), -1, 1);
    return loom_concat(g, xs, 2, v == 1 ? 1 : -2);
}
static loom_tensor *slice(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *x = tc_param(g, "x", dt, TC_DIMS(4, 7, 3), -1, 1);
    switch (v) {
    case 0: return loom_slice(g, x, 0, 1, 3);
    case 1: return loom_slice(g, x, 1, 2, -1);
    default: return loom_slice(g, x, -1, 2, 3);
    }
}

/* rows of at least 4 elements (the GPU backends' one-invocation-per-row form on CPU devices) */
static loom_tensor *slice_wide(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *x = tc_param(g, "x", dt, TC_DIMS(3, 5, 12), -1, 1);
    return v ? loom_slice(g, x, -1, 3, 10) : loom_slice(g, x, 1, 1, 4);
}

const loom_op_case loom_cases_shape[] = {
    {"reshape (2,3,4)->(4,6)", reshape, 0, 0, 0},
    {"flatten (2,3,4)->(2,12)", reshape, 1, 0, 0},
    {"permute 2d", permute, 0, 0, 0},
    {"permute (0,2,1)", permute, 1, 0, 0},
    {"permute (2,0,1)", permute, 2, 0, 0},
    {"permute 4d", permute, 3, 0, 0},
    {"permute 5d reverse", permute, 4, 0, 0},
    {"permute (0,2,1,3), last axis kept", permute, 5, 0, 0},
    {"transpose (-1,0)", transpose, 0, 0, 0},
    {"concat axis 0, 3 inputs", concat, 0, 0, 0},
    {"concat axis 1", concat, 1, 0, 0},
    {"concat axis -2", concat, 2, 0, 0},
    {"slice axis 0", slice, 0, 0, 0},
    {"slice axis 1 negative end", slice, 1, 0, 0},
    {"slice last axis", slice, 2, 0, 0},
    {"slice middle axis, rows of 12", slice_wide, 0, 0, 0},
    {"slice last axis, 7 of 12", slice_wide, 1, 0, 0},
    {0},
};
