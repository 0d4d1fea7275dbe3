/* tests/ops/dropout.c — op cases: inverted dropout on (1000,) and (4,33)
 * with p = 0.5 and 0.1. The mask depends only on (seed, stream, step, i), so
 * every dtype and backend sees the same mask; the gradient check holds the
 * step fixed, so the backward dropout node regenerates the same mask. */
#include "cases.h"

/* variant: bit 0 shape ((1000,) or (4,33)), bit 1 p (0.5 or 0.1) */
static loom_tensor *dropout(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *x = v & 1 ? tc_param(g, "x", dt, TC_DIMS(4, 33), -2, 2) : tc_param(g, "x", dt, TC_DIMS(1000), -2, 2);
    return loom_dropout(g, x, v & 2 ? 0.1 : 0.5);
}

/* dropout followed by a second dropout on a different stream */
static loom_tensor *twice(loom_graph *g, loom_dtype dt, int v) {
    (void)v;
    loom_tensor *x = tc_param(g, "x", dt, TC_DIMS(3, 7, 5), -2, 2);
    return loom_dropout(g, loom_dropout(g, x, 0.3), 0.2);
}

const loom_op_case loom_cases_dropout[] = {
    {"dropout (1000,) p=0.5", dropout, 0, 0, 0, 0},
    {"dropout (4,33) p=0.5", dropout, 1, 0, 0, 0},
    {"dropout (1000,) p=0.1", dropout, 2, 0, 0, 0},
    {"dropout (4,33) p=0.1", dropout, 3, 0, 0, 0},
    {"dropout twice (3,7,5) p=0.3 then 0.2", twice, 0, 0, 0, 0},
    {0},
};
