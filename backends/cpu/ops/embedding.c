/* backends/cpu/ops/embedding.c — PLACEHOLDER: CPU kernels of the embedding family. */
#include "../cpu_impl.h"

loom_status loom__cpu_embedding(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}

loom_status loom__cpu_embedding_grad(const loom__cpu_args *a) {
    (void)a;
    return LOOM_ERR_UNSUPPORTED;
}
