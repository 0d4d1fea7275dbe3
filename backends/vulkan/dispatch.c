/* backends/vulkan/dispatch.c — the Vulkan backend's vtable: create/destroy,
 * plan_prepare (each node's host function records its dispatches once; then
 * descriptor sets are written and ONE command buffer is recorded for the
 * whole plan), plan_run (the before_run hooks, one submit, a fence wait, the
 * error slots), profiling with timestamp queries, and the dispatch builder
 * the op files use (loom__vk_begin .. loom__vk_run_*).
 *
 * Barriers: the recorder tracks the byte ranges of each VkBuffer read and
 * written since the last barrier; a dispatch that reads a range written
 * since then (RAW), or writes a range read or written since then (WAR, WAW),
 * gets a compute->compute memory barrier first. Two dispatches of one node
 * are always separated. The command buffer opens with a barrier against
 * earlier submissions and host writes, and closes with one that makes the
 * results visible to the host.
 *
 * Run-time errors (an index out of range): a node with an error slot owns
 * the int32 at its exec index in the plan's host-visible error buffer,
 * filled with INT32_MAX at the start of each run; its shader atomicMin's the
 * first bad position into it. After the fence the slots are read; the first
 * node in execution order whose slot changed formats the error (its check).
 *
 * Per-step values: the plan's host-visible params buffer holds
 * LOOM__VK_PARAM_WORDS words per exec node; before_run hooks write them
 * before each submit, so nothing is re-recorded when they change. */
#include <stdint.h>

#include "vulkan.h"

typedef struct vk_dispatch {
    int node;
    int shader;
    uint32_t local;
    VkPipeline pipe;
    int nbind;
    loom__vk_bind b[LOOM__VK_MAX_BIND];
    unsigned char push[LOOM__VK_PUSH_BYTES];
    VkFormat texel[LOOM__VK_MAX_TEXEL]; /* slot k: a view of b[texel_of[k]], or UNDEFINED */
    int texel_of[LOOM__VK_MAX_TEXEL];
    uint32_t g[3];
    VkDescriptorSet set;
} vk_dispatch;

struct loom__vk_plan {
    int n;
    loom__vk_node *nodes; /* by exec index */
    int nd, capd;
    vk_dispatch *d;
    loom__buffer *err;    /* an int32 slot per exec node, err_stride bytes apart, host-visible */
    VkDeviceSize err_stride;
    loom__buffer *params; /* LOOM__VK_PARAM_WORDS per exec node, host-visible */
    bool any_err;
    VkDescriptorPool dpool;
    VkCommandBuffer cmd, cmd_prof;
    VkQueryPool qpool;
    int barriers; /* in cmd, for the log */
    int n_fused;  /* groups recorded by a fused kernel (core/fuse.h) */
    VkBufferView *views; /* the texel views of the dispatches (write_sets) */
    int nviews;
};

/* ---- helpers for the op files ---- */
loom__buffer *loom__vk_buffer_of(const loom_plan *p, const loom_tensor *t) { return p->addr[t->id].buf; }

size_t loom__vk_elem_off(const loom_plan *p, const loom_tensor *t) {
    size_t es = loom_dtype_size(t->dtype), off = p->addr[t->id].off;
    LOOM__ASSERT(off % es == 0);
    return off / es;
}

static void call_fail(loom__vk_call *c, loom_status st, const char *fmt, const char *a, const char *b) {
    if (c->st != LOOM_OK) return;
    c->st = loom__err(c->o->vk->ctx, st, fmt, a, b, loom_op_name(c->o->t->op), c->o->t->name);
}

static const char *shader_name(const loom__vk_call *c) {
    return c->shader >= 0 ? loom__vk_shaders[c->shader].name : "?";
}

void loom__vk_begin(loom__vk_op *o, loom__vk_call *c, const char *kernel, int dt) {
    memset(c, 0, sizeof *c);
    c->o = o;
    c->shader = -1;
    char name[96];
    if (dt == LOOM__VK_NODT) {
        snprintf(name, sizeof name, "%s", kernel);
    } else if (dt == LOOM_F32 || dt == LOOM_F16 || dt == LOOM_BF16) {
        snprintf(name, sizeof name, "%s_%s", kernel, loom_dtype_name((loom_dtype)dt));
    } else {
        call_fail(c, LOOM_ERR_UNSUPPORTED, "vulkan: kernel '%s' has no %s storage variant (op '%s', node '%s')", kernel,
                  loom_dtype_name((loom_dtype)dt));
        return;
    }
    c->shader = loom__vk_shader_find(name);
    if (c->shader < 0)
        call_fail(c, LOOM_ERR_BACKEND, "vulkan: no shader variant '%s' (add it to shaders/variants.txt)%s (op '%s', node '%s')",
                  name, "");
}

static void push(loom__vk_call *c, const void *v) {
    if (c->npush + 4 > LOOM__VK_PUSH_BYTES) {
        call_fail(c, LOOM_ERR_BACKEND, "vulkan: shader '%s': more than 128 bytes of push constants%s (op '%s', node '%s')",
                  shader_name(c), "");
        return;
    }
    memcpy(c->push + c->npush, v, 4);
    c->npush += 4;
}

void loom__vk_u32(loom__vk_call *c, uint32_t v) { push(c, &v); }

bool loom__vk_pushed_aligned(const loom__vk_call *c, const int *w, int n, uint32_t m) {
    for (int i = 0; i < n; i++) {
        uint32_t v;
        if (w[i] < 0 || (size_t)(w[i] + 1) * sizeof v > c->npush) return false;
        memcpy(&v, c->push + (size_t)w[i] * sizeof v, sizeof v);
        if (v % m) return false;
    }
    return true;
}
void loom__vk_i32(loom__vk_call *c, int32_t v) { push(c, &v); }
void loom__vk_f32(loom__vk_call *c, float v) { push(c, &v); }

static void bind(loom__vk_call *c, const loom__buffer *b, VkDeviceSize lo, VkDeviceSize hi, int access) {
    if (c->nbind == LOOM__VK_MAX_BIND) {
        call_fail(c, LOOM_ERR_BACKEND, "vulkan: shader '%s': more than LOOM__VK_MAX_BIND bindings%s (op '%s', node '%s')",
                  shader_name(c), "");
        return;
    }
    if (b->size > c->o->vk->props.limits.maxStorageBufferRange) {
        call_fail(c, LOOM_ERR_UNSUPPORTED,
                  "vulkan: shader '%s': a buffer larger than the device's maxStorageBufferRange%s (op '%s', node '%s')",
                  shader_name(c), "");
        return;
    }
    c->b[c->nbind++] = (loom__vk_bind){b->buf, 0, VK_WHOLE_SIZE, lo, hi, access, b->texel};
}

/* A tensor is bound as a window of its buffer: from its offset rounded down
 * to minStorageBufferOffsetAlignment (the planner aligns to 256 bytes, so
 * normally exactly at the tensor) to its end. The synchronization validation
 * then sees the bytes each dispatch really touches, and arenas larger than
 * maxStorageBufferRange (128 MiB on lavapipe) still bind. Pushes the
 * element offset within the window (normally 0). */
static void bind_tensor(loom__vk_call *c, const loom_tensor *t, int access) {
    const loom_plan *p = c->o->plan;
    const loom__addr *a = &p->addr[t->id];
    const VkPhysicalDeviceLimits *lim = &c->o->vk->props.limits;
    int64_t numel = loom_tensor_numel(t);
    size_t es = loom_dtype_size(t->dtype), nbytes = loom__nbytes(t);
    VkDeviceSize al = lim->minStorageBufferOffsetAlignment < 4 ? 4 : lim->minStorageBufferOffsetAlignment;
    VkDeviceSize win = a->off / al * al;
    VkDeviceSize range = (a->off - win + nbytes + 3) / 4 * 4;
    if (range < 4) range = 4;
    if (win + range > a->buf->size) range = a->buf->size - win;
    if (range > lim->maxStorageBufferRange) {
        call_fail(c, LOOM_ERR_UNSUPPORTED,
                  "vulkan: tensor '%s' is larger than the device's maxStorageBufferRange%s (op '%s', node '%s')", t->name,
                  "");
        return;
    }
    size_t eo = (a->off - win) / es;
    LOOM__ASSERT((a->off - win) % es == 0);
    if (numel >= ((int64_t)1 << 31) || (uint64_t)eo + (uint64_t)numel > UINT32_MAX) {
        call_fail(c, LOOM_ERR_UNSUPPORTED, "vulkan: tensor '%s' has 2^31 or more elements%s (op '%s', node '%s')", t->name,
                  "");
        return;
    }
    if (c->nbind == LOOM__VK_MAX_BIND) {
        call_fail(c, LOOM_ERR_BACKEND, "vulkan: shader '%s': more than LOOM__VK_MAX_BIND bindings%s (op '%s', node '%s')",
                  shader_name(c), "");
        return;
    }
    c->b[c->nbind++] = (loom__vk_bind){a->buf->buf, win, range, win, win + range, access, a->buf->texel};
    loom__vk_u32(c, (uint32_t)eo);
}

void loom__vk_in(loom__vk_call *c, const loom_tensor *t) { bind_tensor(c, t, LOOM__VK_R); }
void loom__vk_out(loom__vk_call *c, const loom_tensor *t) { bind_tensor(c, t, LOOM__VK_W); }
void loom__vk_inout(loom__vk_call *c, const loom_tensor *t) { bind_tensor(c, t, LOOM__VK_RW); }
void loom__vk_buf(loom__vk_call *c, loom__buffer *b, int access) { bind(c, b, 0, b->size, access); }

/* bytes per texel of the view formats device.c picks */
static VkDeviceSize texel_bytes(VkFormat f) {
    switch (f) {
    case VK_FORMAT_R32G32B32A32_SFLOAT: case VK_FORMAT_R32G32B32A32_UINT: return 16;
    case VK_FORMAT_R32G32_UINT: case VK_FORMAT_R16G16B16A16_UINT: return 8;
    case VK_FORMAT_R32_SFLOAT: return 4;
    default: return 2; /* R16_UINT */
    }
}

/* the texel view of binding b: its window rounded down to whole texels
 * (VK_WHOLE_SIZE stays: the view then ends at the buffer's last whole texel) */
static VkDeviceSize texel_range(const loom__vk_bind *b, VkDeviceSize texel) {
    return b->range == VK_WHOLE_SIZE ? VK_WHOLE_SIZE : b->range / texel * texel;
}

bool loom__vk_texel(loom__vk_call *c, int slot, int binding, loom_dtype dt, int per) {
    const loom__vk *vk = c->o->vk;
    int i = dt == LOOM_F32 ? 0 : dt == LOOM_F16 ? 1 : dt == LOOM_BF16 ? 2 : -1;
    if (!vk->texel || i < 0 || slot < 0 || slot >= LOOM__VK_MAX_TEXEL || binding < 0 || binding >= c->nbind) return false;
    VkFormat f = per == 4   ? vk->texel_fmt[i]
                 : per == 8 ? vk->texel_fmt8[i]
                 : per == 1 ? vk->texel_fmt1[i]
                            : VK_FORMAT_UNDEFINED;
    if (f == VK_FORMAT_UNDEFINED) return false;
    const loom__vk_bind *b = &c->b[binding];
    VkDeviceSize tb = texel_bytes(f), al = vk->props.limits.minTexelBufferOffsetAlignment;
    VkDeviceSize r = texel_range(b, tb), bytes = r == VK_WHOLE_SIZE ? b->hi - b->off : r;
    if (!b->texel || (al && b->off % al) || bytes < tb || bytes / tb > vk->props.limits.maxTexelBufferElements)
        return false;
    c->texel[slot] = f, c->texel_of[slot] = binding;
    return true;
}

/* binding b's bytes are written by the call (an in-place op): no texel view of it */
static bool written(const loom__vk_call *c, int b) {
    for (int j = 0; j < c->nbind; j++)
        if ((c->b[j].access & LOOM__VK_W) && c->b[j].buf == c->b[b].buf && c->b[j].lo < c->b[b].hi &&
            c->b[b].lo < c->b[j].hi)
            return true;
    return false;
}

bool loom__vk_texel_variant(loom__vk_call *c, const char *kernel, loom_dtype dt, const int *bind, int n, int per) {
    const int pers[LOOM__VK_MAX_TEXEL] = {per, per}; /* a slot left 0 refuses its view: the storage form */
    return loom__vk_texel_variant_per(c, kernel, dt, bind, pers, n);
}

bool loom__vk_texel_variant_per(loom__vk_call *c, const char *kernel, loom_dtype dt, const int *bind, const int *per,
                                int n) {
    if (c->st != LOOM_OK || n > LOOM__VK_MAX_TEXEL) return false;
    char name[96];
    snprintf(name, sizeof name, "%s_%s", kernel, loom_dtype_name(dt));
    int sh = loom__vk_shader_find(name);
    for (int k = 0; k < n && sh >= 0; k++)
        if (bind[k] < 0 || bind[k] >= c->nbind || written(c, bind[k]) || !loom__vk_texel(c, k, bind[k], dt, per[k]))
            sh = -1;
    if (sh < 0) {
        for (int k = 0; k < LOOM__VK_MAX_TEXEL; k++) c->texel[k] = VK_FORMAT_UNDEFINED;
        return false;
    }
    c->shader = sh;
    return true;
}

bool loom__vk_texel_ab(loom__vk_call *c, loom_dtype dt, int per) {
    if (loom__vk_texel(c, 0, 0, dt, per) && loom__vk_texel(c, 1, 1, dt, per)) return true;
    c->texel[0] = c->texel[1] = VK_FORMAT_UNDEFINED;
    return false;
}

/* The node's slot is bound as its own window (slots are err_stride bytes
 * apart), so no two nodes share bytes; the pushed index is 0 within it. */
void loom__vk_err(loom__vk_call *c) {
    loom__vk_plan *vp = c->o->vp;
    loom__vk_node *n = c->o->node;
    n->err_slot = (int)(n - vp->nodes);
    vp->any_err = true;
    if (c->nbind == LOOM__VK_MAX_BIND) {
        bind(c, vp->err, 0, 0, 0); /* reports the overflow */
        return;
    }
    VkDeviceSize at = (VkDeviceSize)n->err_slot * vp->err_stride;
    c->b[c->nbind++] = (loom__vk_bind){vp->err->buf, at, 4, at, at + 4, LOOM__VK_RW};
    loom__vk_u32(c, 0);
}

void loom__vk_params(loom__vk_call *c) {
    loom__vk_plan *vp = c->o->vp;
    int e = (int)(c->o->node - vp->nodes);
    bind(c, vp->params, 0, 0, 0); /* written by the host before the submit */
    loom__vk_u32(c, (uint32_t)(e * LOOM__VK_PARAM_WORDS));
}

uint32_t loom__vk_reduce_local(const loom__vk *vk, int64_t n) {
    uint32_t l = 1;
    while (l < vk->max_local && (int64_t)l < n) l <<= 1;
    return l;
}

loom_status loom__vk_run_grid(loom__vk_call *c, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t local) {
    if (c->st != LOOM_OK) return c->st;
    loom__vk *vk = c->o->vk;
    loom__vk_plan *vp = c->o->vp;
    if (!gx || !gy || !gz) return LOOM_OK;
    const uint32_t *mx = vk->props.limits.maxComputeWorkGroupCount;
    if (gx > mx[0] || gy > mx[1] || gz > mx[2])
        return loom__err(vk->ctx, LOOM_ERR_UNSUPPORTED,
                         "vulkan: shader '%s': %u x %u x %u work-groups exceed the device's %u x %u x %u (op '%s', node '%s')",
                         shader_name(c), gx, gy, gz, mx[0], mx[1], mx[2], loom_op_name(c->o->t->op), c->o->t->name);
    VkPipeline pipe;
    loom_status st = loom__vk_pipeline(vk, c->shader, local, &pipe);
    if (st != LOOM_OK) return st;
    if (vp->nd == vp->capd) {
        int cap = vp->capd ? vp->capd * 2 : 64;
        vk_dispatch *nd = realloc(vp->d, (size_t)cap * sizeof *nd);
        if (!nd) return loom__err(vk->ctx, LOOM_ERR_OOM, "vulkan: out of memory");
        vp->d = nd, vp->capd = cap;
    }
    vk_dispatch *d = &vp->d[vp->nd++];
    memset(d, 0, sizeof *d);
    d->node = (int)(c->o->node - vp->nodes);
    d->shader = c->shader;
    d->local = local;
    d->pipe = pipe;
    d->nbind = c->nbind;
    memcpy(d->b, c->b, sizeof d->b);
    memcpy(d->push, c->push, sizeof d->push);
    memcpy(d->texel, c->texel, sizeof d->texel);
    memcpy(d->texel_of, c->texel_of, sizeof d->texel_of);
    d->g[0] = gx, d->g[1] = gy, d->g[2] = gz;
    c->o->node->count++;
    return LOOM_OK;
}

/* `groups` work-groups, split over y when x cannot hold them */
static loom_status run_split(loom__vk_call *c, int64_t groups, uint32_t local) {
    if (c->st != LOOM_OK) return c->st;
    if (groups <= 0) return LOOM_OK;
    uint32_t mx = c->o->vk->props.limits.maxComputeWorkGroupCount[0];
    uint32_t gx = groups < (int64_t)mx ? (uint32_t)groups : mx;
    int64_t gy = (groups + gx - 1) / gx;
    if (gy > (int64_t)UINT32_MAX) gy = UINT32_MAX; /* run_grid rejects it */
    return loom__vk_run_grid(c, gx, (uint32_t)gy, 1, local);
}

loom_status loom__vk_run_1d(loom__vk_call *c, int64_t n) {
    uint32_t local = LOOM__VK_LOCAL < c->o->vk->max_local ? LOOM__VK_LOCAL : c->o->vk->max_local;
    return run_split(c, n <= 0 ? 0 : (n + local - 1) / local, local);
}

loom_status loom__vk_run_groups(loom__vk_call *c, int64_t groups, uint32_t local) {
    LOOM__ASSERT(local && (local & (local - 1)) == 0);
    if (local > c->o->vk->max_local) local = c->o->vk->max_local;
    return run_split(c, groups, local);
}

static loom_status own(loom__vk_op *o, loom__buffer *b) {
    loom__vk_node *n = o->node;
    LOOM__ASSERT(n->n_owned < LOOM__VK_MAX_OWNED);
    n->owned[n->n_owned++] = b;
    return LOOM_OK;
}

loom_status loom__vk_meta(loom__vk_op *o, const int64_t *v, int count, loom__buffer **out) {
    int32_t tmp[64];
    LOOM__ASSERT(count > 0 && count <= 64);
    for (int i = 0; i < count; i++) {
        if (v[i] < INT32_MIN || v[i] > INT32_MAX)
            return loom__err(o->vk->ctx, LOOM_ERR_UNSUPPORTED,
                             "vulkan: op '%s' (node '%s'): geometry value %lld does not fit 32 bits", loom_op_name(o->t->op),
                             o->t->name, (long long)v[i]);
        tmp[i] = (int32_t)v[i];
    }
    loom_status st = loom__vk_alloc(o->vk, o->vk->type_device, (size_t)count * sizeof *tmp, out);
    if (st != LOOM_OK) return st;
    own(o, *out);
    return loom__vk_write(o->vk, *out, 0, tmp, (size_t)count * sizeof *tmp);
}

const loom__vk_node *loom__vk_nodes_before(const loom__vk_op *o, int *n) {
    *n = (int)(o->node - o->vp->nodes);
    return o->vp->nodes;
}

void loom__vk_fuse_member(loom__vk_op *o, int exec) {
    LOOM__ASSERT(exec > (int)(o->node - o->vp->nodes) && exec < o->vp->n);
    o->vp->nodes[exec].fused = true;
}

loom_status loom__vk_scratch(loom__vk_op *o, size_t bytes, loom__buffer **out) {
    loom_status st = loom__vk_alloc(o->vk, o->vk->type_device, bytes, out);
    if (st != LOOM_OK) return st;
    return own(o, *out);
}

/* ---- recording ---- */
typedef struct tracker {
    int n, cap;
    loom__vk_bind *r; /* accesses since the last barrier */
} tracker;

static bool hazard(const tracker *tk, const vk_dispatch *d) {
    for (int i = 0; i < d->nbind; i++) {
        const loom__vk_bind *b = &d->b[i];
        if (!b->access) continue;
        for (int k = 0; k < tk->n; k++) {
            const loom__vk_bind *p = &tk->r[k];
            if (p->buf == b->buf && p->lo < b->hi && b->lo < p->hi && ((p->access | b->access) & LOOM__VK_W)) return true;
        }
    }
    return false;
}

static bool track(tracker *tk, const vk_dispatch *d) {
    for (int i = 0; i < d->nbind; i++) {
        if (!d->b[i].access) continue;
        if (tk->n == tk->cap) {
            int cap = tk->cap ? tk->cap * 2 : 64;
            loom__vk_bind *nr = realloc(tk->r, (size_t)cap * sizeof *nr);
            if (!nr) return false;
            tk->r = nr, tk->cap = cap;
        }
        tk->r[tk->n++] = d->b[i];
    }
    return true;
}

static void barrier(loom__vk *vk, VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags sa,
                    VkPipelineStageFlags dst, VkAccessFlags da) {
    VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = sa;
    mb.dstAccessMask = da;
    VKF(vkCmdPipelineBarrier)(cmd, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

#define SHADER_RW (VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT)
#define CS VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT

static loom_status record(loom__vk *vk, loom__vk_plan *vp, VkCommandBuffer cmd, bool prof) {
    VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    LOOM_VK_CHECK(vk, VKF(vkBeginCommandBuffer)(cmd, &bi));
    /* after earlier submissions (compute, copies) and host writes */
    barrier(vk, cmd, CS | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
            CS | VK_PIPELINE_STAGE_TRANSFER_BIT,
            SHADER_RW | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    if (vp->any_err) {
        VKF(vkCmdFillBuffer)(cmd, vp->err->buf, 0, vp->err->size, (uint32_t)INT32_MAX);
        barrier(vk, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, CS, SHADER_RW);
    }
    if (prof) VKF(vkCmdResetQueryPool)(cmd, vp->qpool, 0, (uint32_t)(2 * vp->n));
    tracker tk = {0};
    VkPipeline bound = VK_NULL_HANDLE;
    int barriers = 0;
    loom_status st = LOOM_OK;
    for (int e = 0; e < vp->n && st == LOOM_OK; e++) {
        const loom__vk_node *n = &vp->nodes[e];
        if (prof) {
            barrier(vk, cmd, CS, VK_ACCESS_SHADER_WRITE_BIT, CS, SHADER_RW);
            tk.n = 0;
            VKF(vkCmdWriteTimestamp)(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, vp->qpool, (uint32_t)(2 * e));
        }
        for (int k = n->first; k < n->first + n->count; k++) {
            const vk_dispatch *d = &vp->d[k];
            if (k > n->first || hazard(&tk, d)) {
                barrier(vk, cmd, CS, SHADER_RW, CS, SHADER_RW);
                barriers++;
                tk.n = 0;
            }
            if (!track(&tk, d)) {
                st = loom__err(vk->ctx, LOOM_ERR_OOM, "vulkan: out of memory");
                break;
            }
            if (d->pipe != bound) VKF(vkCmdBindPipeline)(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipe);
            bound = d->pipe;
            VKF(vkCmdBindDescriptorSets)(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, vk->layout, 0, 1, &d->set, 0, NULL);
            VKF(vkCmdPushConstants)(cmd, vk->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, LOOM__VK_PUSH_BYTES, d->push);
            VKF(vkCmdDispatch)(cmd, d->g[0], d->g[1], d->g[2]);
        }
        if (prof) VKF(vkCmdWriteTimestamp)(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, vp->qpool, (uint32_t)(2 * e + 1));
    }
    free(tk.r);
    /* results visible to the host (direct reads, error slots) and to later copies */
    barrier(vk, cmd, CS | VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    LOOM_VK_CHECK(vk, VKF(vkEndCommandBuffer)(cmd));
    if (!prof) vp->barriers = barriers;
    return st;
}

static loom_status alloc_cmd(loom__vk *vk, VkCommandBuffer *out) {
    VkCommandBufferAllocateInfo ai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = vk->pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    LOOM_VK_CHECK(vk, VKF(vkAllocateCommandBuffers)(vk->device, &ai, out));
    return LOOM_OK;
}

/* the texel bindings of dispatch d: views of the bindings loom__vk_texel
 * named, else the dummy view; the plan owns the views */
static loom_status write_texels(loom__vk *vk, loom__vk_plan *vp, const vk_dispatch *d) {
    VkBufferView v[LOOM__VK_MAX_TEXEL];
    for (int k = 0; k < LOOM__VK_MAX_TEXEL; k++) {
        v[k] = vk->dummy_view;
        if (d->texel[k] == VK_FORMAT_UNDEFINED) continue;
        VkBufferView *grown = realloc(vp->views, (size_t)(vp->nviews + 1) * sizeof *grown);
        if (!grown) return loom__err(vk->ctx, LOOM_ERR_OOM, "vulkan: out of memory");
        vp->views = grown;
        VkBufferViewCreateInfo vi = {VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
        const loom__vk_bind *b = &d->b[d->texel_of[k]];
        vi.buffer = b->buf, vi.format = d->texel[k], vi.offset = b->off;
        vi.range = texel_range(b, texel_bytes(d->texel[k]));
        LOOM_VK_CHECK(vk, VKF(vkCreateBufferView)(vk->device, &vi, NULL, &vp->views[vp->nviews]));
        v[k] = vp->views[vp->nviews++];
    }
    VkWriteDescriptorSet w = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstSet = d->set;
    w.dstBinding = LOOM__VK_MAX_BIND;
    w.descriptorCount = LOOM__VK_MAX_TEXEL;
    w.descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
    w.pTexelBufferView = v;
    VKF(vkUpdateDescriptorSets)(vk->device, 1, &w, 0, NULL);
    return LOOM_OK;
}

/* one descriptor set per dispatch; unused bindings point at the dummy buffer */
static loom_status write_sets(loom__vk *vk, loom__vk_plan *vp) {
    if (!vp->nd) return LOOM_OK;
    VkDescriptorPoolSize ps[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, (uint32_t)vp->nd * LOOM__VK_MAX_BIND},
                                  {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, (uint32_t)vp->nd * LOOM__VK_MAX_TEXEL}};
    VkDescriptorPoolCreateInfo pi = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pi.maxSets = (uint32_t)vp->nd;
    pi.poolSizeCount = vk->texel ? 2 : 1;
    pi.pPoolSizes = ps;
    LOOM_VK_CHECK(vk, VKF(vkCreateDescriptorPool)(vk->device, &pi, NULL, &vp->dpool));
    VkDescriptorSetLayout *layouts = malloc((size_t)vp->nd * sizeof *layouts);
    VkDescriptorSet *sets = malloc((size_t)vp->nd * sizeof *sets);
    if (!layouts || !sets) {
        free(layouts), free(sets);
        return loom__err(vk->ctx, LOOM_ERR_OOM, "vulkan: out of memory");
    }
    for (int i = 0; i < vp->nd; i++) layouts[i] = vk->set_layout;
    VkDescriptorSetAllocateInfo ai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = vp->dpool;
    ai.descriptorSetCount = (uint32_t)vp->nd;
    ai.pSetLayouts = layouts;
    VkResult r = VKF(vkAllocateDescriptorSets)(vk->device, &ai, sets);
    free(layouts);
    if (r != VK_SUCCESS) {
        free(sets);
        return loom__vk_fail(vk, r, "vkAllocateDescriptorSets", __FILE__, __LINE__);
    }
    for (int i = 0; i < vp->nd; i++) {
        vk_dispatch *d = &vp->d[i];
        d->set = sets[i];
        VkDescriptorBufferInfo info[LOOM__VK_MAX_BIND];
        for (int k = 0; k < LOOM__VK_MAX_BIND; k++)
            info[k] = k < d->nbind ? (VkDescriptorBufferInfo){d->b[k].buf, d->b[k].off, d->b[k].range}
                                   : (VkDescriptorBufferInfo){vk->dummy->buf, 0, VK_WHOLE_SIZE};
        VkWriteDescriptorSet w = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        w.dstSet = d->set;
        w.dstBinding = 0;
        w.descriptorCount = LOOM__VK_MAX_BIND; /* consecutive bindings of one type */
        w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        w.pBufferInfo = info;
        VKF(vkUpdateDescriptorSets)(vk->device, 1, &w, 0, NULL);
        if (vk->texel) {
            loom_status st = write_texels(vk, vp, d);
            if (st != LOOM_OK) {
                free(sets);
                return st;
            }
        }
    }
    free(sets);
    return LOOM_OK;
}

static void release(loom__vk *vk, loom__vk_plan *vp) {
    for (int e = 0; vp->nodes && e < vp->n; e++)
        for (int i = 0; i < vp->nodes[e].n_owned; i++) loom__vk_free(vk, vp->nodes[e].owned[i]);
    if (vp->cmd) VKF(vkFreeCommandBuffers)(vk->device, vk->pool, 1, &vp->cmd);
    if (vp->cmd_prof) VKF(vkFreeCommandBuffers)(vk->device, vk->pool, 1, &vp->cmd_prof);
    if (vp->qpool) VKF(vkDestroyQueryPool)(vk->device, vp->qpool, NULL);
    if (vp->dpool) VKF(vkDestroyDescriptorPool)(vk->device, vp->dpool, NULL);
    for (int i = 0; i < vp->nviews; i++) VKF(vkDestroyBufferView)(vk->device, vp->views[i], NULL);
    free(vp->views);
    loom__vk_free(vk, vp->err);
    loom__vk_free(vk, vp->params);
    free(vp->nodes), free(vp->d), free(vp);
}

static void vk_plan_release(loom_backend *be, loom_plan *p) {
    if (!p->impl) return;
    release(be->impl, p->impl);
    p->impl = NULL;
}

static loom_status prepare(loom__vk *vk, loom_plan *p) {
    loom__vk_plan *vp = calloc(1, sizeof *vp);
    if (!vp) return loom__err(vk->ctx, LOOM_ERR_OOM, "vulkan: out of memory");
    p->impl = vp;
    vp->n = p->n_exec;
    vp->nodes = calloc((size_t)(p->n_exec ? p->n_exec : 1), sizeof *vp->nodes);
    if (!vp->nodes) return loom__err(vk->ctx, LOOM_ERR_OOM, "vulkan: out of memory");
    size_t n1 = (size_t)(p->n_exec ? p->n_exec : 1);
    loom_status st;
    VkDeviceSize al = vk->props.limits.minStorageBufferOffsetAlignment;
    vp->err_stride = al < 4 ? 4 : al;
    if ((st = loom__vk_alloc(vk, vk->type_upload, n1 * vp->err_stride, &vp->err)) != LOOM_OK ||
        (st = loom__vk_alloc(vk, vk->type_upload, n1 * LOOM__VK_PARAM_WORDS * sizeof(uint32_t), &vp->params)) != LOOM_OK)
        return st;
    memset(vp->params->map, 0, n1 * LOOM__VK_PARAM_WORDS * sizeof(uint32_t));
    loom__fusion *fu = NULL;
    if (!vk->reproducible && loom__env_switch("LOOM_VULKAN_FUSE") != 0 && (st = loom__fusion_plan(p, NULL, LOOM__FUSE_POOL_GRAD | LOOM__FUSE_ATTN_GRAD, &fu)) != LOOM_OK)
        return st;
    for (int e = 0; e < p->n_exec; e++) {
        const loom_tensor *t = p->exec[e];
        loom__vk_node *n = &vp->nodes[e];
        n->t = t;
        n->err_slot = -1;
        n->first = vp->nd;
        n->params = (uint32_t *)(void *)(vp->params->map + (size_t)e * LOOM__VK_PARAM_WORDS * sizeof(uint32_t));
        if (n->fused) continue; /* recorded with its group */
        loom__vk_op o = {vk, p, t, n, vp};
        bool done = false;
        if (fu && fu->group_at[e] >= 0 && (st = loom__vk_fused(&o, &fu->groups[fu->group_at[e]], &done)) != LOOM_OK) {
            loom__fusion_free(fu);
            return st;
        }
        if (done) {
            vp->n_fused++;
            LOOM__ASSERT(n->first + n->count == vp->nd);
            continue;
        }
        loom__vk_fn fn = (loom__vk_fn)loom__kernel_variant(&loom__vk_kernels[t->op], vk->reproducible);
        LOOM__ASSERT(fn); /* plan.c checked support */
        if ((st = fn(&o)) != LOOM_OK) {
            loom__fusion_free(fu);
            if (loom_last_status(vk->ctx) != st)
                loom__err(vk->ctx, st, "vulkan: preparing op '%s' (node '%s') failed", loom_op_name(t->op), t->name);
            return st;
        }
        LOOM__ASSERT(n->first + n->count == vp->nd);
        LOOM__ASSERT(n->err_slot < 0 || n->check);
    }
    loom__fusion_free(fu);
    if ((st = write_sets(vk, vp)) != LOOM_OK || (st = alloc_cmd(vk, &vp->cmd)) != LOOM_OK ||
        (st = record(vk, vp, vp->cmd, false)) != LOOM_OK)
        return st;
    loom__log(vk->ctx, LOOM_LOG_DEBUG, "vulkan: plan of %d nodes: %d dispatches, %d barriers, %d fused groups", vp->n,
              vp->nd, vp->barriers, vp->n_fused);
    return LOOM_OK;
}

static int vk_plan_fused(const loom_plan *p) {
    const loom__vk_plan *vp = p->impl;
    return vp ? vp->n_fused : 0;
}

static loom_status vk_plan_prepare(loom_backend *be, loom_plan *p) {
    loom__vk *vk = be->impl;
    loom_status st = loom__vk_validated(vk, prepare(vk, p));
    if (st != LOOM_OK) vk_plan_release(be, p);
    return st;
}

/* node_seconds[e] += the node's time between its two timestamps */
static loom_status collect_profile(loom__vk *vk, loom_plan *p, loom__vk_plan *vp) {
    if (!vp->n) return LOOM_OK;
    uint64_t *ts = malloc((size_t)vp->n * 2 * sizeof *ts);
    if (!ts) return loom__err(vk->ctx, LOOM_ERR_OOM, "vulkan: out of memory");
    VkResult r = VKF(vkGetQueryPoolResults)(vk->device, vp->qpool, 0, (uint32_t)(2 * vp->n),
                                            (size_t)vp->n * 2 * sizeof *ts, ts, sizeof *ts,
                                            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS) {
        free(ts);
        return loom__vk_fail(vk, r, "vkGetQueryPoolResults", __FILE__, __LINE__);
    }
    uint64_t mask = vk->timestamp_bits >= 64 ? UINT64_MAX : (((uint64_t)1 << vk->timestamp_bits) - 1);
    double period = 1e-9 * (double)vk->props.limits.timestampPeriod;
    for (int e = 0; e < vp->n; e++) {
        uint64_t d = (ts[2 * e + 1] - ts[2 * e]) & mask;
        p->node_seconds[e] += period * (double)d;
    }
    free(ts);
    return LOOM_OK;
}

/* The error slots, read from host-visible memory after the fence: counted
 * as one readback of the slots read and `more` bytes read with them. */
static loom_status check_errors(loom__vk *vk, loom_plan *p, loom__vk_plan *vp, size_t more) {
    size_t bytes = more;
    loom_status st = LOOM_OK;
    for (int e = 0; e < vp->n && st == LOOM_OK; e++) {
        const loom__vk_node *n = &vp->nodes[e];
        if (n->err_slot < 0) continue;
        int32_t v;
        memcpy(&v, vp->err->map + (size_t)n->err_slot * vp->err_stride, sizeof v);
        bytes += sizeof v;
        if (v != INT32_MAX) st = n->check(vk, p, n->t, v);
    }
    loom__stat_transfer(vk->stats, false, bytes);
    return st;
}

/* a read that comes back with a run (plan_run_read) */
typedef struct run_read {
    loom__buffer *buf;
    size_t off, n;
    void *dst;
} run_read;

static loom_status run(loom__vk *vk, loom_plan *p, loom__vk_plan *vp, const run_read *rr) {
    bool prof = p->node_seconds != NULL;
    loom_status st;
    if (prof && !vp->cmd_prof) {
        if (!vk->timestamp_bits)
            return loom__err(vk->ctx, LOOM_ERR_UNSUPPORTED, "vulkan: device '%s' has no timestamps: cannot time ops",
                             vk->props.deviceName);
        VkQueryPoolCreateInfo qi = {VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
        qi.queryCount = (uint32_t)(2 * (vp->n ? vp->n : 1));
        LOOM_VK_CHECK(vk, VKF(vkCreateQueryPool)(vk->device, &qi, NULL, &vp->qpool));
        if ((st = alloc_cmd(vk, &vp->cmd_prof)) != LOOM_OK || (st = record(vk, vp, vp->cmd_prof, true)) != LOOM_OK)
            return st;
    }
    for (int e = 0; e < vp->n; e++) {
        loom__vk_node *n = &vp->nodes[e];
        if (n->before_run && (st = n->before_run(vk, p, n)) != LOOM_OK) return st;
    }
    VkCommandBuffer rcmd = VK_NULL_HANDLE; /* the read's copy into staging memory, when the host does not map it */
    if (rr && (st = loom__vk_read_record(vk, rr->buf, rr->off, rr->n, &rcmd)) != LOOM_OK) return st;
    if ((st = loom__vk_submit2_wait(vk, prof ? vp->cmd_prof : vp->cmd, rcmd)) != LOOM_OK) return st;
    if (prof && (st = collect_profile(vk, p, vp)) != LOOM_OK) return st;
    size_t more = rr ? rr->n : 0;
    if (rr) loom__vk_read_done(vk, rr->buf, rr->off, rr->dst, rr->n, rcmd != VK_NULL_HANDLE);
    if (vp->any_err) return check_errors(vk, p, vp, more);
    if (more) loom__stat_transfer(vk->stats, false, more);
    return LOOM_OK;
}

static loom_status vk_plan_run(loom_backend *be, loom_plan *p) {
    loom__vk *vk = be->impl;
    return loom__vk_validated(vk, run(vk, p, p->impl, NULL));
}

/* the run and the read in one submit and one wait; the read's bytes are
 * counted as one readback with the run's error slots */
static loom_status vk_plan_run_read(loom_backend *be, loom_plan *p, loom__buffer *buf, size_t off, void *dst, size_t n) {
    loom__vk *vk = be->impl;
    if (n > ((size_t)1 << 20)) { /* a large read: its own staged transfer */
        loom_status st = loom__vk_validated(vk, run(vk, p, p->impl, NULL));
        return st != LOOM_OK ? st : loom__vk_validated(vk, loom__vk_read(vk, buf, off, dst, n));
    }
    run_read rr = {buf, off, n, dst};
    return loom__vk_validated(vk, run(vk, p, p->impl, &rr));
}

static loom_status vk_synchronize(loom_backend *be) {
    loom__vk *vk = be->impl;
    LOOM_VK_CHECK(vk, VKF(vkQueueWaitIdle)(vk->queue));
    loom__stat_sync(vk->stats, 0, 1);
    return loom__vk_validated(vk, LOOM_OK);
}

/* ---- the backend ---- */
static loom_status vk_create(loom_backend *be, const loom_backend_desc *desc) {
    loom__vk *vk = calloc(1, sizeof *vk);
    if (!vk) return loom__err(be->ctx, LOOM_ERR_OOM, "vulkan: out of memory");
    vk->ctx = be->ctx;
    vk->reproducible = desc && desc->reproducible;
    vk->stats = &be->stats;
    loom_status st = loom__vk_validated(vk, loom__vk_open(vk, desc));
    if (st != LOOM_OK) {
        loom__vk_close(vk);
        free(vk);
        return st;
    }
    be->impl = vk;
    return LOOM_OK;
}

static void vk_destroy(loom_backend *be) {
    loom__vk *vk = be->impl;
    if (!vk) return;
    loom__vk_close(vk);
    free(vk);
}

static bool vk_f64(const loom_backend *be) { return ((const loom__vk *)be->impl)->float64; }

const loom__backend_vtbl loom__vulkan_backend = {
    .name = "vulkan",
    .available = loom__vk_available,
    .is_gpu = loom__vk_is_gpu,
    .create = vk_create,
    .destroy = vk_destroy,
    .describe = loom__vk_describe,
    .buffer_alloc = loom__vk_buffer_alloc,
    .buffer_free = loom__vk_buffer_free,
    .buffer_write = loom__vk_buffer_write,
    .buffer_read = loom__vk_buffer_read,
    .host_alloc = loom__vk_host_alloc,
    .host_free = loom__vk_host_free,
    .plan_prepare = vk_plan_prepare,
    .plan_run = vk_plan_run,
    .plan_run_read = vk_plan_run_read,
    .plan_release = vk_plan_release,
    .plan_fused = vk_plan_fused,
    .synchronize = vk_synchronize,
    .f64 = vk_f64,
    .can_profile = true,
    .reproducible = true,
    .kernels = loom__vk_kernels,
};
