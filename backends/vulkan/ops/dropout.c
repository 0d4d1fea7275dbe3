/* backends/vulkan/ops/dropout.c — host side of dropout (shaders/dropout.comp).
 * The Philox counter's high word follows the plan step: before_run writes it
 * into the node's params words before every submit, so the recorded command
 * buffer serves every step. */
#include <math.h>

#include "../vulkan.h"

/* params[0] = the high word of ctr_hi = (step mod 2^24) << 40 */
static loom_status set_step(loom__vk *vk, const loom_plan *p, loom__vk_node *n) {
    (void)vk;
    uint64_t hi = (p->step & ((1ull << 24) - 1)) << 40;
    n->params[0] = (uint32_t)(hi >> 32);
    return LOOM_OK;
}

loom_status loom__vk_dropout(loom__vk_op *o) {
    const loom_tensor *t = o->t;
    double p = t->f[LOOM_F_DROP_P];
    int64_t n = loom_tensor_numel(t);
    uint64_t seed = o->plan->g->seed, stream = (uint64_t)t->p[LOOM_P_DROP_STREAM];
    /* binding 0 x, 1 y, 2 params; push {xo, yo, n, seed lo/hi, stream lo/hi, thr, scale, po} */
    loom__vk_call c;
    loom__vk_begin(o, &c, "dropout", t->dtype);
    loom__vk_in(&c, t->src[0]), loom__vk_out(&c, t);
    loom__vk_u32(&c, (uint32_t)n);
    loom__vk_u32(&c, (uint32_t)seed), loom__vk_u32(&c, (uint32_t)(seed >> 32));
    loom__vk_u32(&c, (uint32_t)stream), loom__vk_u32(&c, (uint32_t)(stream >> 32));
    loom__vk_u32(&c, (uint32_t)ceil(p * 16777216.0)), loom__vk_f32(&c, (float)(1.0 / (1.0 - p)));
    loom__vk_params(&c);
    o->node->before_run = set_step;
    return loom__vk_run_1d(&c, (n + 3) / 4);
}
