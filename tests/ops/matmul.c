/* tests/ops/matmul.c — PLACEHOLDER: op cases of the matmul family. */
#include "cases.h"

const loom_op_case loom_cases_matmul[] = {
    {0},
};
