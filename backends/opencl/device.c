/* backends/opencl/device.c — OpenCL platform and device selection, the
 * capability query, available() and describe() for `loom info`, and the
 * error-code names used by LOOM_CL_CHECK. Each entry point first opens the
 * ICD loader (loader.c); when it cannot, available() is false and create
 * fails, both with the message naming the library.
 *
 * Device numbering: a flat index over every device of every platform, in
 * platform order ("2"), or "P:D" (platform P, its device D). The index comes
 * from desc->device (> 0), else the environment variable LOOM_OPENCL_DEVICE,
 * else 0. No silent fallback: an index that names no device is an error that
 * lists the devices there are. */
#include <stdint.h>

#include "opencl.h"

const char *loom__cl_errstr(cl_int e) {
    switch (e) {
#define E(x) \
    case x: return #x;
        E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
        E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
        E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_MEM_COPY_OVERLAP) E(CL_BUILD_PROGRAM_FAILURE) E(CL_MAP_FAILURE)
        E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        E(CL_COMPILE_PROGRAM_FAILURE) E(CL_LINK_PROGRAM_FAILURE) E(CL_INVALID_VALUE) E(CL_INVALID_DEVICE_TYPE)
        E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT) E(CL_INVALID_QUEUE_PROPERTIES)
        E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR) E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_BINARY)
        E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM) E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME)
        E(CL_INVALID_KERNEL_DEFINITION) E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE)
        E(CL_INVALID_ARG_SIZE) E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE)
        E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT_WAIT_LIST) E(CL_INVALID_EVENT)
        E(CL_INVALID_OPERATION) E(CL_INVALID_BUFFER_SIZE) E(CL_INVALID_GLOBAL_WORK_SIZE)
#undef E
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "unknown OpenCL error";
    }
}

loom_status loom__cl_fail(loom_ctx *ctx, cl_int e, const char *call, const char *file, int line) {
    loom_status st = (e == CL_OUT_OF_HOST_MEMORY || e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_RESOURCES)
                         ? LOOM_ERR_OOM
                         : LOOM_ERR_BACKEND;
    return loom__err(ctx, st, "opencl: %s failed: %s (%d) at %s:%d", call, loom__cl_errstr(e), (int)e, file, line);
}

/* All devices of all platforms, flattened. */
#define MAX_PLAT 16
#define MAX_DEV 64
typedef struct devlist {
    int n;
    cl_platform_id plat[MAX_DEV];
    cl_device_id dev[MAX_DEV];
    int pi[MAX_DEV], di[MAX_DEV]; /* platform index, index within the platform */
    cl_int err;                   /* clGetPlatformIDs result when no platform */
} devlist;

static void list_devices(devlist *l) {
    cl_platform_id plats[MAX_PLAT];
    cl_uint np = 0;
    l->n = 0;
    l->err = clGetPlatformIDs(MAX_PLAT, plats, &np);
    if (l->err != CL_SUCCESS) return;
    for (cl_uint p = 0; p < np && p < MAX_PLAT; p++) {
        cl_device_id devs[MAX_DEV];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, MAX_DEV, devs, &nd) != CL_SUCCESS) continue;
        for (cl_uint d = 0; d < nd && d < MAX_DEV && l->n < MAX_DEV; d++) {
            l->plat[l->n] = plats[p], l->dev[l->n] = devs[d];
            l->pi[l->n] = (int)p, l->di[l->n] = (int)d;
            l->n++;
        }
    }
}

bool loom__cl_available(loom_ctx *ctx, const char **why) {
    (void)ctx;
    if (!loom__cl_load(why)) return false;
    devlist l;
    list_devices(&l);
    if (l.err != CL_SUCCESS) {
        if (why)
            *why = l.err == -1001 ? "no OpenCL platform (clGetPlatformIDs: -1001 CL_PLATFORM_NOT_FOUND_KHR; no ICD "
                                    "installed in /etc/OpenCL/vendors)"
                                  : "no OpenCL platform (clGetPlatformIDs failed)";
        return false;
    }
    if (l.n == 0) {
        if (why) *why = "an OpenCL platform but no device (clGetDeviceIDs found none)";
        return false;
    }
    if (why) *why = "OpenCL device found";
    return true;
}

static void dev_str(cl_device_id d, cl_device_info what, char *out, size_t n) {
    out[0] = 0;
    if (clGetDeviceInfo(d, what, n, out, NULL) != CL_SUCCESS) snprintf(out, n, "?");
    out[n - 1] = 0;
}

static const char *type_name(cl_device_type t) {
    if (t & CL_DEVICE_TYPE_GPU) return "GPU";
    if (t & CL_DEVICE_TYPE_CPU) return "CPU";
    if (t & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
    return "other";
}

/* Parse "N" or "P:D" into a flat index over l; -1 (with msg) if invalid. */
static int pick(const devlist *l, const char *spec, char *msg, size_t n) {
    char *end;
    long a = strtol(spec, &end, 10);
    if (end != spec && *end == ':') {
        const char *s2 = end + 1;
        long b = strtol(s2, &end, 10);
        if (end != s2 && !*end)
            for (int i = 0; i < l->n; i++)
                if (l->pi[i] == a && l->di[i] == b) return i;
    } else if (end != spec && !*end && a >= 0 && a < l->n) {
        return (int)a;
    }
    size_t at = (size_t)snprintf(msg, n, "device '%s' does not exist; there are %d:", spec, l->n);
    for (int i = 0; i < l->n && at < n; i++) {
        char name[128];
        dev_str(l->dev[i], CL_DEVICE_NAME, name, sizeof name);
        at += (size_t)snprintf(msg + at, n - at, " %d (%d:%d) %s;", i, l->pi[i], l->di[i], name);
    }
    return -1;
}

bool loom__cl_is_gpu(loom_ctx *ctx) {
    (void)ctx;
    if (!loom__cl_load(NULL)) return false;
    devlist l;
    list_devices(&l);
    if (l.err != CL_SUCCESS || l.n == 0) return false;
    const char *env = getenv("LOOM_OPENCL_DEVICE");
    char msg[768];
    int i = pick(&l, env && *env ? env : "0", msg, sizeof msg);
    cl_device_type t = 0;
    return i >= 0 && clGetDeviceInfo(l.dev[i], CL_DEVICE_TYPE, sizeof t, &t, NULL) == CL_SUCCESS &&
           (t & CL_DEVICE_TYPE_GPU);
}

int loom__cl_vw(const loom__cl *cl) { return cl->native_vw >= 16 ? 16 : 8; }

static void query(loom__cl *cl) {
    cl_device_id d = cl->device;
    dev_str(d, CL_DEVICE_NAME, cl->name, sizeof cl->name);
    dev_str(d, CL_DEVICE_VENDOR, cl->vendor, sizeof cl->vendor);
    dev_str(d, CL_DEVICE_VERSION, cl->dev_version, sizeof cl->dev_version);
    dev_str(d, CL_DRIVER_VERSION, cl->driver, sizeof cl->driver);
    dev_str(d, CL_DEVICE_OPENCL_C_VERSION, cl->c_version, sizeof cl->c_version);
    if (clGetPlatformInfo(cl->platform, CL_PLATFORM_NAME, sizeof cl->platform_name, cl->platform_name, NULL))
        snprintf(cl->platform_name, sizeof cl->platform_name, "?");
    if (clGetPlatformInfo(cl->platform, CL_PLATFORM_VERSION, sizeof cl->platform_version, cl->platform_version, NULL))
        snprintf(cl->platform_version, sizeof cl->platform_version, "?");
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof cl->type, &cl->type, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cl->compute_units, &cl->compute_units, NULL);
    clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof cl->global_mem_bytes, &cl->global_mem_bytes, NULL);
    clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof cl->local_mem_bytes, &cl->local_mem_bytes, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof cl->max_alloc_bytes, &cl->max_alloc_bytes, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof cl->max_wg, &cl->max_wg, NULL);
    if (!cl->max_wg) cl->max_wg = 1;
    if (clGetDeviceInfo(d, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof cl->native_vw, &cl->native_vw, NULL))
        cl->native_vw = 0;
    char ext[4096];
    dev_str(d, CL_DEVICE_EXTENSIONS, ext, sizeof ext);
    cl->fp16 = strstr(ext, "cl_khr_fp16") != NULL;
    cl->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
    cl_device_fp_config fp = 0;
    clGetDeviceInfo(d, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
    cl->correct_div_sqrt = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
}

loom_status loom__cl_open(loom__cl *cl, const loom_backend_desc *desc) {
    const char *why = NULL;
    if (!loom__cl_load(&why)) return loom__err(cl->ctx, LOOM_ERR_UNSUPPORTED, "opencl: %s", why);
    devlist l;
    list_devices(&l);
    if (l.err != CL_SUCCESS || l.n == 0)
        return loom__err(cl->ctx, LOOM_ERR_UNSUPPORTED, "opencl: no OpenCL device (clGetPlatformIDs: %d)", (int)l.err);
    char spec[64] = "0";
    const char *src = "the default";
    const char *env = getenv("LOOM_OPENCL_DEVICE");
    if (desc && desc->device > 0) {
        snprintf(spec, sizeof spec, "%d", desc->device);
        src = "loom_backend_desc.device";
    } else if (env && *env) {
        snprintf(spec, sizeof spec, "%s", env);
        src = "LOOM_OPENCL_DEVICE";
    }
    char msg[768];
    int i = pick(&l, spec, msg, sizeof msg);
    if (i < 0) return loom__err(cl->ctx, LOOM_ERR_INVALID_ARG, "opencl: %s: %s", src, msg);
    cl->platform = l.plat[i], cl->device = l.dev[i];
    cl->platform_index = l.pi[i], cl->device_index = l.di[i];
    query(cl);

    cl_int err;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)cl->platform, 0};
    cl->context = clCreateContext(props, 1, &cl->device, NULL, NULL, &err);
    LOOM_CL_CHECK_ERR(cl->ctx, err, "clCreateContext");
    cl->queue = clCreateCommandQueue(cl->context, cl->device, 0, &err);
    LOOM_CL_CHECK_ERR(cl->ctx, err, "clCreateCommandQueue");
    loom__log(cl->ctx, LOOM_LOG_INFO, "opencl: device %d (%d:%d) %s, %s", i, cl->platform_index, cl->device_index,
              cl->name, cl->platform_name);
    return LOOM_OK;
}

void loom__cl_close(loom__cl *cl) {
    for (int i = 0; i < LOOM__CL_NPROG; i++)
        if (cl->prog[i]) clReleaseProgram(cl->prog[i]);
    loom__cl_host_free_all(cl);
    if (cl->queue_prof) clReleaseCommandQueue(cl->queue_prof);
    if (cl->queue) clReleaseCommandQueue(cl->queue);
    if (cl->context) clReleaseContext(cl->context);
}

void loom__cl_describe(const loom_backend *be, FILE *out) {
    const loom__cl *cl = be->impl;
    fprintf(out, "  platform %d: %s (%s)\n", cl->platform_index, cl->platform_name, cl->platform_version);
    fprintf(out, "  device %d: %s, %s, vendor %s\n", cl->device_index, cl->name, type_name(cl->type), cl->vendor);
    fprintf(out, "  %s, driver %s, %s\n", cl->dev_version, cl->driver, cl->c_version);
    fprintf(out, "  %u compute units, global memory %.1f GiB (max allocation %.1f GiB), local memory %llu KiB\n",
            cl->compute_units, (double)cl->global_mem_bytes / (1u << 30), (double)cl->max_alloc_bytes / (1u << 30),
            (unsigned long long)(cl->local_mem_bytes >> 10));
    fprintf(out, "  max work-group %zu", cl->max_wg);
    if (cl->preferred_wg) fprintf(out, ", preferred multiple %zu", cl->preferred_wg);
    fprintf(out, "; extensions: cl_khr_fp16 %s, cl_khr_fp64 %s; correctly rounded divide/sqrt: %s\n",
            cl->fp16 ? "yes" : "no", cl->fp64 ? "yes" : "no", cl->correct_div_sqrt ? "yes" : "no (kernels use the default)");
    char dir[512];
    loom__cl_cache_dir(dir, sizeof dir);
    fprintf(out, "  dtypes: f32 f16 bf16 (16-bit stored, computed in f32); f64 not supported\n");
    fprintf(out, "  program cache: %s\n", *dir ? dir : "off (LOOM_OPENCL_CACHE=off)");
    if (cl->reproducible)
        fprintf(out, "  reproducible: the canonical kernels of core/repro.h (same bits as the other backends)\n");
    fprintf(out, "  device selection: LOOM_OPENCL_DEVICE=N (flat index) or P:D\n");
}
