/* tests/ops/binary.c — op cases: add/sub/mul/div (same shape and broadcast),
 * scale, fill, expand, cast. */
#include "cases.h"

/* variants: 0 same shape, 1 row broadcast, 2 channel broadcast (N,C,H,W)+(1,C,1,1),
 * 3 both sides broadcast, 4 scalar operand */
static loom_tensor *pair(loom_graph *g, loom_dtype dt, int v, loom_tensor **b, double blo, double bhi) {
    static const int64_t A[][4] = {{3, 5, 0, 0}, {4, 7, 0, 0}, {2, 3, 4, 5}, {3, 1, 0, 0}, {2, 3, 0, 0}};
    static const int64_t B[][4] = {{3, 5, 0, 0}, {7, 0, 0, 0}, {1, 3, 1, 1}, {1, 4, 0, 0}, {0}};
    static const int na[] = {2, 2, 4, 2, 2}, nb[] = {2, 1, 4, 2, 0};
    *b = tc_param(g, "b", dt, nb[v], B[v], blo, bhi);
    return tc_param(g, "a", dt, na[v], A[v], -1, 1);
}

static loom_tensor *add(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *b, *a = pair(g, dt, v, &b, -1, 1);
    return loom_add(g, a, b);
}
static loom_tensor *sub(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *b, *a = pair(g, dt, v, &b, -1, 1);
    return loom_sub(g, a, b);
}
static loom_tensor *mul(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *b, *a = pair(g, dt, v, &b, -1, 1);
    return loom_mul(g, a, b);
}
static loom_tensor *div_(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *b, *a = pair(g, dt, v, &b, 0.5, 2.0);
    return loom_div(g, a, b);
}
/* a tensor used twice: gradients must accumulate */
static loom_tensor *square_plus(loom_graph *g, loom_dtype dt, int v) {
    (void)v;
    loom_tensor *a = tc_param(g, "a", dt, TC_DIMS(4, 6), -1, 1);
    return loom_add(g, loom_mul(g, a, a), a);
}
static loom_tensor *scale(loom_graph *g, loom_dtype dt, int v) {
    (void)v;
    return loom_scale(g, tc_param(g, "x", dt, TC_DIMS(5, 3, 2), -2, 2), -0.75);
}
static loom_tensor *expand(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *x = v == 0 ? tc_param(g, "x", dt, TC_DIMS(3, 1), -1, 1) : tc_param(g, "x", dt, TC_DIMS(1, 4, 1), -1, 1);
    return v == 0 ? loom_expand(g, x, TC_DIMS(2, 3, 5)) : loom_expand(g, x, TC_DIMS(3, 4, 2));
}
/* fill as a broadcast operand */
static loom_tensor *fill(loom_graph *g, loom_dtype dt, int v) {
    (void)v;
    loom_tensor *x = tc_param(g, "x", dt, TC_DIMS(3, 5), -1, 1);
    return loom_mul(g, x, loom_fill(g, dt, TC_DIMS(5), -1.25));
}
/* to the other float dtype and back (exercises both directions) */
static loom_tensor *cast(loom_graph *g, loom_dtype dt, int v) {
    (void)v;
    loom_tensor *x = tc_param(g, "x", dt, TC_DIMS(4, 9), -3, 3);
    loom_dtype mid = dt == LOOM_F32 ? LOOM_F64 : LOOM_F32;
    return loom_scale(g, loom_cast(g, loom_cast(g, x, mid), dt), 2.0);
}

/* through f16 and back: the same quantisation in every dtype's run (and in
 * the f64 reference), so it compares tightly; no f64 node, so backends
 * without f64 check their f32 cast with it */
static loom_tensor *cast16(loom_graph *g, loom_dtype dt, int v) {
    (void)v;
    loom_tensor *x = tc_param(g, "x", dt, TC_DIMS(3, 11), -3, 3);
    return loom_scale(g, loom_cast(g, loom_cast(g, x, LOOM_F16), dt), 2.0);
}

const loom_op_case loom_cases_binary[] = {
    {"add same shape", add, 0, 0, 0},
    {"add row broadcast", add, 1, 0, 0},
    {"add channel broadcast", add, 2, 0, 0},
    {"add both broadcast", add, 3, 0, 0},
    {"add scalar", add, 4, 0, 0},
    {"sub channel broadcast", sub, 2, 0, 0},
    {"sub both broadcast", sub, 3, 0, 0},
    {"mul row broadcast", mul, 1, 0, 0},
    {"mul both broadcast", mul, 3, 0, 0},
    /* tol_scale 10: the gradient of the scalar (and of the 3-element b below)
     * is a short sum of terms of both signs, so in bf16 its relative error is
     * that of the terms times their cancellation (NMSE ~2e-4 seen). */
    {"mul scalar", mul, 4, 10, 0},
    /* tol_scale 10: the gradient of b is a chain of six roundings (a, b, y,
     * dy, dy*y, /b): up to ~1.4% per element in bf16 (NMSE 6e-5 seen) */
    {"div same shape", div_, 0, 10, 0},
    {"div channel broadcast", div_, 2, 10, 0},
    {"a*a + a (reuse)", square_plus, 0, 0, 0},
    {"scale", scale, 0, 0, 0},
    {"expand (3,1)->(2,3,5)", expand, 0, 0, 0},
    {"expand (1,4,1)->(3,4,2)", expand, 1, 0, 0},
    {"fill (5) * x (3,5)", fill, 0, 0, 0},
    /* the f64 gradient check goes through an f32 round trip (quantum ~6e-8):
     * the function is linear, so a large step is exact */
    {"cast round trip", cast, 0, 0, 0, 1e-2},
    /* f16 steps are ~1e-3: finite differences cannot see through them */
    {"cast through f16", cast16, 0, 0, TC_NO_GRADCHECK},
    {0},
};
