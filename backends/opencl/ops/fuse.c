/* backends/opencl/ops/fuse.c — which kernel launches a fused group
 * (core/fuse.h) at its first node: the batch-norm forward groups in
 * ops/norm.c, relu_grad -> 2x2 max pooling's gradient in ops/pool2d.c, an
 * attention's three gradients in ops/attention.c (the GEMM form); other
 * backward groups run node by node. */
#include "../opencl.h"

loom_status loom__cl_fused(loom__cl_op *o, const loom__fuse_group *g, bool *done) {
    *done = false;
    if (g->attn) return loom__cl_attention_grad_fused(o, g, done);
    if (!g->backward) return loom__cl_bn_fused(o, g, done);
    if (g->m[LOOM__FU_RELU_GRAD] >= 0 && g->m[LOOM__FU_POOL_GRAD] >= 0) return loom__cl_relu_max2_grad(o, g, done);
    return LOOM_OK;
}

void loom__cl_fuse_member(loom__cl_op *o, int exec) {
    LOOM__ASSERT(exec > (int)(o->node - o->first) && exec < o->plan->n_exec);
    o->fused[exec] = true;
}
