/* tests/ops/loss.c — PLACEHOLDER: op cases of the loss family. */
#include "cases.h"

const loom_op_case loom_cases_loss[] = {
    {0},
};
