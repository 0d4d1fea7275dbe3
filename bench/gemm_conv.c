/* bench/gemm_conv.c — micro-benchmark: f32 GEMM and conv2d throughput per backend.
 *
 * Every backend asked for (default: every backend available here) runs the
 * same graphs through loom plans, side by side in one table per benchmark.
 *
 * GEMM: square C = A B for n = 256, 512, 1024 (and 2048 for the backends
 * where 1024 is quick enough), a one-node loom_matmul plan per backend, and
 * OpenBLAS cblas_sgemm called directly on the same data as the reference
 * column; prints GFLOP/s (2 n^3 flops) of each, each backend's speed relative
 * to OpenBLAS, and the largest relative difference of its result from
 * OpenBLAS's.
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
 * Every timing is the best of the timed runs after one warm-up run. Each cell
 * is time-boxed: at least 3 runs (2 with --quick), then more until its runs
 * add up to 0.5 s (0.2 s) or 50 runs, so a slow backend (PoCL's GEMM runs at
 * ~10 GFLOP/s) gets few runs and the whole program stays short. The cells of
 * one GEMM row run in turns (round robin), so load changes on a shared
 * machine hit all of them alike.
 *
 * usage: bench-gemm_conv [--threads N] [--quick] [--backend NAME]...
 *   --threads N        CPU threads for the cpu backend and OpenBLAS (default: all cores)
 *   --quick            n = 256, 512 only and shorter time boxes
 *   --backend NAME     a backend to time; repeatable, or a comma list
 *   --backends A,B     (the same) default: every backend available here
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "impl.h" /* loom__node, struct loom_tensor */
#include "loom/loom.h"

#ifdef LOOM_HAVE_OPENBLAS
#include <cblas.h>
void openblas_set_num_threads(int n);
#endif

#define MAX_BACKENDS 8

typedef struct bench {
    loom_ctx *ctx;
    int nbe;
    loom_backend *be[MAX_BACKENDS];
    const char *name[MAX_BACKENDS];
    int threads;
    bool quick;
} bench;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best time of each fns[i](args[i]) after one warm-up run each, into
 * best[i], and its timed runs into runs[i]. The functions run in turns
 * (round robin), so a change in machine load affects all of them alike; each
 * one stops on its own time box: at least min_reps runs, then more (up to
 * 50) while its runs add up to less than box_s seconds. Returns 0, or -1 if
 * a run failed (then *failed is its index). */
typedef int (*bench_fn)(void *arg);
static int best_times(int n, const bench_fn *fns, void *const *args, int min_reps, double box_s, double *best,
                      int *runs, int *failed) {
    double spent[MAX_BACKENDS + 1];
    for (int i = 0; i < n; i++) {
        *failed = i;
        if (fns[i](args[i])) return -1;
        best[i] = INFINITY, runs[i] = 0, spent[i] = 0;
    }
    for (bool more = true; more;) {
        more = false;
        for (int i = 0; i < n; i++) {
            if (runs[i] >= min_reps && (spent[i] >= box_s || runs[i] >= 50)) continue;
            double t0 = now_s();
            *failed = i;
            if (fns[i](args[i])) return -1;
            double t = now_s() - t0;
            best[i] = fmin(best[i], t), spent[i] += t, runs[i]++;
            more = true;
        }
    }
    return 0;
}

static int min_reps(const bench *b) { return b->quick ? 2 : 3; }
static double box_s(const bench *b) { return b->quick ? 0.2 : 0.5; }

static int run_plan(void *p) { return loom_plan_run(p) != LOOM_OK; }

static void fill_random(float *v, size_t n, uint64_t stream) {
    for (size_t i = 0; i < n; i++) v[i] = loom_philox_uniform(1, stream, i) * 2.0f - 1.0f;
}

/* ---- GEMM ---- */
#ifdef LOOM_HAVE_OPENBLAS
typedef struct direct_gemm {
    int n;
    const float *a, *b;
    float *c;
} direct_gemm;

static int run_cblas(void *v) {
    direct_gemm *d = v;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d->n, d->n, d->n, 1.0f, d->a, d->n, d->b, d->n, 0.0f,
                d->c, d->n);
    return 0;
}
#endif

/* width of backend i's GEMM columns: "<name> diff" or a number */
static int col_width(const bench *b, int i) {
    int w = (int)strlen(b->name[i]) + 5;
    return w < 8 ? 8 : w;
}

/* One row of the GEMM table: backends whose skip[i] is set (n = 1024 too slow
 * for 2048) print "-". t_out[i]: backend i's best time (< 0: not run). */
static void bench_gemm_size(bench *b, int64_t n, const bool *skip, double *t_out) {
    size_t nn = (size_t)(n * n);
    int nbe = b->nbe;
    float *A = malloc(nn * sizeof *A), *B = malloc(nn * sizeof *B), *C = malloc((size_t)(nbe + 1) * nn * sizeof *C);
    loom_graph *g[MAX_BACKENDS] = {0};
    loom_plan *p[MAX_BACKENDS] = {0};
    loom_tensor *y[MAX_BACKENDS] = {0};
    char why[MAX_BACKENDS][160] = {{0}};
    for (int i = 0; i < nbe; i++) t_out[i] = -1;
    if (!A || !B || !C) {
        printf("%6lld  out of memory\n", (long long)n);
        goto done;
    }
    fill_random(A, nn, 1);
    fill_random(B, nn, 2);
    double flops = 2.0 * (double)n * (double)n * (double)n;

    /* per backend: a one-node matmul graph through a plan */
    bench_fn fns[MAX_BACKENDS + 1];
    void *args[MAX_BACKENDS + 1];
    int col[MAX_BACKENDS + 1], nf = 0; /* col[k]: the backend of timed function k (nbe: OpenBLAS) */
    for (int i = 0; i < nbe; i++) {
        if (skip[i]) continue;
        loom_graph_create(b->ctx, NULL, &g[i]);
        loom_tensor *a = loom_input(g[i], "a", LOOM_F32, 2, (const int64_t[]){n, n});
        loom_tensor *bb = loom_input(g[i], "b", LOOM_F32, 2, (const int64_t[]){n, n});
        y[i] = loom_matmul(g[i], a, bb, false, false);
        if (y[i]) loom_keep(y[i]);
        if (!y[i] || loom_plan_compile(g[i], b->be[i], NULL, &p[i]) != LOOM_OK ||
            loom_plan_write(p[i], a, A, nn * 4) != LOOM_OK || loom_plan_write(p[i], bb, B, nn * 4) != LOOM_OK) {
            snprintf(why[i], sizeof why[i], "%s", loom_last_error(b->ctx));
            loom_plan_destroy(p[i]);
            p[i] = NULL;
            continue;
        }
        fns[nf] = run_plan, args[nf] = p[i], col[nf++] = i;
    }
#ifdef LOOM_HAVE_OPENBLAS
    openblas_set_num_threads(b->threads);
    direct_gemm db = {(int)n, A, B, C + (size_t)nbe * nn};
    fns[nf] = run_cblas, args[nf] = &db, col[nf++] = nbe;
#endif
    double t[MAX_BACKENDS + 1], tb = -1;
    int runs[MAX_BACKENDS + 1], failed = 0, runs_of[MAX_BACKENDS + 1] = {0};
    if (best_times(nf, fns, args, min_reps(b), box_s(b), t, runs, &failed) < 0) {
        printf("%6lld  %s failed: %s\n", (long long)n, col[failed] < nbe ? b->name[col[failed]] : "OpenBLAS",
               loom_last_error(b->ctx));
        goto done;
    }
    for (int k = 0; k < nf; k++) {
        runs_of[col[k]] = runs[k];
        if (col[k] == nbe) {
            tb = t[k];
            continue;
        }
        int i = col[k];
        t_out[i] = t[k];
        if (loom_plan_read(p[i], y[i], C + (size_t)i * nn, nn * 4) != LOOM_OK) {
            snprintf(why[i], sizeof why[i], "read: %s", loom_last_error(b->ctx));
            t_out[i] = -1;
        }
    }
    /* max |C_be - C_blas| / max |C_blas| */
    double maxrel[MAX_BACKENDS] = {0}, maxc = 0;
    const float *Cb = C + (size_t)nbe * nn;
    for (size_t e = 0; tb > 0 && e < nn; e++) maxc = fmax(maxc, fabs(Cb[e]));
    for (int i = 0; tb > 0 && i < nbe; i++)
        for (size_t e = 0; t_out[i] > 0 && e < nn; e++)
            maxrel[i] = fmax(maxrel[i], fabs(C[(size_t)i * nn + e] - Cb[e]) / (maxc > 0 ? maxc : 1));

    printf("%6lld ", (long long)n);
    for (int i = 0; i < nbe; i++) {
        int w = col_width(b, i);
        if (t_out[i] > 0) printf(" %*.1f", w, flops / t_out[i] / 1e9);
        else printf(" %*s", w, skip[i] ? "skipped" : "failed");
    }
    tb > 0 ? printf(" %8.1f |", flops / tb / 1e9) : printf(" %8s |", "-");
    for (int i = 0; i < nbe; i++) {
        int w = col_width(b, i);
        if (t_out[i] > 0 && tb > 0) printf(" %*.3f", w, tb / t_out[i]);
        else printf(" %*s", w, "-");
    }
    printf(" |");
    for (int i = 0; i < nbe; i++) {
        int w = col_width(b, i);
        if (t_out[i] > 0 && tb > 0) printf(" %*.1e", w, maxrel[i]);
        else printf(" %*s", w, "-");
    }
    printf(" |");
    for (int i = 0; i < nbe; i++) {
        int w = col_width(b, i);
        if (t_out[i] > 0) printf(" %*.2f", w, t_out[i] * 1e3);
        else printf(" %*s", w, "-");
    }
    tb > 0 ? printf(" %8.2f |", tb * 1e3) : printf(" %8s |", "-");
    for (int i = 0; i <= nbe; i++) printf("%s%d", i ? "/" : " ", runs_of[i]);
    printf("\n");
    for (int i = 0; i < nbe; i++)
        if (why[i][0]) printf("        %s: %s\n", b->name[i], why[i]);
done:
    for (int i = 0; i < nbe; i++) loom_plan_destroy(p[i]), loom_graph_destroy(g[i]);
    free(A), free(B), free(C);
}

static void bench_gemm(bench *b) {
    printf("\nGEMM f32, C = A B, square n x n, one loom_matmul plan per backend; OpenBLAS = cblas_sgemm called\n"
           "directly. GFLOP/s (2 n^3 flops) of the best run; x/BLAS = OpenBLAS time / backend time; diff = max\n"
           "|C - C_blas| / max |C_blas|; ms = best time; runs = timed runs per column, OpenBLAS last\n");
#ifndef LOOM_HAVE_OPENBLAS
    printf("(this build has no OpenBLAS: the reference columns are empty)\n");
#endif
    char h[64];
    printf("%6s ", "n");
    for (int i = 0; i < b->nbe; i++) snprintf(h, sizeof h, "%s GF/s", b->name[i]), printf(" %*s", col_width(b, i), h);
    printf(" %8s |", "OpenBLAS");
    for (int i = 0; i < b->nbe; i++) snprintf(h, sizeof h, "%s/BLAS", b->name[i]), printf(" %*s", col_width(b, i), h);
    printf(" |");
    for (int i = 0; i < b->nbe; i++) snprintf(h, sizeof h, "%s diff", b->name[i]), printf(" %*s", col_width(b, i), h);
    printf(" |");
    for (int i = 0; i < b->nbe; i++) snprintf(h, sizeof h, "%s ms", b->name[i]), printf(" %*s", col_width(b, i), h);
    printf(" %8s | runs\n", "BLAS ms");
    static const int64_t sizes[] = {256, 512, 1024, 2048};
    bool skip[MAX_BACKENDS] = {0};
    double t[MAX_BACKENDS];
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        if (b->quick && sizes[k] > 512) break;
        if (sizes[k] == 2048) {
            /* 2048 is 8x the work of 1024: only where that stays around a second for all runs */
            bool any = false;
            for (int i = 0; i < b->nbe; i++) any |= !(skip[i] = !(t[i] > 0 && t[i] * 8 < 0.25));
            if (!any) {
                printf("  2048  skipped: n = 1024 took over 31 ms per run on every backend\n");
                break;
            }
        }
        bench_gemm_size(b, sizes[k], skip, t);
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

/* Time one plan on backend be; returns seconds (< 0 on failure, with the
 * reason in why). */
static double time_conv(bench *b, loom_backend *be, const conv_shape *s, conv_mode mode, int *reps, int *nodes_run,
                        char *why, size_t why_len) {
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
        snprintf(why, why_len, "conv2d: %s", loom_last_error(b->ctx));
        goto done;
    }
    if (mode == CONV_FWD) {
        loom_keep(y);
    } else if (mode == CONV_STEP) {
        loom_tensor *loss = loom_sum(g, y, 0, false);
        if (!loss || loom_backward(g, loss) != LOOM_OK) {
            snprintf(why, why_len, "backward: %s", loom_last_error(b->ctx));
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
            snprintf(why, why_len, "cannot build: %s", loom_last_error(b->ctx));
            goto done;
        }
        loom_keep(r);
    }
    if (loom_plan_compile(g, be, NULL, &p) != LOOM_OK) {
        snprintf(why, why_len, "plan: %s", loom_last_error(b->ctx));
        goto done;
    }
    loom_plan_memory m;
    loom_plan_memory_stats(p, &m);
    *nodes_run = m.nodes_run;
    bench_fn fn = run_plan;
    void *arg = p;
    int failed;
    if (best_times(1, &fn, &arg, min_reps(b), box_s(b), &t, reps, &failed) < 0) {
        snprintf(why, why_len, "run: %s", loom_last_error(b->ctx));
        t = -1;
    }
done:
    loom_plan_destroy(p);
    loom_graph_destroy(g);
    return t;
}

static void bench_conv(bench *b) {
    static const conv_shape shapes[] = {{64, 1, 28, 28, 32, 3, 3, 1}, {64, 32, 14, 14, 64, 3, 3, 1}};
    printf("\nconv2d f32 NCHW through loom plans: per backend, ms of the best run, GFLOP/s, [nodes run, timed runs]\n");
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        const conv_shape *s = &shapes[k];
        int64_t OH = s->H + 2 * s->pad - s->KH + 1, OW = s->W + 2 * s->pad - s->KW + 1;
        double flops = 2.0 * (double)(s->N * s->O * OH * OW) * (double)(s->C * s->KH * s->KW);
        printf("x (%lld,%lld,%lld,%lld) w (%lld,%lld,%lld,%lld) pad %d: %.3f GFLOP per pass\n", (long long)s->N,
               (long long)s->C, (long long)s->H, (long long)s->W, (long long)s->O, (long long)s->C, (long long)s->KH,
               (long long)s->KW, s->pad, flops / 1e9);
        printf("  %-30s", "");
        for (int i = 0; i < b->nbe; i++) printf(" | %-33s", b->name[i]);
        printf("\n");
        for (int mode = CONV_FWD; mode <= CONV_STEP; mode++) {
            char whys[MAX_BACKENDS][200] = {{0}};
            printf("  %-30s", conv_mode_names[mode]);
            fflush(stdout);
            for (int i = 0; i < b->nbe; i++) {
                int reps = 0, nodes = 0;
                double t = time_conv(b, b->be[i], s, (conv_mode)mode, &reps, &nodes, whys[i], sizeof whys[i]);
                double f = mode == CONV_STEP ? 3 * flops : flops; /* a step: forward + two gradients */
                char cell[64];
                if (t < 0)
                    snprintf(cell, sizeof cell, "failed (below)");
                else
                    snprintf(cell, sizeof cell, "%9.3f ms %7.1f GF/s [%d,%2d]", t * 1e3, f / t / 1e9, nodes, reps);
                printf(" | %-33s", cell);
                fflush(stdout);
            }
            printf("\n");
            for (int i = 0; i < b->nbe; i++)
                if (whys[i][0]) printf("    %s: %s\n", b->name[i], whys[i]);
        }
    }
}

static void usage(const char *argv0) {
    fprintf(stderr, "usage: %s [--threads N] [--quick] [--backend NAME]... [--backends A,B]\n", argv0);
}

/* Adds the comma-separated backend names in list to b->name (no duplicates).
 * Returns false (message printed) on an empty name or too many. */
static bool add_backends(bench *b, char *list) {
    for (char *tok = list, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next) *next++ = 0;
        if (!*tok) {
            fprintf(stderr, "--backend: empty backend name in the list\n");
            return false;
        }
        bool dup = false;
        for (int i = 0; i < b->nbe; i++) dup |= !strcmp(b->name[i], tok);
        if (dup) continue;
        if (b->nbe == MAX_BACKENDS) {
            fprintf(stderr, "--backend: at most %d backends\n", MAX_BACKENDS);
            return false;
        }
        b->name[b->nbe++] = tok;
    }
    return true;
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
        } else if ((strcmp(argv[i], "--backend") == 0 || strcmp(argv[i], "--backends") == 0) && i + 1 < argc) {
            if (!add_backends(&b, argv[++i])) return 2;
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
    if (b.nbe == 0) {
        /* default: every backend built and available here, cpu first */
        const char *names[MAX_BACKENDS];
        int n = loom_backend_list(names, MAX_BACKENDS);
        if (n > MAX_BACKENDS) n = MAX_BACKENDS;
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < n; i++) {
                const char *why = NULL;
                if ((strcmp(names[i], "cpu") == 0) != (pass == 0)) continue;
                if (loom_backend_available(b.ctx, names[i], &why))
                    b.name[b.nbe++] = names[i];
                else
                    printf("note: backend %s is built but not available (%s): not timed\n", names[i], why);
            }
    }
    loom_backend_desc bd = {.threads = b.threads};
    int rc = 0;
    for (int i = 0; i < b.nbe; i++)
        if (loom_backend_create(b.ctx, b.name[i], &bd, &b.be[i]) != LOOM_OK) {
            fprintf(stderr, "cannot create backend '%s': %s\n", b.name[i], loom_last_error(b.ctx));
            rc = 1;
            goto done;
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
    printf("loom %s bench gemm_conv: %d threads, %ld cores online (%s)%s; backends:", loom_version(), b.threads,
           sysconf(_SC_NPROCESSORS_ONLN), model, b.quick ? ", --quick" : "");
    for (int i = 0; i < b.nbe; i++) printf(" %s", b.name[i]);
    printf("\n");
    for (int i = 0; i < b.nbe; i++) loom_backend_describe(b.be[i], stdout);
    fflush(stdout);
    bench_gemm(&b);
    bench_conv(&b);
done:
    for (int i = 0; i < b.nbe; i++) loom_backend_destroy(b.be[i]);
    loom_ctx_destroy(b.ctx);
    return rc;
}
