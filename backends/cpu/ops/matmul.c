/* backends/cpu/ops/matmul.c — PLACEHOLDER: CPU kernels of the matmul family. */
#include "../cpu_impl.h"

loom_status loom__cpu_matmul(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}

loom_status loom__cpu_linear(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}
