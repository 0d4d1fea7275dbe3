/* tests/ops/loss.c — op cases: cross_entropy (C = 10, 3 and 53, with and without
 * label smoothing, ignore_index hitting some rows; cross_entropy_grad runs in
 * the appended backward pass) and mse (gradients to both operands). */
#include "cases.h"

#define IGNORE (-100)

/* Explicit targets (n <= 8) whose rows 1 and 4 hold `ignore`. */
static loom_tensor *targets_with_ignored(loom_graph *g, int n, int ignore) {
    static const int32_t t[8] = {2, IGNORE, 0, 1, IGNORE, 2, 1, 0};
    int32_t v[8];
    for (int i = 0; i < n && i < 8; i++) v[i] = t[i] == IGNORE ? ignore : t[i];
    return loom_constant(g, "targets", LOOM_I32, 1, (const int64_t[]){n}, v);
}

/* variants:
 * 0 (6,10) eps 0, nothing ignored      1 (6,10) eps 0.1
 * 2 (5,3) eps 0                         3 (8,3) eps 0.2, rows 1 and 4 ignored (-100)
 * 4 (8,10) eps 0, rows 1 and 4 ignored  5 (7,3) eps 0.1, ignore_index 1 (rows 1, 3, 4, 6)
 * 6 (6,53) eps 0.1: rows longer than the CPU's 16 max lanes and 8 sum lanes, with a tail */
static loom_tensor *cross_entropy(loom_graph *g, loom_dtype dt, int v) {
    static const int N[] = {6, 6, 5, 8, 8, 7, 6}, C[] = {10, 10, 3, 3, 10, 3, 53};
    static const double eps[] = {0, 0.1, 0, 0.2, 0, 0.1, 0.1};
    loom_tensor *logits = tc_param(g, "logits", dt, TC_DIMS(N[v], C[v]), -3, 3);
    loom_tensor *t;
    int ignore = IGNORE;
    if (v <= 2 || v == 6) {
        t = tc_index(g, "targets", 1, (const int64_t[]){N[v]}, C[v], (uint32_t)(11 + v));
    } else {
        if (v == 5) ignore = 1;
        t = targets_with_ignored(g, N[v], ignore);
    }
    return loom_cross_entropy(g, logits, t, eps[v], ignore);
}

/* cross-entropy of an intermediate (logits = x w + b style chain) */
static loom_tensor *ce_chain(loom_graph *g, loom_dtype dt, int v) {
    (void)v;
    loom_tensor *x = tc_param(g, "x", dt, TC_DIMS(4, 5), -2, 2);
    loom_tensor *s = tc_param(g, "s", dt, TC_DIMS(5), 0.5, 1.5);
    loom_tensor *t = tc_index(g, "targets", 1, (const int64_t[]){4}, 5, 7);
    return loom_cross_entropy(g, loom_tanh(g, loom_mul(g, x, s)), t, 0.05, IGNORE);
}

static loom_tensor *mse(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *a, *b;
    if (v == 0) {
        a = tc_param(g, "a", dt, TC_DIMS(5), -1, 1);
        b = tc_param(g, "b", dt, TC_DIMS(5), -1, 1);
    } else if (v == 1) {
        a = tc_param(g, "a", dt, TC_DIMS(3, 4), -2, 2);
        b = tc_param(g, "b", dt, TC_DIMS(3, 4), -1, 1);
    } else {
        a = tc_param(g, "a", dt, TC_DIMS(2, 3, 5), -1, 1);
        b = loom_tanh(g, tc_param(g, "b", dt, TC_DIMS(2, 3, 5), -2, 2));
    }
    return loom_mse(g, a, b);
}

const loom_op_case loom_cases_loss[] = {
    {"cross_entropy (6,10)", cross_entropy, 0, 0, 0, 0},
    {"cross_entropy (6,10) smoothing 0.1", cross_entropy, 1, 0, 0, 0},
    {"cross_entropy (5,3)", cross_entropy, 2, 0, 0, 0},
    {"cross_entropy (8,3) smoothing 0.2 ignore -100", cross_entropy, 3, 0, 0, 0},
    {"cross_entropy (8,10) ignore -100", cross_entropy, 4, 0, 0, 0},
    {"cross_entropy (7,3) smoothing 0.1 ignore class 1", cross_entropy, 5, 0, 0, 0},
    {"cross_entropy (6,53) smoothing 0.1", cross_entropy, 6, 0, 0, 0},
    {"cross_entropy of tanh(x*s) (4,5)", ce_chain, 0, 0, 0, 0},
    {"mse (5)", mse, 0, 0, 0, 0},
    {"mse (3,4)", mse, 1, 0, 0, 0},
    {"mse (2,3,5) vs tanh", mse, 2, 0, 0, 0},
    {0},
};
