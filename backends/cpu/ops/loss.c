/* backends/cpu/ops/loss.c — PLACEHOLDER: CPU kernels of the loss family. */
#include "../cpu_impl.h"

loom_status loom__cpu_cross_entropy(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}

loom_status loom__cpu_cross_entropy_grad(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}

loom_status loom__cpu_mse(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}
