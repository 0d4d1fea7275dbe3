/* backends/cuda/device.cu — CUDA runtime probing, device selection, the
 * capability query, available() and describe() for `loom info`, and the
 * error names used by LOOM_CU_CHECK / LOOM_CUBLAS_CHECK.
 *
 * Probing: the driver library libcuda.so.1 and cuBLAS (opened at run time,
 * blas.cu) must load, then cudaGetDeviceCount must find a device (it returns
 * cudaErrorInsufficientDriver (35) or cudaErrorNoDevice (100) when the
 * driver cannot serve it). Otherwise available() is false with the reason,
 * naming the missing library ("CUDA: built, no NVIDIA driver (libcuda.so.1
 * ...)", "CUDA: built, but cuBLAS could not be loaded: libcublas.so.13 ..."),
 * create fails with the same text, and nothing else of the backend is
 * called.
 *
 * Device numbering: the CUDA ordinal ("1"), as CUDA_VISIBLE_DEVICES leaves
 * them. The index comes from desc->device (> 0), else the environment
 * variable LOOM_CUDA_DEVICE, else 0. No silent fallback: an index that names
 * no device is an error that lists the devices there are.
 *
 * Settings read at create: LOOM_CUDA_TF32=1 lets f32 GEMMs use TF32 tensor
 * cores (off by default: f32 GEMMs are full f32; ignored, with a warning,
 * when desc->deterministic is set), LOOM_CUDA_GRAPHS=0 turns CUDA graphs
 * off. desc->deterministic also pins cuBLAS to CUBLAS_ATOMICS_NOT_ALLOWED;
 * loom's own kernels use no float atomics (only atomicMin/atomicMax on ints:
 * error slots, the loss-scale flag), so runs repeat bitwise on the same GPU,
 * driver and cuBLAS. */
#include <stdint.h>

#include "common.cuh"

/* the cuBLAS workspace (set once, so graph capture allocates nothing) */
#define BLAS_WS_BYTES ((size_t)32 << 20)

const char *loom__cu_errstr(cudaError_t e) { return cudaGetErrorName(e); }

const char *loom__cublas_errstr(cublasStatus_t e) {
    switch (e) {
#define E(x) \
    case x: return #x;
        E(CUBLAS_STATUS_SUCCESS) E(CUBLAS_STATUS_NOT_INITIALIZED) E(CUBLAS_STATUS_ALLOC_FAILED)
        E(CUBLAS_STATUS_INVALID_VALUE) E(CUBLAS_STATUS_ARCH_MISMATCH) E(CUBLAS_STATUS_MAPPING_ERROR)
        E(CUBLAS_STATUS_EXECUTION_FAILED) E(CUBLAS_STATUS_INTERNAL_ERROR) E(CUBLAS_STATUS_NOT_SUPPORTED)
        E(CUBLAS_STATUS_LICENSE_ERROR)
#undef E
    default: return "unknown cuBLAS status";
    }
}

loom_status loom__cu_fail(loom_ctx *ctx, cudaError_t e, const char *call, const char *file, int line) {
    (void)cudaGetLastError(); /* clear a non-sticky error */
    loom_status st = e == cudaErrorMemoryAllocation ? LOOM_ERR_OOM : LOOM_ERR_BACKEND;
    return loom__err(ctx, st, "cuda: %s failed: %s: %s (%d) at %s:%d", call, cudaGetErrorName(e),
                     cudaGetErrorString(e), (int)e, file, line);
}

loom_status loom__cublas_fail(loom_ctx *ctx, cublasStatus_t e, const char *call, const char *file, int line) {
    loom_status st = e == CUBLAS_STATUS_ALLOC_FAILED ? LOOM_ERR_OOM : LOOM_ERR_BACKEND;
    return loom__err(ctx, st, "cuda: %s failed: %s (%d) at %s:%d", call, loom__cublas_errstr(e), (int)e, file, line);
}

/* The device count, or -1 with *why set. */
static int device_count(const char **why) {
    static char msg[256];
    if (!loom__cu_driver_present(why) || !loom__cublas_load(why)) return -1;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        const char *hint = e == cudaErrorInsufficientDriver ? "; no NVIDIA driver (libcuda) usable here"
                           : e == cudaErrorNoDevice         ? "; no CUDA-capable device"
                                                            : "";
        snprintf(msg, sizeof msg, "CUDA: built, no device (cudaGetDeviceCount: %s (%d): %s%s)", cudaGetErrorName(e),
                 (int)e, cudaGetErrorString(e), hint);
        if (why) *why = msg;
        return -1;
    }
    if (n == 0) {
        if (why) *why = "CUDA: built, no device (cudaGetDeviceCount found none)";
        return -1;
    }
    return n;
}

bool loom__cu_available(loom_ctx *ctx, const char **why) {
    (void)ctx;
    if (device_count(why) < 0) return false;
    if (why) *why = "CUDA device found";
    return true;
}

bool loom__cu_is_gpu(loom_ctx *ctx) {
    (void)ctx;
    return device_count(NULL) > 0;
}

/* Parse spec into an ordinal in [0, n); -1 (with msg listing the devices) if invalid. */
static int pick(int n, const char *spec, char *msg, size_t cap) {
    char *end;
    long a = strtol(spec, &end, 10);
    if (end != spec && !*end && a >= 0 && a < n) return (int)a;
    size_t at = (size_t)snprintf(msg, cap, "device '%s' does not exist; there are %d:", spec, n);
    for (int i = 0; i < n && at < cap; i++) {
        cudaDeviceProp pr;
        if (cudaGetDeviceProperties(&pr, i) != cudaSuccess) snprintf(pr.name, sizeof pr.name, "?");
        at += (size_t)snprintf(msg + at, cap - at, " %d %s (sm_%d%d);", i, pr.name, pr.major, pr.minor);
    }
    return -1;
}

static bool env_flag(const char *name, bool dflt) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    return !(strcmp(v, "0") == 0 || strcmp(v, "off") == 0 || strcmp(v, "false") == 0 || strcmp(v, "no") == 0);
}

loom_status loom__cu_open(loom__cu *cu, const loom_backend_desc *desc) {
    const char *why = NULL;
    int n = device_count(&why);
    if (n < 0) return loom__err(cu->ctx, LOOM_ERR_UNSUPPORTED, "cuda: %s", why);
    char spec[64] = "0";
    const char *src = "the default";
    const char *env = getenv("LOOM_CUDA_DEVICE");
    if (desc && desc->device > 0) {
        snprintf(spec, sizeof spec, "%d", desc->device);
        src = "loom_backend_desc.device";
    } else if (env && *env) {
        snprintf(spec, sizeof spec, "%s", env);
        src = "LOOM_CUDA_DEVICE";
    }
    char msg[1024];
    int d = pick(n, spec, msg, sizeof msg);
    if (d < 0) return loom__err(cu->ctx, LOOM_ERR_INVALID_ARG, "cuda: %s: %s", src, msg);
    cu->device = d;
    LOOM_CU_CHECK(cu->ctx, cudaSetDevice(d));
    LOOM_CU_CHECK(cu->ctx, cudaGetDeviceProperties(&cu->prop, d));
    cudaDriverGetVersion(&cu->driver_version);
    cudaRuntimeGetVersion(&cu->runtime_version);
    /* deterministic: full f32 GEMMs even with LOOM_CUDA_TF32=1 (TF32 is
     * itself reproducible, but a flag that asks for the reference numerics
     * should not depend on the environment), and cuBLAS atomics disallowed */
    cu->deterministic = desc && desc->deterministic;
    cu->tf32 = env_flag("LOOM_CUDA_TF32", false);
    if (cu->tf32 && cu->deterministic) {
        loom__log(cu->ctx, LOOM_LOG_WARN, "cuda: deterministic kernels: LOOM_CUDA_TF32=1 ignored (f32 GEMMs stay full f32)");
        cu->tf32 = false;
    }
    cu->graphs = env_flag("LOOM_CUDA_GRAPHS", true);
    LOOM_CU_CHECK(cu->ctx, cudaStreamCreateWithFlags(&cu->stream, cudaStreamNonBlocking));
    LOOM_CUBLAS_CHECK(cu->ctx, cublasCreate(&cu->blas));
    cublasGetVersion(cu->blas, &cu->blas_version);
    LOOM_CUBLAS_CHECK(cu->ctx, cublasSetStream(cu->blas, cu->stream));
    LOOM_CUBLAS_CHECK(cu->ctx, cublasSetPointerMode(cu->blas, CUBLAS_POINTER_MODE_HOST));
    /* TF32 only through the compute type chosen per GEMM (ops/matmul.cu) */
    LOOM_CUBLAS_CHECK(cu->ctx, cublasSetMathMode(cu->blas, CUBLAS_DEFAULT_MATH));
    /* cuBLAS's default already disallows atomics; deterministic mode pins it */
    if (cu->deterministic) LOOM_CUBLAS_CHECK(cu->ctx, cublasSetAtomicsMode(cu->blas, CUBLAS_ATOMICS_NOT_ALLOWED));
    cu->blas_ws_bytes = BLAS_WS_BYTES;
    LOOM_CU_CHECK(cu->ctx, cudaMalloc(&cu->blas_ws, cu->blas_ws_bytes));
    LOOM_CUBLAS_CHECK(cu->ctx, cublasSetWorkspace(cu->blas, cu->blas_ws, cu->blas_ws_bytes));
    loom__log(cu->ctx, LOOM_LOG_INFO, "cuda: device %d %s (sm_%d%d, %d SMs, %.1f GiB)%s%s", d, cu->prop.name,
              cu->prop.major, cu->prop.minor, cu->prop.multiProcessorCount,
              (double)cu->prop.totalGlobalMem / (1u << 30), cu->tf32 ? ", TF32 on" : "",
              cu->deterministic ? ", deterministic" : "");
    return LOOM_OK;
}

void loom__cu_close(loom__cu *cu) {
    if (cu->stream) cudaStreamSynchronize(cu->stream);
    loom__cu_host_free_all(cu);
    if (cu->blas) cublasDestroy(cu->blas);
    if (cu->blas_ws) cudaFree(cu->blas_ws);
    if (cu->stream) cudaStreamDestroy(cu->stream);
}

/* tensor-core dtypes by compute capability */
static const char *tensor_cores(int major, int minor) {
    if (major >= 9) return "yes (f16, bf16, TF32, FP8)";
    if (major == 8 && minor >= 9) return "yes (f16, bf16, TF32, FP8)";
    if (major == 8) return "yes (f16, bf16, TF32)";
    if (major == 7 && minor >= 5) return "yes (f16)";
    if (major == 7) return "yes (f16)";
    return "no";
}

void loom__cu_describe(const loom_backend *be, FILE *out) {
    const loom__cu *cu = (const loom__cu *)be->impl;
    const cudaDeviceProp *p = &cu->prop;
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) (void)cudaGetLastError(), fr = 0, tot = p->totalGlobalMem;
    fprintf(out, "  device %d: %s, compute capability %d.%d (sm_%d%d), %d SMs\n", cu->device, p->name, p->major,
            p->minor, p->major, p->minor, p->multiProcessorCount);
    fprintf(out, "  memory %.1f GiB (%.1f GiB free), %d-bit bus, L2 %d MiB, shared memory %zu KiB per block (%zu opt-in)\n",
            (double)tot / (1u << 30), (double)fr / (1u << 30), p->memoryBusWidth, p->l2CacheSize >> 20,
            p->sharedMemPerBlock >> 10, p->sharedMemPerBlockOptin >> 10);
    fprintf(out, "  tensor cores: %s; f32 GEMMs: %s\n", tensor_cores(p->major, p->minor),
            cu->tf32            ? "TF32 (LOOM_CUDA_TF32=1)"
            : cu->deterministic ? "full f32 (deterministic: LOOM_CUDA_TF32 ignored, cuBLAS atomics off)"
                                : "full f32 (LOOM_CUDA_TF32=1 allows TF32)");
    fprintf(out, "  driver %d.%d, runtime %d.%d, cuBLAS %d\n", cu->driver_version / 1000, cu->driver_version % 1000 / 10,
            cu->runtime_version / 1000, cu->runtime_version % 1000 / 10, cu->blas_version);
#ifdef LOOM_CUDNN_HEADERS
    fprintf(out, "  convolution: im2col + cuBLAS (cuDNN headers were found at build time; cuDNN is not used yet)\n");
#else
    fprintf(out, "  convolution: im2col + cuBLAS (built without cuDNN)\n");
#endif
    fprintf(out, "  dtypes: f32 f16 bf16 (16-bit stored, computed in f32; GEMMs accumulate in f32); f64 not supported\n");
    fprintf(out, "  plans: %s\n", cu->graphs ? "captured once as a CUDA graph, replayed each step (LOOM_CUDA_GRAPHS=0: off)"
                                             : "launched node by node (LOOM_CUDA_GRAPHS=0)");
    fprintf(out, "  device selection: LOOM_CUDA_DEVICE=N (CUDA ordinal)\n");
}
