/* backends/cpu/ops/conv2d.c — PLACEHOLDER: CPU kernels of the conv2d family. */
#include "../cpu_impl.h"

loom_status loom__cpu_conv2d(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}

loom_status loom__cpu_conv2d_grad_input(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}

loom_status loom__cpu_conv2d_grad_weight(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}
