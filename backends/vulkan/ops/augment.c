/* backends/vulkan/ops/augment.c — host side of augment_u8
 * (shaders/augment.comp): one invocation per output element. */
#include "../vulkan.h"

loom_status loom__vk_augment_u8(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t total = loom_tensor_numel(y);
    if (total > (int64_t)UINT32_MAX || loom_tensor_numel(x) > (int64_t)UINT32_MAX)
        return loom__err(o->vk->ctx, LOOM_ERR_UNSUPPORTED, "vulkan: augment_u8 node '%s' has %lld elements (at most "
                         "2^32 - 1)", y->name, (long long)total);
    /* binding 0 x, 1 prm, 2 lut, 3 y; push {xo, po, lo, yo, total, c, h, w, oh, ow, fill} */
    loom__vk_call c;
    loom__vk_begin(o, &c, "augment_u8", y->dtype);
    loom__vk_in(&c, x), loom__vk_in(&c, y->src[1]), loom__vk_in(&c, y->src[2]), loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)total), loom__vk_u32(&c, (uint32_t)x->dims[3]);
    loom__vk_u32(&c, (uint32_t)x->dims[1]), loom__vk_u32(&c, (uint32_t)x->dims[2]);
    loom__vk_u32(&c, (uint32_t)y->dims[2]), loom__vk_u32(&c, (uint32_t)y->dims[3]);
    loom__vk_u32(&c, (uint32_t)y->p[LOOM_P_AUG_FILL]);
    return loom__vk_run_1d(&c, total);
}
