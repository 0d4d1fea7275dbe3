/* backends/vulkan/memory.c — device memory: a sub-allocator over large
 * VkDeviceMemory blocks (64 MiB; a request over half a block gets a dedicated
 * allocation; first fit over a sorted free list that coalesces neighbours),
 * one VkBuffer per loom__buffer bound at its block offset; reads and writes
 * (a plain memcpy when the tensor memory is device-local AND host-visible, as
 * on lavapipe, integrated GPUs and ReBAR GPUs; else copies through a
 * host-visible staging buffer); host_alloc (persistently mapped host-visible
 * buffers: the loader's pinned staging).
 *
 * LOOM_VULKAN_STAGING=1 forces the staging path even where direct mapping
 * works (to test it on lavapipe). Every call is synchronous: plan_run waits
 * for its fence, so the host never touches memory the device is using. */
#include "vulkan.h"

#define BLOCK_BYTES ((VkDeviceSize)64 << 20)
#define STAGING_MAX ((size_t)64 << 20)

typedef struct vk_range {
    VkDeviceSize off, size;
} vk_range;

struct loom__vk_block {
    uint32_t type;
    VkDeviceMemory mem;
    VkDeviceSize size;
    unsigned char *map; /* whole block mapped, when host-visible */
    bool dedicated;
    int nfree, capfree;
    vk_range *free; /* sorted by offset, never adjacent */
    int nbuf;       /* live buffers */
    loom__vk_block *next;
};

struct loom__vk_hostmem {
    loom__buffer *b;
    loom__vk_hostmem *next;
};

/* ---- memory types ---- */
static int find_type(const loom__vk *vk, VkMemoryPropertyFlags need, VkMemoryPropertyFlags want,
                     VkMemoryPropertyFlags avoid) {
    int best = -1, best_score = -1;
    for (uint32_t i = 0; i < vk->mem.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = vk->mem.memoryTypes[i].propertyFlags;
        if ((f & need) != need) continue;
        int score = ((f & want) == want ? 2 : 0) + (f & avoid ? 0 : 1);
        if (score > best_score) best = (int)i, best_score = score;
    }
    return best;
}

loom_status loom__vk_pick_memory(loom__vk *vk) {
    const VkMemoryPropertyFlags DL = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, HV = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                HC = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, CA = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    /* the largest device-local heap */
    VkDeviceSize big = 0;
    for (uint32_t h = 0; h < vk->mem.memoryHeapCount; h++)
        if ((vk->mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) && vk->mem.memoryHeaps[h].size > big)
            big = vk->mem.memoryHeaps[h].size;
    int dev = -1;
    /* direct: device-local + host-visible + coherent, in the big heap (not a small BAR window) */
    for (uint32_t i = 0; i < vk->mem.memoryTypeCount && dev < 0; i++) {
        const VkMemoryType *t = &vk->mem.memoryTypes[i];
        if ((t->propertyFlags & (DL | HV | HC)) == (DL | HV | HC) && vk->mem.memoryHeaps[t->heapIndex].size == big)
            dev = (int)i;
    }
    vk->direct = dev >= 0 && loom__env_switch("LOOM_VULKAN_STAGING") != 1;
    if (dev < 0)
        for (uint32_t i = 0; i < vk->mem.memoryTypeCount && dev < 0; i++) {
            const VkMemoryType *t = &vk->mem.memoryTypes[i];
            if ((t->propertyFlags & DL) && vk->mem.memoryHeaps[t->heapIndex].size == big) dev = (int)i;
        }
    if (dev < 0) dev = find_type(vk, 0, DL, 0);
    int up = find_type(vk, HV | HC, DL, 0);
    int host = find_type(vk, HV | HC, CA, DL);
    if (dev < 0 || up < 0 || host < 0)
        return loom__err(vk->ctx, LOOM_ERR_UNSUPPORTED, "vulkan: device '%s' has no %s memory type",
                         vk->props.deviceName, dev < 0 ? "device" : "host-visible coherent");
    vk->type_device = (uint32_t)dev, vk->type_upload = (uint32_t)up, vk->type_host = (uint32_t)host;
    return LOOM_OK;
}

/* ---- blocks ---- */
static loom_status block_new(loom__vk *vk, uint32_t type, VkDeviceSize size, bool dedicated, loom__vk_block **out) {
    loom__vk_block *b = calloc(1, sizeof *b);
    if (!b) return loom__err(vk->ctx, LOOM_ERR_OOM, "vulkan: out of host memory");
    VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = size;
    ai.memoryTypeIndex = type;
    VkResult r = VKF(vkAllocateMemory)(vk->device, &ai, NULL, &b->mem);
    if (r != VK_SUCCESS) {
        free(b);
        loom__vk_fail(vk, r, "vkAllocateMemory", __FILE__, __LINE__);
        return loom__err(vk->ctx, LOOM_ERR_OOM, "vulkan: cannot allocate %llu bytes of device memory (type %u): %s",
                         (unsigned long long)size, type, loom__vk_errstr(r));
    }
    if (vk->mem.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
        void *p;
        r = VKF(vkMapMemory)(vk->device, b->mem, 0, VK_WHOLE_SIZE, 0, &p);
        if (r != VK_SUCCESS) {
            VKF(vkFreeMemory)(vk->device, b->mem, NULL);
            free(b);
            return loom__vk_fail(vk, r, "vkMapMemory", __FILE__, __LINE__);
        }
        b->map = p;
    }
    b->type = type, b->size = size, b->dedicated = dedicated;
    if (!dedicated) {
        b->free = malloc(4 * sizeof *b->free);
        if (!b->free) {
            VKF(vkFreeMemory)(vk->device, b->mem, NULL);
            free(b);
            return loom__err(vk->ctx, LOOM_ERR_OOM, "vulkan: out of host memory");
        }
        b->capfree = 4, b->nfree = 1;
        b->free[0] = (vk_range){0, size};
    }
    b->next = vk->blocks;
    vk->blocks = b;
    *out = b;
    return LOOM_OK;
}

static void block_release(loom__vk *vk, loom__vk_block *b) {
    for (loom__vk_block **at = &vk->blocks; *at; at = &(*at)->next)
        if (*at == b) {
            *at = b->next;
            break;
        }
    if (b->map) VKF(vkUnmapMemory)(vk->device, b->mem);
    VKF(vkFreeMemory)(vk->device, b->mem, NULL);
    free(b->free);
    free(b);
}

/* first fit; *off = aligned offset */
static bool block_take(loom__vk_block *b, VkDeviceSize size, VkDeviceSize align, VkDeviceSize *off) {
    for (int i = 0; i < b->nfree; i++) {
        vk_range *r = &b->free[i];
        VkDeviceSize a = (r->off + align - 1) / align * align;
        if (a + size > r->off + r->size) continue;
        VkDeviceSize end = r->off + r->size;
        *off = a;
        if (a == r->off) { /* the head is used: shrink from the front */
            r->off += size, r->size -= size;
            if (!r->size) {
                memmove(r, r + 1, (size_t)(b->nfree - i - 1) * sizeof *r);
                b->nfree--;
            }
        } else {
            r->size = a - r->off; /* keep the padding before it */
            if (a + size < end) {
                if (b->nfree == b->capfree) {
                    vk_range *nf = realloc(b->free, (size_t)b->capfree * 2 * sizeof *nf);
                    if (!nf) return false;
                    b->free = nf, b->capfree *= 2;
                    r = &b->free[i];
                }
                memmove(r + 2, r + 1, (size_t)(b->nfree - i - 1) * sizeof *r);
                r[1] = (vk_range){a + size, end - a - size};
                b->nfree++;
            }
        }
        return true;
    }
    return false;
}

static bool block_give(loom__vk_block *b, VkDeviceSize off, VkDeviceSize size) {
    if (b->nfree == b->capfree) {
        vk_range *nf = realloc(b->free, (size_t)b->capfree * 2 * sizeof *nf);
        if (!nf) return false;
        b->free = nf, b->capfree *= 2;
    }
    int i = 0;
    while (i < b->nfree && b->free[i].off < off) i++;
    memmove(b->free + i + 1, b->free + i, (size_t)(b->nfree - i) * sizeof *b->free);
    b->free[i] = (vk_range){off, size};
    b->nfree++;
    if (i + 1 < b->nfree && b->free[i].off + b->free[i].size == b->free[i + 1].off) {
        b->free[i].size += b->free[i + 1].size;
        memmove(b->free + i + 1, b->free + i + 2, (size_t)(b->nfree - i - 2) * sizeof *b->free);
        b->nfree--;
    }
    if (i > 0 && b->free[i - 1].off + b->free[i - 1].size == b->free[i].off) {
        b->free[i - 1].size += b->free[i].size;
        memmove(b->free + i, b->free + i + 1, (size_t)(b->nfree - i - 1) * sizeof *b->free);
        b->nfree--;
    }
    return true;
}

loom_status loom__vk_alloc(loom__vk *vk, uint32_t type, size_t bytes, loom__buffer **out) {
    *out = NULL;
    loom__buffer *buf = calloc(1, sizeof *buf);
    if (!buf) return loom__err(vk->ctx, LOOM_ERR_OOM, "vulkan: out of host memory");
    buf->bytes = bytes;
    buf->size = bytes < 16 ? 16 : (bytes + 3) / 4 * 4;
    VkBufferCreateInfo ci = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    ci.size = buf->size;
    ci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (vk->texel) ci.usage |= VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT; /* texel views (loom__vk_texel) */
    buf->texel = vk->texel;
    ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkResult r = VKF(vkCreateBuffer)(vk->device, &ci, NULL, &buf->buf);
    if (r != VK_SUCCESS) {
        free(buf);
        return loom__vk_fail(vk, r, "vkCreateBuffer", __FILE__, __LINE__);
    }
    VkMemoryRequirements req;
    VKF(vkGetBufferMemoryRequirements)(vk->device, buf->buf, &req);
    loom_status st = LOOM_OK;
    if (!(req.memoryTypeBits & (1u << type))) {
        st = loom__err(vk->ctx, LOOM_ERR_BACKEND, "vulkan: storage buffers cannot live in memory type %u on '%s'", type,
                       vk->props.deviceName);
    } else if (req.size > BLOCK_BYTES / 2) {
        st = block_new(vk, type, req.size, true, &buf->block);
        buf->mem_off = 0;
    } else {
        for (loom__vk_block *b = vk->blocks; b && !buf->block; b = b->next)
            if (b->type == type && !b->dedicated && block_take(b, req.size, req.alignment, &buf->mem_off))
                buf->block = b;
        if (!buf->block && (st = block_new(vk, type, BLOCK_BYTES, false, &buf->block)) == LOOM_OK &&
            !block_take(buf->block, req.size, req.alignment, &buf->mem_off))
            st = loom__err(vk->ctx, LOOM_ERR_OOM, "vulkan: out of host memory");
    }
    if (st == LOOM_OK) {
        buf->mem_size = req.size;
        buf->block->nbuf++;
        r = VKF(vkBindBufferMemory)(vk->device, buf->buf, buf->block->mem, buf->mem_off);
        if (r != VK_SUCCESS) {
            loom__vk_free(vk, buf);
            return loom__vk_fail(vk, r, "vkBindBufferMemory", __FILE__, __LINE__);
        }
        if (buf->block->map) buf->map = buf->block->map + buf->mem_off;
        *out = buf;
        return LOOM_OK;
    }
    VKF(vkDestroyBuffer)(vk->device, buf->buf, NULL);
    free(buf);
    return st;
}

void loom__vk_free(loom__vk *vk, loom__buffer *buf) {
    if (!buf) return;
    if (buf->external) { /* the application's VkBuffer: only the wrapper goes */
        free(buf);
        return;
    }
    VKF(vkDestroyBuffer)(vk->device, buf->buf, NULL);
    loom__vk_block *b = buf->block;
    VkDeviceSize off = buf->mem_off, size = buf->mem_size;
    free(buf);
    if (!b) return;
    b->nbuf--;
    if (b->dedicated) {
        block_release(vk, b);
        return;
    }
    if (!block_give(b, off, size)) return; /* out of host memory: the range is lost until the block goes */
    if (b->nbuf) return;
    /* an empty block goes back unless it is the only one of its type (kept for reuse) */
    for (loom__vk_block *o = vk->blocks; o; o = o->next)
        if (o != b && o->type == b->type && !o->dedicated) {
            block_release(vk, b);
            return;
        }
}

void loom__vk_free_all_blocks(loom__vk *vk) {
    while (vk->blocks) block_release(vk, vk->blocks);
}

/* ---- reads and writes ---- */
static loom_status staging(loom__vk *vk, size_t want, loom__buffer **out) {
    if (want > STAGING_MAX) want = STAGING_MAX;
    if (!vk->staging || vk->staging->bytes < want) {
        size_t bytes = want < ((size_t)1 << 20) ? (size_t)1 << 20 : want;
        if (vk->staging) loom__vk_free(vk, vk->staging);
        vk->staging = NULL;
        loom_status st = loom__vk_alloc(vk, vk->type_host, bytes, &vk->staging);
        if (st != LOOM_OK) return st;
    }
    *out = vk->staging;
    return LOOM_OK;
}

/* vk->xfer: one copy between buffers, ordered after earlier device work and
 * made visible to the host and to later device work */
static loom_status record_copy(loom__vk *vk, VkBuffer src, VkDeviceSize so, VkBuffer dst, VkDeviceSize dof, VkDeviceSize n) {
    VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    LOOM_VK_CHECK(vk, VKF(vkBeginCommandBuffer)(vk->xfer, &bi));
    VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                       VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    VKF(vkCmdPipelineBarrier)(vk->xfer,
                              VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                                  VK_PIPELINE_STAGE_HOST_BIT,
                              VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    VkBufferCopy region = {so, dof, n};
    VKF(vkCmdCopyBuffer)(vk->xfer, src, dst, 1, &region);
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    VKF(vkCmdPipelineBarrier)(vk->xfer, VK_PIPELINE_STAGE_TRANSFER_BIT,
                              VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0,
                              NULL);
    LOOM_VK_CHECK(vk, VKF(vkEndCommandBuffer)(vk->xfer));
    return LOOM_OK;
}

/* the copy, submitted and waited for */
static loom_status copy(loom__vk *vk, VkBuffer src, VkDeviceSize so, VkBuffer dst, VkDeviceSize dof, VkDeviceSize n) {
    loom_status st = record_copy(vk, src, so, dst, dof, n);
    return st != LOOM_OK ? st : loom__vk_submit_wait(vk, vk->xfer);
}

loom_status loom__vk_write(loom__vk *vk, loom__buffer *b, size_t off, const void *src, size_t n) {
    LOOM__ASSERT(off + n <= b->bytes);
    if (!n) return LOOM_OK;
    loom__stat_transfer(vk->stats, true, n);
    if (b->map && (vk->direct || b->block->type != vk->type_device)) {
        memcpy(b->map + off, src, n);
        return LOOM_OK;
    }
    for (size_t done = 0; done < n;) {
        loom__buffer *s;
        loom_status st = staging(vk, n - done, &s);
        if (st != LOOM_OK) return st;
        size_t k = n - done < s->bytes ? n - done : s->bytes;
        memcpy(s->map, (const unsigned char *)src + done, k);
        if ((st = copy(vk, s->buf, 0, b->buf, off + done, k)) != LOOM_OK) return st;
        done += k;
    }
    return LOOM_OK;
}

loom_status loom__vk_read(loom__vk *vk, loom__buffer *b, size_t off, void *dst, size_t n) {
    LOOM__ASSERT(off + n <= b->bytes);
    if (!n) return LOOM_OK;
    loom__stat_transfer(vk->stats, false, n);
    if (b->map && (vk->direct || b->block->type != vk->type_device)) {
        memcpy(dst, b->map + off, n);
        return LOOM_OK;
    }
    for (size_t done = 0; done < n;) {
        loom__buffer *s;
        loom_status st = staging(vk, n - done, &s);
        if (st != LOOM_OK) return st;
        size_t k = n - done < s->bytes ? n - done : s->bytes;
        if ((st = copy(vk, b->buf, off + done, s->buf, 0, k)) != LOOM_OK) return st;
        memcpy((unsigned char *)dst + done, s->map, k);
        done += k;
    }
    return LOOM_OK;
}

/* A read of n bytes of b that rides on the next submit (a plan run's):
 * nothing to record when the host maps b (*cmd = NULL); else *cmd is
 * vk->xfer with the copy into the staging buffer, for the same submit as
 * the run, and loom__vk_read_done takes the bytes after its wait. Not
 * counted: the caller counts the transfer with the run's others. */
loom_status loom__vk_read_record(loom__vk *vk, loom__buffer *b, size_t off, size_t n, VkCommandBuffer *cmd) {
    LOOM__ASSERT(off + n <= b->bytes && n <= STAGING_MAX);
    *cmd = VK_NULL_HANDLE;
    if (b->map && (vk->direct || b->block->type != vk->type_device)) return LOOM_OK;
    loom__buffer *s;
    loom_status st = staging(vk, n, &s);
    if (st == LOOM_OK) st = record_copy(vk, b->buf, off, s->buf, 0, n);
    if (st == LOOM_OK) *cmd = vk->xfer;
    return st;
}

void loom__vk_read_done(loom__vk *vk, loom__buffer *b, size_t off, void *dst, size_t n, bool staged) {
    memcpy(dst, staged ? vk->staging->map : b->map + off, n);
}

/* ---- the vtable's memory entry points ---- */
loom_status loom__vk_buffer_alloc(loom_backend *be, size_t bytes, loom__buffer **out) {
    loom__vk *vk = be->impl;
    return loom__vk_validated(vk, loom__vk_alloc(vk, vk->type_device, bytes, out));
}

void loom__vk_buffer_free(loom_backend *be, loom__buffer *b) {
    loom__vk *vk = be->impl;
    loom__vk_free(vk, b);
}

loom_status loom__vk_buffer_write(loom_backend *be, loom__buffer *b, size_t off, const void *src, size_t n) {
    loom__vk *vk = be->impl;
    return loom__vk_validated(vk, loom__vk_write(vk, b, off, src, n));
}

loom_status loom__vk_buffer_read(loom_backend *be, loom__buffer *b, size_t off, void *dst, size_t n) {
    loom__vk *vk = be->impl;
    return loom__vk_validated(vk, loom__vk_read(vk, b, off, dst, n));
}

loom_status loom__vk_host_alloc(loom_backend *be, size_t bytes, void **out) {
    loom__vk *vk = be->impl;
    *out = NULL;
    loom__vk_hostmem *h = calloc(1, sizeof *h);
    if (!h) return loom__err(be->ctx, LOOM_ERR_OOM, "vulkan: out of host memory");
    loom_status st = loom__vk_alloc(vk, vk->type_host, bytes, &h->b);
    if (st != LOOM_OK) {
        free(h);
        return loom__vk_validated(vk, st);
    }
    h->next = vk->hostmem;
    vk->hostmem = h;
    *out = h->b->map;
    return loom__vk_validated(vk, LOOM_OK);
}

void loom__vk_host_free(loom_backend *be, void *p) {
    loom__vk *vk = be->impl;
    if (!p) return;
    for (loom__vk_hostmem **at = &vk->hostmem; *at; at = &(*at)->next) {
        if ((*at)->b->map != p) continue;
        loom__vk_hostmem *h = *at;
        *at = h->next;
        loom__vk_free(vk, h->b);
        free(h);
        return;
    }
    LOOM__ASSERT(0 && "vulkan host_free: pointer not from host_alloc");
}

void loom__vk_host_free_all(loom__vk *vk) {
    while (vk->hostmem) {
        loom__vk_hostmem *h = vk->hostmem;
        vk->hostmem = h->next;
        loom__vk_free(vk, h->b);
        free(h);
    }
}
