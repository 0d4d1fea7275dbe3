/* backends/vulkan/ops/resize.c — host side of resize_u8 (shaders/resize.comp):
 * the width pass into a u8 scratch (one invocation per pixel of it), then the
 * height pass (one per output pixel). */
#include "../vulkan.h"

loom_status loom__vk_resize_u8(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0], *taps = y->src[1];
    int64_t n = x->dims[0], h = x->dims[1], w = x->dims[2], c = x->dims[3], oh = y->dims[1], ow = y->dims[2];
    int64_t tmp_n = n * h * ow * c;
    if (tmp_n > (int64_t)UINT32_MAX || loom_tensor_numel(y) > (int64_t)UINT32_MAX ||
        loom_tensor_numel(x) > (int64_t)UINT32_MAX || loom_tensor_numel(taps) > (int64_t)UINT32_MAX)
        return loom__err(o->vk->ctx, LOOM_ERR_UNSUPPORTED, "vulkan: resize_u8 node '%s': %lldx%lld -> %lldx%lld "
                         "images of %lld channels, %lld of them: more than 2^32 - 1 elements in a pass", y->name,
                         (long long)h, (long long)w, (long long)oh, (long long)ow, (long long)c, (long long)n);
    loom__buffer *tmp;
    loom_status st = loom__vk_scratch(o, (size_t)(tmp_n > 0 ? tmp_n : 1), &tmp);
    if (st != LOOM_OK) return st;
    uint32_t span = (uint32_t)(taps->dims[1] - 2);
    /* width: binding 0 x, 1 taps, 2 tmp; push {xo, to, total, c, h, w, oh, ow, span} */
    loom__vk_call k;
    loom__vk_begin(o, &k, "resize_u8_w", LOOM__VK_NODT);
    loom__vk_in(&k, x), loom__vk_in(&k, taps), loom__vk_buf(&k, tmp, LOOM__VK_W);
    loom__vk_u32(&k, (uint32_t)(n * h * ow)), loom__vk_u32(&k, (uint32_t)c), loom__vk_u32(&k, (uint32_t)h);
    loom__vk_u32(&k, (uint32_t)w), loom__vk_u32(&k, (uint32_t)oh), loom__vk_u32(&k, (uint32_t)ow);
    loom__vk_u32(&k, span);
    if ((st = loom__vk_run_1d(&k, n * h * ow)) != LOOM_OK) return st;
    /* height: binding 0 tmp, 1 taps, 2 y; push {to, yo, total, c, h, w, oh, ow, span} */
    loom__vk_begin(o, &k, "resize_u8_h", LOOM__VK_NODT);
    loom__vk_buf(&k, tmp, LOOM__VK_R), loom__vk_in(&k, taps), loom__vk_out(&k, y);
    loom__vk_u32(&k, (uint32_t)(n * oh * ow)), loom__vk_u32(&k, (uint32_t)c), loom__vk_u32(&k, (uint32_t)h);
    loom__vk_u32(&k, (uint32_t)w), loom__vk_u32(&k, (uint32_t)oh), loom__vk_u32(&k, (uint32_t)ow);
    loom__vk_u32(&k, span);
    return loom__vk_run_1d(&k, n * oh * ow);
}
