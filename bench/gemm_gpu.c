/* bench/gemm_gpu.c — GEMM throughput of backends (default cuda) in TFLOP/s,
 * for the side-by-side with torch.matmul in tests/gpu/run.sh
 * (tests/gpu/torch_gemm.py times the same shapes and dtypes), and of the
 * Vulkan GEMM's kernel forms side by side (--forms: each sets LOOM_VULKAN_GEMM
 * before its plans compile; backends/vulkan/ops/matmul.c lists the forms).
 * --backend takes a comma list (vulkan,cpu: the CPU backend's OpenBLAS
 * figure as the ceiling, in the same run).
 *
 * For each dtype mode (f32: full f32; tf32: f32 with LOOM_CUDA_TF32=1, read
 * when the backend is created; bf16; f16) and each n: square C = A B with
 * A, B uniform in [-1, 1]. One plan holds REPS independent products of the
 * same A and B (REPS kept outputs), so one plan run is REPS GEMMs and the
 * per-run synchronisation is amortised. After one warm-up run, runs repeat
 * until 0.3 s (at least 3); the best run counts: 2 n^3 REPS flops.
 * Correctness: 64 entries of C checked against a double product of the
 * stored (rounded) inputs; the largest error relative to sum |a_ik b_kj| is
 * printed (f32 ~1e-7, tf32 ~1e-3, 16-bit ~1e-2 at most).
 *
 * cpu_gflops: the flops over the process's CPU time of its cheapest run
 * (for a CPU-hosted driver on a shared machine: the work, without the wait).
 *
 * Prints one line per cell:
 *   RESULT impl=loom backend=cuda mode=f32 n=4096 tflops=51.2 ms=2.68 relerr=3.1e-08
 * (with --forms, form=NAME after mode=; --repeat R runs the whole list R
 * times, interleaved, so that a shared machine's load hits every cell alike)
 *
 * usage: bench-gemm_gpu [--backend NAME[,NAME]] [--sizes 1024,2048,4096,8192] [--modes f32,tf32,bf16,f16]
 *                       [--forms auto,tiled,wide] [--repeat R]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loom/loom.h"

#define REPS 8
#define CHECKS 64

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }
/* CPU time of the whole process (a CPU-hosted driver's worker threads included) */
static double cpu_s(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

/* one cell; returns 0 on success (line printed), 1 on failure (reason printed) */
static int cell(loom_ctx *ctx, loom_backend *be, const char *bname, const char *mode, loom_dtype dt, int64_t n,
                const char *form) {
    char fm[64] = "";
    if (form) snprintf(fm, sizeof fm, " form=%s", form);
    size_t nn = (size_t)(n * n), es = loom_dtype_size(dt);
    double *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b);
    void *ab = malloc(nn * es), *bb = malloc(nn * es), *cb = malloc(nn * es);
    loom_graph *g = NULL;
    loom_plan *p = NULL;
    int rc = 1;
    if (!a || !b || !ab || !bb || !cb) {
        printf("RESULT impl=loom backend=%s mode=%s%s n=%lld error=out_of_host_memory\n", bname, mode, fm, (long long)n);
        goto done;
    }
    for (size_t i = 0; i < nn; i++) {
        a[i] = 2.0 * loom_philox_uniform(11, 1, i) - 1.0;
        b[i] = 2.0 * loom_philox_uniform(11, 2, i) - 1.0;
    }
    loom_convert(a, LOOM_F64, ab, dt, nn);
    loom_convert(b, LOOM_F64, bb, dt, nn);
    /* the reference uses the stored values */
    loom_convert(ab, dt, a, LOOM_F64, nn);
    loom_convert(bb, dt, b, LOOM_F64, nn);
    loom_graph_create(ctx, NULL, &g);
    loom_tensor *A = loom_input(g, "a", dt, 2, (const int64_t[]){n, n});
    loom_tensor *B = loom_input(g, "b", dt, 2, (const int64_t[]){n, n});
    loom_tensor *C[REPS];
    for (int r = 0; r < REPS; r++) {
        C[r] = loom_matmul(g, A, B, false, false);
        if (C[r]) loom_keep(C[r]);
    }
    if (loom_graph_status(g) != LOOM_OK || loom_plan_compile(g, be, NULL, &p) != LOOM_OK ||
        loom_plan_write(p, A, ab, nn * es) != LOOM_OK || loom_plan_write(p, B, bb, nn * es) != LOOM_OK ||
        loom_plan_run(p) != LOOM_OK) {
        printf("RESULT impl=loom backend=%s mode=%s%s n=%lld error=\"%s\"\n", bname, mode, fm, (long long)n,
               loom_last_error(ctx));
        goto done;
    }
    double best = 1e30, best_cpu = 1e30, t_all = 0;
    int runs = 0;
    while (runs < 3 || (t_all < 0.3 && runs < 200)) {
        double t0 = now_s(), c0 = cpu_s();
        if (loom_plan_run(p) != LOOM_OK) {
            printf("RESULT impl=loom backend=%s mode=%s%s n=%lld error=\"%s\"\n", bname, mode, fm, (long long)n,
                   loom_last_error(ctx));
            goto done;
        }
        double t = now_s() - t0, tc = cpu_s() - c0;
        t_all += t, runs++;
        if (t < best) best = t;
        if (tc < best_cpu) best_cpu = tc;
    }
    if (loom_plan_read(p, C[REPS - 1], cb, nn * es) != LOOM_OK) {
        printf("RESULT impl=loom backend=%s mode=%s%s n=%lld error=\"read: %s\"\n", bname, mode, fm, (long long)n,
               loom_last_error(ctx));
        goto done;
    }
    double worst = 0;
    for (int k = 0; k < CHECKS; k++) {
        size_t i = (size_t)(loom_philox_uniform(12, 3, (uint64_t)k) * (double)n) % (size_t)n;
        size_t j = (size_t)(loom_philox_uniform(12, 4, (uint64_t)k) * (double)n) % (size_t)n;
        double ref = 0, mag = 0, got;
        for (int64_t q = 0; q < n; q++) ref += a[i * (size_t)n + (size_t)q] * b[(size_t)q * (size_t)n + j],
                                        mag += fabs(a[i * (size_t)n + (size_t)q] * b[(size_t)q * (size_t)n + j]);
        loom_convert((const char *)cb + (i * (size_t)n + j) * es, dt, &got, LOOM_F64, 1);
        double e = fabs(got - ref) / (mag > 0 ? mag : 1);
        if (!(e <= worst)) worst = e;
    }
    double flops = 2.0 * (double)n * (double)n * (double)n * REPS;
    printf("RESULT impl=loom backend=%s mode=%s%s n=%lld tflops=%.4f ms=%.3f cpu_gflops=%.1f relerr=%.1e\n", bname,
           mode, fm, (long long)n, flops / best * 1e-12, 1e3 * best / REPS, flops / best_cpu * 1e-9, worst);
    rc = 0;
done:
    fflush(stdout);
    loom_plan_destroy(p);
    loom_graph_destroy(g);
    free(a), free(b), free(ab), free(bb), free(cb);
    return rc;
}

/* every cell of one backend: modes x sizes (x forms on vulkan) */
static int backend_cells(loom_ctx *ctx, const char *bname, const char *modes, const char *sizes, const char *forms) {
    const char *why = NULL;
    if (!loom_backend_available(ctx, bname, &why)) {
        printf("SKIP: backend %s: %s\n", bname, why ? why : "not available");
        return 0;
    }
    int failed = 0;
    char mlist[128];
    snprintf(mlist, sizeof mlist, "%s", modes);
    for (char *save = NULL, *m = strtok_r(mlist, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
        loom_dtype dt = !strcmp(m, "bf16") ? LOOM_BF16 : !strcmp(m, "f16") ? LOOM_F16 : LOOM_F32;
        if (strcmp(m, "f32") && strcmp(m, "tf32") && strcmp(m, "bf16") && strcmp(m, "f16")) {
            fprintf(stderr, "unknown mode '%s' (f32, tf32, bf16, f16)\n", m);
            failed++;
            continue;
        }
        setenv("LOOM_CUDA_TF32", strcmp(m, "tf32") ? "0" : "1", 1); /* read when the backend is created */
        loom_backend *be;
        if (loom_backend_create(ctx, bname, NULL, &be) != LOOM_OK) {
            printf("RESULT impl=loom backend=%s mode=%s error=\"%s\"\n", bname, m, loom_last_error(ctx));
            failed++;
            continue;
        }
        bool vk = !strcmp(bname, "vulkan") && forms;
        char flist[256];
        snprintf(flist, sizeof flist, "%s", vk ? forms : "-");
        for (char *s3 = NULL, *f = strtok_r(flist, ",", &s3); f; f = strtok_r(NULL, ",", &s3)) {
            if (vk) setenv("LOOM_VULKAN_GEMM", f, 1); /* read when a plan compiles */
            char slist[256];
            snprintf(slist, sizeof slist, "%s", sizes);
            for (char *s2 = NULL, *s = strtok_r(slist, ",", &s2); s; s = strtok_r(NULL, ",", &s2))
                failed += cell(ctx, be, bname, m, dt, atoll(s), vk ? f : NULL);
        }
        if (vk) unsetenv("LOOM_VULKAN_GEMM");
        loom_backend_destroy(be);
    }
    return failed;
}

int main(int argc, char **argv) {
    const char *bnames = "cuda", *sizes = "1024,2048,4096,8192", *modes = "f32,tf32,bf16,f16", *forms = NULL;
    int repeat = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) bnames = argv[++i];
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes = argv[++i];
        else if (!strcmp(argv[i], "--modes") && i + 1 < argc) modes = argv[++i];
        else if (!strcmp(argv[i], "--forms") && i + 1 < argc) forms = argv[++i];
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc && atoi(argv[i + 1]) > 0) repeat = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--backend NAME[,NAME]] [--sizes 1024,2048,...] [--modes f32,tf32,bf16,f16] "
                            "[--forms auto,tiled,wide] [--repeat R]\n",
                    argv[0]);
            return 2;
        }
    }
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    int failed = 0, ran = 0;
    for (int r = 0; r < repeat; r++) {
        char blist[128];
        snprintf(blist, sizeof blist, "%s", bnames);
        for (char *s = NULL, *b = strtok_r(blist, ",", &s); b; b = strtok_r(NULL, ",", &s)) {
            const char *why = NULL;
            ran += loom_backend_available(ctx, b, &why);
            failed += backend_cells(ctx, b, modes, sizes, forms);
        }
    }
    loom_ctx_destroy(ctx);
    return failed ? 1 : ran ? 0 : 77;
}
