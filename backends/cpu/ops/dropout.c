/* backends/cpu/ops/dropout.c — PLACEHOLDER: CPU kernels of the dropout family. */
#include "../cpu_impl.h"

loom_status loom__cpu_dropout(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}
