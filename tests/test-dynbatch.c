/* tests/test-dynbatch.c — dynamic batching for gpt (train/text_dyn.c): over
 * a token file whose samples have mixed lengths (cut at an end-of-document
 * token), every bucket's planned memory stays within 10% of the budget's
 * (the full-length micro-batch's), while an unsplit batch of the same token
 * budget plans more; and a batch split into micro-batches accumulates the
 * gradient of the unsplit batch (within 1e-6 relative, per parameter). Bad
 * budgets are errors naming the value. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../train/text_dyn.h"
#include "impl.h"
#include "testutil.h"

enum { T = 32, EOD = 10, NTOK = 64 * T + 1 };

static size_t peak(loom_plan *p, const loom_plan_memory *owner) {
    loom_plan_memory m;
    loom_plan_memory_stats(p, &m);
    return m.arena_bytes + m.io_bytes + owner->param_bytes + owner->state_bytes;
}

/* Token file: windows whose first eod lies at a seeded position (or none). */
static void write_file(const char *path) {
    uint16_t t[NTOK];
    uint64_t s = 12345;
    for (int i = 0; i < NTOK; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        t[i] = (uint16_t)(11 + (s >> 33) % 245);
    }
    for (int w = 0; w < (NTOK - 1) / T; w++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int cut = (int)((s >> 33) % (T + 4)); /* >= T: the window has no eod */
        if (cut < T) t[w * T + cut] = EOD;
    }
    FILE *f = fopen(path, "wb");
    if (f) fwrite(t, sizeof t[0], NTOK, f), fclose(f);
}

/* The unsplit batch's gradient vs the accumulators / K, per parameter. */
static void check_grads(loom_ctx *ctx, loom_backend *be, loom__dyn *dy, const loom_model_desc *md,
                        const loom_source *src, const int64_t *idx, int64_t count, const int64_t *sizes) {
    int b = loom__dyn_bucket(dy, sizes[idx[0]]);
    int64_t L = dy->bounds[b];
    double loss;
    int micro;
    CHECK_OK(ctx, loom__dyn_step(dy, src, idx, count, sizes, 0.1, false, &loss, &micro));
    CHECK(micro >= 2, "the batch of %lld samples of length %lld is split (%d micro-batches)", (long long)count,
          (long long)L, micro);
    loom_graph *g;
    CHECK_OK(ctx, loom_graph_create(ctx, &(loom_graph_desc){.seed = 1}, &g));
    loom_tensor *x = loom_input(g, "x", LOOM_I32, 2, (int64_t[]){count, L});
    loom_tensor *y = loom_input(g, "y", LOOM_I32, 1, (int64_t[]){count * L}), *logits = NULL;
    CHECK_OK(ctx, loom_model_build(g, md, x, true, &logits));
    loom_tensor *l = loom_cross_entropy(g, logits, y, 0, -100);
    loom_keep(l);
    CHECK_OK(ctx, loom_backward(g, l));
    for (int i = 0; i < g->n; i++)
        if (g->nodes[i]->leaf == LOOM__PARAM && g->nodes[i]->grad) loom_keep(g->nodes[i]->grad);
    loom_plan *p = NULL;
    CHECK_OK(ctx, loom_plan_compile(g, be, &(loom_plan_desc){.share = loom__dyn_plan(dy)}, &p));
    int32_t *xb = calloc((size_t)(count * L), 4), *yb = calloc((size_t)(count * L), 4), rec[2 * T], lab;
    for (int64_t k = 0; k < count; k++) {
        src->get(src, ctx, idx[k], rec, &lab);
        for (int64_t t = 0; t < L; t++) {
            xb[k * L + t] = t < sizes[idx[k]] ? rec[t] : 0;
            yb[k * L + t] = t < sizes[idx[k]] ? rec[T + t] : -100;
        }
    }
    CHECK_OK(ctx, loom_plan_write(p, x, xb, (size_t)(count * L) * 4));
    CHECK_OK(ctx, loom_plan_write(p, y, yb, (size_t)(count * L) * 4));
    CHECK_OK(ctx, loom_plan_run(p));
    float lref;
    CHECK_OK(ctx, loom_plan_read(p, l, &lref, sizeof lref));
    CHECK(fabs(loss - lref) <= 1e-5 * fabs(lref), "batch loss %.8g, unsplit %.8g", loss, (double)lref);
    loom_graph *og = dy->gr[dy->nb - 1].g;
    int checked = 0;
    double worst = 0;
    for (int i = 0; i < g->n; i++) {
        loom_tensor *pt = g->nodes[i];
        if (pt->leaf != LOOM__PARAM || !pt->grad) continue;
        char name[80];
        snprintf(name, sizeof name, "%s.grad_accum", pt->name);
        loom_tensor *acc = NULL;
        for (int j = 0; j < og->n && !acc; j++)
            if (!strcmp(og->nodes[j]->name, name)) acc = og->nodes[j];
        CHECK(acc != NULL, "accumulator %s", name);
        if (!acc) continue;
        int64_t n = loom_tensor_numel(pt);
        float *a = malloc((size_t)n * 4), *r = malloc((size_t)n * 4);
        CHECK_OK(ctx, loom_plan_read(loom__dyn_plan(dy), acc, a, (size_t)n * 4));
        CHECK_OK(ctx, loom_plan_read(p, pt->grad, r, (size_t)n * 4));
        double d2 = 0, r2 = 0;
        for (int64_t k = 0; k < n; k++) {
            double d = (double)a[k] / dy->K - (double)r[k];
            d2 += d * d, r2 += (double)r[k] * r[k];
        }
        double rel = r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
        if (rel > worst) worst = rel;
        CHECK(rel <= 1e-6, "%s: accumulated gradient off by %.3g relative", pt->name, rel);
        checked++;
        free(a), free(r);
    }
    printf("gradients: %d parameters, %d micro-batches of length %lld, worst relative difference %.3g\n", checked,
           micro, (long long)L, worst);
    CHECK(checked > 10, "parameters checked: %d", checked);
    free(xb), free(yb);
    loom_plan_destroy(p);
    loom_graph_destroy(g);
}

int main(void) {
    loom_ctx *ctx;
    loom_backend *be;
    if (!tu_cpu_open(2, &ctx, &be)) return 1;
    char dir[256], path[300];
    if (!tu_tmpdir("dynbatch", dir, sizeof dir)) return 1;
    snprintf(path, sizeof path, "%s/t.bin", dir);
    write_file(path);
    loom_source *src = NULL;
    CHECK_OK(ctx, loom_source_open_tokens(ctx, path, &(loom_tokens_desc){.seq_len = T, .vocab_size = 256}, &src));
    loom_model_desc md = {.arch = "gpt", .layers = 2, .heads = 2, .embd = 32, .seq_len = T, .dropout = -1};
    loom_optimizer_desc od = {.kind = LOOM_OPT_ADAMW};
    loom_text_dyn_desc dd = {.token_budget = 8 * T, .micro_tokens = 2 * T, .has_eod = true, .eod = EOD};
    loom__dyn *dy = NULL;
    CHECK_OK(ctx, loom__dyn_create(ctx, be, &md, &od, 1, 0, &dd, &dy));
    if (!dy || !src) return tu_summary();
    int64_t *sizes = malloc((size_t)src->n * sizeof *sizes);
    CHECK_OK(ctx, loom__dyn_sizes(dy, src, sizes));
    int used[LOOM__DYN_BUCKETS] = {0}, nused = 0;
    for (int64_t i = 0; i < src->n; i++) nused += !used[loom__dyn_bucket(dy, sizes[i])]++;
    CHECK(nused >= 3, "samples of mixed lengths: %d buckets used", nused);

    /* planned memory: every bucket within 10% of the full-length one's */
    loom_plan_memory owner;
    loom_plan_memory_stats(loom__dyn_plan(dy), &owner);
    size_t ref = peak(loom__dyn_plan(dy), &owner);
    for (int b = 0; b < dy->nb; b++) {
        size_t pb = peak(dy->gr[b].plan, &owner);
        printf("bucket %d: %lld x %lld tokens, planned %zu bytes (budget's %zu)\n", b, (long long)dy->gr[b].rows,
               (long long)dy->gr[b].len, pb, ref);
        CHECK(pb <= ref + ref / 10, "bucket of length %lld plans %zu bytes, over 1.1 x %zu", (long long)dy->gr[b].len,
              pb, ref);
    }
    /* the unsplit batch of the same budget plans more: the split matters */
    loom_graph *ug;
    CHECK_OK(ctx, loom_graph_create(ctx, &(loom_graph_desc){.seed = 1}, &ug));
    loom_tensor *ux = loom_input(ug, "x", LOOM_I32, 2, (int64_t[]){dd.token_budget / T, T}), *ul = NULL;
    loom_tensor *uy = loom_input(ug, "y", LOOM_I32, 1, (int64_t[]){dd.token_budget});
    CHECK_OK(ctx, loom_model_build(ug, &md, ux, true, &ul));
    loom_tensor *uloss = loom_cross_entropy(ug, ul, uy, 0, -100);
    loom_keep(uloss);
    CHECK_OK(ctx, loom_backward(ug, uloss));
    for (int i = 0; i < ug->n; i++)
        if (ug->nodes[i]->leaf == LOOM__PARAM && ug->nodes[i]->grad) loom_keep(ug->nodes[i]->grad);
    loom_plan *up = NULL;
    CHECK_OK(ctx, loom_plan_compile(ug, be, &(loom_plan_desc){.share = loom__dyn_plan(dy)}, &up));
    size_t unsplit = up ? peak(up, &owner) : 0;
    printf("unsplit batch of %lld tokens: planned %zu bytes\n", (long long)dd.token_budget, unsplit);
    CHECK(unsplit > ref + ref / 10, "the unsplit batch plans %zu bytes, the budget's %zu", unsplit, ref);
    loom_plan_destroy(up);
    loom_graph_destroy(ug);

    /* gradients: a split batch of the shortest and of the longest bucket */
    loom_batches bt = {0};
    CHECK_OK(ctx, loom__dyn_batches(dy, sizes, src->n, 7, 0, &bt));
    bool done_short = false, done_long = false;
    for (int64_t j = 0; j < bt.count; j++) {
        const int64_t *ix = bt.idx + bt.offsets[j];
        int64_t cnt = bt.offsets[j + 1] - bt.offsets[j];
        int b = loom__dyn_bucket(dy, sizes[ix[0]]);
        bool lng = b == dy->nb - 1;
        if (cnt <= dy->gr[b].rows || (lng ? done_long : done_short)) continue;
        check_grads(ctx, be, dy, &md, src, ix, cnt, sizes);
        if (lng) done_long = true;
        else done_short = true;
        /* the next check starts from clear accumulators: apply, lr 0 */
        double l;
        int mi;
        CHECK_OK(ctx, loom__dyn_step(dy, src, ix, 1, sizes, 0.0, true, &l, &mi));
    }
    CHECK(done_short && done_long, "split batches found: short %d, long %d", done_short, done_long);
    /* a step that applies moves the weights and counts one optimizer step */
    int64_t before = dy->steps;
    double l;
    int mi;
    CHECK_OK(ctx, loom__dyn_step(dy, src, bt.idx, bt.offsets[1], sizes, 1e-3, true, &l, &mi));
    CHECK(dy->steps == before + 1 && isfinite(l), "steps %lld -> %lld, loss %g", (long long)before,
          (long long)dy->steps, l);
    loom_batches_free(&bt);
    loom__dyn_destroy(dy);

    /* bad budgets */
    loom_text_dyn_desc bad[] = {{.token_budget = T - 1}, {.token_budget = 4 * T, .micro_tokens = T - 1},
                                {.token_budget = 4 * T, .micro_tokens = 8 * T},
                                {.token_budget = 4 * T, .has_eod = true, .eod = 256}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        loom__dyn *d2 = NULL;
        loom_status st = loom__dyn_create(ctx, be, &md, &od, 1, 0, &bad[i], &d2);
        CHECK(st == LOOM_ERR_INVALID_ARG && !d2 && strstr(loom_last_error(ctx), "dynamic batching"),
              "bad desc %zu: %s", i, loom_last_error(ctx));
    }
    loom_model_desc tr = md;
    tr.arch = "transformer";
    loom__dyn *d3 = NULL;
    CHECK(loom__dyn_create(ctx, be, &tr, &od, 1, 0, &dd, &d3) == LOOM_ERR_INVALID_ARG, "transformer refused");
    free(sizes);
    loom_source_destroy(src);
    tu_rm_rf(dir);
    tu_cpu_close(ctx, be);
    return tu_summary();
}
