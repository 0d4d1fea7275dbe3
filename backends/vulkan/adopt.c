/* backends/vulkan/adopt.c — the public loom/vulkan.h: a Vulkan backend on the
 * application's instance, device and queue (loom_vulkan_backend_create; the
 * device side is loom__vk_adopt in device.c), and leaf tensors moved into the
 * application's VkBuffers (loom_vulkan_bind_buffer: an `external`
 * loom__buffer wrapping the VkBuffer, handed to the plan with
 * loom__plan_rebind; memory.c never destroys an external VkBuffer and reads /
 * writes it through the staging buffer). */
#include "vulkan.h"

loom_status loom_vulkan_backend_create(loom_ctx *ctx, const loom_vulkan_adopt *a, loom_backend **out) {
    if (!out) return ctx ? loom__err(ctx, LOOM_ERR_INVALID_ARG, "loom_vulkan_backend_create: out is NULL")
                         : LOOM_ERR_INVALID_ARG;
    *out = NULL;
    if (!ctx) return LOOM_ERR_INVALID_ARG;
    if (!a) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "loom_vulkan_backend_create: adopt is NULL");
    const char *null = !a->instance ? "instance" : !a->physical_device ? "physical_device"
                     : !a->device   ? "device"   : !a->queue           ? "queue" : NULL;
    if (null) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "loom_vulkan_backend_create: loom_vulkan_adopt.%s is NULL", null);
    loom_backend *be = calloc(1, sizeof *be);
    loom__vk *vk = calloc(1, sizeof *vk);
    if (!be || !vk) {
        free(be), free(vk);
        return loom__err(ctx, LOOM_ERR_OOM, "vulkan: out of memory");
    }
    vk->ctx = ctx;
    vk->stats = &be->stats;
    loom_status st = loom__vk_validated(vk, loom__vk_adopt(vk, a));
    if (st != LOOM_OK) {
        loom__vk_close(vk); /* loom's objects only */
        free(vk), free(be);
        return st;
    }
    be->ctx = ctx;
    be->vt = &loom__vulkan_backend;
    be->impl = vk;
    *out = be;
    return LOOM_OK;
}

loom_status loom_vulkan_bind_buffer(loom_plan *p, const loom_tensor *t, VkBuffer buf, VkDeviceSize offset,
                                    VkDeviceSize bytes) {
    static const char *what = "loom_vulkan_bind_buffer";
    if (!p) return LOOM_ERR_INVALID_ARG;
    if (p->be->vt != &loom__vulkan_backend)
        return loom__err(p->ctx, LOOM_ERR_INVALID_ARG, "%s: the plan runs on backend '%s', not vulkan", what,
                         p->be->vt->name);
    loom__vk *vk = p->be->impl;
    if (!t || t->g != p->g)
        return loom__err(p->ctx, LOOM_ERR_INVALID_ARG, "%s: tensor is NULL or not from this plan's graph", what);
    if (buf == VK_NULL_HANDLE) return loom__err(p->ctx, LOOM_ERR_INVALID_ARG, "%s: '%s': buffer is VK_NULL_HANDLE", what, t->name);
    size_t need = loom__nbytes(t);
    if (bytes < need) {
        char shape[96];
        return loom__err(p->ctx, LOOM_ERR_INVALID_ARG, "%s: '%s' (%s %s) needs %zu bytes, the buffer range has %llu", what,
                         t->name, loom_tensor_shape_str(t, shape, sizeof shape), loom_dtype_name(t->dtype), need,
                         (unsigned long long)bytes);
    }
    VkDeviceSize al = vk->props.limits.minStorageBufferOffsetAlignment;
    if (al < 4) al = 4;
    if (offset % al)
        return loom__err(p->ctx, LOOM_ERR_INVALID_ARG,
                         "%s: '%s': offset %llu is not a multiple of %llu (the device's minStorageBufferOffsetAlignment, "
                         "at least 4)",
                         what, t->name, (unsigned long long)offset, (unsigned long long)al);
    if (offset + bytes > SIZE_MAX)
        return loom__err(p->ctx, LOOM_ERR_INVALID_ARG, "%s: '%s': offset + bytes does not fit size_t", what, t->name);
    loom__buffer *w = calloc(1, sizeof *w);
    if (!w) return loom__err(p->ctx, LOOM_ERR_OOM, "vulkan: out of memory");
    w->buf = buf;
    w->external = true;
    w->bytes = (size_t)(offset + bytes); /* addresses are offsets into buf: [0, offset) is not ours */
    w->size = offset + bytes;
    loom_status st = loom__plan_rebind(p, t, w, (size_t)offset, what);
    if (st != LOOM_OK) free(w);
    return st;
}
