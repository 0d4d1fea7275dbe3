/* tests/ops/conv2d.c — PLACEHOLDER: op cases of the conv2d family. */
#include "cases.h"

const loom_op_case loom_cases_conv2d[] = {
    {0},
};
