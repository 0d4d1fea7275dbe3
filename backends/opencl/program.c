/* backends/opencl/program.c — building the kernels: one program per storage
 * dtype (f32, f16, bf16) from the embedded core/params.h, core/repro.h and
 * kernels/<name>.cl (common.cl first), with -DLOOM_T_<DT> (#line directives make build logs name file:line), and
 * -DLOOM_REPRO in reproducible mode (core/repro.h: the canonical GEMM,
 * kernels/repro.cl), and the register GEMM's tile sizes (ops/gemm_select.c);
 * program binaries cached on disk.
 *
 * Cache: directory LOOM_OPENCL_CACHE (the value "off" disables the cache),
 * else $XDG_CACHE_HOME/loom/opencl, else ~/.cache/loom/opencl. File name =
 * 64-bit FNV-1a hash of (source, build options, platform, device, device
 * version, driver version), so any change rebuilds. Files are written to a
 * temporary name and renamed, so concurrent processes never read half a file;
 * an unreadable or rejected entry is rebuilt from source and overwritten. A
 * cache that cannot be written is logged (warning) and skipped: it only costs
 * time. A kernel build failure is LOOM_ERR_BACKEND with the build log. */
#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "opencl.h"
#include "ops/gemm.h"

/* the generated file (embed.cmake) */
extern const int loom__cl_source_count;
extern const char *const loom__cl_source_names[];
extern const char *const loom__cl_source_texts[];

static const char *const DT_DEFINE[LOOM__CL_NPROG] = {"-DLOOM_T_F32", "-DLOOM_T_F16", "-DLOOM_T_BF16"};
static const char *const DT_NAME[LOOM__CL_NPROG] = {"f32", "f16", "bf16"};

void loom__cl_cache_dir(char *out, size_t n) { loom__cache_dir("LOOM_OPENCL_CACHE", "opencl", out, n); }

static uint64_t fnv(uint64_t h, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t hash_str(uint64_t h, const char *s) { return fnv(h, s, strlen(s) + 1); }

/* mkdir -p */

static void write_cache(loom__cl *cl, cl_program prog, const char *dir, const char *path) {
    size_t len = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS || !len) return;
    unsigned char *bin = malloc(len);
    if (!bin) return;
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    bool ok = clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS && loom__mkdirs(dir);
    FILE *f = ok ? fopen(tmp, "wb") : NULL;
    ok = f && fwrite(bin, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = false;
    if (ok && rename(tmp, path) != 0) ok = false;
    if (!ok) {
        remove(tmp);
        loom__log(cl->ctx, LOOM_LOG_WARN, "opencl: cannot write the program cache %s (%s); kernels will be rebuilt next time",
                  path, strerror(errno));
    }
    free(bin);
}

static loom_status build_failed(loom__cl *cl, cl_program prog, const char *opts, int which, cl_int e) {
    char log[700] = "";
    size_t n = 0;
    clGetProgramBuildInfo(prog, cl->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, &n);
    log[sizeof log - 1] = 0;
    return loom__err(cl->ctx, LOOM_ERR_BACKEND, "opencl: building the %s kernels failed: %s (%d); options '%s'; build log: %s",
                     DT_NAME[which], loom__cl_errstr(e), (int)e, opts, *log ? log : "(empty)");
}

static loom_status build(loom__cl *cl, int which) {
    double t0 = loom__now_s();
    size_t total = 0;
    for (int i = 0; i < loom__cl_source_count; i++) total += strlen(loom__cl_source_texts[i]) + 32;
    char *src = malloc(total + 1);
    if (!src) return loom__err(cl->ctx, LOOM_ERR_OOM, "opencl: out of memory");
    size_t at = 0;
    for (int i = 0; i < loom__cl_source_count; i++)
        at += (size_t)sprintf(src + at, "#line 1 \"%s\"\n%s\n", loom__cl_source_names[i], loom__cl_source_texts[i]);
    char opts[512], gemm_opts[256];
    loom__cl_gemm_build_opts(cl, gemm_opts, sizeof gemm_opts);
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 %s%s%s %s -DLOOM_VW=%d", DT_DEFINE[which],
             cl->correct_div_sqrt ? " -cl-fp32-correctly-rounded-divide-sqrt" : "",
             cl->reproducible ? " -DLOOM_REPRO" : "", gemm_opts, loom__cl_vw(cl));

    char dir[512], path[600] = "";
    loom__cl_cache_dir(dir, sizeof dir);
    if (*dir) {
        uint64_t h = 0xcbf29ce484222325ull;
        h = hash_str(h, src), h = hash_str(h, opts), h = hash_str(h, cl->platform_name);
        h = hash_str(h, cl->platform_version), h = hash_str(h, cl->name), h = hash_str(h, cl->dev_version);
        h = hash_str(h, cl->driver);
        snprintf(path, sizeof path, "%s/%s-%016llx.bin", dir, DT_NAME[which], (unsigned long long)h);
    }
    cl_int err;
    cl_program prog = NULL;
    size_t blen = 0;
    unsigned char *bin = *path ? loom__read_file(path, &blen) : NULL;
    if (bin) {
        const unsigned char *b = bin;
        cl_int bst;
        prog = clCreateProgramWithBinary(cl->context, 1, &cl->device, &blen, &b, &bst, &err);
        if (err != CL_SUCCESS || bst != CL_SUCCESS ||
            clBuildProgram(prog, 1, &cl->device, opts, NULL, NULL) != CL_SUCCESS) {
            loom__log(cl->ctx, LOOM_LOG_INFO, "opencl: cached program %s rejected; rebuilding", path);
            if (prog) clReleaseProgram(prog);
            prog = NULL;
        }
        free(bin);
    }
    cl->from_cache[which] = prog != NULL;
    if (!prog) {
        const char *s = src;
        prog = clCreateProgramWithSource(cl->context, 1, &s, NULL, &err);
        if (err != CL_SUCCESS) {
            free(src);
            return loom__cl_fail(cl->ctx, err, "clCreateProgramWithSource", __FILE__, __LINE__);
        }
        err = clBuildProgram(prog, 1, &cl->device, opts, NULL, NULL);
        if (err != CL_SUCCESS) {
            loom_status st = build_failed(cl, prog, opts, which, err);
            clReleaseProgram(prog);
            free(src);
            return st;
        }
        if (*path) write_cache(cl, prog, dir, path);
    }
    free(src);
    cl->prog[which] = prog;
    cl->build_seconds[which] = loom__now_s() - t0;
    if (!cl->preferred_wg) {
        cl_kernel k = clCreateKernel(prog, "loom_probe", &err);
        if (err == CL_SUCCESS) {
            clGetKernelWorkGroupInfo(k, cl->device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                     sizeof cl->preferred_wg, &cl->preferred_wg, NULL);
            clReleaseKernel(k);
        }
    }
    loom__log(cl->ctx, LOOM_LOG_INFO, "opencl: %s kernels %s in %.2f s", DT_NAME[which],
              cl->from_cache[which] ? "loaded from the cache" : "compiled", cl->build_seconds[which]);
    return LOOM_OK;
}

loom_status loom__cl_program(loom__cl *cl, loom_dtype dt, cl_program *out) {
    int which = dt == LOOM_F16 ? LOOM__CL_P_F16 : dt == LOOM_BF16 ? LOOM__CL_P_BF16 : LOOM__CL_P_F32;
    LOOM__ASSERT(dt != LOOM_F64);
    if (!cl->prog[which]) {
        loom_status st = build(cl, which);
        if (st != LOOM_OK) return st;
    }
    *out = cl->prog[which];
    return LOOM_OK;
}
