/* tests/test-trainkit.c — the training tools of loom/train.h on a small
 * synthetic problem (no dataset needed, a few seconds): the early-stopping
 * rule on scripted metric sequences, early stopping end to end (the best
 * epoch's weights are restored: re-measured validation loss equal bitwise to
 * that epoch's), the validation split, the LR range test (suggestion where
 * the loss falls, CSV and well-formed SVG written, every parameter and state
 * bitwise unchanged afterwards) and the SVG plot writer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/plot.h"
#include "loom/train.h"
#include "testutil.h"

/* 4 classes of 1x8x8 images: class k lights quadrant k, plus noise. */
static void make_data(loom_dataset *ds, int64_t n, uint32_t seed) {
    ds->n = n, ds->c = 1, ds->h = 8, ds->w = 8, ds->num_classes = 4;
    ds->pixels = malloc((size_t)n * 64);
    ds->labels = malloc((size_t)n * sizeof *ds->labels);
    uint32_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        int k = (int)(s >> 30);
        ds->labels[i] = k;
        for (int p = 0; p < 64; p++) {
            s = s * 1664525u + 1013904223u;
            int r = p / 8, c = p % 8, q = (r >= 4) * 2 + (c >= 4);
            int v = (int)(s >> 25) + (q == k ? 110 : 20);
            ds->pixels[i * 64 + p] = (uint8_t)(v > 255 ? 255 : v);
        }
    }
}

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    *n = 0;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len + 1);
    if (b && fread(b, 1, (size_t)len, f) == (size_t)len) *n = (size_t)len, b[len] = 0;
    fclose(f);
    return b;
}

/* ---- the early-stopping rule ---- */
static void scripted(void) {
    loom_early_stop es;
    /* loss: improves at 1, 2, 4; 5 and 6 are not better than 0.5 - 0.01 */
    const double loss[] = {1.0, 0.8, 0.85, 0.5, 0.495, 0.6, 0.7, 0.1};
    loom_early_stop_init(&es, 3, 0.01, false);
    int stop_at = 0;
    for (int i = 0; i < 8 && !es.stop; i++) {
        bool best = loom_early_stop_update(&es, loss[i]);
        CHECK(best == (i == 0 || i == 1 || i == 3), "loss step %d: best %d", i + 1, best);
        if (es.stop) stop_at = i + 1;
    }
    CHECK(stop_at == 7 && es.best_epoch == 4 && es.best == 0.5, "stops at 7 (got %d), best epoch 4 (%d) value 0.5 (%g)",
          stop_at, es.best_epoch, es.best);
    /* accuracy (maximize), patience 1; NaN never improves */
    const double acc[] = {NAN, 0.5, 0.6, 0.6};
    loom_early_stop_init(&es, 1, 0, true);
    bool b[4];
    for (int i = 0; i < 4; i++) b[i] = loom_early_stop_update(&es, acc[i]);
    CHECK(!b[0] && b[1] && b[2] && !b[3] && es.stop && es.best_epoch == 3, "acc: %d %d %d %d stop %d best epoch %d", b[0],
          b[1], b[2], b[3], es.stop, es.best_epoch);
    /* patience 2: one bad epoch is not enough */
    loom_early_stop_init(&es, 2, 0, false);
    loom_early_stop_update(&es, 1), loom_early_stop_update(&es, 2);
    CHECK(!es.stop, "patience 2 after 1 bad epoch: no stop");
    loom_early_stop_update(&es, 0.9), loom_early_stop_update(&es, 0.95), loom_early_stop_update(&es, 0.9);
    CHECK(es.stop && es.best_epoch == 3, "patience 2: stop after 2 bad epochs (stop %d, best %d)", es.stop, es.best_epoch);
}

typedef struct epochs_seen {
    int n;
    double val_loss[16];
    bool best[16];
} epochs_seen;

static loom_status on_epoch(void *user, const loom_epoch_stats *s) {
    epochs_seen *e = user;
    if (e->n < 16) e->val_loss[e->n] = s->val_loss, e->best[e->n] = s->best;
    e->n++;
    return LOOM_OK;
}

static void early_stop_e2e(loom_ctx *ctx, const loom_dataset *data) {
    /* min_delta 10: only epoch 1 counts as an improvement, so patience 2
     * stops after epoch 3 and restores epoch 1's weights */
    epochs_seen seen = {0};
    loom_train_observer obs = {.user = &seen, .on_epoch = on_epoch};
    loom_trainer_desc d = {.data = {.train = data, .batch = 32, .val_split = 0.25, .mean = 0.3f, .std = 0.3f},
                           .model.net.arch = "mlp", .optim = {.opt = {.momentum = 0.9}, .sched = {.lr = 0.05}},
                           .run = {.backend = "cpu", .epochs = 6, .seed = 5, .early_stop = 2, .min_delta = 10},
                           .log = {.observers = &obs, .nobservers = 1}};
    loom_train_result r;
    CHECK_OK(ctx, loom_train(ctx, &d, &r));
    printf("early stop: %d epochs run, best %d, val loss per epoch %.4f %.4f %.4f, restored %.4f (val n %lld)\n",
           r.epochs_run, r.best_epoch, seen.val_loss[0], seen.val_loss[1], seen.val_loss[2], r.val_loss,
           (long long)r.val_n);
    CHECK(r.val_n == 128, "val split 0.25 of 512 = 128 (got %lld)", (long long)r.val_n);
    CHECK(r.epochs_run == 3 && r.stopped_early && r.best_epoch == 1 && r.restored_best, "stopped at 3 (%d), early %d, best 1 (%d), restored %d",
          r.epochs_run, r.stopped_early, r.best_epoch, r.restored_best);
    CHECK(seen.n == 3 && seen.best[0] && !seen.best[1] && !seen.best[2], "epoch callbacks: %d, best flags", seen.n);
    CHECK(r.val_loss == seen.val_loss[0], "restored weights give epoch 1's val loss bitwise (%.9g vs %.9g)", r.val_loss,
          seen.val_loss[0]);
    CHECK(seen.val_loss[2] != seen.val_loss[0], "the last epoch's weights differ (%.9g)", seen.val_loss[2]);
    /* keep_last: no restore */
    d.run.keep_last = true;
    seen.n = 0;
    CHECK_OK(ctx, loom_train(ctx, &d, &r));
    CHECK(!r.restored_best && r.val_loss == seen.val_loss[2], "keep_last: last weights kept (%.9g vs %.9g)", r.val_loss,
          seen.val_loss[2]);
    /* reduce-on-plateau driven by the val loss: a threshold no epoch meets,
     * patience 0: the LR halves after every epoch from the second on */
    loom_plateau pl = {.factor = 0.5, .patience = -1, .threshold = 100, .abs_threshold = true};
    loom_plateau_init(&pl, 0.05);
    loom_trainer_desc dp = d;
    dp.run.early_stop = 0, dp.run.epochs = 3, dp.optim.plateau = &pl, dp.log.nobservers = 0;
    dp.optim.opt.weight_decay = 1e-4;
    CHECK_OK(ctx, loom_train(ctx, &dp, &r));
    CHECK(pl.reductions == 2 && pl.lr == 0.0125, "plateau: %d reductions, lr %g (want 2, 0.0125)", pl.reductions, pl.lr);
    CHECK(r.decayed == 3 && r.not_decayed == 3, "weight decay on the 3 mlp weights, not the 3 biases (%d, %d)", r.decayed,
          r.not_decayed);
    dp.optim.opt.decay_all = true, dp.optim.plateau = NULL;
    CHECK_OK(ctx, loom_train(ctx, &dp, &r));
    CHECK(r.decayed == 6 && r.not_decayed == 0, "decay_all: 6 decayed (%d, %d)", r.decayed, r.not_decayed);
    /* errors */
    d.data.val_split = 0;
    CHECK(loom_train(ctx, &d, &r) == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "validation"),
          "early stopping without a validation set: '%s'", loom_last_error(ctx));
    d.data.val_split = 0.999;
    CHECK(loom_train(ctx, &d, &r) == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "split"),
          "split leaving less than a batch: '%s'", loom_last_error(ctx));
}

/* a minimal well-formedness check: tags balance, the document is one <svg> */
static bool svg_ok(const char *s) {
    if (strncmp(s, "<?xml", 5) || !strstr(s, "<svg")) return false;
    char stack[64][16];
    int depth = 0, roots = 0;
    for (const char *p = strchr(s + 1, '<'); p; p = strchr(p + 1, '<')) {
        if (p[1] == '?' || p[1] == '!') continue;
        const char *e = strchr(p, '>');
        if (!e) return false;
        bool close = p[1] == '/', selfclose = e[-1] == '/';
        const char *n = p + 1 + close;
        size_t k = strcspn(n, " />");
        if (k == 0 || k >= 16) return false;
        if (close) {
            if (depth == 0 || strncmp(stack[depth - 1], n, k) || stack[depth - 1][k]) return false;
            depth--;
        } else if (!selfclose) {
            if (depth == 64) return false;
            if (depth == 0) roots++;
            memcpy(stack[depth], n, k), stack[depth][k] = 0;
            depth++;
        }
    }
    return depth == 0 && roots == 1;
}

static void lr_find(loom_ctx *ctx, const loom_dataset *data) {
    /* a trainer stepped a few times with SGD + momentum (so the optimizer state is not zero) */
    loom_trainer_desc td = {.data = {.train = data, .batch = 32, .mean = 0.3f, .std = 0.3f}, .model.net.arch = "mlp",
                            .optim = {.opt = {.momentum = 0.9}, .sched = {.lr = 1e-3}}, .run = {.backend = "cpu", .seed = 7}};
    loom_trainer *t;
    CHECK_OK(ctx, loom_trainer_create(ctx, &td, &t));
    for (int i = 0; i < 3; i++) CHECK_OK(ctx, loom_trainer_step(t, NULL));
    loom_plan *plan = loom_trainer_plan(t);
    loom_optimizer *opt = loom_trainer_optimizer(t);
    CHECK_OK(ctx, loom_checkpoint_save(plan, "lrfind-before.safetensors", NULL));
    int64_t steps0 = loom_optimizer_steps(opt);
    loom_lr_find_result r;
    /* up to lr 100: far enough for this small problem to diverge */
    CHECK_OK(ctx, loom_trainer_lr_find(t, &(loom_lr_find_desc){.steps = 100, .end_lr = 100}, &r));
    CHECK_OK(ctx, loom_checkpoint_save(plan, "lrfind-after.safetensors", NULL));
    size_t na, nb;
    unsigned char *a = slurp("lrfind-before.safetensors", &na), *b = slurp("lrfind-after.safetensors", &nb);
    CHECK(a && b && na > 0 && na == nb && !memcmp(a, b, na),
          "every parameter and state (momentum buffers too) and the plan step are bitwise as before the range test");
    free(a), free(b);
    CHECK(loom_optimizer_steps(opt) == steps0, "optimizer counters restored");
    remove("lrfind-before.safetensors"), remove("lrfind-after.safetensors");
    int si = r.suggestion_index;
    printf("lr-find: %d points (diverged %d), best smoothed loss %.4f at lr %.3g, suggestion %.3g (smoothed %.4f, start %.4f)\n",
           r.n, r.diverged, si >= 0 ? r.smooth[r.best_index] : NAN, r.lr[r.best_index], r.suggestion,
           si >= 0 ? r.smooth[si] : NAN, r.smooth[0]);
    CHECK(r.n > 30 && r.diverged, "the sweep runs until the loss diverges (%d points, diverged %d)", r.n, r.diverged);
    CHECK(si > 0 && si < r.n - 1, "a suggestion (%d)", si);
    if (si > 0 && si < r.n - 1) {
        /* in the falling range: below the starting loss, before the minimum, falling around it */
        CHECK(r.smooth[si] < r.smooth[0] && si <= r.best_index && r.smooth[si + 1] < r.smooth[si - 1],
              "suggestion %.3g lies where the loss falls (%.4f < %.4f, index %d <= best %d)", r.suggestion, r.smooth[si],
              r.smooth[0], si, r.best_index);
    }
    loom_lr_find_result_free(&r);
    loom_trainer_destroy(t);

    /* the whole thing from a training description, with the files */
    loom_trainer_desc d = {.data = {.train = data, .batch = 32, .mean = 0.3f, .std = 0.3f}, .model.net.arch = "mlp",
                           .optim.opt = {.momentum = 0.9}, .run = {.backend = "cpu", .seed = 2}};
    CHECK_OK(ctx, loom_lr_find(ctx, &d, &(loom_lr_find_desc){.steps = 60}, &r));
    CHECK(r.n > 10 && isfinite(r.suggestion), "lr_find from a train desc: %d points, suggestion %g", r.n, r.suggestion);
    CHECK_OK(ctx, loom_lr_find_write_csv(ctx, &r, "lrfind.csv"));
    CHECK_OK(ctx, loom_lr_find_write_svg(ctx, &r, "lrfind.svg"));
    size_t n;
    char *csv = (char *)slurp("lrfind.csv", &n), *svg = (char *)slurp("lrfind.svg", &n);
    CHECK(csv && !strncmp(csv, "step,lr,loss,smoothed_loss,suggested\n", 37), "CSV header");
    int rows = 0;
    for (char *p = csv; p && *p; p++) rows += *p == '\n';
    CHECK(rows == r.n + 1, "CSV rows %d == %d points + header", rows, r.n);
    CHECK(svg && svg_ok(svg) && strstr(svg, "class=\"marker\"") && strstr(svg, "suggested lr"),
          "SVG plot well-formed with the suggestion marked");
    free(csv), free(svg);
    remove("lrfind.csv"), remove("lrfind.svg");
    loom_lr_find_result_free(&r);
    CHECK(loom_lr_find(ctx, &d, &(loom_lr_find_desc){.start_lr = 1, .end_lr = 0.1}, &r) == LOOM_ERR_INVALID_ARG,
          "end_lr below start_lr rejected: '%s'", loom_last_error(ctx));
}

int main(void) {
    loom_ctx *ctx;
    loom_ctx_create(NULL, &ctx);
    loom_dataset data;
    make_data(&data, 512, 1);
    scripted();
    early_stop_e2e(ctx, &data);
    lr_find(ctx, &data);
    loom_dataset_free(&data);
    loom_ctx_destroy(ctx);
    return tu_summary();
}
