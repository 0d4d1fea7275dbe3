/* tests/ops/softmax.c — PLACEHOLDER: op cases of the softmax family. */
#include "cases.h"

const loom_op_case loom_cases_softmax[] = {
    {0},
};
