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
 * forward, grad_input and grad_weight each alone (one-node plans; the two
 * backward-only nodes are built directly with the library-private
 * loom__node), and a whole layer step through loom_backward (loss = sum(y),
 * x and w both parameters: forward + both gradients + sum's small backward).
 * GFLOP/s count 2*N*O*OH*OW*(C/groups)*KH*KW flops per pass, three passes
 * for the step.
 *
 * Every timing is the best of several runs after one warm-up run; the loom
 * and OpenBLAS GEMMs take turns, so load changes on a shared machine hit both.
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

#include "cpu.h" /* loom__cpu_sgemm, and core/impl.h for loom__node */
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

/* Best time of each fns[i](args[i]) after one warm-up run each. The
 * functions run in turns (round robin), so a change in machine load during
 * the measurement affects all of them alike. At least min_reps rounds, and
 * more (up to 50) until min_s seconds have passed. Returns the rounds, or
 * -1 if a run failed. */
typedef int (*bench_fn)(void *arg);
static int best_times(int n, const bench_fn *fns, void *const *args, int min_reps, double min_s, double *best) {
    for (int i = 0; i < n; i++) {
        if (fns[i](args[i])) return -1;
        best[i] = INFINITY;
    }
    double start = now_s();
    int rounds = 0;
    while (rounds < min_reps || (now_s() - start < min_s && rounds < 50)) {
        for (int i = 0; i < n; i++) {
            double t0 = now_s();
            if (fns[i](args[i])) return -1;
            double t = now_s() - t0;
            if (t < best[i]) best[i] = t;
        }
        rounds++;
    }
    return rounds;
}

static double best_time(bench_fn fn, void *arg, int min_reps, double min_s, int *reps_out) {
    double t;
    int r = best_times(1, &fn, &arg, min_reps, min_s, &t);
    if (reps_out) *reps_out = r;
    return r < 0 ? -1 : t;
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
    *loom_s_out = -1;
    if (!A || !B || !C1 || !C2) {
        printf("%6lld  out of memory\n", (long long)n);
        goto done;
    }
    fill_random(A, nn, 1);
    fill_random(B, nn, 2);
    int min_reps = b->quick ? 3 : 5;
    double min_s = b->quick ? 0.2 : 1.0, flops = 2.0 * (double)n * (double)n * (double)n;

    /* loom: a matmul graph through a plan (or, without matmul, the backend's sgemm) */
    const char *how = "plan";
    loom_graph_create(b->ctx, NULL, &g);
    loom_tensor *a = loom_input(g, "a", LOOM_F32, 2, (const int64_t[]){n, n});
    loom_tensor *bb = loom_input(g, "b", LOOM_F32, 2, (const int64_t[]){n, n});
    loom_tensor *y = loom_matmul(g, a, bb, false, false);
    if (y) loom_keep(y);
    if (!y || loom_plan_compile(g, b->be, NULL, &p) != LOOM_OK || loom_plan_write(p, a, A, nn * 4) != LOOM_OK ||
        loom_plan_write(p, bb, B, nn * 4) != LOOM_OK) {
        static bool said;
        if (!said)
            printf("note: loom_matmul through a plan failed (%s); timing loom__cpu_sgemm directly\n",
                   loom_last_error(b->ctx));
        said = true;
        how = "sgemm";
        loom_plan_destroy(p);
        p = NULL;
    }
    direct_gemm dl = {n, A, B, C1, b->be->impl};
    bench_fn fns[2] = {p ? run_plan : run_cpu_sgemm};
    void *args[2] = {p ? (void *)p : (void *)&dl};
    int nf = 1;
#ifdef LOOM_HAVE_OPENBLAS
    openblas_set_num_threads(b->threads);
    direct_gemm db = {n, A, B, C2, NULL};
    fns[1] = run_cblas, args[1] = &db, nf = 2;
#endif
    double t[2] = {-1, -1};
    int rounds = best_times(nf, fns, args, min_reps, min_s, t);
    if (rounds < 0 || (p && loom_plan_read(p, y, C1, nn * 4) != LOOM_OK)) {
        printf("%6lld  failed: %s\n", (long long)n, loom_last_error(b->ctx));
        goto done;
    }
    *loom_s_out = t[0];
    if (nf == 2) {
        double maxrel = 0, maxc = 0;
        for (size_t i = 0; i < nn; i++) maxc = fmax(maxc, fabs(C2[i]));
        for (size_t i = 0; i < nn; i++) maxrel = fmax(maxrel, fabs(C1[i] - C2[i]) / (maxc > 0 ? maxc : 1));
        printf("%6lld  %10.1f (%-5s) %12.1f %12.3f %11.1e %8.2f %8.2f %6d\n", (long long)n, flops / t[0] / 1e9, how,
               flops / t[1] / 1e9, t[1] / t[0], maxrel, t[0] * 1e3, t[1] * 1e3, rounds);
    } else {
        printf("%6lld  %10.1f (%-5s) %12s %12s %11s %8.2f %8s %6d\n", (long long)n, flops / t[0] / 1e9, how, "-", "-",
               "-", t[0] * 1e3, "-", rounds);
    }
done:
    loom_plan_destroy(p);
    loom_graph_destroy(g);
    free(A), free(B), free(C1), free(C2);
}

static void bench_gemm(bench *b) {
    printf("\nGEMM f32, C = A B, square n x n: GFLOP/s (2 n^3 flops), best of the rounds (loom and OpenBLAS\n"
           "take turns in each round)\n");
#ifndef LOOM_HAVE_OPENBLAS
    printf("(this build has no OpenBLAS: the direct columns are empty)\n");
#endif
    printf("%6s  %18s %12s %12s %11s %8s %8s %6s\n", "n", "loom (how)", "OpenBLAS", "loom/BLAS", "max rel diff",
           "loom ms", "BLAS ms", "rounds");
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

typedef enum conv_mode { CONV_FWD, CONV_GRAD_INPUT, CONV_GRAD_WEIGHT, CONV_STEP } conv_mode;
static const char *const conv_mode_names[] = {"forward", "grad_input", "grad_weight", "forward + backward (autodiff)"};

/* A backward-only node (core/ops/conv2d.c: same p[0..6] as the forward node
 * y, p[7..10] = the node's own shape), built directly so that it can be timed
 * alone; y itself is left unused and is removed from the plan. */
static loom_tensor *conv_grad_node(loom_graph *g, int op, const loom_tensor *y, loom_tensor *a, loom_tensor *b,
                                   const loom_tensor *like) {
    loom_tensor *src[2] = {a, b};
    loom_tensor *t = loom__node(g, op, like->dtype, 4, like->dims, 2, src);
    if (t) {
        memcpy(t->p, y->p, 7 * sizeof y->p[0]);
        memcpy(t->p + 7, like->dims, 4 * sizeof like->dims[0]);
    }
    return t;
}

/* Time one plan; returns seconds (< 0 on failure, message printed). */
static double time_conv(bench *b, const conv_shape *s, conv_mode mode, int *reps, int *nodes_run) {
    loom_graph *g = NULL;
    loom_plan *p = NULL;
    double t = -1;
    loom_graph_create(b->ctx, NULL, &g);
    const int64_t xd[4] = {s->N, s->C, s->H, s->W}, wd[4] = {s->O, s->C, s->KH, s->KW};
    const loom_init ku = {LOOM_INIT_KAIMING_UNIFORM, 0, 0}, un = {LOOM_INIT_UNIFORM, -1, 1};
    /* x is a parameter (random, and it needs a gradient in the autodiff step) */
    loom_tensor *x = loom_param(g, "x", LOOM_F32, 4, xd, &un);
    loom_tensor *w = loom_param(g, "w", LOOM_F32, 4, wd, &ku);
    loom_conv2d_desc cd = {.pad_h = s->pad, .pad_w = s->pad};
    loom_tensor *y = loom_conv2d(g, x, w, NULL, &cd);
    if (!y) {
        printf("conv2d: not implemented yet (%s)\n", loom_last_error(b->ctx));
        goto done;
    }
    if (mode == CONV_FWD) {
        loom_keep(y);
    } else if (mode == CONV_STEP) {
        loom_tensor *loss = loom_sum(g, y, 0, false);
        if (!loss || loom_backward(g, loss) != LOOM_OK) {
            printf("conv2d backward: not measured (%s)\n", loom_last_error(b->ctx));
            goto done;
        }
        loom_keep(loss); /* else the forward is dead code: no gradient reads y */
        loom_keep(loom_grad(w));
        loom_keep(loom_grad(x));
    } else {
        loom_tensor *dy = loom_param(g, "dy", LOOM_F32, 4, y->dims, &un);
        loom_tensor *r = mode == CONV_GRAD_INPUT ? conv_grad_node(g, LOOM_OP_CONV2D_GRAD_INPUT, y, dy, w, x)
                                                 : conv_grad_node(g, LOOM_OP_CONV2D_GRAD_WEIGHT, y, dy, x, w);
        if (!r) {
            printf("conv2d %s: cannot build (%s)\n", conv_mode_names[mode], loom_last_error(b->ctx));
            goto done;
        }
        loom_keep(r);
    }
    if (loom_plan_compile(g, b->be, NULL, &p) != LOOM_OK) {
        printf("conv2d %s: plan failed: %s\n", conv_mode_names[mode], loom_last_error(b->ctx));
        goto done;
    }
    loom_plan_memory m;
    loom_plan_memory_stats(p, &m);
    *nodes_run = m.nodes_run;
    t = best_time(run_plan, p, b->quick ? 3 : 5, b->quick ? 0.2 : 0.5, reps);
    if (t < 0) printf("conv2d %s: run failed: %s\n", conv_mode_names[mode], loom_last_error(b->ctx));
done:
    loom_plan_destroy(p);
    loom_graph_destroy(g);
    return t;
}

static void bench_conv(bench *b) {
    static const conv_shape shapes[] = {{64, 1, 28, 28, 32, 3, 3, 1}, {64, 32, 14, 14, 64, 3, 3, 1}};
    printf("\nconv2d f32 NCHW through loom plans: ms per pass and GFLOP/s, best of the runs\n");
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const conv_shape *s = &shapes[i];
        int64_t OH = s->H + 2 * s->pad - s->KH + 1, OW = s->W + 2 * s->pad - s->KW + 1;
        double flops = 2.0 * (double)(s->N * s->O * OH * OW) * (double)(s->C * s->KH * s->KW);
        printf("x (%lld,%lld,%lld,%lld) w (%lld,%lld,%lld,%lld) pad %d: %.3f GFLOP per pass\n", (long long)s->N,
               (long long)s->C, (long long)s->H, (long long)s->W, (long long)s->O, (long long)s->C, (long long)s->KH,
               (long long)s->KW, s->pad, flops / 1e9);
        for (int mode = CONV_FWD; mode <= CONV_STEP; mode++) {
            int reps = 0, nodes = 0;
            double t = time_conv(b, s, (conv_mode)mode, &reps, &nodes);
            if (t < 0) {
                if (mode == CONV_FWD) return; /* conv2d missing: nothing else to time */
                continue;
            }
            double f = mode == CONV_STEP ? 3 * flops : flops; /* a step: forward + two gradients */
            printf("  %-30s %8.3f ms %7.1f GFLOP/s   [%d nodes, %d runs]\n", conv_mode_names[mode], t * 1e3,
                   f / t / 1e9, nodes, reps);
        }
    }
}

static void usage(const char *argv0) { fprintf(stderr, "usage: %s [--threads N] [--quick]\n", argv0); }

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
