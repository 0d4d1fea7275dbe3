/* backends/cpu/ops/softmax.c — PLACEHOLDER: CPU kernels of the softmax family. */
#include "../cpu_impl.h"

loom_status loom__cpu_softmax(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}

loom_status loom__cpu_log_softmax(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}

loom_status loom__cpu_softmax_grad(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}

loom_status loom__cpu_log_softmax_grad(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}
