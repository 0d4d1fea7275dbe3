/* tests/ops/embedding.c — PLACEHOLDER: op cases of the embedding family. */
#include "cases.h"

const loom_op_case loom_cases_embedding[] = {
    {0},
};
