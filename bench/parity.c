/* bench/parity.c — cross-backend parity: the same cnn (dropout on), seed and
 * batches trained for 50 steps on the CPU backend and on every other
 * available backend; prints the worst relative loss difference per backend
 * and optimizer against the bars (1e-4 with SGD + momentum, 1e-3
 * with AdamW) and exits 1 if one is missed. LOOM_PARITY_VERBOSE=1 prints
 * every step; LOOM_PARITY_BACKENDS=vulkan,opencl limits the backends.
 *
 * It measures the ordinary kernels; tests/test-parity.c is the ctest test,
 * in reproducible mode (core/repro.h), where every backend gives the CPU's
 * bits. This diagnostic keeps the ordinary kernels' numbers. Measured
 * on PoCL (batch 64, 2026-12-02): SGD + momentum 1.3e-3 (bar 1e-4), AdamW
 * 2e-4..2e-3 (bar 1e-3) depending on last-bit changes on the CPU side. After
 * one step every weight and gradient agrees to ~1e-6 relative or better
 * (conv2d's weight gradient, a sum of N*H*W = 50176 products, is now summed
 * in blocks on both backends; it was 2e-4 apart). What remains looks like
 * the training dynamics amplifying last-bit differences: AdamW on the CPU
 * alone moves by 2e-3 when one input value changes by 1e-6. Meeting the bars
 * likely needs bitwise-equal reductions across backends. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/loom.h"
#include <stdio.h>

static int failed, passed;
#define CHECK(c, ...) do { if (c) passed++; else { failed++; printf("FAIL: " __VA_ARGS__); printf("\n"); } } while (0)
#define CHECK_OK(ctx, call) do { loom_status st_ = (call); CHECK(st_ == LOOM_OK, "%s: %s", #call, loom_last_error(ctx)); } while (0)

#define STEPS 50
#define BATCH 64

typedef struct run {
    loom_graph *g;
    loom_backend *be;
    loom_plan *plan;
    loom_optimizer *opt;
    loom_tensor *x, *y, *loss;
} run;

static bool setup(loom_ctx *ctx, const char *backend, const loom_optimizer_desc *od, run *r) {
    memset(r, 0, sizeof *r);
    loom_graph_create(ctx, &(loom_graph_desc){.seed = 2024}, &r->g);
    r->x = loom_input(r->g, "x", LOOM_F32, 4, (int64_t[]){BATCH, 1, 28, 28});
    r->y = loom_input(r->g, "y", LOOM_I32, 1, (int64_t[]){BATCH});
    loom_model_desc md = {.arch = "cnn", .in_c = 1, .in_h = 28, .in_w = 28, .num_classes = 10};
    loom_tensor *logits;
    CHECK_OK(ctx, loom_model_build(r->g, &md, r->x, true, &logits));
    r->loss = loom_cross_entropy(r->g, logits, r->y, 0.0, -100);
    loom_keep(r->loss);
    CHECK_OK(ctx, loom_backward(r->g, r->loss));
    CHECK_OK(ctx, loom_optimizer_create(r->g, od, &r->opt));
    CHECK_OK(ctx, loom_backend_create(ctx, backend, NULL, &r->be));
    if (!r->be) return false;
    CHECK_OK(ctx, loom_plan_compile(r->g, r->be, NULL, &r->plan));
    return r->plan != NULL;
}

static void teardown(run *r) {
    loom_plan_destroy(r->plan);
    loom_backend_destroy(r->be);
    loom_optimizer_destroy(r->opt);
    loom_graph_destroy(r->g);
}

/* losses of STEPS steps on backend, reading the same batches */
static bool train(loom_ctx *ctx, const char *backend, const loom_optimizer_desc *od, const float *xs,
                  const int32_t *ys, double lr, float *losses) {
    run r;
    bool ok = setup(ctx, backend, od, &r);
    for (int s = 0; ok && s < STEPS; s++) {
        size_t per = (size_t)BATCH * 28 * 28;
        ok = loom_plan_write(r.plan, r.x, xs + s * per, per * sizeof *xs) == LOOM_OK &&
             loom_plan_write(r.plan, r.y, ys + s * BATCH, BATCH * sizeof *ys) == LOOM_OK &&
             loom_optimizer_begin_step(r.opt, r.plan, lr) == LOOM_OK && loom_plan_run(r.plan) == LOOM_OK &&
             loom_plan_read(r.plan, r.loss, &losses[s], sizeof(float)) == LOOM_OK;
        CHECK(ok, "%s step %d: %s", backend, s, loom_last_error(ctx));
    }
    teardown(&r);
    return ok;
}

int main(void) {
    loom_ctx *ctx;
    loom_ctx_create(NULL, &ctx);
    const char *names[8];
    int n = loom_backend_list(names, 8), others = 0;
    for (int i = 0; i < n; i++) others += strcmp(names[i], "cpu") && loom_backend_available(ctx, names[i], NULL);
    loom_dataset ds;
    if (!others) {
        loom_ctx_destroy(ctx);
        printf("SKIP: no backend besides the CPU is available to compare\n");
        return 0;
    }
    if (loom_dataset_load_mnist(ctx, NULL, true, &ds) != LOOM_OK) {
        printf("%s\n", loom_last_error(ctx));
        loom_ctx_destroy(ctx);
        printf("SKIP: Fashion-MNIST not installed\n");
        return 0;
    }
    /* STEPS shuffled batches, normalised as loom train does */
    loom_batch_iter *it;
    loom_batch_iter_create(ctx, &ds, &(loom_batch_iter_desc){.batch = BATCH, .shuffle = true, .drop_last = true,
                                                             .seed = 5, .mean = 0.2860f, .std = 0.3530f},
                           &it);
    size_t per = (size_t)BATCH * 28 * 28;
    float *xs = malloc(STEPS * per * sizeof *xs);
    int32_t *ys = malloc(STEPS * BATCH * sizeof *ys);
    for (int s = 0; s < STEPS; s++) loom_batch_iter_next(it, xs + s * per, ys + s * BATCH);
    loom_batch_iter_destroy(it);

    struct {
        const char *name;
        loom_optimizer_desc od;
        double lr, tol;
    } opts[] = {
        {"sgd momentum 0.9", {.kind = LOOM_OPT_SGD, .momentum = 0.9}, 0.01, 1e-4},
        {"adamw wd 0.01", {.kind = LOOM_OPT_ADAMW, .weight_decay = 0.01}, 0.001, 1e-3},
    };
    float ref[STEPS], got[STEPS];
    for (int k = 0; k < 2; k++) {
        if (!train(ctx, "cpu", &opts[k].od, xs, ys, opts[k].lr, ref)) continue;
        for (int i = 0; i < n; i++) {
            if (!strcmp(names[i], "cpu") || !loom_backend_available(ctx, names[i], NULL)) continue;
            const char *only = getenv("LOOM_PARITY_BACKENDS"); /* e.g. "vulkan,opencl"; unset = all */
            if (only && !strstr(only, names[i])) continue;
            if (!train(ctx, names[i], &opts[k].od, xs, ys, opts[k].lr, got)) continue;
            if (getenv("LOOM_PARITY_VERBOSE"))
                for (int s = 0; s < STEPS; s++) printf("  step %2d  cpu %.6f  %s %.6f\n", s, ref[s], names[i], got[s]);
            double worst = 0;
            int at = 0;
            for (int s = 0; s < STEPS; s++) {
                double rel = fabs((double)got[s] - ref[s]) / fabs((double)ref[s]);
                if (!(rel <= worst)) worst = rel, at = s;
            }
            printf("%-8s %-18s loss %.5f -> %.5f (cpu %.5f -> %.5f), worst relative difference %.2e at step %d\n",
                   names[i], opts[k].name, got[0], got[STEPS - 1], ref[0], ref[STEPS - 1], worst, at);
            CHECK(worst <= opts[k].tol, "%s %s: loss differs by %.2e (> %.0e) at step %d", names[i], opts[k].name,
                  worst, opts[k].tol, at);
        }
    }
    free(xs), free(ys);
    loom_dataset_free(&ds);
    loom_ctx_destroy(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
