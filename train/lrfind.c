/* train/lrfind.c — the LR range test on a trainer (see loom/train.h:
 * loom_trainer_lr_find, loom_lr_find) and its CSV / SVG output. */
#include <errno.h>
#include <math.h>

#include "train_impl.h"
#include "loom/plot.h"

void loom_lr_find_result_free(loom_lr_find_result *r) {
    if (!r) return;
    free(r->lr), free(r->loss), free(r->smooth);
    r->lr = r->loss = r->smooth = NULL;
    r->n = 0;
}

/* Steepest descent of the smoothed loss against log(lr): numpy.gradient
 * (central differences inside, one-sided at the ends) over the points kept
 * after skipping skip_start and skip_end, as torch-lr-finder does. */
static int steepest(const loom_lr_find_result *r, int skip_start, int skip_end) {
    int a = skip_start, b = r->n - skip_end; /* [a, b) */
    if (b - a < 3) a = 0, b = r->n;
    if (b - a < 3) return -1;
    int best = -1;
    double gbest = INFINITY;
    for (int i = a; i < b; i++) {
        int lo = i > a ? i - 1 : i, hi = i + 1 < b ? i + 1 : i;
        double dx = log(r->lr[hi]) - log(r->lr[lo]), g = (r->smooth[hi] - r->smooth[lo]) / dx;
        if (g < gbest) gbest = g, best = i;
    }
    return best;
}

static loom_status check_desc(loom_ctx *ctx, const loom_lr_find_desc *desc, loom_lr_find_desc *out) {
    loom_lr_find_desc d = desc ? *desc : (loom_lr_find_desc){0};
    if (d.start_lr == 0) d.start_lr = 1e-7;
    if (d.end_lr == 0) d.end_lr = 10;
    if (d.steps == 0) d.steps = 100;
    if (d.beta == 0) d.beta = 0.98;
    if (d.diverge == 0) d.diverge = 4;
    if (d.skip_start == 0) d.skip_start = 10;
    if (d.skip_end == 0) d.skip_end = 5;
    if (d.skip_start < 0) d.skip_start = 0;
    if (d.skip_end < 0) d.skip_end = 0;
    *out = d;
    if (!(d.start_lr > 0 && d.end_lr > d.start_lr && isfinite(d.end_lr)) || d.steps < 2 || !(d.beta >= 0 && d.beta < 1) ||
        !(d.diverge > 1))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                         "lr-find: need 0 < start_lr %g < end_lr %g, steps %d >= 2, beta %g in [0, 1), diverge %g > 1",
                         d.start_lr, d.end_lr, d.steps, d.beta, d.diverge);
    return LOOM_OK;
}

/* The sweep itself: one batch per point from the trainer's loader, epochs
 * from the trainer's current one; full batches only. */
static loom_status sweep(loom_trainer *t, const loom_lr_find_desc *d, loom_lr_find_result *r) {
    const int batch = t->d.data.batch;
    int64_t epoch = t->epoch;
    loom_status st = LOOM_OK;
    loom_loader_begin(t->loader, epoch, 0, 0);
    double avg = 0, best = INFINITY;
    for (int i = 0; i < d->steps; i++) {
        double lr = d->start_lr * pow(d->end_lr / d->start_lr, (double)i / (double)(d->steps - 1));
        loom_loader_batch lb;
        if ((st = loom_loader_next(t->loader, &lb)) != LOOM_OK) break;
        if (lb.count < batch) { /* a new epoch: batches are always full */
            loom_loader_begin(t->loader, ++epoch, 0, 0);
            if ((st = loom_loader_next(t->loader, &lb)) != LOOM_OK) break;
            if (lb.count < batch) {
                st = loom__err(t->ctx, LOOM_ERR_INVALID_ARG, "lr-find: the data has fewer samples than one batch (%d)", batch);
                break;
            }
        }
        float l;
        float sv[2];
        if ((st = loom__train_batch(t, &lb, lr, sv)) != LOOM_OK) break;
        l = sv[0];
        if (!isfinite(l)) {
            r->diverged = true;
            break;
        }
        avg = d->beta * avg + (1 - d->beta) * (double)l;
        double sm = avg / (1 - pow(d->beta, (double)(i + 1)));
        r->lr[r->n] = lr, r->loss[r->n] = l, r->smooth[r->n] = sm;
        r->n++;
        if (sm < best) best = sm, r->best_index = i;
        if (i > 0 && sm > d->diverge * best) {
            r->diverged = true;
            break;
        }
    }
    return st;
}

loom_status loom_trainer_lr_find(loom_trainer *t, const loom_lr_find_desc *desc, loom_lr_find_result *r) {
    memset(r, 0, sizeof *r);
    r->suggestion_index = -1;
    r->suggestion = NAN;
    r->backend = t->res.backend;
    loom_lr_find_desc d;
    loom_status st = check_desc(t->ctx, desc, &d);
    if (st != LOOM_OK) return st;
    loom_plan *plan = t->tr.plan;
    r->lr = malloc((size_t)d.steps * sizeof *r->lr);
    r->loss = malloc((size_t)d.steps * sizeof *r->loss);
    r->smooth = malloc((size_t)d.steps * sizeof *r->smooth);
    loom__snapshot snap = {0};
    if (!r->lr || !r->loss || !r->smooth) {
        st = loom__err(t->ctx, LOOM_ERR_OOM, "lr-find: out of memory");
        goto done;
    }
    /* everything the sweep changes, to put back bitwise */
    if ((st = loom__snapshot_take(&snap, plan, t->tr.g, false)) != LOOM_OK) goto done;
    uint64_t plan_step = loom_plan_step(plan);
    int64_t osteps = loom_optimizer_steps(t->opt), omicro = loom_optimizer_micro_steps(t->opt);
    st = sweep(t, &d, r);
    /* put everything back, even after a failure; the next step repositions the loader */
    loom_status st2 = loom__snapshot_restore(&snap, plan);
    if (st == LOOM_OK) st = st2;
    loom_plan_set_step(plan, plan_step);
    loom_optimizer_set_counters(t->opt, osteps, omicro);
    t->reposition = true;
    if (st != LOOM_OK) goto done;
    r->suggestion_index = steepest(r, d.skip_start, d.skip_end);
    if (r->suggestion_index >= 0) r->suggestion = r->lr[r->suggestion_index];
done:
    loom__snapshot_free(&snap);
    if (st != LOOM_OK) loom_lr_find_result_free(r);
    return st;
}

/* ---- the LR range test for a training description ---- */
loom_status loom_lr_find(loom_ctx *ctx, const loom_trainer_desc *desc, const loom_lr_find_desc *fd, loom_lr_find_result *r) {
    memset(r, 0, sizeof *r);
    r->suggestion_index = -1;
    r->suggestion = NAN;
    /* the model, data, optimizer and backend of the desc; nothing evaluated, logged or saved */
    loom_trainer_desc d = *desc;
    d.data.test = d.data.val = NULL;
    d.data.val_split = 0;
    d.data.train_source = NULL, d.data.train_steps = NULL, d.data.train_nsteps = 0;
    d.optim.plateau = NULL;
    d.run.save_path = d.run.resume_path = NULL;
    d.run.early_stop = 0, d.run.max_steps = 0, d.run.profile = false;
    d.transfer.frozen_16bit = false;
    d.log = (loom_train_log){0};
    loom_trainer *t;
    loom_status st = loom_trainer_create(ctx, &d, &t);
    if (st != LOOM_OK) return st;
    st = loom_trainer_lr_find(t, fd, r);
    loom_trainer_destroy(t);
    return st;
}

loom_status loom_lr_find_write_csv(loom_ctx *ctx, const loom_lr_find_result *r, const char *path) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return loom__err(ctx, LOOM_ERR_OOM, "lr-find: out of memory for '%s'", path);
    fprintf(f, "step,lr,loss,smoothed_loss,suggested\n");
    for (int i = 0; i < r->n; i++)
        fprintf(f, "%d,%.9g,%.9g,%.9g,%d\n", i, r->lr[i], r->loss[i], r->smooth[i], i == r->suggestion_index);
    return loom__write_whole(ctx, path, f, &buf, &len); /* whole, through core/outfile */
}

loom_status loom_lr_find_write_svg(loom_ctx *ctx, const loom_lr_find_result *r, const char *path) {
    char mark[64];
    snprintf(mark, sizeof mark, "suggested lr %.3g", r->suggestion);
    loom_plot_series s[2] = {{"loss", r->lr, r->loss, r->n, "#1f77b4", true},
                             {"smoothed loss", r->lr, r->smooth, r->n, "#1f77b4", false}};
    loom_plot_panel p = {"LR range test", "learning rate", "loss", true, r->suggestion, mark, s, 2};
    return loom_plot_svg(ctx, path, &p, 1);
}
