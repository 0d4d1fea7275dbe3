/* backends/cpu/ops/reduce.c — PLACEHOLDER: CPU kernels of the reduce family. */
#include "../cpu_impl.h"

loom_status loom__cpu_sum(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}

loom_status loom__cpu_mean(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}
