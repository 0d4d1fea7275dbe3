/* backends/cuda/cuda.h — the CUDA backend's private interface.
 *
 * defines: loom__cu (the backend instance), struct loom__buffer (device
 *          pointer), LOOM_CU_CHECK / LOOM_CUBLAS_CHECK, loom__cu_node (what
 *          plan_prepare records per node: steps), loom__cu_op (what an op's
 *          host function gets), the recording helpers (loom__cu_launch for a
 *          kernel, loom__cu_call for anything else such as a cuBLAS call),
 *          scratch memory, error slots, the per-step device value, and the
 *          op table loom__cu_kernels.
 *
 * Every file of the backend is CUDA C++ compiled by nvcc (.cu); the core's C
 * headers are included inside extern "C". Files: device.cu (device probing
 * and selection, available, describe), memory.cu (cudaMalloc buffers, never
 * managed memory; cudaHostAlloc pinned host memory), dispatch.cu (vtable,
 * plan prepare / run / release, CUDA graphs, profiling, error slots, the
 * recording helpers), kernels.cu (the op table), common.cuh (device helpers:
 * storage types, loads and stores with core/dtype.c's rounding, Philox,
 * block reductions), ops/<family>.cu (kernels and host side of each family).
 *
 * Execution model: plan_prepare runs each node's host function once; it
 * records steps (kernel launches with their arguments, cuBLAS calls). The
 * first plan_run captures every step of every node, in order, on the
 * backend's one stream into a CUDA graph, and every run (the first included)
 * replays that graph: one cudaGraphLaunch per step of training. Therefore a
 * step must not depend on host values that change between runs: values that
 * change per run (the plan step, for dropout) are read by the kernel from
 * device memory (loom__cu_step_value), which plan_run updates with a small
 * copy before each replay. Profiled runs (p->node_seconds set) and
 * LOOM_CUDA_GRAPHS=0 launch the steps directly instead, with cudaEvents
 * around each node when profiling.
 *
 * ---- How to add a family (e.g. norm) ----
 * 1. ops/norm.cu: kernels as templates over the storage type T (float,
 *    __half, loom__bf16): load with ldf(p[i]) (float), store with
 *    st(p, i, v) (rounds as core/dtype.c: nearest even). Compute in float;
 *    write shape comments (// x (N, C, H, W)). Match backends/cpu/ops/norm.c
 *    and backends/opencl/kernels/norm.cl: same formulas and order of
 *    operations; reductions are block trees in float (block_sum, block_max
 *    over blockDim.x, a power of two, dynamic shared memory of blockDim.x
 *    floats: pass loom__cu_smem(threads)). Every thread must reach every
 *    __syncthreads: shrink loop bounds instead of returning early.
 * 2. In the same file, one `loom_status loom__cu_<stem>(loom__cu_op *o)` per
 *    op, run once per node at plan_prepare. Pick the kernel instance with
 *    LOOM_CU_DISPATCH(dtype, host_template, args...) and record launches
 *    with loom__cu_launch(o, kernel<T>, grid, block, smem, args...) (the
 *    arguments are copied now and passed at every run) — loom__cu_grid1d for
 *    elementwise kernels (kernels check their index against n). Device
 *    pointers of tensors: loom__cu_ptr<T>(o, t). Scratch: loom__cu_scratch
 *    (node-owned, freed with the plan). Data-dependent run-time errors (an
 *    index out of range): loom__cu_err_slot gives an int the kernel
 *    atomicMin's the first bad position into; the node's `check` callback
 *    formats the message after the run. Values that change per run: read
 *    them in the kernel from loom__cu_step_value(o) (never bake them into
 *    the arguments: the graph replays the arguments of the first run).
 * 3. kernels.cu: K(OP, stem, dtypes) for each op (LOOM__CU_FLOAT =
 *    f32|f16|bf16; no f64, as the OpenCL backend). A missing entry is
 *    "unsupported" everywhere (loom info, the op-check, plan compile).
 * 4. Declare nothing: the loom__cu_<stem> prototypes come from ops.def below.
 *    Check on a GPU machine with `tests/test-opcheck -b cuda -o <op>`.
 */
#ifndef LOOM_CUDA_H
#define LOOM_CUDA_H

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

extern "C" {
#include "../../core/backend_impl.h"
}

/* cuBLAS is opened at run time (blas.cu), so libloom has no NEEDED entry for
 * it and runs where it is absent; the CUDA runtime is linked statically and
 * itself opens the driver (libcuda.so.1). Every cuBLAS entry point the
 * backend calls is listed here, by its exported symbol (cublas_v2.h maps
 * cublasCreate to cublasCreate_v2 etc.) and its function type; after this
 * header a call such as cublasCreate(&h) goes through the table
 * loom__cublas. A new cuBLAS call: add its line. */
#define LOOM__CUBLAS_FNS(X)                                                                                         \
    X(cublasCreate_v2, cublasStatus_t(cublasHandle_t *))                                                            \
    X(cublasDestroy_v2, cublasStatus_t(cublasHandle_t))                                                             \
    X(cublasGetVersion_v2, cublasStatus_t(cublasHandle_t, int *))                                                   \
    X(cublasSetStream_v2, cublasStatus_t(cublasHandle_t, cudaStream_t))                                             \
    X(cublasSetPointerMode_v2, cublasStatus_t(cublasHandle_t, cublasPointerMode_t))                                 \
    X(cublasSetMathMode, cublasStatus_t(cublasHandle_t, cublasMath_t))                                              \
    X(cublasSetAtomicsMode, cublasStatus_t(cublasHandle_t, cublasAtomicsMode_t))                                    \
    X(cublasSetWorkspace_v2, cublasStatus_t(cublasHandle_t, void *, size_t))                                        \
    X(cublasGemmStridedBatchedEx,                                                                                   \
      cublasStatus_t(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *, const void *, \
                     cudaDataType, int, long long, const void *, cudaDataType, int, long long, const void *, void *,  \
                     cudaDataType, int, long long, int, cublasComputeType_t, cublasGemmAlgo_t))

template <typename F> using loom__fn_ptr = F *;
struct loom__cublas_fns {
#define LOOM__CUBLAS_MEMBER(name, type) loom__fn_ptr<type> name;
    LOOM__CUBLAS_FNS(LOOM__CUBLAS_MEMBER)
#undef LOOM__CUBLAS_MEMBER
};
extern loom__cublas_fns loom__cublas;
/* Open cuBLAS once (LOOM_CUBLAS_LIBRARY, else libcublas.so.<the major
 * version built against>) and fill loom__cublas. False, with *why naming the
 * library and what is missing, when it cannot be loaded. */
bool loom__cublas_load(const char **why);
/* The NVIDIA driver library (libcuda.so.1) can be opened; false, with *why
 * naming it, when not. */
bool loom__cu_driver_present(const char **why);

#ifndef LOOM__CUBLAS_NO_REDIRECT /* blas.cu sees the real declarations */
#define cublasCreate_v2 loom__cublas.cublasCreate_v2
#define cublasDestroy_v2 loom__cublas.cublasDestroy_v2
#define cublasGetVersion_v2 loom__cublas.cublasGetVersion_v2
#define cublasSetStream_v2 loom__cublas.cublasSetStream_v2
#define cublasSetPointerMode_v2 loom__cublas.cublasSetPointerMode_v2
#define cublasSetMathMode loom__cublas.cublasSetMathMode
#define cublasSetAtomicsMode loom__cublas.cublasSetAtomicsMode
#define cublasSetWorkspace_v2 loom__cublas.cublasSetWorkspace_v2
#define cublasGemmStridedBatchedEx loom__cublas.cublasGemmStridedBatchedEx
#endif

/* bf16 storage: the raw 16 bits (rounding in common.cuh, as core/dtype.c) */
struct loom__bf16 {
    uint16_t u;
};

typedef struct loom__cu_hostmem loom__cu_hostmem;

typedef struct loom__cu {
    loom_ctx *ctx;
    int device;              /* CUDA device ordinal, as selected */
    cudaDeviceProp prop;     /* name, compute capability, SMs, memory... */
    int driver_version, runtime_version;
    int blas_version;
    cudaStream_t stream;     /* every plan, copy and GEMM runs on it (non-blocking, in order) */
    cublasHandle_t blas;     /* bound to stream; workspace set (graph capture allocates nothing) */
    void *blas_ws;
    size_t blas_ws_bytes;
    bool tf32;               /* LOOM_CUDA_TF32=1: f32 GEMMs may use TF32 tensor cores (never when deterministic) */
    bool deterministic;      /* loom_backend_desc.deterministic: cuBLAS atomics off, no TF32 */
    bool graphs;             /* LOOM_CUDA_GRAPHS != 0: capture plans as CUDA graphs */
    loom__cu_hostmem *hostmem; /* pinned allocations (memory.cu) */
} loom__cu;

struct loom__buffer {
    void *ptr;
    size_t bytes;
};

/* "cudaErrorInvalidValue" etc. */
const char *loom__cu_errstr(cudaError_t e);
const char *loom__cublas_errstr(cublasStatus_t e);
/* Record "cuda: <call> failed: <name>: <text> (<code>) at file:line" on ctx;
 * LOOM_ERR_OOM for cudaErrorMemoryAllocation, else LOOM_ERR_BACKEND. */
loom_status loom__cu_fail(loom_ctx *ctx, cudaError_t e, const char *call, const char *file, int line);
loom_status loom__cublas_fail(loom_ctx *ctx, cublasStatus_t e, const char *call, const char *file, int line);

#define LOOM_CU_CHECK(ctx, call)                                                                          \
    do {                                                                                                  \
        cudaError_t loom_cu_e_ = (call);                                                                  \
        if (loom_cu_e_ != cudaSuccess) return loom__cu_fail((ctx), loom_cu_e_, #call, __FILE__, __LINE__); \
    } while (0)
#define LOOM_CUBLAS_CHECK(ctx, call)                                                                      \
    do {                                                                                                  \
        cublasStatus_t loom_cb_e_ = (call);                                                               \
        if (loom_cb_e_ != CUBLAS_STATUS_SUCCESS)                                                          \
            return loom__cublas_fail((ctx), loom_cb_e_, #call, __FILE__, __LINE__);                       \
    } while (0)

/* ---- device.cu ---- */
bool loom__cu_available(loom_ctx *ctx, const char **why);
bool loom__cu_is_gpu(loom_ctx *ctx);
loom_status loom__cu_open(loom__cu *cu, const loom_backend_desc *desc);
void loom__cu_close(loom__cu *cu);
void loom__cu_describe(const loom_backend *be, FILE *out);

/* ---- memory.cu ---- */
loom_status loom__cu_buffer_alloc(loom_backend *be, size_t bytes, loom__buffer **out);
void loom__cu_buffer_free(loom_backend *be, loom__buffer *b);
loom_status loom__cu_buffer_write(loom_backend *be, loom__buffer *b, size_t off, const void *src, size_t n);
loom_status loom__cu_buffer_read(loom_backend *be, loom__buffer *b, size_t off, void *dst, size_t n);
loom_status loom__cu_host_alloc(loom_backend *be, size_t bytes, void **out);
void loom__cu_host_free(loom_backend *be, void *p);
void loom__cu_host_free_all(loom__cu *cu);

/* ---- per node records (dispatch.cu) ---- */
#define LOOM__CU_MAX_OWNED 8

/* What a recorded step gets at run time. */
typedef struct loom__cu_exec {
    loom__cu *cu;
    cudaStream_t s;
} loom__cu_exec;

/* A non-kernel step (a cuBLAS call...): enqueue work on x->s, return its
 * status (record errors on x->cu->ctx). args: the copy loom__cu_call made. */
typedef loom_status (*loom__cu_call_fn)(const loom__cu_exec *x, const void *args);

typedef struct loom__cu_step {
    const void *kernel;  /* a __global__ function, or NULL for a call step */
    dim3 grid, block;
    size_t smem;
    void **argv;         /* kernel: pointers to each argument inside blob */
    loom__cu_call_fn fn; /* call step */
    void *blob;          /* the arguments (malloc'd, freed with the plan) */
} loom__cu_step;

typedef struct loom__cu_node loom__cu_node;
struct loom__cu_node {
    const loom_tensor *t;
    int n_step, cap_step;
    loom__cu_step *steps;
    int n_owned;
    void *owned[LOOM__CU_MAX_OWNED]; /* scratch (cudaMalloc) */
    int err_slot;                    /* -1, or this node's slot in the plan's error buffer */
    /* after the run, when the slot holds a position (not INT32_MAX): set the
     * error message and return the status */
    loom_status (*check)(loom__cu *cu, const loom_plan *p, const loom_tensor *t, int32_t bad);
};

/* What an op's host function gets at plan_prepare. */
typedef struct loom__cu_op {
    loom__cu *cu;
    const loom_plan *plan;
    const loom_tensor *t;  /* the node */
    loom__cu_node *node;   /* to fill */
    int32_t *err_buf;      /* device: the plan's error slots */
    const uint64_t *step;  /* device: the plan step of the current run */
} loom__cu_op;

typedef loom_status (*loom__cu_fn)(loom__cu_op *o);

/* Device address of tensor t in the plan (buffer + offset). */
void *loom__cu_addr(const loom_plan *p, const loom_tensor *t);
template <typename T>
static inline T *loom__cu_ptr(const loom__cu_op *o, const loom_tensor *t) {
    return (T *)loom__cu_addr(o->plan, t);
}

/* A device scratch buffer of `bytes`, owned by the node (freed with the plan). */
loom_status loom__cu_scratch(loom__cu_op *o, size_t bytes, void **out);
/* Give the node an error slot: the device int the kernel atomicMin's into
 * (reset to INT32_MAX before each run). */
int32_t *loom__cu_err_slot(loom__cu_op *o);
/* Device pointer to the plan step of the current run (updated before each run). */
static inline const uint64_t *loom__cu_step_value(const loom__cu_op *o) { return o->step; }

/* A call step: args (size bytes) copied now, passed to fn at every run. */
loom_status loom__cu_call(loom__cu_op *o, loom__cu_call_fn fn, const void *args, size_t size);

/* A kernel step with its arguments stored in blob (size bytes) and argv
 * (n pointers into blob); takes ownership of blob. */
loom_status loom__cu_add_kernel(loom__cu_op *o, const void *kernel, dim3 grid, dim3 block, size_t smem, void *blob,
                                size_t argv_off, int nargs);

/* Threads per block for elementwise kernels, and the grid for n items. */
#define LOOM__CU_THREADS 256
static inline dim3 loom__cu_grid1d(int64_t n) {
    int64_t b = (n + LOOM__CU_THREADS - 1) / LOOM__CU_THREADS;
    return dim3((unsigned)(b > 0 ? b : 1));
}
/* A power-of-two block size for reducing n items: min(256, next power of two
 * >= n), at least 32 (one warp). */
static inline unsigned loom__cu_reduce_threads(int64_t n) {
    unsigned l = 32;
    while (l < 256 && (int64_t)l < n) l <<= 1;
    return l;
}
static inline size_t loom__cu_smem(unsigned threads) { return threads * sizeof(float); }

/* Record kernel k<<<grid, block, smem>>>(args...): the arguments are
 * converted to the kernel's parameter types and copied now. */
template <typename... A>
static inline loom_status loom__cu_launch(loom__cu_op *o, void (*k)(A...), dim3 grid, dim3 block, size_t smem,
                                          std::type_identity_t<A>... args) {
    typedef std::tuple<A...> tup;
    static_assert((std::is_trivially_copyable<A>::value && ...), "kernel arguments must be trivially copyable");
    constexpr int n = (int)sizeof...(A);
    /* blob: the tuple, then n pointers into it (aligned for void *) */
    size_t off = (sizeof(tup) + alignof(void *) - 1) / alignof(void *) * alignof(void *);
    void *blob = malloc(off + (n ? n : 1) * sizeof(void *));
    if (!blob) return loom__err(o->cu->ctx, LOOM_ERR_OOM, "cuda: out of host memory recording a launch");
    tup *tp = new (blob) tup(args...);
    void **argv = (void **)((char *)blob + off);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((argv[I] = (void *)&std::get<I>(*tp)), ...);
    }(std::index_sequence_for<A...>{});
    return loom__cu_add_kernel(o, (const void *)k, grid, block, smem, blob, off, n);
}

/* Call F<float>, F<__half> or F<loom__bf16>(args...) for storage dtype dt
 * (F32 for anything else: the op table admits only those three). */
#define LOOM_CU_DISPATCH(dt, F, ...)                                                           \
    ((dt) == LOOM_F16 ? F<__half>(__VA_ARGS__) : (dt) == LOOM_BF16 ? F<loom__bf16>(__VA_ARGS__) \
                                                                   : F<float>(__VA_ARGS__))

/* ---- the op table (kernels.cu) and the op host functions (ops/<family>.cu) ---- */
#define LOOM__CU_FLOAT (LOOM__DT(F32) | LOOM__DT(F16) | LOOM__DT(BF16))
#define LOOM__CU_ALL (LOOM__CU_FLOAT | LOOM__DT(I32) | LOOM__DT(U8))
extern loom__kernel loom__cu_kernels[LOOM_OP_COUNT]; /* filled before main (kernels.cu) */

#define LOOM_OP(e, stem, bw, fl, ac) loom_status loom__cu_##stem(loom__cu_op *o);
#include "../../core/ops.def"
#undef LOOM_OP

#endif
