/* tests/ops/activation.c — PLACEHOLDER: op cases of the activation family. */
#include "cases.h"

const loom_op_case loom_cases_activation[] = {
    {0},
};
