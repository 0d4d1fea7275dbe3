/* tests/ops/pool2d.c — PLACEHOLDER: op cases of the pool2d family. */
#include "cases.h"

const loom_op_case loom_cases_pool2d[] = {
    {0},
};
