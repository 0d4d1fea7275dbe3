/* backends/vulkan/ops/augment.c — host side of augment_u8
 * (shaders/augment.comp): the row sums before contrast (one invocation per
 * output row), the contrast means (one per sample), then one invocation per
 * output pixel (augment_u8_aff_* with the RandomAffine: needs shaderFloat64). */
#include "../vulkan.h"

loom_status loom__vk_augment_u8(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t total = loom_tensor_numel(y), n = y->dims[0], oh = y->dims[2], ow = y->dims[3];
    if (total > (int64_t)UINT32_MAX || loom_tensor_numel(x) > (int64_t)UINT32_MAX)
        return loom__err(o->vk->ctx, LOOM_ERR_UNSUPPORTED, "vulkan: augment_u8 node '%s' has %lld elements (at most "
                         "2^32 - 1)", y->name, (long long)total);
    bool affine = y->p[LOOM_P_AUG_AFFINE] != 0;
    if (affine && !o->vk->float64)
        return loom__err(o->vk->ctx, LOOM_ERR_UNSUPPORTED, "vulkan: augment_u8 node '%s' applies a RandomAffine, "
                         "which needs shaderFloat64; device '%s' lacks it (the loader keeps the affine on the host when "
                         "loom_loader_desc.backend names this backend)", y->name, o->vk->props.deviceName);
    uint32_t c = (uint32_t)x->dims[3], h = (uint32_t)x->dims[1], w = (uint32_t)x->dims[2];
    uint32_t fill = (uint32_t)y->p[LOOM_P_AUG_FILL];
    loom__buffer *rows, *mean;
    loom_status st;
    if ((st = loom__vk_scratch(o, (size_t)(n * oh) * sizeof(uint32_t), &rows)) != LOOM_OK ||
        (st = loom__vk_scratch(o, (size_t)n * sizeof(float), &mean)) != LOOM_OK)
        return st;
    /* rows (N, OH): binding 0 x, 1 prm, 2 rows; push {xo, po, total, c, h, w, oh, ow, fill} */
    loom__vk_call k;
    loom__vk_begin(o, &k, "augment_u8_rows", LOOM__VK_NODT);
    loom__vk_in(&k, x), loom__vk_in(&k, y->src[1]), loom__vk_buf(&k, rows, LOOM__VK_W);
    loom__vk_u32(&k, (uint32_t)(n * oh)), loom__vk_u32(&k, c), loom__vk_u32(&k, h), loom__vk_u32(&k, w);
    loom__vk_u32(&k, (uint32_t)oh), loom__vk_u32(&k, (uint32_t)ow), loom__vk_u32(&k, fill);
    if ((st = loom__vk_run_1d(&k, n * oh)) != LOOM_OK) return st;
    /* mean (N): binding 0 rows, 1 mean; push {n, oh, ow} */
    loom__vk_begin(o, &k, "augment_u8_mean", LOOM__VK_NODT);
    loom__vk_buf(&k, rows, LOOM__VK_R), loom__vk_buf(&k, mean, LOOM__VK_W);
    loom__vk_u32(&k, (uint32_t)n), loom__vk_u32(&k, (uint32_t)oh), loom__vk_u32(&k, (uint32_t)ow);
    if ((st = loom__vk_run_1d(&k, n)) != LOOM_OK) return st;
    /* y: binding 0 x, 1 prm, 2 lut, 3 mean, 4 y; push {xo, po, lo, yo, total, c, h, w, oh, ow, fill} */
    loom__vk_begin(o, &k, affine ? "augment_u8_aff" : "augment_u8", y->dtype);
    loom__vk_in(&k, x), loom__vk_in(&k, y->src[1]), loom__vk_in(&k, y->src[2]), loom__vk_buf(&k, mean, LOOM__VK_R);
    loom__vk_out(&k, y);
    loom__vk_u32(&k, (uint32_t)(n * oh * ow)), loom__vk_u32(&k, c), loom__vk_u32(&k, h), loom__vk_u32(&k, w);
    loom__vk_u32(&k, (uint32_t)oh), loom__vk_u32(&k, (uint32_t)ow), loom__vk_u32(&k, fill);
    return loom__vk_run_1d(&k, n * oh * ow);
}
