/* backends/vulkan/vulkan.h — the Vulkan backend's private interface.
 *
 * defines: loom__vk (the backend instance), loom__vk_fns (the Vulkan entry
 *          points, loaded at run time), struct loom__buffer, LOOM_VK_CHECK,
 *          loom__vk_node / loom__vk_op (what plan_prepare records per node),
 *          the dispatch builder loom__vk_call and its helpers, and the op
 *          table loom__vk_kernels.
 *
 * Files: device.c (loader, instance, validation, device selection,
 * capabilities, available, describe), memory.c (sub-allocator, buffers,
 * staging reads/writes, host_alloc), pipeline.c (embedded SPIR-V, one
 * pipeline per (variant, work-group size), the descriptor-set and pipeline
 * layouts, the on-disk VkPipelineCache), dispatch.c (vtable, plan prepare /
 * record / run, barriers, error slots, per-step params, profiling),
 * kernels.c (the op table), adopt.c (the public loom/vulkan.h: a backend on
 * the application's device, tensors in its buffers), ops/<family>.c (host
 * side of each op),
 * shaders/<family>.comp + shaders/common.glsl + shaders/variants.txt.
 *
 * ---- How to add a family (e.g. norm); ops/binary.c + shaders/binary.comp
 *      are the worked example ----
 * 1. shaders/norm.comp: starts with
 *        #version 450
 *        #extension GL_GOOGLE_include_directive : require
 *        #include "common.glsl"
 *    and holds one kernel per `#if defined(K_<KERNEL>)` block (each with its
 *    own main()). Storage dtype: T, LD(buf, i) -> float, ST(buf, i, v) with
 *    the dtype's rounding (LD_F32/LD_F16/LD_BF16, ST_* name one explicitly;
 *    f16 and bf16 are uint16_t in memory). Bindings, in the order the host
 *    binds them (binding 0, 1, ...):
 *        TENSOR_IN(0, T, x);  TENSOR_OUT(1, T, y);  TENSOR_IN(2, int, g);
 *        ERR_SLOTS(3);  PARAMS(4);
 *    Push constants, one block of 32-bit scalars (uint/int/float, never
 *    vectors or 64-bit) in the order the host pushes them, 128 bytes at most:
 *        PUSH { uint xo, yo, n; float eps; } pc;
 *    A tensor's element offset (`xo`) is pushed by the same call that binds
 *    it, so tensors' offsets come in binding order, interleaved with any
 *    scalars pushed between them. Index tensors as x[pc.xo + i]. Compute in
 *    float, mark `precise` what must be rounded twice (a * b + c), write
 *    shape comments (// x (N, C, H, W)). Elementwise kernels: i = loom_gid(),
 *    `if (i >= pc.n) return;`. One work-group per row: r = loom_group(),
 *    guard r against the row count pushed (a whole group may return early;
 *    otherwise reach every barrier from every invocation), reduce with
 *    group_sum / group_max (#define LOOM_GROUP_REDUCE before the include, or
 *    in variants.txt), gl_WorkGroupSize.x is the `local` given at dispatch.
 *    Never use 16-bit/8-bit arithmetic (it does not compile: storage only),
 *    64-bit integers or doubles (devices lack them). Philox: philox(seed,
 *    stream, counter) with 64-bit values as uvec2(low, high), exactly
 *    core/rng.c. Match backends/cpu/ops/norm.c (same formulas and order).
 * 2. shaders/variants.txt: one line per module, `<name> <file> DEF...`:
 *        layer_norm_f32 norm.comp K_LAYER_NORM T_F32 LOOM_GROUP_REDUCE
 *        layer_norm_f16 norm.comp K_LAYER_NORM T_F16 LOOM_GROUP_REDUCE
 *        layer_norm_bf16 norm.comp K_LAYER_NORM T_BF16 LOOM_GROUP_REDUCE
 *    Names: <kernel>_<f32|f16|bf16> for storage-dtype variants (found by
 *    loom__vk_begin(o, &c, "layer_norm", dtype)), plain <kernel> for
 *    dtype-independent ones (loom__vk_begin(o, &c, "adam_step", LOOM__VK_NODT)).
 *    The build compiles and spirv-val's every line; an error fails the build.
 * 3. ops/norm.c: one `loom_status loom__vk_<stem>(loom__vk_op *o)` per op,
 *    run once per node at plan_prepare. Per dispatch:
 *        loom__vk_call c;
 *        loom__vk_begin(o, &c, "layer_norm", y->dtype);
 *        loom__vk_in(&c, x);              // binding 0 + push x's offset
 *        loom__vk_out(&c, y);             // binding 1 + push y's offset
 *        loom__vk_buf(&c, g, LOOM__VK_R); // binding 2 (meta/scratch: no push)
 *        loom__vk_u32(&c, n), loom__vk_f32(&c, eps);
 *        return loom__vk_run_groups(&c, rows, loom__vk_reduce_local(o->vk, cols));
 *    or loom__vk_run_1d(&c, n) for n elementwise invocations (local 256; more
 *    groups than the device allows per axis are split over y: loom_gid()
 *    handles it), or loom__vk_run_grid(&c, gx, gy, gz, local) for raw group
 *    counts. Reads/writes are declared by in/out/inout (loom__vk_inout for a
 *    tensor read and written): dispatch.c inserts a barrier only where a
 *    byte range written by an earlier dispatch is read or written again (or
 *    one read is written), and always between two dispatches of one node.
 *    Errors are collected in the call (first wins) and returned by run_*.
 *    Geometry that does not fit the push constants: loom__vk_meta (an int32
 *    table, read-only buffer owned by the node; values must fit int32).
 *    Scratch: loom__vk_scratch (device buffer owned by the node, undefined
 *    contents). Both are bound with loom__vk_buf.
 *    Data-dependent run-time errors (an index out of range): loom__vk_err(&c)
 *    binds this node's error slot and pushes its index (uint `slot`); the
 *    shader does atomicMin(err_slots[pc.slot], bad_position) (INT32_MAX =
 *    no error); the node's `check` callback formats the message after the
 *    run (the first node in execution order whose slot changed; read inputs
 *    back with loom__vk_read). Set o->node->check.
 *    Per-step values (the dropout step): loom__vk_params(&c) binds the plan's
 *    params buffer and pushes this node's word offset (uint `po`); the
 *    shader reads params[pc.po + k] (k < LOOM__VK_PARAM_WORDS). Set
 *    o->node->before_run: it runs before every submit and writes the words
 *    into n->params (host memory the device reads; no re-recording).
 * 4. kernels.c: K(OP, stem, dtypes) for each op (LOOM__VK_FLOAT = f32|f16|bf16,
 *    never F64; LOOM__VK_ALL adds I32|U8 where the CPU has them). A missing
 *    entry is "unsupported" everywhere (loom info, the op-check, plan compile).
 * 5. Declare nothing: the loom__vk_<stem> prototypes come from ops.def below.
 *    Check with `LOOM_VULKAN_VALIDATION=1 build/tests/test-opcheck -b vulkan
 *    -o <op>`: every dtype must pass with zero validation messages (any
 *    message fails the run). A device without 16-bit storage rejects f16/bf16
 *    plans at prepare (the pipeline's SPIR-V capabilities are checked).
 */
#ifndef LOOM_VULKAN_H
#define LOOM_VULKAN_H

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include "../../core/backend_impl.h"
#include "../../core/fuse.h"
#include "loom/vulkan.h" /* the public adoption API (adopt.c) */

#define LOOM__VK_MAX_BIND 10    /* storage-buffer bindings per dispatch (one descriptor-set layout) */
/* uniform texel buffer bindings LOOM__VK_MAX_BIND .. + LOOM__VK_MAX_TEXEL - 1 of the same layout, on
 * devices whose formats allow them (loom__vk.texel): views of a dispatch's storage bindings
 * (loom__vk_texel) */
#define LOOM__VK_MAX_TEXEL 2
#define LOOM__VK_PUSH_BYTES 128 /* push-constant range of every pipeline */
#define LOOM__VK_PARAM_WORDS 16 /* per-node words in the per-step params buffer */
#define LOOM__VK_LOCAL 256      /* work-group size of loom__vk_run_1d (clamped to the device) */
#define LOOM__VK_NODT (-1)      /* loom__vk_begin: the variant name has no dtype suffix */

/* ---- Vulkan entry points: libvulkan is opened with dlopen (device.c) ---- */
#define LOOM__VK_GLOBAL_FNS(X)                                                                     \
    X(vkCreateInstance) X(vkEnumerateInstanceLayerProperties) X(vkEnumerateInstanceExtensionProperties) \
    X(vkEnumerateInstanceVersion)
#define LOOM__VK_INSTANCE_FNS(X)                                                                   \
    X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)             \
    X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2)                               \
    X(vkGetPhysicalDeviceMemoryProperties) X(vkGetPhysicalDeviceQueueFamilyProperties)              \
    X(vkEnumerateDeviceExtensionProperties) X(vkCreateDevice) X(vkGetDeviceProcAddr)              \
    X(vkGetPhysicalDeviceFormatProperties)
#define LOOM__VK_DEBUG_FNS(X) X(vkCreateDebugUtilsMessengerEXT) X(vkDestroyDebugUtilsMessengerEXT)
#define LOOM__VK_DEVICE_FNS(X)                                                                     \
    X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkDeviceWaitIdle) X(vkQueueSubmit) X(vkQueueWaitIdle)  \
    X(vkCreateBuffer) X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements) X(vkAllocateMemory)       \
    X(vkFreeMemory) X(vkBindBufferMemory) X(vkMapMemory) X(vkUnmapMemory)                            \
    X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkAllocateCommandBuffers)                      \
    X(vkFreeCommandBuffers) X(vkBeginCommandBuffer) X(vkEndCommandBuffer) X(vkCreateFence)         \
    X(vkDestroyFence) X(vkResetFences) X(vkWaitForFences) X(vkCreateShaderModule)                   \
    X(vkDestroyShaderModule) X(vkCreatePipelineCache) X(vkDestroyPipelineCache)                     \
    X(vkGetPipelineCacheData) X(vkCreateComputePipelines) X(vkDestroyPipeline)                      \
    X(vkCreateDescriptorSetLayout) X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout)        \
    X(vkDestroyPipelineLayout) X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool)                 \
    X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets) X(vkCreateQueryPool) X(vkDestroyQueryPool) \
    X(vkGetQueryPoolResults) X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets) X(vkCmdPushConstants)  \
    X(vkCmdDispatch) X(vkCmdPipelineBarrier) X(vkCmdFillBuffer) X(vkCmdCopyBuffer)                  \
    X(vkCmdWriteTimestamp) X(vkCmdResetQueryPool) X(vkCreateBufferView) X(vkDestroyBufferView)

#define LOOM__VK_FN_MEMBER(n) PFN_##n n;
typedef struct loom__vk_fns {
    LOOM__VK_INSTANCE_FNS(LOOM__VK_FN_MEMBER)
    LOOM__VK_DEBUG_FNS(LOOM__VK_FN_MEMBER)
    LOOM__VK_DEVICE_FNS(LOOM__VK_FN_MEMBER)
} loom__vk_fns;
#undef LOOM__VK_FN_MEMBER

/* Call a Vulkan function through the instance's table: needs `vk` in scope. */
#define VKF(name) (vk->fn.name)

/* the embedded modules (generated/vulkan_shaders.c, from shaders/variants.txt) */
typedef struct loom__vk_shader {
    const char *name;
    const uint32_t *words;
    size_t count;
} loom__vk_shader;
extern const int loom__vk_shader_count;
extern const loom__vk_shader loom__vk_shaders[];

#define LOOM__VK_NLOCAL 9 /* work-group sizes 1, 2, 4, ..., 256 */

typedef struct loom__vk_block loom__vk_block;
typedef struct loom__vk_hostmem loom__vk_hostmem;

typedef struct loom__vk {
    loom_ctx *ctx;
    loom_backend_stats *stats; /* the backend's round-trip counters (NULL: not counted) */
    loom__vk_fns fn;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice phys;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    int device_index; /* as selected; -1 = adopted and not found in the instance's list */
    bool adopted;     /* instance, device and queue are the application's: never destroyed */
    /* capabilities (device.c) */
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem;
    uint32_t subgroup_size;
    bool storage16, storage8, float16, float64, int16, int8, int64; /* enabled features (if present) */
    bool coopmat;          /* VK_KHR_cooperative_matrix present (reported only) */
    bool reproducible;     /* loom_backend_desc.reproducible: the kernel table's repro variants (core/repro.h) */
    uint32_t timestamp_bits; /* of the queue family; 0 = no timestamps */
    uint32_t max_local;    /* power of two <= 256 and the device's limits */
    /* validation (LOOM_VULKAN_VALIDATION=1): messages are counted; the call in
     * progress turns the first new one into LOOM_ERR_BACKEND */
    bool validation;
    int vmsg_count, vmsg_seen;
    char vmsg[768];
    /* commands (device.c) */
    VkCommandPool pool;
    VkCommandBuffer xfer;  /* staging copies (memory.c) */
    VkFence fence;
    /* memory (memory.c) */
    uint32_t type_device;  /* tensors */
    uint32_t type_upload;  /* host-visible coherent: params, error slots, staging */
    uint32_t type_host;    /* host_alloc / readback staging (cached if possible) */
    bool direct;           /* type_device is host-visible+coherent: map instead of staging */
    loom__vk_block *blocks;
    loom__buffer *staging; /* grown on demand */
    loom__buffer *dummy;   /* bound to unused binding slots */
    bool texel;            /* uniform texel buffers: R32G32B32A32_SFLOAT can be one (device.c) */
    VkFormat texel_fmt[3]; /* the view format per storage dtype f32, f16, bf16, 4 elements per texel;
                              VK_FORMAT_UNDEFINED = none */
    VkFormat texel_fmt1[3]; /* the same, one element per texel (R32_SFLOAT, R16_UINT) */
    VkFormat texel_fmt8[3]; /* the same, 8 elements per texel (f16, bf16: R32G32B32A32_UINT) */
    VkBufferView dummy_view; /* bound to unused texel slots */
    loom__vk_hostmem *hostmem;
    /* pipelines (pipeline.c) */
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipelineCache cache;
    bool cache_dirty;
    char cache_path[600];
    VkShaderModule *modules;            /* [loom__vk_shader_count] */
    VkPipeline (*pipes)[LOOM__VK_NLOCAL]; /* [shader][log2 local] */
    int n_pipelines;
    double pipeline_seconds;
} loom__vk;

/* A device buffer: its own VkBuffer bound at an offset of a memory block. */
struct loom__buffer {
    VkBuffer buf;
    size_t bytes;          /* as requested */
    VkDeviceSize size;     /* the VkBuffer's size (>= bytes, multiple of 4) */
    loom__vk_block *block; /* memory.c */
    VkDeviceSize mem_off, mem_size;
    unsigned char *map;    /* host pointer when the memory is mapped, else NULL */
    bool external;         /* buf is the application's (loom_vulkan_bind_buffer): never destroyed,
                              no block; bytes = size = the bound offset + bytes */
    bool texel;            /* made with VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT (views possible) */
};

/* "VK_ERROR_OUT_OF_DEVICE_MEMORY" etc. */
const char *loom__vk_errstr(VkResult r);
/* Record "vulkan: <call> failed: <VK_ERROR> (<code>) at file:line" on ctx;
 * LOOM_ERR_OOM for the out-of-memory codes, else LOOM_ERR_BACKEND. */
loom_status loom__vk_fail(loom__vk *vk, VkResult r, const char *call, const char *file, int line);
#define LOOM_VK_CHECK(vk, call)                                                                 \
    do {                                                                                        \
        VkResult loom_vk_r_ = (call);                                                           \
        if (loom_vk_r_ != VK_SUCCESS) return loom__vk_fail((vk), loom_vk_r_, #call, __FILE__, __LINE__); \
    } while (0)
/* At the end of a backend entry point: st, or LOOM_ERR_BACKEND "vulkan
 * validation: <message>" when the validation layer reported something new. */
loom_status loom__vk_validated(loom__vk *vk, loom_status st);

/* ---- device.c ---- */
bool loom__vk_available(loom_ctx *ctx, const char **why);
bool loom__vk_is_gpu(loom_ctx *ctx);
loom_status loom__vk_open(loom__vk *vk, const loom_backend_desc *desc);
/* loom__vk_open on the application's objects (loom_vulkan_backend_create) */
loom_status loom__vk_adopt(loom__vk *vk, const loom_vulkan_adopt *a);
void loom__vk_close(loom__vk *vk);
void loom__vk_describe(const loom_backend *be, FILE *out);
/* Submit one command buffer and wait for it (the backend's fence). */
loom_status loom__vk_submit_wait(loom__vk *vk, VkCommandBuffer cmd);
/* cmd, then cmd2 (VK_NULL_HANDLE: none), in one submit; one wait */
loom_status loom__vk_submit2_wait(loom__vk *vk, VkCommandBuffer cmd, VkCommandBuffer cmd2);

/* ---- memory.c ---- */
/* A buffer of `bytes` (0 allowed) in memory type `type` (vk->type_*), usage
 * storage + transfer src/dst; mapped when the type is host-visible. */
loom_status loom__vk_alloc(loom__vk *vk, uint32_t type, size_t bytes, loom__buffer **out);
void loom__vk_free(loom__vk *vk, loom__buffer *b);
void loom__vk_free_all_blocks(loom__vk *vk);
loom_status loom__vk_write(loom__vk *vk, loom__buffer *b, size_t off, const void *src, size_t n);
loom_status loom__vk_read(loom__vk *vk, loom__buffer *b, size_t off, void *dst, size_t n);
/* a read that rides on a plan run's submit (memory.c; dispatch.c's plan_run_read) */
loom_status loom__vk_read_record(loom__vk *vk, loom__buffer *b, size_t off, size_t n, VkCommandBuffer *cmd);
void loom__vk_read_done(loom__vk *vk, loom__buffer *b, size_t off, void *dst, size_t n, bool staged);
loom_status loom__vk_buffer_alloc(loom_backend *be, size_t bytes, loom__buffer **out);
void loom__vk_buffer_free(loom_backend *be, loom__buffer *b);
loom_status loom__vk_buffer_write(loom_backend *be, loom__buffer *b, size_t off, const void *src, size_t n);
loom_status loom__vk_buffer_read(loom_backend *be, loom__buffer *b, size_t off, void *dst, size_t n);
loom_status loom__vk_host_alloc(loom_backend *be, size_t bytes, void **out);
void loom__vk_host_free(loom_backend *be, void *p);
void loom__vk_host_free_all(loom__vk *vk);
/* memory types (device.c calls it after the device is open) */
loom_status loom__vk_pick_memory(loom__vk *vk);

/* ---- pipeline.c ---- */
loom_status loom__vk_layouts_create(loom__vk *vk);
void loom__vk_pipelines_destroy(loom__vk *vk);
/* index of variant `name` in loom__vk_shaders, or -1 */
int loom__vk_shader_find(const char *name);
/* The pipeline of shader `index` with work-group size `local` (a power of
 * two <= vk->max_local), created on first use. */
loom_status loom__vk_pipeline(loom__vk *vk, int index, uint32_t local, VkPipeline *out);
/* The cache directory (LOOM_VULKAN_CACHE, $XDG_CACHE_HOME/loom/vulkan,
 * ~/.cache/loom/vulkan), or "" when caching is off (LOOM_VULKAN_CACHE=off). */
void loom__vk_cache_dir(char *out, size_t n);

/* ---- per node records (dispatch.c) ---- */
#define LOOM__VK_MAX_OWNED 6

enum { LOOM__VK_R = 1, LOOM__VK_W = 2, LOOM__VK_RW = 3 };

typedef struct loom__vk_node loom__vk_node;
typedef struct loom__vk_op loom__vk_op;
typedef struct loom__vk_plan loom__vk_plan;

struct loom__vk_node {
    const loom_tensor *t;
    int first, count; /* its dispatches in the plan's list */
    int n_owned;
    loom__buffer *owned[LOOM__VK_MAX_OWNED]; /* meta tables, scratch */
    int err_slot;     /* -1, or this node's slot in the plan's error buffer */
    /* after the run, when the slot holds a position (not INT32_MAX): set the
     * error message and return the status */
    loom_status (*check)(loom__vk *vk, const loom_plan *p, const loom_tensor *t, int32_t bad);
    /* before each run: write per-step words into params (may be NULL) */
    loom_status (*before_run)(loom__vk *vk, const loom_plan *p, loom__vk_node *n);
    uint32_t *params; /* LOOM__VK_PARAM_WORDS words of the plan's params buffer (host-mapped) */
    void *user;       /* for the op's hooks; conv2d: its flat column buffer (ops/conv2d.c) */
    bool fused;       /* recorded by an earlier node's fused group: no dispatches of its own */
};

/* What an op's host function gets at plan_prepare. */
struct loom__vk_op {
    loom__vk *vk;
    const loom_plan *plan;
    const loom_tensor *t; /* the node */
    loom__vk_node *node;  /* to fill */
    loom__vk_plan *vp;    /* dispatch.c */
};

typedef loom_status (*loom__vk_fn)(loom__vk_op *o);

/* One dispatch being built (loom__vk_begin .. loom__vk_run_*). */
typedef struct loom__vk_bind {
    VkBuffer buf;
    VkDeviceSize off, range; /* the descriptor: whole buffer (0, VK_WHOLE_SIZE), or a window of a buffer
                                larger than maxStorageBufferRange */
    VkDeviceSize lo, hi;     /* byte range touched */
    int access;              /* LOOM__VK_R / _W / _RW; 0 = not tracked (error slots, params) */
    bool texel;              /* the buffer allows texel views */
} loom__vk_bind;

typedef struct loom__vk_call {
    loom__vk_op *o;
    int shader;
    int nbind;
    loom__vk_bind b[LOOM__VK_MAX_BIND];
    uint32_t npush; /* bytes */
    unsigned char push[LOOM__VK_PUSH_BYTES];
    VkFormat texel[LOOM__VK_MAX_TEXEL]; /* loom__vk_texel: slot k views b[texel_of[k]] in this format, or UNDEFINED */
    int texel_of[LOOM__VK_MAX_TEXEL];
    loom_status st; /* the first failure */
} loom__vk_call;

/* Start a dispatch of variant "<kernel>_<f32|f16|bf16>" for dt F32/F16/BF16
 * (I32 and U8 have no storage variants: name them yourself), or "<kernel>"
 * for LOOM__VK_NODT. */
void loom__vk_begin(loom__vk_op *o, loom__vk_call *c, const char *kernel, int dt);
/* The next binding = tensor t (a window of its buffer starting at or just
 * before the tensor: the synchronization validation sees exactly what each
 * dispatch touches); pushes t's element offset within that window (uint;
 * usually 0 — always index through it). in: read, out: written, inout:
 * both. numel must be < 2^31. */
void loom__vk_in(loom__vk_call *c, const loom_tensor *t);
void loom__vk_out(loom__vk_call *c, const loom_tensor *t);
void loom__vk_inout(loom__vk_call *c, const loom_tensor *t);
/* The next binding = a whole buffer (meta table, scratch); pushes nothing. */
void loom__vk_buf(loom__vk_call *c, loom__buffer *b, int access);
/* The next binding = this node's error slot (its own 4-byte window of the
 * plan's error buffer); pushes the slot's index within it (uint, 0). */
void loom__vk_err(loom__vk_call *c);
/* The next binding = the plan's params buffer; pushes the node's word offset. */
void loom__vk_params(loom__vk_call *c);
/* Bind a view of the call's binding `binding` (its window, rounded down to
 * whole texels) at texel binding LOOM__VK_MAX_BIND + slot, in the device's
 * view format for storage dtype dt: `per` 4 elements per texel
 * (vk->texel_fmt), 8 (vk->texel_fmt8) or 1 (vk->texel_fmt1). False, and nothing changed, when
 * the device, the buffer, the window's offset or its size does not allow it
 * (the caller runs its storage-buffer form). */
bool loom__vk_texel(loom__vk_call *c, int slot, int binding, loom_dtype dt, int per);
/* Switch the call to variant "<kernel>_<dtype>" (the same bindings and push
 * constants, reading bindings bind[0..n) through texel views at slots
 * 0..n-1, `per` elements per texel, as loom__vk_texel). False, and nothing
 * changed, when a view is not allowed or the call writes a viewed binding's
 * bytes (in place): the call keeps its storage form. */
bool loom__vk_texel_variant(loom__vk_call *c, const char *kernel, loom_dtype dt, const int *bind, int n, int per);
/* the same with per[k] elements per texel at slot k */
bool loom__vk_texel_variant_per(loom__vk_call *c, const char *kernel, loom_dtype dt, const int *bind, const int *per,
                                int n);
/* views of bindings 0 and 1 at slots 0 and 1, `per` elements per texel; both or neither */
bool loom__vk_texel_ab(loom__vk_call *c, loom_dtype dt, int per);
/* The element offsets the bindings pushed as push words w[0..n) are
 * multiples of m (the wide-load variants' vec2 / vec4 / word views need it);
 * false when a word was not pushed yet. */
bool loom__vk_pushed_aligned(const loom__vk_call *c, const int *w, int n, uint32_t m);
/* 32-bit push constants, in order */
void loom__vk_u32(loom__vk_call *c, uint32_t v);
void loom__vk_i32(loom__vk_call *c, int32_t v);
void loom__vk_f32(loom__vk_call *c, float v);
/* Record the dispatch: n invocations (local LOOM__VK_LOCAL), `groups`
 * work-groups of `local` (a power of two; loom__vk_reduce_local), or raw
 * group counts. Returns the call's first failure. n or groups <= 0: nothing. */
loom_status loom__vk_run_1d(loom__vk_call *c, int64_t n);
loom_status loom__vk_run_groups(loom__vk_call *c, int64_t groups, uint32_t local);
loom_status loom__vk_run_grid(loom__vk_call *c, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t local);
/* min(256, device limit, next power of two >= n), at least 1 */
uint32_t loom__vk_reduce_local(const loom__vk *vk, int64_t n);

/* A read-only int32 table of n values (written once, at prepare), owned by
 * the node; LOOM_ERR_UNSUPPORTED if a value does not fit int32. */
loom_status loom__vk_meta(loom__vk_op *o, const int64_t *v, int n, loom__buffer **out);

/* reproducible mode's variants (core/repro.h, shaders/repro.comp and the
 * gemm*_r_f32 shaders), in the op's own ops/<family>.c: the kernel table's
 * `repro` entries */
loom_status loom__vk_matmul_repro(loom__vk_op *o);
loom_status loom__vk_linear_repro(loom__vk_op *o);
loom_status loom__vk_conv2d_repro(loom__vk_op *o);
loom_status loom__vk_conv2d_grad_input_repro(loom__vk_op *o);
loom_status loom__vk_conv2d_grad_weight_repro(loom__vk_op *o);
loom_status loom__vk_sum_repro(loom__vk_op *o);
loom_status loom__vk_mean_repro(loom__vk_op *o);
loom_status loom__vk_batch_norm_repro(loom__vk_op *o);
loom_status loom__vk_batch_norm_grad_params_repro(loom__vk_op *o);
loom_status loom__vk_batch_norm_grad_repro(loom__vk_op *o);
loom_status loom__vk_cross_entropy_repro(loom__vk_op *o);
loom_status loom__vk_cross_entropy_grad_repro(loom__vk_op *o);
/* A device scratch buffer owned by the node (contents undefined). */
loom_status loom__vk_scratch(loom__vk_op *o, size_t bytes, loom__buffer **out);
/* the nodes prepared before this one in the same plan (exec order): *n of them */
const loom__vk_node *loom__vk_nodes_before(const loom__vk_op *o, int *n);
/* Fused groups (core/fuse.h), recorded at the group's first node o by
 * loom__vk_fused (ops/fuse.c; not in reproducible mode; LOOM_VULKAN_FUSE=0
 * turns them off): the members a kernel covered are marked with
 * loom__vk_fuse_member and record nothing themselves; *done false when this
 * group's shapes or offsets rule the fused kernel out (nothing recorded, the
 * members run one by one).
 *   loom__vk_bn_fused (ops/norm.c): batch_norm in training, split form, ->
 *     add and/or relu, or -> 2x2 max_pool2d (-> relu)
 *   loom__vk_relu_max2_grad (ops/pool2d.c): relu_grad -> 2x2 max_pool2d_grad
 *   loom__vk_attention_grad_fused (ops/attention.c): dq, dk, dv of one attention */
loom_status loom__vk_fused(loom__vk_op *o, const loom__fuse_group *g, bool *done);
loom_status loom__vk_attention_grad_fused(loom__vk_op *o, const loom__fuse_group *g, bool *done);
loom_status loom__vk_bn_fused(loom__vk_op *o, const loom__fuse_group *g, bool *done);
loom_status loom__vk_relu_max2_grad(loom__vk_op *o, const loom__fuse_group *g, bool *done);
void loom__vk_fuse_member(loom__vk_op *o, int exec);
/* Whether the row kernels run one invocation per row (their *_rows variants;
 * ops/norm.c says when). */
bool loom__vk_rows(const loom__vk_op *o);

/* Host helpers for the op files. */
/* element offset of t in its whole buffer (for host reads in a check
 * callback: loom__vk_read(vk, loom__vk_buffer_of(p, t), off * size, ...));
 * not the offset a shader gets */
size_t loom__vk_elem_off(const loom_plan *p, const loom_tensor *t);
loom__buffer *loom__vk_buffer_of(const loom_plan *p, const loom_tensor *t);

/* ---- the op table (kernels.c) and the op host functions (ops/<family>.c) ---- */
#define LOOM__VK_FLOAT (LOOM__DT(F32) | LOOM__DT(F16) | LOOM__DT(BF16))
#define LOOM__VK_ALL (LOOM__VK_FLOAT | LOOM__DT(I32) | LOOM__DT(U8))
extern const loom__kernel loom__vk_kernels[LOOM_OP_COUNT];
/* this backend's function table (dispatch.c); adopt.c makes backends with it */
extern const loom__backend_vtbl loom__vulkan_backend;

#define LOOM_OP(e, stem, bw, fl, ac) loom_status loom__vk_##stem(loom__vk_op *o);
#include "../../core/ops.def"
#undef LOOM_OP

#endif
