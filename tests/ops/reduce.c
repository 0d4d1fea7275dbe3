/* tests/ops/reduce.c — PLACEHOLDER: op cases of the reduce family. */
#include "cases.h"

const loom_op_case loom_cases_reduce[] = {
    {0},
};
