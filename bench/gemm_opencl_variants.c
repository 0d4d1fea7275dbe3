/* bench/gemm_opencl_variants.c — the OpenCL backend's GEMM kernel variants
 * (backends/opencl/ops/gemm_select.c) side by side in one run: f32 GFLOP/s
 * of each variant forced with LOOM_CL_GEMM (tiled: the local-memory kernel
 * of kernels/gemm.cl; reg16, reg8: kernels/gemm_reg.cl), of "auto" (the
 * device's measured, cached choice), of the cpu backend and of OpenBLAS's
 * cblas_sgemm called directly (the ceiling on a CPU device).
 *
 * Rows: square C = op(A) op(B) for each n of --sizes with A, B as stored
 * (nn), then at the largest n the transposed forms (nt, tn, tt: the matmul
 * op's trans_a / trans_b, no copies). Each cell: a one-node loom_matmul plan
 * (or the cblas call); the cells of one row run in turns (round robin), so
 * load changes on a shared machine hit all of them alike; each cell stops
 * after at least 3 runs and 1 s (0.3 s with --quick) or 50 runs, after one
 * warm-up run. The best run counts: 2 n^3 flops. diff = max |C - C_blas| /
 * max |C_blas| per cell, printed below the row.
 *
 * usage: bench-gemm_opencl_variants [--sizes 256,512,1024] [--threads N] [--quick]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loom/loom.h"

#ifdef LOOM_HAVE_OPENBLAS
#include <cblas.h>
void openblas_set_num_threads(int n);
#endif

/* the columns: opencl with a forced variant (or auto), the cpu backend */
static const char *const COLS[] = {"tiled", "reg16", "reg8", "auto", "cpu"};
#define NCOL 5
#define NFN (NCOL + 1) /* + OpenBLAS */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the library's log lines that name the GEMM choice; the rest dropped */
static void on_log(void *user, loom_log_level level, const char *msg) {
    (void)user, (void)level;
    if (strstr(msg, "GEMM variant")) printf("  [log] %s\n", msg);
}

typedef struct cell {
    loom_plan *plan; /* NULL: OpenBLAS */
    loom_tensor *y;
    int n;
    bool ta, tb;
    const float *a, *b;
    float *c;
    double best, spent;
    int runs;
} cell;

static int run_cell(cell *c) {
    if (c->plan) return loom_plan_run(c->plan) != LOOM_OK;
#ifdef LOOM_HAVE_OPENBLAS
    cblas_sgemm(CblasRowMajor, c->ta ? CblasTrans : CblasNoTrans, c->tb ? CblasTrans : CblasNoTrans, c->n, c->n, c->n,
                1.0f, c->a, c->n, c->b, c->n, 0.0f, c->c, c->n);
    return 0;
#else
    return 1;
#endif
}

/* one row: every column and OpenBLAS on C = op(A) op(B), n x n */
static void row(loom_ctx *ctx, loom_backend *const *be, int64_t n, bool ta, bool tb, bool quick) {
    size_t nn = (size_t)(n * n);
    float *A = malloc(nn * sizeof *A), *B = malloc(nn * sizeof *B), *C = malloc(NFN * nn * sizeof *C);
    loom_graph *g[NCOL] = {0};
    cell cells[NFN] = {0};
    int live[NFN], nlive = 0;
    if (!A || !B || !C) {
        printf("n=%lld: out of memory\n", (long long)n);
        goto done;
    }
    for (size_t i = 0; i < nn; i++) A[i] = 2.0f * loom_philox_uniform(1, 1, i) - 1.0f;
    for (size_t i = 0; i < nn; i++) B[i] = 2.0f * loom_philox_uniform(1, 2, i) - 1.0f;
    for (int i = 0; i < NFN; i++)
        cells[i] = (cell){.n = (int)n, .ta = ta, .tb = tb, .a = A, .b = B, .c = C + (size_t)i * nn, .best = INFINITY};
    for (int i = 0; i < NCOL; i++) {
        if (!be[i]) continue;
        if (i < NCOL - 1 && strcmp(COLS[i], "auto")) setenv("LOOM_CL_GEMM", COLS[i], 1);
        else unsetenv("LOOM_CL_GEMM");
        loom_graph_create(ctx, NULL, &g[i]);
        loom_tensor *a = loom_input(g[i], "a", LOOM_F32, 2, (const int64_t[]){n, n});
        loom_tensor *b = loom_input(g[i], "b", LOOM_F32, 2, (const int64_t[]){n, n});
        loom_tensor *y = loom_matmul(g[i], a, b, ta, tb);
        if (y) loom_keep(y);
        if (!y || loom_plan_compile(g[i], be[i], NULL, &cells[i].plan) != LOOM_OK ||
            loom_plan_write(cells[i].plan, a, A, nn * 4) != LOOM_OK ||
            loom_plan_write(cells[i].plan, b, B, nn * 4) != LOOM_OK || loom_plan_run(cells[i].plan) != LOOM_OK) {
            printf("  %s: %s\n", COLS[i], loom_last_error(ctx));
            loom_plan_destroy(cells[i].plan);
            cells[i].plan = NULL;
            continue;
        }
        cells[i].y = y;
        live[nlive++] = i;
    }
    unsetenv("LOOM_CL_GEMM");
#ifdef LOOM_HAVE_OPENBLAS
    run_cell(&cells[NCOL]);
    live[nlive++] = NCOL;
#endif
    double box = quick ? 0.3 : 1.0;
    for (bool more = true; more;) {
        more = false;
        for (int k = 0; k < nlive; k++) {
            cell *c = &cells[live[k]];
            if (c->runs >= 3 && (c->spent >= box || c->runs >= 50)) continue;
            double t0 = now_s();
            if (run_cell(c)) {
                printf("  %s: run failed: %s\n", live[k] < NCOL ? COLS[live[k]] : "OpenBLAS", loom_last_error(ctx));
                goto done;
            }
            double t = now_s() - t0;
            c->best = fmin(c->best, t), c->spent += t, c->runs++;
            more = true;
        }
    }
    double flops = 2.0 * (double)n * (double)n * (double)n, maxc = 0;
    const float *Cb = &C[NCOL * nn];
    bool have_blas = isfinite(cells[NCOL].best);
    for (size_t e = 0; have_blas && e < nn; e++) maxc = fmax(maxc, fabs(Cb[e]));
    printf("%5lld %c%c", (long long)n, ta ? 't' : 'n', tb ? 't' : 'n');
    for (int i = 0; i < NFN; i++)
        isfinite(cells[i].best) ? printf(" %9.1f", flops / cells[i].best * 1e-9) : printf(" %9s", "-");
    printf(" |");
    for (int i = 0; i < NCOL; i++) {
        double d = 0;
        if (cells[i].y && have_blas && loom_plan_read(cells[i].plan, cells[i].y, cells[i].c, nn * 4) == LOOM_OK)
            for (size_t e = 0; e < nn; e++) d = fmax(d, fabs(cells[i].c[e] - Cb[e]) / (maxc > 0 ? maxc : 1));
        else d = NAN;
        printf(" %8.1e", d);
    }
    printf(" |");
    for (int i = 0; i < NFN; i++) printf("%s%d", i ? "/" : " ", cells[i].runs);
    printf("\n");
    fflush(stdout);
done:
    for (int i = 0; i < NCOL; i++) loom_plan_destroy(cells[i].plan), loom_graph_destroy(g[i]);
    free(A), free(B), free(C);
}

int main(int argc, char **argv) {
    const char *sizes = "256,512,1024";
    int threads = 2;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--quick")) quick = true;
        else {
            fprintf(stderr, "usage: %s [--sizes 256,512,1024] [--threads N] [--quick]\n", argv[0]);
            return 2;
        }
    }
    loom_ctx_desc cd = {.log_level = LOOM_LOG_INFO, .log = on_log};
    loom_ctx *ctx;
    if (loom_ctx_create(&cd, &ctx) != LOOM_OK) return 1;
    const char *why = NULL;
    if (!loom_backend_available(ctx, "opencl", &why)) {
        printf("SKIP: backend opencl: %s\n", why ? why : "not available");
        loom_ctx_destroy(ctx);
        return 77;
    }
    /* one opencl backend per column: the variant is chosen per backend, at its first GEMM */
    loom_backend *be[NCOL] = {0};
    loom_backend_desc cpu_desc = {.threads = threads};
    for (int i = 0; i < NCOL; i++) {
        bool cpu = i == NCOL - 1;
        if (loom_backend_create(ctx, cpu ? "cpu" : "opencl", cpu ? &cpu_desc : NULL, &be[i]) != LOOM_OK) {
            printf("%s: %s\n", COLS[i], loom_last_error(ctx));
            be[i] = NULL;
        }
    }
#ifdef LOOM_HAVE_OPENBLAS
    openblas_set_num_threads(threads);
#endif
    printf("GEMM f32 C = op(A) op(B), n x n: GFLOP/s of the best run; opencl with LOOM_CL_GEMM=tiled|reg16|reg8,\n"
           "auto = the device's choice; cpu = loom's cpu backend (%d threads); OpenBLAS = cblas_sgemm direct\n"
           "(%d threads). diff = max |C - C_blas| / max |C_blas|; runs per column, OpenBLAS last.\n",
           threads, threads);
    loom_backend_describe(be[0], stdout);
    printf("    n op     tiled     reg16      reg8      auto       cpu  OpenBLAS |"
           "  d tiled  d reg16   d reg8   d auto    d cpu | runs\n");
    char list[256];
    snprintf(list, sizeof list, "%s", sizes);
    int64_t last = 0;
    for (char *save = NULL, *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
        last = atoll(s);
        if (last > 0) row(ctx, be, last, false, false, quick);
    }
    if (last > 0) {
        row(ctx, be, last, false, true, quick);
        row(ctx, be, last, true, false, quick);
        row(ctx, be, last, true, true, quick);
    }
    for (int i = 0; i < NCOL; i++) loom_backend_destroy(be[i]);
    loom_ctx_destroy(ctx);
    return 0;
}
