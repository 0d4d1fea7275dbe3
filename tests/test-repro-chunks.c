/* tests/test-repro-chunks.c — reproducible mode (core/repro.h) past one
 * chunk: every backend that has the mode must give the reproducible CPU's
 * bits on shapes where the canonical sums span several LOOM__REPRO_CHUNK
 * (1024) chunks, which the op-check's small cases and the cnn parity test do
 * not reach for every op: GEMMs with K = 2100 and 3000 (matmul in the four
 * transpose pairs, linear with a bias, and their gradients), sum and mean
 * over 1100 and 3000 elements, cross-entropy with 1200 classes over 1500
 * rows (some ignored, so the loss's row sum has ignored terms across a chunk
 * boundary), with and without label smoothing; batch norm over 2 x 3 x 700
 * elements per channel. Every node of forward and backward is compared bit
 * for bit.
 *
 * Skips (77) when no backend besides the CPU runs in reproducible mode here. */
#include <stdlib.h>
#include <string.h>

#include "impl.h" /* the graph's nodes */
#include "testutil.h"

typedef struct run {
    loom_graph *g;
    loom_backend *be;
    loom_plan *plan;
} run;

enum { ROWS = 1500, CLASSES = 1200 };

static bool build(loom_ctx *ctx, const char *backend, double smoothing, run *r) {
    memset(r, 0, sizeof *r);
    CHECK_OK(ctx, loom_graph_create(ctx, &(loom_graph_desc){.seed = 7}, &r->g));
    if (!r->g) return false;
    loom_graph *g = r->g;
    loom_init u = {LOOM_INIT_UNIFORM, -3, 3};
    loom_tensor *logits = loom_param(g, "logits", LOOM_F32, 2, (int64_t[]){ROWS, CLASSES}, &u);
    loom_tensor *tg = loom_input(g, "targets", LOOM_I32, 1, (int64_t[]){ROWS});
    loom_tensor *tot = loom_cross_entropy(g, logits, tg, smoothing, -100);
    loom_tensor *a = loom_param(g, "a", LOOM_F32, 2, (int64_t[]){5, 2100}, &u);
    loom_tensor *at = loom_param(g, "at", LOOM_F32, 2, (int64_t[]){2100, 5}, &u);
    loom_tensor *b = loom_param(g, "b", LOOM_F32, 2, (int64_t[]){2100, 7}, &u);
    loom_tensor *bt = loom_param(g, "bt", LOOM_F32, 2, (int64_t[]){7, 2100}, &u);
    loom_tensor *x = loom_param(g, "x", LOOM_F32, 2, (int64_t[]){1100, 3000}, &u);
    loom_tensor *w = loom_param(g, "w", LOOM_F32, 2, (int64_t[]){6, 3000}, &u);
    loom_tensor *bias = loom_param(g, "bias", LOOM_F32, 1, (int64_t[]){6}, &u);
    loom_tensor *bx = loom_param(g, "bx", LOOM_F32, 4, (int64_t[]){2, 4, 30, 35}, &u);
    loom_tensor *gamma = loom_param(g, "gamma", LOOM_F32, 1, (int64_t[]){4}, &u);
    loom_tensor *beta = loom_param(g, "beta", LOOM_F32, 1, (int64_t[]){4}, &u);
    loom_tensor *rm = loom_state(g, "rm", LOOM_F32, 1, (int64_t[]){4}, NULL);
    loom_tensor *rv = loom_state(g, "rv", LOOM_F32, 1, (int64_t[]){4}, &(loom_init){LOOM_INIT_ONES, 0, 0});
    loom_tensor *terms[] = {
        loom_mean(g, loom_matmul(g, a, b, false, false), 3, false),
        loom_sum(g, loom_matmul(g, a, bt, false, true), 3, false),
        loom_mean(g, loom_matmul(g, at, b, true, false), 3, false),
        loom_sum(g, loom_matmul(g, at, bt, true, true), 3, false),
        loom_mean(g, loom_linear(g, x, w, bias), 3, false),
        loom_sum(g, loom_sum(g, x, 1u << 1, false), 1, false),
        loom_mean(g, loom_mean(g, x, 1u << 0, false), 1, false),
        loom_mean(g, loom_mul(g, loom_batch_norm(g, bx, &(loom_batch_norm_desc){.gamma = gamma, .beta = beta, .running_mean = rm, .running_var = rv}), bx), 15, false),
    };
    for (size_t i = 0; i < sizeof terms / sizeof *terms; i++) tot = loom_add(g, tot, terms[i]);
    CHECK_OK(ctx, loom_backward(g, tot));
    for (int i = 0; i < g->n; i++) loom_keep(g->nodes[i]);
    CHECK_OK(ctx, loom_backend_create(ctx, backend, &(loom_backend_desc){.reproducible = true}, &r->be));
    if (!r->be) return false;
    CHECK_OK(ctx, loom_plan_compile(g, r->be, NULL, &r->plan));
    if (!r->plan) return false;
    int32_t t[ROWS];
    for (int i = 0; i < ROWS; i++) t[i] = i % 7 == 3 ? -100 : (i * 131) % CLASSES;
    CHECK_OK(ctx, loom_plan_write(r->plan, tg, t, sizeof t));
    loom_status st = loom_plan_run(r->plan);
    CHECK(st == LOOM_OK, "%s: run: %s", backend, loom_last_error(ctx));
    return st == LOOM_OK;
}

static void release(run *r) {
    loom_plan_destroy(r->plan);
    loom_backend_destroy(r->be);
    loom_graph_destroy(r->g);
}

/* every f32 node of b equal to a's bit for bit */
static void compare(loom_ctx *ctx, const char *backend, double smoothing, run *a, run *b) {
    int differ = 0, nodes = 0;
    for (int i = 0; i < a->g->n; i++) {
        const loom_tensor *ta = a->g->nodes[i], *tb = b->g->nodes[i];
        if (ta->dtype != LOOM_F32) continue;
        size_t bytes = (size_t)loom_tensor_numel(ta) * sizeof(float);
        float *va = malloc(bytes ? bytes : 1), *vb = malloc(bytes ? bytes : 1);
        bool ok = va && vb && loom_plan_read(a->plan, ta, va, bytes) == LOOM_OK &&
                  loom_plan_read(b->plan, tb, vb, bytes) == LOOM_OK;
        CHECK(ok, "%s: reading node '%s': %s", backend, ta->name, loom_last_error(ctx));
        if (ok && memcmp(va, vb, bytes) != 0) {
            int64_t n = 0;
            for (size_t k = 0; k < bytes / sizeof(float); k++) n += memcmp(va + k, vb + k, sizeof(float)) != 0;
            if (differ < 10)
                printf("  %s, smoothing %.1f: node '%s' (%s): %lld of %lld elements differ from the cpu\n", backend,
                       smoothing, ta->name, ta->op >= 0 ? loom_op_name(ta->op) : "leaf", (long long)n,
                       (long long)(bytes / sizeof(float)));
            differ++;
        }
        nodes++;
        free(va), free(vb);
    }
    CHECK(differ == 0, "%s, smoothing %.1f: %d of %d nodes differ from the reproducible cpu", backend, smoothing,
          differ, nodes);
    printf("%-8s smoothing %.1f: %d of %d nodes differ from the reproducible cpu\n", backend, smoothing, differ, nodes);
}

int main(void) {
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    const char *names[8];
    int n = loom_backend_list(names, 8), others = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(names[i], "cpu")) continue;
        loom_backend *be = NULL;
        if (loom_backend_create(ctx, names[i], &(loom_backend_desc){.reproducible = true}, &be) != LOOM_OK) {
            printf("%s: not compared: %s\n", names[i], loom_last_error(ctx));
            continue;
        }
        loom_backend_destroy(be);
        others++;
        for (int s = 0; s < 2; s++) {
            double smoothing = s ? 0.1 : 0.0;
            run a = {0}, b = {0};
            if (build(ctx, "cpu", smoothing, &a) && build(ctx, names[i], smoothing, &b))
                compare(ctx, names[i], smoothing, &a, &b);
            release(&a), release(&b);
        }
    }
    loom_ctx_destroy(ctx);
    if (!others) return tu_skip("no backend besides the CPU runs in reproducible mode here");
    return tu_summary();
}
