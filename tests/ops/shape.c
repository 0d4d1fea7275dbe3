/* tests/ops/shape.c — PLACEHOLDER: op cases of the shape family. */
#include "cases.h"

const loom_op_case loom_cases_shape[] = {
    {0},
};
