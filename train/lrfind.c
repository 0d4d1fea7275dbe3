/* train/lrfind.c — the LR range test (see loom/train.h: loom_lr_find_plan)
 * and its CSV / SVG output. */
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

loom_status loom_lr_find_plan(loom_plan *plan, loom_optimizer *opt, loom_tensor *x, loom_tensor *y, loom_tensor *loss,
                              loom_batch_iter *it, const loom_lr_find_desc *desc, loom_lr_find_result *r) {
    loom_graph *g = x->g;
    loom_ctx *ctx = g->ctx;
    memset(r, 0, sizeof *r);
    r->suggestion_index = -1;
    r->suggestion = NAN;
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
    if (!(d.start_lr > 0 && d.end_lr > d.start_lr && isfinite(d.end_lr)) || d.steps < 2 || !(d.beta >= 0 && d.beta < 1) ||
        !(d.diverge > 1))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                         "lr-find: need 0 < start_lr %g < end_lr %g, steps %d >= 2, beta %g in [0, 1), diverge %g > 1",
                         d.start_lr, d.end_lr, d.steps, d.beta, d.diverge);
    int64_t batch = loom_tensor_dim(x, 0);
    size_t per = (size_t)(loom_tensor_numel(x) / batch);
    float *xb = malloc((size_t)batch * per * sizeof *xb);
    int32_t *yb = malloc((size_t)batch * sizeof *yb);
    r->lr = malloc((size_t)d.steps * sizeof *r->lr);
    r->loss = malloc((size_t)d.steps * sizeof *r->loss);
    r->smooth = malloc((size_t)d.steps * sizeof *r->smooth);
    loom__snapshot snap = {0};
    loom_status st = LOOM_OK;
    if (!xb || !yb || !r->lr || !r->loss || !r->smooth) {
        st = loom__err(ctx, LOOM_ERR_OOM, "lr-find: out of memory");
        goto done;
    }
    /* everything the sweep changes, to put back bitwise */
    if ((st = loom__snapshot_take(&snap, plan, g, false)) != LOOM_OK) goto done;
    uint64_t plan_step = loom_plan_step(plan);
    int64_t osteps = loom_optimizer_steps(opt), omicro = loom_optimizer_micro_steps(opt);
    int64_t epoch = 0, pos = loom_batch_iter_pos(it);

    double avg = 0, best = INFINITY;
    for (int i = 0; i < d.steps; i++) {
        double lr = d.start_lr * pow(d.end_lr / d.start_lr, (double)i / (double)(d.steps - 1));
        int n = loom_batch_iter_next(it, xb, yb);
        if (n < batch) { /* a new epoch: batches are always full */
            loom_batch_iter_begin(it, ++epoch);
            n = loom_batch_iter_next(it, xb, yb);
            if (n < batch) {
                st = loom__err(ctx, LOOM_ERR_INVALID_ARG, "lr-find: the data has fewer samples than one batch (%lld)",
                               (long long)batch);
                break;
            }
        }
        float l;
        if ((st = loom_plan_write(plan, x, xb, (size_t)batch * per * sizeof *xb)) != LOOM_OK ||
            (st = loom_plan_write(plan, y, yb, (size_t)batch * sizeof *yb)) != LOOM_OK ||
            (st = loom_optimizer_begin_step(opt, plan, lr)) != LOOM_OK || (st = loom_plan_run(plan)) != LOOM_OK ||
            (st = loom_plan_read(plan, loss, &l, sizeof l)) != LOOM_OK)
            break;
        if (!isfinite(l)) {
            r->diverged = true;
            break;
        }
        avg = d.beta * avg + (1 - d.beta) * (double)l;
        double sm = avg / (1 - pow(d.beta, (double)(i + 1)));
        r->lr[r->n] = lr, r->loss[r->n] = l, r->smooth[r->n] = sm;
        r->n++;
        if (sm < best) best = sm, r->best_index = i;
        if (i > 0 && sm > d.diverge * best) {
            r->diverged = true;
            break;
        }
    }
    /* put everything back, even after a failure */
    loom_status st2 = loom__snapshot_restore(&snap, plan);
    if (st == LOOM_OK) st = st2;
    loom_plan_set_step(plan, plan_step);
    loom_optimizer_set_counters(opt, osteps, omicro);
    loom_batch_iter_begin(it, 0);
    loom_batch_iter_seek(it, pos);
    if (st != LOOM_OK) goto done;
    r->suggestion_index = steepest(r, d.skip_start, d.skip_end);
    if (r->suggestion_index >= 0) r->suggestion = r->lr[r->suggestion_index];
done:
    loom__snapshot_free(&snap);
    free(xb), free(yb);
    if (st != LOOM_OK) loom_lr_find_result_free(r);
    return st;
}

loom_status loom_lr_find_write_csv(loom_ctx *ctx, const loom_lr_find_result *r, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return loom__err(ctx, LOOM_ERR_IO, "lr-find: cannot write '%s': %s", path, strerror(errno));
    fprintf(f, "step,lr,loss,smoothed_loss,suggested\n");
    for (int i = 0; i < r->n; i++)
        fprintf(f, "%d,%.9g,%.9g,%.9g,%d\n", i, r->lr[i], r->loss[i], r->smooth[i], i == r->suggestion_index);
    bool bad = ferror(f);
    if (fclose(f) != 0 || bad) return loom__err(ctx, LOOM_ERR_IO, "lr-find: writing '%s' failed: %s", path, strerror(errno));
    return LOOM_OK;
}

loom_status loom_lr_find_write_svg(loom_ctx *ctx, const loom_lr_find_result *r, const char *path) {
    char mark[64];
    snprintf(mark, sizeof mark, "suggested lr %.3g", r->suggestion);
    loom_plot_series s[2] = {{"loss", r->lr, r->loss, r->n, "#1f77b4", true},
                             {"smoothed loss", r->lr, r->smooth, r->n, "#1f77b4", false}};
    loom_plot_panel p = {"LR range test", "learning rate", "loss", true, r->suggestion, mark, s, 2};
    return loom_plot_svg(ctx, path, &p, 1);
}
