/* backends/opencl/opencl.h — the OpenCL backend's private interface.
 *
 * defines: loom__cl (the backend instance), struct loom__buffer (cl_mem),
 *          LOOM_CL_CHECK, loom__cl_node / loom__cl_launch (what plan_prepare
 *          records per node), the op host-function type loom__cl_fn, the
 *          argument and launch helpers, and the op table loom__cl_kernels.
 *
 * Files: loader.c (the ICD loader, opened at run time), device.c
 * (platform/device selection, capabilities, available, describe), program.c (programs from the embedded kernels/<name>.cl, one per
 * storage dtype, binary cache on disk), memory.c (buffers, pinned host
 * memory), dispatch.c (vtable, plan prepare/run, profiling, the run-time error
 * slots), ops/<family>.c (host side of each op), kernels/<family>.cl.
 * Reproducible mode (loom_backend_desc.reproducible, core/repro.h): the
 * programs are built with -DLOOM_REPRO (program.c), which makes the GEMM
 * (gemm.cl) and conv2d_grad_weight's image sum (conv2d.cl) canonical and
 * compiles kernels/repro.cl; the ops whose host side differs too have a
 * `repro` variant in the kernel table (loom__cl_<stem>_repro, in the op's own
 * ops/<family>.c; dispatch.c picks it with loom__kernel_variant). A device without
 * correctly rounded division and sqrt refuses the mode at create.
 *
 * ---- How to add a family (e.g. norm) ----
 * 1. kernels/norm.cl: kernels named <op>[_<variant>]. They are compiled once
 *    per storage dtype (f32, f16, bf16): T is the storage type, LD(p, i) loads
 *    element i as float, ST(p, i, v) stores a float with the dtype's rounding
 *    (common.cl; LD_F32/LD_F16/LD_BF16/ST_* name a dtype explicitly). Every
 *    tensor argument is a pair (__global T *x, ulong xo): buffer and element
 *    offset; index x + xo. Compute in float; write shape comments
 *    (// x (N, C, H, W)). Geometry that does not fit a few scalars goes in a
 *    `__constant long *g` table (loom__cl_meta). Match backends/cpu/ops/norm.c
 *    exactly (same formulas and order of operations; reductions may be
 *    trees, in float: group_sum / group_max). Work-group kernels must reach
 *    every barrier from every item: never `return` before a barrier, even
 *    when the whole group would (PoCL hangs); shrink the loop bounds instead
 *    (see ce_rows in loss.cl). Nor call a function with barriers inside a
 *    branch, even one that is uniform across the group (PoCL crashes in the
 *    generated work-group function): call it always and pass a count of 0
 *    (see the train/eval statistics in norm.cl).
 * 2. ops/norm.c: one `loom_status loom__cl_<stem>(loom__cl_op *o)` per op.
 *    It runs once per node at plan_prepare: get kernels with loom__cl_kernel,
 *    set their arguments with loom__cl_arg_* (tensors via loom__cl_arg_t,
 *    which reads plan->addr), then record launches with loom__cl_launch_1d
 *    (elementwise) or loom__cl_launch_groups (one work-group per row, local
 *    reductions). Scratch buffers: loom__cl_scratch. Data-dependent run-time
 *    errors (an index out of range): loom__cl_err_slot gives the kernel an int
 *    slot to atomic_min the first bad position into; the `check` callback
 *    formats the message after the run. Per-run arguments (the plan step):
 *    set o->node->before_run.
 * 3. kernels.c: K(OP, stem, dtypes) for each op (LOOM__CL_FLOAT = f32|f16|bf16;
 *    never F64: there is no fp64 on most OpenCL devices). A missing entry is
 *    "unsupported" everywhere (loom info, the op-check, plan compile).
 * 4. Declare nothing: the loom__cl_<stem> prototypes come from ops.def below.
 *    Check with `build/tests/test-opcheck -b opencl -o <op>` (it runs every
 *    case, reports the one op). Kernel sources are embedded at build time
 *    (embed.cmake); programs are cached under LOOM_OPENCL_CACHE, keyed by the
 *    source, so an edited .cl file rebuilds by itself.
 */
#ifndef LOOM_OPENCL_H
#define LOOM_OPENCL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <CL/cl_icd.h> /* cl_api_<name>: the function pointer types */

#include "../../core/backend_impl.h"
#include "../../core/fuse.h"

/* The OpenCL ICD loader is opened at run time (loader.c), so libloom has no
 * NEEDED entry for libOpenCL and runs where it is absent. Every OpenCL entry
 * point the backend calls is listed here; after this header a call such as
 * clFinish(q) goes through the table loom__clf, filled by loom__cl_load. A
 * new OpenCL call: add it to the list and to the redirects below. */
#define LOOM__CL_FNS(X)                                                                                             \
    X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo) X(clCreateContext)               \
    X(clReleaseContext) X(clCreateCommandQueue) X(clReleaseCommandQueue) X(clFinish) X(clCreateBuffer)             \
    X(clReleaseMemObject) X(clEnqueueReadBuffer) X(clEnqueueWriteBuffer) X(clEnqueueFillBuffer) X(clEnqueueCopyBuffer) \
    X(clEnqueueMapBuffer) X(clEnqueueUnmapMemObject) X(clCreateProgramWithSource) X(clCreateProgramWithBinary)     \
    X(clBuildProgram) X(clGetProgramInfo) X(clGetProgramBuildInfo) X(clReleaseProgram) X(clCreateKernel)           \
    X(clGetKernelInfo) X(clGetKernelWorkGroupInfo) X(clSetKernelArg) X(clReleaseKernel) X(clEnqueueNDRangeKernel)  \
    X(clWaitForEvents) X(clGetEventProfilingInfo) X(clReleaseEvent)

typedef struct loom__cl_fns {
#define LOOM__CL_MEMBER(name) cl_api_##name name;
    LOOM__CL_FNS(LOOM__CL_MEMBER)
#undef LOOM__CL_MEMBER
} loom__cl_fns;
extern loom__cl_fns loom__clf;
/* Open the ICD loader once (LOOM_OPENCL_LIBRARY, else libOpenCL.so.1) and
 * fill loom__clf. False, with *why naming the library and what is missing,
 * when it cannot be loaded. */
bool loom__cl_load(const char **why);

#ifndef LOOM__CL_NO_REDIRECT /* loader.c */
#define clGetPlatformIDs loom__clf.clGetPlatformIDs
#define clGetPlatformInfo loom__clf.clGetPlatformInfo
#define clGetDeviceIDs loom__clf.clGetDeviceIDs
#define clGetDeviceInfo loom__clf.clGetDeviceInfo
#define clCreateContext loom__clf.clCreateContext
#define clReleaseContext loom__clf.clReleaseContext
#define clCreateCommandQueue loom__clf.clCreateCommandQueue
#define clReleaseCommandQueue loom__clf.clReleaseCommandQueue
#define clFinish loom__clf.clFinish
#define clCreateBuffer loom__clf.clCreateBuffer
#define clReleaseMemObject loom__clf.clReleaseMemObject
#define clEnqueueReadBuffer loom__clf.clEnqueueReadBuffer
#define clEnqueueWriteBuffer loom__clf.clEnqueueWriteBuffer
#define clEnqueueFillBuffer loom__clf.clEnqueueFillBuffer
#define clEnqueueCopyBuffer loom__clf.clEnqueueCopyBuffer
#define clEnqueueMapBuffer loom__clf.clEnqueueMapBuffer
#define clEnqueueUnmapMemObject loom__clf.clEnqueueUnmapMemObject
#define clCreateProgramWithSource loom__clf.clCreateProgramWithSource
#define clCreateProgramWithBinary loom__clf.clCreateProgramWithBinary
#define clBuildProgram loom__clf.clBuildProgram
#define clGetProgramInfo loom__clf.clGetProgramInfo
#define clGetProgramBuildInfo loom__clf.clGetProgramBuildInfo
#define clReleaseProgram loom__clf.clReleaseProgram
#define clCreateKernel loom__clf.clCreateKernel
#define clGetKernelInfo loom__clf.clGetKernelInfo
#define clGetKernelWorkGroupInfo loom__clf.clGetKernelWorkGroupInfo
#define clSetKernelArg loom__clf.clSetKernelArg
#define clReleaseKernel loom__clf.clReleaseKernel
#define clEnqueueNDRangeKernel loom__clf.clEnqueueNDRangeKernel
#define clWaitForEvents loom__clf.clWaitForEvents
#define clGetEventProfilingInfo loom__clf.clGetEventProfilingInfo
#define clReleaseEvent loom__clf.clReleaseEvent
#endif

/* Programs: one per storage dtype of the output. */
enum { LOOM__CL_P_F32, LOOM__CL_P_F16, LOOM__CL_P_BF16, LOOM__CL_NPROG };

typedef struct loom__cl_hostmem loom__cl_hostmem;

typedef struct loom__cl {
    loom_ctx *ctx;
    loom_backend_stats *stats; /* the backend's round-trip counters */
    unsigned char *wstage;     /* host copies of writes still in flight (backends/opencl/memory.c) */
    size_t wstage_cap, wstage_used;
    int platform_index, device_index; /* as selected */
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;      /* in order; used for everything but profiled runs */
    cl_command_queue queue_prof; /* in order, CL_QUEUE_PROFILING_ENABLE; created on first use */
    /* capabilities (device.c) */
    char name[256], vendor[256], dev_version[256], driver[256], c_version[256], platform_name[256],
        platform_version[256];
    cl_device_type type;
    cl_uint compute_units;
    cl_ulong global_mem_bytes, local_mem_bytes, max_alloc_bytes;
    size_t max_wg;          /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    cl_uint native_vw;      /* CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT (0 if not reported); see loom__cl_vw */
    size_t preferred_wg;    /* multiple reported by a probe kernel (0 until a program is built) */
    bool fp16, fp64;        /* cl_khr_fp16 (not needed; reported) / cl_khr_fp64 (augment_u8's RandomAffine) */
    bool correct_div_sqrt;  /* CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT: built with that option */
    bool reproducible;      /* loom_backend_desc.reproducible: programs built with -DLOOM_REPRO */
    /* programs (program.c), built on first use */
    cl_program prog[LOOM__CL_NPROG];
    double build_seconds[LOOM__CL_NPROG];
    bool from_cache[LOOM__CL_NPROG];
    loom__cl_hostmem *hostmem; /* pinned allocations (memory.c) */
    int gemm_variant;          /* the GEMM kernels in use (ops/gemm_select.c); 0 until chosen */
} loom__cl;

struct loom__buffer {
    cl_mem mem;
    size_t bytes;
};

/* "CL_INVALID_VALUE" etc. */
const char *loom__cl_errstr(cl_int e);
/* Record "opencl: <call> failed: <CL_ERROR> (<code>) at file:line" on ctx. */
loom_status loom__cl_fail(loom_ctx *ctx, cl_int e, const char *call, const char *file, int line);

/* Evaluate an OpenCL call returning cl_int; on failure record it (file:line,
 * call text, error name) and return LOOM_ERR_BACKEND (LOOM_ERR_OOM for the
 * out-of-memory codes) from the enclosing function. */
#define LOOM_CL_CHECK(ctx, call)                                                            \
    do {                                                                                    \
        cl_int loom_cl_e_ = (call);                                                         \
        if (loom_cl_e_ != CL_SUCCESS) return loom__cl_fail((ctx), loom_cl_e_, #call, __FILE__, __LINE__); \
    } while (0)
/* The same for calls that report through an errcode_ret (clCreate*): `err`
 * holds the code, `what` names the call. */
#define LOOM_CL_CHECK_ERR(ctx, err, what)                                                   \
    do {                                                                                    \
        if ((err) != CL_SUCCESS) return loom__cl_fail((ctx), (err), what, __FILE__, __LINE__); \
    } while (0)

/* ---- device.c ---- */
bool loom__cl_available(loom_ctx *ctx, const char **why);
bool loom__cl_is_gpu(loom_ctx *ctx); /* the default device (LOOM_OPENCL_DEVICE or 0) is a GPU */
loom_status loom__cl_open(loom__cl *cl, const loom_backend_desc *desc);
void loom__cl_close(loom__cl *cl);
void loom__cl_describe(const loom_backend *be, FILE *out);

/* ---- program.c ---- */
/* The program for storage dtype dt (F32, F16 or BF16), built (or loaded from
 * the cache) on first use. */
loom_status loom__cl_program(loom__cl *cl, loom_dtype dt, cl_program *out);
/* The cache directory in use (LOOM_OPENCL_CACHE, $XDG_CACHE_HOME/loom/opencl,
 * ~/.cache/loom/opencl), or "" when caching is off (LOOM_OPENCL_CACHE=off). */
void loom__cl_cache_dir(char *out, size_t n);

/* ---- memory.c ---- */
loom_status loom__cl_buffer_alloc(loom_backend *be, size_t bytes, loom__buffer **out);
void loom__cl_buffer_free(loom_backend *be, loom__buffer *b);
loom_status loom__cl_buffer_write(loom_backend *be, loom__buffer *b, size_t off, const void *src, size_t n);
loom_status loom__cl_buffer_read(loom_backend *be, loom__buffer *b, size_t off, void *dst, size_t n);
loom_status loom__cl_host_alloc(loom_backend *be, size_t bytes, void **out);
void loom__cl_host_free(loom_backend *be, void *p);
void loom__cl_host_free_all(loom__cl *cl);

/* ---- per node records (dispatch.c) ---- */
#define LOOM__CL_MAX_LAUNCH 8
#define LOOM__CL_MAX_OWNED 8

typedef struct loom__cl_launch {
    cl_kernel k;
    cl_uint dim;
    size_t global[2];
    size_t local[2]; /* local[0] == 0: the runtime chooses */
} loom__cl_launch;

typedef struct loom__cl_op loom__cl_op;
typedef struct loom__cl_node loom__cl_node;

struct loom__cl_node {
    const loom_tensor *t;
    int n_launch;
    loom__cl_launch l[LOOM__CL_MAX_LAUNCH];
    int n_kernel;
    cl_kernel kernel[LOOM__CL_MAX_LAUNCH]; /* created by loom__cl_kernel */
    int n_owned;
    cl_mem owned[LOOM__CL_MAX_OWNED]; /* geometry tables, scratch */
    int err_slot;                     /* -1, or this node's slot in the plan's error buffer */
    /* after the run, when the slot holds a position (not INT32_MAX): set the
     * error message and return the status */
    loom_status (*check)(loom__cl *cl, const loom_plan *p, const loom_tensor *t, int32_t bad);
    /* before each run (e.g. dropout: the plan step); may be NULL */
    loom_status (*before_run)(loom__cl *cl, const loom_plan *p, loom__cl_node *n);
    cl_mem cols; /* conv2d on the column path: its im2col buffer (ops/conv2d.c), or NULL */
    bool fused;  /* launched by an earlier node's fused group: no launches of its own */
};

/* What an op's host function gets at plan_prepare. */
struct loom__cl_op {
    loom__cl *cl;
    const loom_plan *plan;
    const loom_tensor *t; /* the node */
    loom__cl_node *node;  /* to fill */
    cl_mem err_buf;       /* the plan's error slots */
    const loom__cl_node *first; /* the plan's nodes in exec order: first .. node - 1 are prepared */
    bool *fused;                /* by exec index: loom__cl_node.fused of the nodes not yet prepared */
};

typedef loom_status (*loom__cl_fn)(loom__cl_op *o);

/* Fused groups (core/fuse.h), launched at the group's first node o by
 * loom__cl_fused (ops/fuse.c; not in reproducible mode; LOOM_OPENCL_FUSE=0
 * turns them off): the members a kernel covered are marked with
 * loom__cl_fuse_member and launch nothing themselves; *done false when this
 * group's shapes rule the fused kernel out (nothing launched, the members
 * run one by one).
 *   loom__cl_bn_fused (ops/norm.c): batch_norm in training, split form, ->
 *     add and/or relu, or -> 2x2 max_pool2d (-> relu)
 *   loom__cl_relu_max2_grad (ops/pool2d.c): relu_grad -> 2x2 max_pool2d_grad
 *   loom__cl_attention_grad_fused (ops/attention.c): dq, dk, dv of one attention */
loom_status loom__cl_fused(loom__cl_op *o, const loom__fuse_group *g, bool *done);
loom_status loom__cl_attention_grad_fused(loom__cl_op *o, const loom__fuse_group *g, bool *done);
loom_status loom__cl_bn_fused(loom__cl_op *o, const loom__fuse_group *g, bool *done);
loom_status loom__cl_relu_max2_grad(loom__cl_op *o, const loom__fuse_group *g, bool *done);
void loom__cl_fuse_member(loom__cl_op *o, int exec);

/* Kernel `name` from the program for storage dtype dt (F32/F16/BF16; I32 and
 * U8 use the F32 program); owned by the node (released with the plan). */
loom_status loom__cl_kernel(loom__cl_op *o, loom_dtype dt, const char *name, cl_kernel *out);

/* Argument setting: a cursor over one kernel's arguments. Failures are
 * collected and reported by loom__cl_args_end (first failure wins). */
typedef struct loom__cl_args {
    loom__cl_op *o;
    cl_kernel k;
    cl_uint i;
    cl_int err;
    cl_uint err_index;
} loom__cl_args;

loom__cl_args loom__cl_args_begin(loom__cl_op *o, cl_kernel k);
void loom__cl_arg_t(loom__cl_args *a, const loom_tensor *t); /* (buffer, element offset as ulong) */
void loom__cl_arg_mem(loom__cl_args *a, cl_mem m);
void loom__cl_arg_i32(loom__cl_args *a, int32_t v);
void loom__cl_arg_u32(loom__cl_args *a, uint32_t v);
void loom__cl_arg_i64(loom__cl_args *a, int64_t v); /* OpenCL long */
void loom__cl_arg_u64(loom__cl_args *a, uint64_t v); /* OpenCL ulong */
void loom__cl_arg_f32(loom__cl_args *a, float v);
void loom__cl_arg_local(loom__cl_args *a, size_t bytes); /* __local scratch */
loom_status loom__cl_args_end(loom__cl_args *a);

/* A read-only table of n int64 values (a `__constant long *` argument),
 * owned by the node. */
loom_status loom__cl_meta(loom__cl_op *o, const int64_t *v, int n, cl_mem *out);
/* A device scratch buffer owned by the node. */
loom_status loom__cl_scratch(loom__cl_op *o, size_t bytes, cl_mem *out);
/* Give the node an error slot; *slot is its index in o->err_buf. */
void loom__cl_err_slot(loom__cl_op *o, int *slot);

/* Launches, run in the order recorded: n work-items (rounded up to a work-
 * group multiple; kernels check their index against n), or `groups`
 * work-groups of `local` items (local a power of two <= the device limit). */
loom_status loom__cl_launch_1d(loom__cl_op *o, cl_kernel k, int64_t n);
loom_status loom__cl_launch_groups(loom__cl_op *o, cl_kernel k, int64_t groups, size_t local);
/* A 2-D range of n0 x n1 items (n0 rounded up to the work-group's 64 items,
 * or the device limit; kernels check both indices). */
loom_status loom__cl_launch_2d(loom__cl_op *o, cl_kernel k, int64_t n0, int64_t n1);
/* The same with work-groups of l0 x 1 items (n0 rounded up to l0; l0 at most the device limit) */
loom_status loom__cl_launch_2d_local(loom__cl_op *o, cl_kernel k, int64_t n0, size_t l0, int64_t n1);
/* 2x2 pooling's 2-D range (window j < OW, window row r < rows), a work-group
 * per window row of at most 64 windows (ops/pool2d.c: max2_2d, and the fused
 * bn_apply_pool of ops/norm.c) */
loom_status loom__cl_launch_window_rows(loom__cl_op *o, cl_kernel k, int64_t OW, int64_t rows);
/* 2x2 pooling's fused kernels 8 windows at a time (pool2d.cl's *_v8: CPU devices; LOOM_OPENCL_POOL_2D) */
bool loom__cl_pool_v8(const loom__cl_op *o);
/* the float vector width of the kernels' explicit vectors (-DLOOM_VW: conv2d.cl's GI_VW): 16 where
 * the device's native width is 16 (AVX-512 under PoCL), else 8 */
int loom__cl_vw(const loom__cl *cl);
/* A power-of-two work-group size for reducing `n` items: min(256, device
 * limit, next power of two >= n), at least 1. */
size_t loom__cl_reduce_local(const loom__cl *cl, int64_t n);
/* The work-group of a row kernel (layer norm, cross-entropy's rows, sum over
 * many outputs) reducing `n` items per row: 1 on CPU devices, where one item
 * walking the row beats PoCL's work-group loops around every reduction
 * barrier (the gpt's layer norms 19.4 -> 2.7 ms per step), not in
 * reproducible mode (another summation order); LOOM_OPENCL_ROWS=0|1 forces
 * either (checked when the backend was made); else loom__cl_reduce_local. */
size_t loom__cl_row_local(const loom__cl *cl, int64_t n);
/* Whether the row forms run (CPU devices, not reproducible, LOOM_OPENCL_ROWS):
 * also permute, slice and broadcasting one item per output row (*_rows). */
bool loom__cl_rows(const loom__cl *cl);

/* Host helpers for the op files. */
size_t loom__cl_elem_off(const loom_plan *p, const loom_tensor *t); /* element offset in its buffer */
cl_mem loom__cl_mem(const loom_plan *p, const loom_tensor *t);
/* whether tensors a and b of plan p share bytes (an output in place over an input) */
bool loom__cl_overlap(const loom_plan *p, const loom_tensor *a, const loom_tensor *b);

/* ---- the op table (kernels.c) and the op host functions (ops/<family>.c) ---- */
#define LOOM__CL_FLOAT (LOOM__DT(F32) | LOOM__DT(F16) | LOOM__DT(BF16))
#define LOOM__CL_ALL (LOOM__CL_FLOAT | LOOM__DT(I32) | LOOM__DT(U8))
extern const loom__kernel loom__cl_kernels[LOOM_OP_COUNT];

/* Every command enqueued on cl->queue so far has completed (after a clFinish
 * or a blocking read on it): the write staging may be reused. */
static inline void loom__cl_writes_done(loom__cl *cl) { cl->wstage_used = 0; }
/* Reproducible mode (core/repro.h): the host functions of the ops whose
 * canonical kernels differ from the ordinary ones (the kernel table's `repro`
 * entries, in the op's own ops/<family>.c) */
loom_status loom__cl_sum_repro(loom__cl_op *o);
loom_status loom__cl_mean_repro(loom__cl_op *o);
loom_status loom__cl_batch_norm_repro(loom__cl_op *o);
loom_status loom__cl_batch_norm_grad_params_repro(loom__cl_op *o);
loom_status loom__cl_cross_entropy_repro(loom__cl_op *o);
loom_status loom__cl_cross_entropy_grad_repro(loom__cl_op *o);
/* a work-group size for a csum over n values: one item per chunk, up to the limit */
size_t loom__cl_chunk_local(const loom__cl *cl, int64_t n);

#define LOOM_OP(e, stem, bw, fl, ac) loom_status loom__cl_##stem(loom__cl_op *o);
#include "../../core/ops.def"
#undef LOOM_OP

#endif
