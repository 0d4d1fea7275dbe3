/* backends/vulkan/ops/fuse.c — which kernel records a fused group
 * (core/fuse.h) at its first node: the batch-norm forward groups in
 * ops/norm.c, relu_grad -> 2x2 max pooling's gradient in ops/pool2d.c, an
 * attention's three gradients in ops/attention.c (the GEMM form); other
 * backward groups run node by node. */
#include "../vulkan.h"

loom_status loom__vk_fused(loom__vk_op *o, const loom__fuse_group *g, bool *done) {
    *done = false;
    if (g->attn) return loom__vk_attention_grad_fused(o, g, done);
    if (!g->backward) return loom__vk_bn_fused(o, g, done);
    if (g->m[LOOM__FU_RELU_GRAD] >= 0 && g->m[LOOM__FU_POOL_GRAD] >= 0) return loom__vk_relu_max2_grad(o, g, done);
    return LOOM_OK;
}
