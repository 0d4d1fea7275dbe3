/* tests/ops/norm.c — PLACEHOLDER: op cases of the norm family. */
#include "cases.h"

const loom_op_case loom_cases_norm[] = {
    {0},
};
