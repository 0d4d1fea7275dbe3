/* backends/vulkan/ops/softmax.c — host side of softmax, log_softmax and
 * their gradient ops (shaders/softmax.comp): one work-group per row of the
 * last axis. */
#include "../vulkan.h"

static loom_status run(loom__vk_op *o, int kind) {
    const loom_tensor *t = o->t;
    int64_t C = t->dims[t->ndim - 1], R = C ? loom_tensor_numel(t) / C : 0;
    loom__vk_call c;
    /* binding 0 x (or the forward y), 1 dy (x again for forward kinds), 2 y;
     * push {xo, dyo, yo, R, C, kind} */
    loom__vk_begin(o, &c, "softmax", t->dtype);
    loom__vk_in(&c, t->src[0]);
    loom__vk_in(&c, kind >= LOOM_K_SOFTMAX_GRAD ? t->src[1] : t->src[0]);
    loom__vk_out(&c, t);
    loom__vk_u32(&c, (uint32_t)R), loom__vk_u32(&c, (uint32_t)C), loom__vk_i32(&c, kind);
    return loom__vk_run_groups(&c, R, loom__vk_reduce_local(o->vk, C));
}

loom_status loom__vk_softmax(loom__vk_op *o) { return run(o, LOOM_K_SOFTMAX); }
loom_status loom__vk_log_softmax(loom__vk_op *o) { return run(o, LOOM_K_LOG_SOFTMAX); }
loom_status loom__vk_softmax_grad(loom__vk_op *o) { return run(o, LOOM_K_SOFTMAX_GRAD); }
loom_status loom__vk_log_softmax_grad(loom__vk_op *o) { return run(o, LOOM_K_LOG_SOFTMAX_GRAD); }
