/* tests/ops/attention.c — op cases: attention (causal and not, Tq = Tk,
 * Tq < Tk and Tq > Tk, D not a multiple of 4, several B and H, a given
 * scale, sizes that span several key and query blocks of every backend, D
 * wider than a GPU work-group; the attention_grad ops run in the appended
 * backward pass for q, k and v) and causal_mask (followed by softmax, so that
 * the output is finite; its gradient op is causal_mask with value 0). */
#include "cases.h"

/* B, H, Tq, Tk, D, causal, scale (0 = 1/sqrt(D)) per variant */
static const struct {
    int64_t B, H, Tq, Tk, D;
    bool causal;
    double scale;
} SHAPES[] = {
    {1, 1, 5, 5, 8, false, 0},    /* 0 */
    {2, 3, 7, 7, 5, true, 0},     /* 1 D = 5 */
    {1, 2, 5, 9, 6, true, 0},     /* 2 Tq < Tk */
    {2, 1, 9, 4, 3, true, 0},     /* 3 Tq > Tk: rows past Tk see every key */
    {2, 2, 3, 6, 7, false, 0.7},  /* 4 Tq < Tk, a given scale */
    {1, 2, 70, 70, 16, true, 0},  /* 5 several blocks */
    {1, 1, 33, 67, 12, false, 0}, /* 6 several blocks, Tq < Tk */
    {3, 2, 1, 1, 1, true, 0},     /* 7 one key */
    {1, 2, 3, 2, 13, false, 0},   /* 8 D larger than the GPU groups (as wide as Tk) */
    {1, 1, 300, 290, 4, true, 0}, /* 9 more keys and rows than a GPU group */
};

static loom_tensor *attention(loom_graph *g, loom_dtype dt, int v) {
    int64_t B = SHAPES[v].B, H = SHAPES[v].H, Tq = SHAPES[v].Tq, Tk = SHAPES[v].Tk, D = SHAPES[v].D;
    loom_tensor *q = tc_param(g, "q", dt, TC_DIMS(B, H, Tq, D), -1, 1);
    loom_tensor *k = tc_param(g, "k", dt, TC_DIMS(B, H, Tk, D), -1, 1);
    loom_tensor *val = tc_param(g, "v", dt, TC_DIMS(B, H, Tk, D), -1, 1);
    return loom_attention(g, q, k, val, SHAPES[v].causal, SHAPES[v].scale);
}

/* variants: 0 (2, 4, 6), 1 (3, 5, 3) Tq > Tk, 2 (2, 2, 3, 3) */
static loom_tensor *causal_mask(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *x = v == 0   ? tc_param(g, "x", dt, TC_DIMS(2, 4, 6), -2, 2)
                     : v == 1 ? tc_param(g, "x", dt, TC_DIMS(3, 5, 3), -2, 2)
                              : tc_param(g, "x", dt, TC_DIMS(2, 2, 3, 3), -2, 2);
    return loom_softmax(g, loom_causal_mask(g, x));
}

const loom_op_case loom_cases_attention[] = {
    {"attention (1,1,5,5,8)", attention, 0, 0, 0, 0},
    {"attention causal (2,3,7,7,5)", attention, 1, 0, 0, 0},
    {"attention causal Tq 5 < Tk 9", attention, 2, 0, 0, 0},
    {"attention causal Tq 9 > Tk 4", attention, 3, 0, 0, 0},
    {"attention Tq 3 < Tk 6 scale 0.7", attention, 4, 0, 0, 0},
    {"attention causal (1,2,70,70,16)", attention, 5, 0, 0, 0},
    {"attention (1,1,33,67,12)", attention, 6, 0, 0, 0},
    {"attention causal one key", attention, 7, 0, 0, 0},
    {"attention (1,2,3,2,13)", attention, 8, 0, 0, 0},
    {"attention causal (1,1,300,290,4)", attention, 9, 0, 0, 0},
    {"causal_mask (2,4,6) + softmax", causal_mask, 0, 0, 0, 0},
    {"causal_mask (3,5,3) + softmax", causal_mask, 1, 0, 0, 0},
    {"causal_mask (2,2,3,3) + softmax", causal_mask, 2, 0, 0, 0},
    {0},
};
