/* tests/ops/dropout.c — PLACEHOLDER: op cases of the dropout family. */
#include "cases.h"

const loom_op_case loom_cases_dropout[] = {
    {0},
};
