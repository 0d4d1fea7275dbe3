/* backends/opencl/ops/gemm_select.c — which GEMM kernels a device runs: the
 * variant table (names, kernel suffixes, tile sizes and launch geometry), the
 * tile sizes as build options for the programs (program.c), and the choice
 * per device: a short measurement at first use, remembered in a small file
 * beside the program cache.
 *
 * Variants (ops/gemm.h): tiled (kernels/gemm.cl: local-memory tiles, 16 x 16
 * items per group; right for GPUs), reg16 and reg8 (kernels/gemm_reg.cl:
 * one-item groups with register tiles in float16 / float8 vectors; right for
 * CPU drivers that run an item as one SIMD thread).
 *
 * Choice, in order: reproducible mode runs tiled always (its kernels are the
 * canonical ones, core/repro.h); LOOM_CL_GEMM=tiled|reg16|reg8 forces one
 * (tests, comparisons); a cached choice for this device; else a measurement:
 * the f32 program's nn kernel of each candidate on one n x n product, the
 * fastest of two runs after a warm-up (which also compiles it), and the
 * fastest variant wins. Candidates: tiled on every device, the register
 * variants on devices of type CPU only (on a GPU a one-item work-group would
 * idle all lanes but one). The cache file is gemm-<hash>.txt in the program
 * cache directory (LOOM_OPENCL_CACHE; none when that is "off"), hash =
 * FNV-1a of the platform, device, device version, driver version and the
 * variant table; it holds the variant's name, then the measured times. */
#include <errno.h>
#include <unistd.h>

#include "gemm.h"

/* the measurement's product: n x n x n, f32 */
#define MEASURE_N 512

/* reg8's dot tile is 2 x 5: 10 sums, 5 + 1 loads in AVX2's 16 vector registers (3 x 4 and 4 x 3
 * kept a sum on the stack: PoCL on an AMD EPYC (Zen 3), 1024 nt 72 -> 126-135 GFLOP/s, the cnn's
 * fc1 forward (64 x 3136 @ 3136 x 128) 0.73 -> 0.56 ms; 2 x 4, 3 x 3, 2 x 6, 5 x 2, 1 x 8 slower) */
static const loom__cl_gemm_variant VARIANTS[] = {
    [LOOM__CL_GEMM_TILED] = {"tiled", "", 16, 64, 64, 0, 0, 0, 0, 0, 0},
    [LOOM__CL_GEMM_REG16] = {"reg16", "_r16", 1, 0, 0, 16, 12, 2, 6, 4, 8},
    [LOOM__CL_GEMM_REG8] = {"reg8", "_r8", 1, 0, 0, 8, 6, 2, 2, 5, 8},
};

const loom__cl_gemm_variant *loom__cl_gemm_variant_of(int v) {
    LOOM__ASSERT(v > 0 && v < LOOM__CL_GEMM_NVARIANT);
    return &VARIANTS[v];
}

int loom__cl_gemm_variant_by_name(const char *name) {
    for (int v = 1; v < LOOM__CL_GEMM_NVARIANT; v++)
        if (!strcmp(name, VARIANTS[v].name)) return v;
    return 0;
}

/* The largest K whose column panel the outer form packs into local memory
 * (kernels/gemm_reg.cl): reg16's panel (K x 32 floats) in at most half the
 * device's local memory, a multiple of 16 in [16, KPACK_MAX]. */
#define KPACK_MAX 2048
static int64_t kpack(const loom__cl *cl) {
    const loom__cl_gemm_variant *a = &VARIANTS[LOOM__CL_GEMM_REG16];
    int64_t k = (int64_t)(cl->local_mem_bytes / 2 / (sizeof(float) * (size_t)(a->vw * a->rn)));
    k = k > KPACK_MAX ? KPACK_MAX : k;
    k -= k % 16;
    return k < 16 ? 16 : k;
}

void loom__cl_gemm_build_opts(const loom__cl *cl, char *out, size_t n) {
    const loom__cl_gemm_variant *a = &VARIANTS[LOOM__CL_GEMM_REG16], *b = &VARIANTS[LOOM__CL_GEMM_REG8];
    snprintf(out, n,
             "-DGEMM_R16_RM=%d -DGEMM_R16_RN=%d -DGEMM_R16_DI=%d -DGEMM_R16_DJ=%d -DGEMM_R16_NT=%d "
             "-DGEMM_R8_RM=%d -DGEMM_R8_RN=%d -DGEMM_R8_DI=%d -DGEMM_R8_DJ=%d -DGEMM_R8_NT=%d -DGEMM_KPACK=%lld",
             a->rm, a->rn, a->di, a->dj, a->nt, b->rm, b->rn, b->di, b->dj, b->nt, (long long)kpack(cl));
}

static uint64_t fnv(uint64_t h, const char *s) {
    for (size_t i = 0, n = strlen(s) + 1; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

/* the cache file's path, or "" without a cache directory */
static void cache_path(const loom__cl *cl, char *dir, size_t ndir, char *path, size_t npath) {
    loom__cl_cache_dir(dir, ndir);
    *path = 0;
    if (!*dir) return;
    char opts[256];
    loom__cl_gemm_build_opts(cl, opts, sizeof opts);
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv(h, cl->platform_name), h = fnv(h, cl->platform_version), h = fnv(h, cl->name);
    h = fnv(h, cl->dev_version), h = fnv(h, cl->driver), h = fnv(h, opts);
    for (int v = 1; v < LOOM__CL_GEMM_NVARIANT; v++) h = fnv(h, VARIANTS[v].name);
    snprintf(path, npath, "%s/gemm-%016llx.txt", dir, (unsigned long long)h);
}

/* the variant named on the first line of the cache file, 0 if none */
static int read_choice(const char *path) {
    size_t n = 0;
    unsigned char *b = *path ? loom__read_file(path, &n) : NULL;
    if (!b) return 0;
    char name[32] = "";
    size_t i = 0;
    for (; i < n && i + 1 < sizeof name && b[i] != '\n'; i++) name[i] = (char)b[i];
    name[i] = 0;
    free(b);
    return loom__cl_gemm_variant_by_name(name);
}

static void write_choice(loom__cl *cl, const char *dir, const char *path, const char *text) {
    char tmp[700];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = loom__mkdirs(dir) ? fopen(tmp, "w") : NULL;
    bool ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0) ok = false;
    if (ok && rename(tmp, path) != 0) ok = false;
    if (!ok) {
        remove(tmp);
        loom__log(cl->ctx, LOOM_LOG_WARN, "opencl: cannot write the GEMM choice %s (%s); it will be measured again",
                  path, strerror(errno));
    }
}

/* Seconds of the best of two runs of variant v's f32 nn kernel on n x n
 * operands (after a warm-up run), or a negative value when it cannot run. */
static double time_variant(loom__cl *cl, int v, cl_mem a, cl_mem b, cl_mem c, cl_mem g, int64_t n) {
    const loom__cl_gemm_variant *var = &VARIANTS[v];
    if (cl->max_wg < (size_t)(var->wg * var->wg)) return -1;
    cl_program prog;
    if (loom__cl_program(cl, LOOM_F32, &prog) != LOOM_OK) return -1;
    char name[32];
    snprintf(name, sizeof name, "gemm_nn%s", var->suffix);
    cl_int err;
    cl_kernel k = clCreateKernel(prog, name, &err);
    if (err != CL_SUCCESS) return -1;
    cl_ulong zero = 0;
    cl_long ln = n;
    cl_int has_bias = 0;
    cl_mem args_mem[4] = {a, b, c, a};
    for (cl_uint i = 0; i < 4; i++) {
        err |= clSetKernelArg(k, 2 * i, sizeof(cl_mem), &args_mem[i]);
        err |= clSetKernelArg(k, 2 * i + 1, sizeof zero, &zero);
    }
    err |= clSetKernelArg(k, 8, sizeof g, &g);
    for (cl_uint i = 9; i < 15; i++) err |= clSetKernelArg(k, i, sizeof ln, &ln);
    err |= clSetKernelArg(k, 15, sizeof has_bias, &has_bias);
    loom__cl_gemm_geom geo = loom__cl_gemm_geometry(var, false, false, n, n, 1);
    double best = -1;
    for (int run = 0; run < 3 && err == CL_SUCCESS; run++) {
        double t0 = loom__now_s();
        err = clEnqueueNDRangeKernel(cl->queue, k, 2, NULL, geo.global, geo.local, 0, NULL, NULL);
        if (err == CL_SUCCESS) err = clFinish(cl->queue);
        double t = loom__now_s() - t0;
        if (run > 0 && (best < 0 || t < best)) best = t;
    }
    clReleaseKernel(k);
    return err == CL_SUCCESS ? best : -1;
}

/* measure the candidates; returns the fastest (tiled when none ran) and
 * describes the times in text */
static int measure(loom__cl *cl, char *text, size_t n) {
    size_t at = (size_t)snprintf(text, n, "measured: f32 %dx%dx%d nn, best of 2 runs, ms:", MEASURE_N, MEASURE_N,
                                 MEASURE_N);
    int64_t m = MEASURE_N;
    size_t bytes = (size_t)(m * m) * sizeof(float);
    float *host = malloc(bytes);
    cl_int err = host ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
    if (host)
        for (int64_t i = 0; i < m * m; i++) host[i] = (float)((i * 7919) % 2001 - 1000) * 1e-3f;
    int64_t tab[LOOM__CL_GEMM_TABLE] = {1, 1, 1};
    cl_mem a = NULL, b = NULL, c = NULL, g = NULL;
    if (err == CL_SUCCESS) a = clCreateBuffer(cl->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, host, &err);
    if (err == CL_SUCCESS) b = clCreateBuffer(cl->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, host, &err);
    if (err == CL_SUCCESS) c = clCreateBuffer(cl->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err == CL_SUCCESS)
        g = clCreateBuffer(cl->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof tab, tab, &err);
    free(host);
    int best = LOOM__CL_GEMM_TILED;
    double best_t = -1;
    for (int v = 1; v < LOOM__CL_GEMM_NVARIANT && err == CL_SUCCESS; v++) {
        if (v != LOOM__CL_GEMM_TILED && !(cl->type & CL_DEVICE_TYPE_CPU)) continue;
        double t = time_variant(cl, v, a, b, c, g, m);
        if (at < n)
            at += (size_t)(t < 0 ? snprintf(text + at, n - at, " %s failed", VARIANTS[v].name)
                                 : snprintf(text + at, n - at, " %s %.2f", VARIANTS[v].name, 1e3 * t));
        if (t >= 0 && (best_t < 0 || t < best_t)) best = v, best_t = t;
    }
    if (err != CL_SUCCESS && at < n) snprintf(text + at, n - at, " (setup failed: %s)", loom__cl_errstr(err));
    cl_mem all[4] = {a, b, c, g};
    for (int i = 0; i < 4; i++)
        if (all[i]) clReleaseMemObject(all[i]);
    return best;
}

loom_status loom__cl_gemm_choose(loom__cl *cl, int *out) {
    if (cl->reproducible) {
        *out = LOOM__CL_GEMM_TILED;
        return LOOM_OK;
    }
    if (cl->gemm_variant) {
        *out = cl->gemm_variant;
        return LOOM_OK;
    }
    const char *env = getenv("LOOM_CL_GEMM");
    if (env && *env) {
        int v = loom__cl_gemm_variant_by_name(env);
        if (!v)
            return loom__err(cl->ctx, LOOM_ERR_INVALID_ARG,
                             "opencl: LOOM_CL_GEMM='%s' is not a GEMM variant (tiled, reg16, reg8)", env);
        loom__log(cl->ctx, LOOM_LOG_INFO, "opencl: GEMM variant %s (LOOM_CL_GEMM)", env);
        *out = cl->gemm_variant = v;
        return LOOM_OK;
    }
    char dir[512], path[600];
    cache_path(cl, dir, sizeof dir, path, sizeof path);
    int v = read_choice(path);
    if (v) {
        loom__log(cl->ctx, LOOM_LOG_INFO, "opencl: GEMM variant %s (cached in %s)", VARIANTS[v].name, path);
        *out = cl->gemm_variant = v;
        return LOOM_OK;
    }
    char text[400];
    double t0 = loom__now_s();
    v = measure(cl, text, sizeof text);
    loom__log(cl->ctx, LOOM_LOG_INFO, "opencl: GEMM variant %s (%s; %.1f s)", VARIANTS[v].name, text,
              loom__now_s() - t0);
    if (*path) {
        char file[480];
        snprintf(file, sizeof file, "%s\n%s\n", VARIANTS[v].name, text);
        write_choice(cl, dir, path, file);
    }
    *out = cl->gemm_variant = v;
    return LOOM_OK;
}

loom__cl_gemm_geom loom__cl_gemm_geometry(const loom__cl_gemm_variant *var, bool ta, bool tb, int64_t M, int64_t N,
                                          int64_t nb) {
    loom__cl_gemm_geom r = {{0, 0}, {(size_t)var->wg, (size_t)var->wg}};
    if (!var->vw) {
        r.global[0] = (size_t)((N + var->tn - 1) / var->tn) * (size_t)var->wg;
        r.global[1] = (size_t)(nb * ((M + var->tm - 1) / var->tm)) * (size_t)var->wg;
    } else if (!ta && tb) { /* the dot form */
        r.global[0] = (size_t)((M + var->di * var->nt - 1) / (var->di * var->nt));
        r.global[1] = (size_t)(nb * ((N + var->dj - 1) / var->dj));
    } else { /* the outer form: tt runs on C^T (rows over N, columns over M) */
        int64_t I = ta && tb ? N : M, J = ta && tb ? M : N, cols = (int64_t)var->vw * var->rn;
        r.global[0] = (size_t)((I + var->rm * var->nt - 1) / (var->rm * var->nt));
        r.global[1] = (size_t)(nb * ((J + cols - 1) / cols));
    }
    return r;
}
