/* backends/vulkan/ops/correct.c — host side of correct_count
 * (shaders/correct.comp; semantics in core/ops/correct.c): one work-group
 * over the rows. The count is f32; the logits may be f32, f16 or bf16. */
#include "../vulkan.h"

loom_status loom__vk_correct_count(loom__vk_op *o) {
    const loom_tensor *t = o->t, *x = t->src[0], *tg = t->src[1];
    if (x->dtype == LOOM_F64)
        return loom__err(o->vk->ctx, LOOM_ERR_UNSUPPORTED, "vulkan: correct_count of f64 '%s': no f64 (node '%s')",
                         x->name, t->name);
    int64_t N = x->dims[0], C = x->dims[1];
    /* binding 0 x, 1 tg, 2 y; push {xo, to, yo, N, C} */
    loom__vk_call c;
    loom__vk_begin(o, &c, "correct_count", x->dtype);
    loom__vk_in(&c, x), loom__vk_in(&c, tg), loom__vk_out(&c, t);
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C);
    return loom__vk_run_groups(&c, 1, loom__vk_reduce_local(o->vk, N));
}
