/* bench/gemm_conv.c — CPU micro-benchmark: f32 GEMM and conv2d throughput.
 *
 * GEMM: square C = A B for n = 256, 512, 1024 (and 2048 when 1024 is quick
 * enough), run through a loom plan (a loom_matmul graph on the cpu backend)
 * and through OpenBLAS cblas_sgemm called directly on the same data; prints
 * GFLOP/s (2 n^3 flops) of both and their ratio, and the largest relative
 * difference between the two results.
 *
 * conv2d: the cnn example's two convolutions through loom plans:
 *   x (64,1,28,28)  w (32,1,3,3)  pad 1
 *   x (64,32,14,14) w (64,32,3,3) pad 1
 * forward alone, forward + grad_weight (x an input), and forward + both
 * gradients (x a parameter), each with loss = sum(y); the backward times are
 * the differences (they include sum's small backward: a fill and an expand).
 * GFLOP/s count 2*N*O*OH*OW*(C/groups)*KH*KW flops per pass.
 *
 * Every timing is the best of several runs after one warm-up run.
 *
 * usage: bench-gemm_conv [--threads N] [--quick]
 *   --threads N  CPU threads for loom and OpenBLAS (default: all cores)
 *   --quick      n = 256, 512 only and fewer runs
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"
#include "loom/loom.h"

#ifdef LOOM_HAVE_OPENBLAS
#include <cblas.h>
void openblas_set_num_threads(int n);
#endif

typedef struct bench {
    loom_ctx *ctx;
    loom_backend *be;
    int threads;
    bool quick;
} bench;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best time of fn(arg) over at least min_reps runs and min_s seconds, after a warm-up. */
typedef int (*bench_fn)(void *arg);
static double best_time(bench_fn fn, void *arg, int min_reps, double min_s, int *reps_out) {
    if (fn(arg)) return -1;
    double best = INFINITY, start = now_s();
    int reps = 0;
    while (reps < min_reps || (now_s() - start < min_s && reps < 50)) {
        double t0 = now_s();
        if (fn(arg)) return -1;
        double t = now_s() - t0;
        if (t < best) best = t;
        reps++;
    }
    if (reps_out) *reps_out = reps;
    return best;
}

static int run_plan(void *p) { return loom_plan_run(p) != LOOM_OK; }

static void fill_random(float *v, size_t n, uint64_t stream) {
    for (size_t i = 0; i < n; i++) v[i] = loom_philox_uniform(1, stream, i) * 2.0f - 1.0f;
}

/* ---- GEMM ---- */
typedef struct direct_gemm {
    int64_t n;
    const float *a, *b;
    float *c;
    loom__cpu *cpu;
} direct_gemm;

#ifdef LOOM_HAVE_OPENBLAS
static int run_cblas(void *v) {
    direct_gemm *d = v;
    int n = (int)d->n;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, d->a, n, d->b, n, 0.0f, d->c, n);
    return 0;
}
#endif

/* fallback while loom_matmul is missing: the backend's GEMM entry point */
static int run_cpu_sgemm(void *v) {
    direct_gemm *d = v;
    loom__cpu_sgemm(d->cpu, false, false, d->n, d->n, d->n, 1.0f, d->a, d->n, d->b, d->n, 0.0f, d->c, d->n);
    return 0;
}

static void bench_gemm_size(bench *b, int64_t n, double *loom_s_out) {
    size_t nn = (size_t)(n * n);
    float *A = malloc(nn * sizeof *A), *B = malloc(nn * sizeof *B), *C1 = malloc(nn * sizeof *C1),
          *C2 = malloc(nn * sizeof *C2);
    loom_graph *g = NULL;
    loom_plan *p = NULL;
    if (!A || !B || !C1 || !C2) {
        printf("%6lld  out of memory\n", (long long)n);
        goto done;
    }
    fill_random(A, nn, 1);
    fill_random(B, nn, 2);
    int min_reps = b->quick ? 3 : 5;
    double min_s = b->quick ? 0.2 : 0.5, flops = 2.0 * (double)n * (double)n * (double)n;
    int reps = 0;

    /* loom: a matmul graph through a plan */
    double t_loom = -1;
    const char *how = "plan";
    loom_graph_create(b->ctx, NULL, &g);
    loom_tensor *a = loom_input(g, "a", LOOM_F32, 2, (const int64_t[]){n, n});
    loom_tensor *bb = loom_input(g, "b", LOOM_F32, 2, (const int64_t[]){n, n});
    loom_tensor *y = loom_matmul(g, a, bb, false, false);
    if (y) {
        loom_keep(y);
        if (loom_plan_compile(g, b->be, NULL, &p) == LOOM_OK && loom_plan_write(p, a, A, nn * 4) == LOOM_OK &&
            loom_plan_write(p, bb, B, nn * 4) == LOOM_OK) {
            t_loom = best_time(run_plan, p, min_reps, min_s, &reps);
            if (t_loom < 0 || loom_plan_read(p, y, C1, nn * 4) != LOOM_OK) t_loom = -1;
        }
    }
    if (t_loom < 0) {
        static bool said;
        if (!said) printf("note: loom_matmul through a plan failed (%s); timing loom__cpu_sgemm directly\n",
                          loom_last_error(b->ctx));
        said = true;
        how = "sgemm";
        direct_gemm d = {n, A, B, C1, b->be->impl};
        t_loom = best_time(run_cpu_sgemm, &d, min_reps, min_s, &reps);
    }
    *loom_s_out = t_loom;

#ifdef LOOM_HAVE_OPENBLAS
    openblas_set_num_threads(b->threads);
    direct_gemm d = {n, A, B, C2, NULL};
    int reps2 = 0;
    double t_blas = best_time(run_cblas, &d, min_reps, min_s, &reps2);
    double maxrel = 0, maxc = 0;
    for (size_t i = 0; i < nn; i++) maxc = fmax(maxc, fabs(C2[i]));
    for (size_t i = 0; i < nn; i++) maxrel = fmax(maxrel, fabs(C1[i] - C2[i]) / (maxc > 0 ? maxc : 1));
    printf("%6lld  %10.1f (%-5s) %12.1f %12.3f %11.1e %7.2f %7.2f   %d/%d\n", (long long)n, flops / t_loom / 1e9, how,
           flops / t_blas / 1e9, t_blas / t_loom, maxrel, t_loom * 1e3, t_blas * 1e3, reps, reps2);
#else
    printf("%6lld  %10.1f (%-5s) %12s %12s %11s %7.2f %7s   %d\n", (long long)n, flops / t_loom / 1e9, how, "-", "-",
           "-", t_loom * 1e3, "-", reps);
#endif
done:
    loom_plan_destroy(p);
    loom_graph_destroy(g);
    free(A), free(B), free(C1), free(C2);
}

static void bench_gemm(bench *b) {
    printf("\nGEMM f32, C = A B, square n x n: GFLOP/s (2 n^3 flops), best of the runs\n");
#ifdef LOOM_HAVE_OPENBLAS
    printf("%6s  %18s %12s %12s %11s %7s %7s   %s\n", "n", "loom (how)", "OpenBLAS", "loom/BLAS", "max rel diff",
           "loom ms", "BLAS ms", "runs");
#else
    printf("(this build has no OpenBLAS: the direct column is empty)\n");
    printf("%6s  %18s %12s %12s %11s %7s %7s   %s\n", "n", "loom (how)", "OpenBLAS", "loom/BLAS", "max rel diff",
           "loom ms", "BLAS ms", "runs");
#endif
    static const int64_t sizes[] = {256, 512, 1024};
    double t = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        if (b->quick && sizes[i] > 512) break;
        bench_gemm_size(b, sizes[i], &t);
    }
    if (!b->quick) {
        /* 2048 is 8x the work of 1024: only when that stays around a second for all runs */
        if (t > 0 && t * 8 < 0.25)
            bench_gemm_size(b, 2048, &t);
        else
            printf("  2048  skipped: n = 1024 took %.0f ms per run\n", t * 1e3);
    }
}

/* ---- conv2d ---- */
typedef struct conv_shape {
    int64_t N, C, H, W, O, KH, KW;
    int pad;
} conv_shape;

typedef enum conv_mode { CONV_FWD, CONV_FWD_GW, CONV_FWD_GW_GI } conv_mode;

/* Time one plan of the given mode; returns seconds (< 0 on failure, message printed). */
static double time_conv(bench *b, const conv_shape *s, conv_mode mode, int *reps) {
    loom_graph *g = NULL;
    loom_plan *p = NULL;
    double t = -1;
    loom_graph_create(b->ctx, NULL, &g);
    const int64_t xd[4] = {s->N, s->C, s->H, s->W}, wd[4] = {s->O, s->C, s->KH, s->KW};
    const loom_init ku = {LOOM_INIT_KAIMING_UNIFORM, 0, 0}, un = {LOOM_INIT_UNIFORM, -1, 1};
    loom_tensor *x = mode == CONV_FWD_GW_GI ? loom_param(g, "x", LOOM_F32, 4, xd, &un)
                                            : loom_input(g, "x", LOOM_F32, 4, xd);
    loom_tensor *w = loom_param(g, "w", LOOM_F32, 4, wd, &ku);
    loom_conv2d_desc cd = {.pad_h = s->pad, .pad_w = s->pad};
    loom_tensor *y = loom_conv2d(g, x, w, NULL, &cd);
    if (!y) {
        printf("conv2d: not implemented yet (%s)\n", loom_last_error(b->ctx));
        goto done;
    }
    if (mode == CONV_FWD) {
        loom_keep(y);
    } else {
        loom_tensor *loss = loom_sum(g, y, 0, false);
        if (!loss || loom_backward(g, loss) != LOOM_OK) {
            printf("conv2d backward: not measured (%s)\n", loom_last_error(b->ctx));
            goto done;
        }
        loom_keep(loom_grad(w));
        if (mode == CONV_FWD_GW_GI) loom_keep(loom_grad(x));
    }
    if (loom_plan_compile(g, b->be, NULL, &p) != LOOM_OK) {
        printf("conv2d: plan failed: %s\n", loom_last_error(b->ctx));
        goto done;
    }
    if (mode != CONV_FWD_GW_GI) {
        size_t n = (size_t)(s->N * s->C * s->H * s->W);
        float *xv = malloc(n * sizeof *xv);
        if (xv) {
            fill_random(xv, n, 3);
            loom_plan_write(p, x, xv, n * sizeof *xv);
        }
        free(xv);
    }
    t = best_time(run_plan, p, b->quick ? 3 : 5, b->quick ? 0.2 : 0.5, reps);
    if (t < 0) printf("conv2d: run failed: %s\n", loom_last_error(b->ctx));
done:
    loom_plan_destroy(p);
    loom_graph_destroy(g);
    return t;
}

static void bench_conv(bench *b) {
    static const conv_shape shapes[] = {{64, 1, 28, 28, 32, 3, 3, 1}, {64, 32, 14, 14, 64, 3, 3, 1}};
    printf("\nconv2d f32 NCHW through loom plans: ms per pass (GFLOP/s), best of the runs\n");
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const conv_shape *s = &shapes[i];
        int64_t OH = s->H + 2 * s->pad - s->KH + 1, OW = s->W + 2 * s->pad - s->KW + 1;
        double flops = 2.0 * (double)(s->N * s->O * OH * OW) * (double)(s->C * s->KH * s->KW);
        printf("x (%lld,%lld,%lld,%lld) w (%lld,%lld,%lld,%lld) pad %d: %.3f GFLOP per pass\n", (long long)s->N,
               (long long)s->C, (long long)s->H, (long long)s->W, (long long)s->O, (long long)s->C, (long long)s->KH,
               (long long)s->KW, s->pad, flops / 1e9);
        int r0 = 0, r1 = 0, r2 = 0;
        double tf = time_conv(b, s, CONV_FWD, &r0);
        if (tf < 0) return;
        printf("  forward                      %8.3f ms (%6.1f GFLOP/s)  [%d runs]\n", tf * 1e3, flops / tf / 1e9, r0);
        double tw = time_conv(b, s, CONV_FWD_GW, &r1);
        if (tw < 0) continue;
        double tg = time_conv(b, s, CONV_FWD_GW_GI, &r2);
        printf("  forward + grad_weight        %8.3f ms                    [%d runs]\n", tw * 1e3, r1);
        if (tg > 0) printf("  forward + grad_weight + grad_input %8.3f ms              [%d runs]\n", tg * 1e3, r2);
        double gw = tw - tf, gi = tg > 0 ? tg - tw : -1;
        printf("  grad_weight (difference)     %8.3f ms (%6.1f GFLOP/s)\n", gw * 1e3, gw > 0 ? flops / gw / 1e9 : 0.0);
        if (gi > 0) printf("  grad_input (difference)      %8.3f ms (%6.1f GFLOP/s)\n", gi * 1e3, flops / gi / 1e9);
        if (tg > 0)
            printf("  backward, both (difference)  %8.3f ms (%6.1f GFLOP/s)\n", (tg - tf) * 1e3,
                   tg - tf > 0 ? 2 * flops / (tg - tf) / 1e9 : 0.0);
    }
}

static void usage(const char *argv0) {
    fprintf(stderr, "usage: %s [--threads N] [--quick]\n", argv0);
}

int main(int argc, char **argv) {
    bench b = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            char *end;
            long n = strtol(argv[++i], &end, 10);
            if (*end || n < 1 || n > 1024) {
                fprintf(stderr, "--threads: '%s' is not a thread count (1..1024)\n", argv[i]);
                return 2;
            }
            b.threads = (int)n;
        } else if (strcmp(argv[i], "--quick") == 0) {
            b.quick = true;
        } else {
            usage(argv[0]);
            return 2;
        }
    }
    loom_ctx_desc cd = {.threads = b.threads};
    if (loom_ctx_create(&cd, &b.ctx) != LOOM_OK) {
        fprintf(stderr, "cannot create a loom context\n");
        return 1;
    }
    b.threads = loom_ctx_threads(b.ctx);
    loom_backend_desc bd = {.threads = b.threads};
    if (loom_backend_create(b.ctx, "cpu", &bd, &b.be) != LOOM_OK) {
        fprintf(stderr, "cannot create the cpu backend: %s\n", loom_last_error(b.ctx));
        loom_ctx_destroy(b.ctx);
        return 1;
    }
    char model[128] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
                snprintf(model, sizeof model, "%s", strchr(line, ':') + 2);
                model[strcspn(model, "\n")] = 0;
                break;
            }
        fclose(f);
    }
    printf("loom %s bench gemm_conv: %d threads, %ld cores online (%s)%s\n", loom_version(), b.threads,
           sysconf(_SC_NPROCESSORS_ONLN), model, b.quick ? ", --quick" : "");
    loom_backend_describe(b.be, stdout);
    bench_gemm(&b);
    bench_conv(&b);
    loom_backend_destroy(b.be);
    loom_ctx_destroy(b.ctx);
    return 0;
}
