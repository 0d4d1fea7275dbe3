/* tests/ops/embedding.c — op cases: embedding with weight (7, 5) and index
 * shapes (6,) and (2,3) with repeated indices (so the scatter-add of
 * embedding_grad accumulates), plus a 3-D index tensor. */
#include "cases.h"

static loom_tensor *embedding(loom_graph *g, loom_dtype dt, int v) {
    static const int32_t rep[6] = {3, 0, 6, 3, 3, 0}; /* repeats; rows 1, 2, 4, 5 unused */
    loom_tensor *w = tc_param(g, "weight", dt, TC_DIMS(7, 5), -1, 1);
    loom_tensor *idx;
    switch (v) {
    case 0: idx = loom_constant(g, "idx", LOOM_I32, TC_DIMS(6), rep); break;
    case 1: idx = loom_constant(g, "idx", LOOM_I32, TC_DIMS(2, 3), rep); break;
    default: idx = tc_index(g, "idx", TC_DIMS(3, 4, 2), 7, 11); break;
    }
    return loom_embedding(g, w, idx);
}

const loom_op_case loom_cases_embedding[] = {
    {"embedding V=7 D=5 idx (6,)", embedding, 0, 0, 0, 0},
    {"embedding V=7 D=5 idx (2,3)", embedding, 1, 0, 0, 0},
    {"embedding V=7 D=5 idx (3,4,2)", embedding, 2, 0, 0, 0},
    {0},
};
