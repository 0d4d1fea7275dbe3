/* bench/bitwise.c — diagnostic: where do two backends' bits part? One (or
 * more) cnn training steps on the CPU and on another backend, same seed and
 * batches, every node kept; prints, per f32 node, how many elements differ
 * in any bit (max ulps, max relative difference), and marks ORIGIN the nodes
 * whose inputs all agree but whose output does not: the kernels to look at.
 * It found the non-canonical kernels while reproducible mode (core/repro.h)
 * was built; in that mode it prints "0 of N nodes differ".
 *
 * usage: bench-bitwise BACKEND [sgd|adamw] [REPRO] [STEPS]
 *   REPRO 0: ordinary kernels on both; 1: reproducible mode on both;
 *         2: reproducible on BACKEND only (compare it with the ordinary CPU)
 *   ALL=1 lists every differing node, not only the origins; LEAVES=1 also
 *   the parameters and states (after a single step: before it ran). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "impl.h"
#include "loom/loom.h"
#define BATCH 64
typedef struct { loom_graph *g; loom_backend *be; loom_plan *plan; loom_optimizer *opt; loom_tensor *x,*y,*loss; } run;
static int setup(loom_ctx *ctx, const char *backend, const loom_optimizer_desc *od, run *r, int repro) {
    memset(r, 0, sizeof *r);
    loom_graph_create(ctx, &(loom_graph_desc){.seed = 2024}, &r->g);
    r->x = loom_input(r->g, "x", LOOM_F32, 4, (int64_t[]){BATCH, 1, 28, 28});
    r->y = loom_input(r->g, "y", LOOM_I32, 1, (int64_t[]){BATCH});
    loom_model_desc md = {.arch = "cnn", .in_c = 1, .in_h = 28, .in_w = 28, .num_classes = 10};
    loom_tensor *logits;
    if (loom_model_build(r->g, &md, r->x, true, &logits)) return 0;
    r->loss = loom_cross_entropy(r->g, logits, r->y, 0.0, -100);
    if (loom_backward(r->g, r->loss)) return 0;
    if (loom_optimizer_create(r->g, od, &r->opt)) return 0;
    for (int i = 0; i < r->g->n; i++) if (r->g->nodes[i]->op >= 0 || 1) loom_keep(r->g->nodes[i]);
    loom_backend_desc bd = {0};
    bd.reproducible = repro;
    if (loom_backend_create(ctx, backend, &bd, &r->be) || !r->be) return 0;
    if (loom_plan_compile(r->g, r->be, NULL, &r->plan)) return 0;
    return 1;
}
int main(int argc, char **argv) {
    const char *other = argc > 1 ? argv[1] : "vulkan";
    int adam = argc > 2 && !strcmp(argv[2], "adamw");
    int repro = argc > 3 ? atoi(argv[3]) : 0;
    int steps = argc > 4 ? atoi(argv[4]) : 1;
    loom_ctx *ctx; loom_ctx_create(NULL, &ctx);
    loom_dataset ds;
    if (loom_dataset_load_mnist(ctx, NULL, true, &ds)) { printf("%s\n", loom_last_error(ctx)); return 1; }
    const float mean = 0.2860f, sd = 0.3530f;
    loom_source *src; loom_loader *ld;
    if (loom_source_wrap(ctx, &ds, &src) || loom_loader_create(ctx, &(loom_loader_desc){.src = src, .batch = BATCH, .shuffle = true, .drop_last = true, .seed = 5, .workers = LOOM_WORKERS_SYNC, .mean = &mean, .std = &sd, .nstat = 1}, &ld)) { printf("%s\n", loom_last_error(ctx)); return 1; }
    size_t per = (size_t)BATCH * 28 * 28;
    float *xs = malloc(steps * per * 4); int32_t *ys = malloc(steps * BATCH * 4);
    loom_loader_begin(ld, 0, 0, 0);
    for (int s = 0; s < steps; s++) {
        loom_loader_batch lb;
        if (loom_loader_next(ld, &lb) || lb.count != BATCH) { printf("loader: %s\n", loom_last_error(ctx)); return 1; }
        memcpy(xs + s * per, lb.x, per * 4), memcpy(ys + s * BATCH, lb.y, BATCH * 4);
    }
    loom_loader_destroy(ld); loom_source_destroy(src);
    loom_optimizer_desc od = adam ? (loom_optimizer_desc){.kind = LOOM_OPT_ADAMW, .weight_decay = 0.01} : (loom_optimizer_desc){.kind = LOOM_OPT_SGD, .momentum = 0.9};
    double lr = adam ? 0.001 : 0.01;
    run a, b;
    if (!setup(ctx, "cpu", &od, &a, repro == 1) || !setup(ctx, other, &od, &b, repro >= 1)) { printf("setup: %s\n", loom_last_error(ctx)); return 1; }
    int n0 = a.g->n;
    char *leafdiff = calloc(n0, 1);
    for (int i = 0; i < n0; i++) {
        loom_tensor *ta = a.g->nodes[i], *tb = b.g->nodes[i];
        if (ta->op >= 0 || ta->dtype != LOOM_F32) continue;
        int64_t m = loom_tensor_numel(ta);
        float *va = malloc(m * 4), *vb = malloc(m * 4);
        if (!loom_plan_read(a.plan, ta, va, m * 4) && !loom_plan_read(b.plan, tb, vb, m * 4)) leafdiff[i] = memcmp(va, vb, m * 4) != 0;
        free(va); free(vb);
    }
    for (int s = 0; s < steps; s++) {
        run *rs[2] = {&a, &b};
        for (int k = 0; k < 2; k++) {
            run *r = rs[k];
            if (loom_plan_write(r->plan, r->x, xs + s * per, per * 4) || loom_plan_write(r->plan, r->y, ys + s * BATCH, BATCH * 4) ||
                loom_optimizer_begin_step(r->opt, r->plan, lr) || loom_plan_run(r->plan)) { printf("run: %s\n", loom_last_error(ctx)); return 1; }
        }
    }
    int n = a.g->n;
    char *diff = calloc(n, 1);
    int shown = 0;
    for (int i = 0; i < n; i++) {
        loom_tensor *ta = a.g->nodes[i], *tb = b.g->nodes[i];
        if (ta->dtype != LOOM_F32) continue;
        if (ta->op < 0 && steps == 1) { diff[i] = leafdiff[i]; if (!getenv("LEAVES")) continue; }
        int64_t m = loom_tensor_numel(ta);
        float *va = malloc(m * 4), *vb = malloc(m * 4);
        if (loom_plan_read(a.plan, ta, va, m * 4) || loom_plan_read(b.plan, tb, vb, m * 4)) { free(va); free(vb); continue; }
        int64_t nd = 0; double maxrel = 0; long maxulp = 0;
        for (int64_t j = 0; j < m; j++) if (memcmp(&va[j], &vb[j], 4)) {
            nd++;
            int32_t ia, ib; memcpy(&ia, &va[j], 4); memcpy(&ib, &vb[j], 4);
            long u = labs((long)ia - (long)ib); if (u > maxulp) maxulp = u;
            double rel = fabs((double)va[j] - vb[j]) / (fabs(va[j]) + 1e-30); if (rel > maxrel) maxrel = rel;
        }
        diff[i] = nd > 0;
        int srcdiff = 0;
        for (int k = 0; k < ta->nsrc; k++) srcdiff |= diff[ta->src[k]->id];
        if (nd && (!srcdiff || getenv("ALL")) && shown < 80) {
            shown++;
            printf("%4d %-22s %-28s n=%-8lld diff=%-8lld maxulp=%-6ld maxrel=%.2e %s\n", i, ta->op >= 0 ? loom_op_name(ta->op) : "leaf", ta->name, (long long)m, (long long)nd, maxulp, maxrel, srcdiff ? "" : "<== ORIGIN");
        }
        free(va); free(vb);
    }
    int total = 0; for (int i = 0; i < n; i++) total += diff[i];
    printf("%d of %d nodes differ\n", total, n);
    return 0;
}
