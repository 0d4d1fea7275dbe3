/* train/train.c — the trainer's run (loom_trainer_step, _epoch_end,
 * _finish; see loom/train.h), evaluation, the early-stopping rule, the
 * backend choice and loom_train, the loop over a trainer. */
#include <math.h>

#include "train_impl.h"

/* ---- early stopping ---- */
void loom_early_stop_init(loom_early_stop *es, int patience, double min_delta, bool maximize) {
    memset(es, 0, sizeof *es);
    es->patience = patience < 1 ? 1 : patience;
    es->min_delta = min_delta > 0 ? min_delta : 0;
    es->maximize = maximize;
    es->best = NAN;
}

bool loom_early_stop_update(loom_early_stop *es, double v) {
    es->seen++;
    bool better = isfinite(v) && (isnan(es->best) || (es->maximize ? v - es->min_delta > es->best
                                                                    : v + es->min_delta < es->best));
    if (better) {
        es->best = v;
        es->best_epoch = es->seen;
        es->bad = 0;
    } else if (++es->bad >= es->patience) {
        es->stop = true;
    }
    return better;
}

const char *loom_pick_backend(loom_ctx *ctx, const char **why) {
    static const char *const order[] = {"cuda", "vulkan", "opencl"};
    for (int i = 0; i < 3; i++) {
        if (loom_backend_is_gpu(ctx, order[i])) {
            if (why) *why = "the first backend with a real GPU device (order: cuda, vulkan, opencl, cpu)";
            return order[i];
        }
    }
    if (why) *why = "no GPU device is available through the backends built here (CPU devices behind GPU APIs are not picked)";
    return "cpu";
}

/* The number of correct argmax predictions among the first n rows: the
 * host's count, for a training batch shorter than the graph's (the device's
 * correct_count node counts every row of the batch). */
static int64_t count_correct(const float *logits, const int32_t *y, int n, int classes) {
    int64_t correct = 0;
    for (int i = 0; i < n; i++) {
        const float *r = logits + (size_t)i * (size_t)classes;
        int best = 0;
        for (int k = 1; k < classes; k++)
            if (r[k] > r[best]) best = k;
        correct += best == y[i];
    }
    return correct;
}

/* Evaluate on ds: mean loss and accuracy. Batches come from a synchronous
 * loader in the dataset's order; the last partial batch is padded with
 * ignored rows (label -100), which neither the loss nor the count sees. */
static loom_status evaluate(loom_trainer *t, const loom_dataset *ds, double *loss, double *acc) {
    loom__model_graph *m = &t->ev;
    const loom_train_data *dd = &t->d.data;
    loom_source *src = NULL;
    loom_loader *ld = NULL;
    loom_loader_desc lde = {.batch = m->batch, .workers = LOOM_WORKERS_SYNC, .mean = &dd->mean, .std = &dd->std, .nstat = 1};
    loom_status st = loom_source_wrap(t->ctx, ds, &src);
    if (st == LOOM_OK) lde.src = src, st = loom_loader_create(t->ctx, &lde, &ld);
    size_t per = t->per;
    double loss_sum = 0;
    int64_t correct = 0, seen = 0;
    if (st == LOOM_OK) loom_loader_begin(ld, 0, 0, 0);
    while (st == LOOM_OK && (t->d.run.max_eval <= 0 || seen < t->d.run.max_eval)) {
        loom_loader_batch lb;
        if ((st = loom_loader_next(ld, &lb)) != LOOM_OK || lb.count <= 0) break;
        int n = lb.count;
        const float *x = lb.x;
        const int32_t *y = lb.y;
        if (n < m->batch) {
            memcpy(t->xbuf, lb.x, (size_t)n * per * sizeof *t->xbuf);
            memset(t->xbuf + (size_t)n * per, 0, (size_t)(m->batch - n) * per * sizeof *t->xbuf);
            memcpy(t->ybuf, lb.y, (size_t)n * sizeof *t->ybuf);
            for (int i = n; i < m->batch; i++) t->ybuf[i] = -100;
            x = t->xbuf, y = t->ybuf;
        }
        float sv[2]; /* the loss, the correct count (padded rows are ignored: they count for neither) */
        if ((st = loom_plan_write(m->plan, m->x, x, (size_t)m->batch * per * sizeof *x)) != LOOM_OK ||
            (st = loom_plan_write(m->plan, m->y, y, (size_t)m->batch * sizeof *y)) != LOOM_OK ||
            (st = loom_plan_run_read(m->plan, m->stats, sv, sizeof sv)) != LOOM_OK)
            break;
        loss_sum += (double)sv[0] * n;
        correct += (int64_t)sv[1];
        seen += n;
    }
    loom_loader_destroy(ld);
    loom_source_destroy(src);
    *loss = seen ? loss_sum / (double)seen : NAN;
    *acc = seen ? (double)correct / (double)seen : NAN;
    return st;
}

bool loom_trainer_done(const loom_trainer *t) { return t->stopped || t->epoch >= t->d.run.epochs; }

/* The epoch's first step: the loader from its start (or, after an LR range
 * test, from where the epoch was). */
loom_status loom__train_write_x(loom__model_graph *m, const loom_loader_batch *lb, size_t per) {
    if (!m->u8) return loom_plan_write(m->plan, m->x, lb->x, (size_t)m->batch * per * sizeof *lb->x);
    loom_status st = loom_plan_write(m->plan, m->u8, lb->u8, (size_t)loom_tensor_numel(m->u8));
    return st != LOOM_OK ? st : loom_plan_write(m->plan, m->prm, lb->prm, (size_t)loom_tensor_numel(m->prm) * sizeof *lb->prm);
}

static void begin_epoch(loom_trainer *t) {
    if (!t->in_epoch) {
        t->in_epoch = true;
        t->epoch_over = t->reposition = false;
        t->t0 = loom__now_s(), t->loss_sum = 0, t->lr = 0;
        t->correct = 0, t->s = 0;
        loom_loader_begin(t->loader, t->epoch, 0, t->steps);
    } else if (t->reposition) {
        t->reposition = false;
        loom_loader_begin(t->loader, t->epoch, t->s, t->steps - t->s);
    }
}

loom_status loom_trainer_step(loom_trainer *t, loom_step_result *out) {
    loom_step_result r = {0};
    if (out) *out = r;
    if (loom_trainer_done(t))
        return loom__err(t->ctx, LOOM_ERR_STATE, "train: step after the last epoch (%d of %d run)", t->epoch,
                         t->d.run.epochs);
    if (t->epoch_over)
        return loom__err(t->ctx, LOOM_ERR_STATE, "train: epoch %d is over: call loom_trainer_epoch_end first", t->epoch + 1);
    begin_epoch(t);
    const int batch = t->d.data.batch, classes = t->md.num_classes;
    r.epoch = t->epoch + 1, r.epochs = t->d.run.epochs, r.steps = t->steps;
    loom_loader_batch lb = {0};
    loom_status st = t->s < t->steps ? loom_loader_next(t->loader, &lb) : LOOM_OK;
    if (st != LOOM_OK) return st;
    if (lb.count <= 0) { /* no batch left */
        t->epoch_over = true;
        r.step = t->s, r.epoch_done = true;
        if (out) *out = r;
        return LOOM_OK;
    }
    int n = lb.count;
    float sv[2]; /* the loss, the correct count */
    double lr = loom_schedule_lr(&t->d.optim.sched, loom_optimizer_steps(t->opt)) * t->plateau_scale;
    t->lr = lr;
    loom_plan *plan = t->tr.plan;
    if ((st = loom__train_batch(t, &lb, lr, sv)) != LOOM_OK) return st;
    float l = sv[0];
    int64_t ok_now = (int64_t)sv[1];
    if (n < batch) { /* a partial batch: count its own rows on the host */
        if ((st = loom_plan_read(plan, t->tr.logits, t->logits, (size_t)batch * (size_t)classes * sizeof *t->logits)) != LOOM_OK)
            return st;
        ok_now = count_correct(t->logits, lb.y, n, classes);
    }
    t->correct += ok_now;
    if (!isfinite(l)) { /* loss scaling skips such a step (the scaler backs off); a run of them is divergence */
        if (t->scaling && ++t->nonfinite_run <= LOOM__MAX_NONFINITE_RUN) return LOOM_OK;
        return loom__err(t->ctx, LOOM_ERR_STATE, "train: the loss became %g at epoch %d step %lld (lr %g): diverged%s",
                         (double)l, t->epoch + 1, (long long)t->s + 1, lr,
                         t->scaling ? " (non-finite in more steps in a row than loss scaling skips)" : "");
    }
    t->nonfinite_run = 0;
    t->loss_sum += l;
    t->s++;
    double el = loom__now_s() - t->t0;
    r.step = t->s, r.global_step = loom_optimizer_micro_steps(t->opt), r.count = n;
    r.loss = l, r.accuracy = (double)ok_now / n, r.mean_loss = t->loss_sum / (double)t->s, r.lr = lr;
    r.elapsed_s = el, r.samples_per_s = (double)t->s * batch / el, r.eta_s = el / (double)t->s * (double)(t->steps - t->s);
    r.epoch_done = t->s >= t->steps;
    t->epoch_over = r.epoch_done;
    for (int i = 0; i < t->nobs && st == LOOM_OK; i++)
        if (t->obs[i].on_step) st = t->obs[i].on_step(t->obs[i].user, &r);
    if (out) *out = r;
    return st;
}

/* The epoch's training statistics, the loader's counters and the loss scale. */
static loom_status epoch_stats(loom_trainer *t, loom_epoch_stats *es) {
    const int batch = t->d.data.batch;
    int64_t s = t->s;
    double el = loom__now_s() - t->t0;
    t->t_all += el;
    t->samples_all += s * batch;
    *es = (loom_epoch_stats){.epoch = t->epoch + 1, .epochs = t->d.run.epochs, .train_loss = s ? t->loss_sum / (double)s : NAN,
                             .test_loss = NAN, .test_acc = NAN, .seconds = el, .samples_per_s = s * batch / el, .lr = t->lr,
                             .val_loss = NAN, .val_acc = NAN,
                             .train_acc = s ? (double)t->correct / (double)(s * batch) : NAN, .loss_scale = NAN};
    loom_loader_stats ls;
    loom_loader_stats_get(t->loader, &ls);
    double busy = ls.wait_s + ls.compute_s;
    es->data_wait_pct = busy > 0 ? 100 * ls.wait_s / busy : 0;
    es->load_ms = ls.batches ? 1e3 * ls.load_s / (double)ls.batches : 0;
    es->compute_ms = ls.batches > 1 ? 1e3 * ls.compute_s / (double)(ls.batches - 1) : 0;
    es->workers = ls.workers;
    if (t->scaling) {
        int64_t skipped;
        loom_status st = loom_loss_scale_read(t->tr.plan, &es->loss_scale, &skipped);
        if (st != LOOM_OK) return st;
        es->skipped_steps = skipped - t->skipped0;
        t->skipped0 = skipped;
    }
    return LOOM_OK;
}

/* The checkpoint after an epoch, with what a resumed run needs. */
static loom_status save_checkpoint(loom_trainer *t, int epoch) {
    char v[5][32];
    snprintf(v[0], 32, "%d", epoch);
    snprintf(v[1], 32, "%llu", (unsigned long long)t->d.run.seed);
    snprintf(v[2], 32, "%llu", (unsigned long long)loom_plan_step(t->tr.plan));
    snprintf(v[3], 32, "%lld", (long long)loom_optimizer_steps(t->opt));
    snprintf(v[4], 32, "%lld", (long long)loom_optimizer_micro_steps(t->opt));
    const char *meta[] = {"loom.epoch", v[0], "loom.seed", v[1], "loom.plan_step", v[2], "loom.opt_steps", v[3],
                          "loom.opt_micro", v[4], "loom.model", t->md.arch, NULL};
    return loom_checkpoint_save(t->tr.plan, t->d.run.save_path, meta);
}

loom_status loom_trainer_epoch_end(loom_trainer *t, loom_epoch_stats *out) {
    if (!t->in_epoch || !t->epoch_over)
        return loom__err(t->ctx, LOOM_ERR_STATE, "train: epoch %d has batches left: step until epoch_done first", t->epoch + 1);
    const loom_trainer_desc *d = &t->d;
    const loom_dataset *val = d->data.val, *test = d->data.test;
    loom_train_result *res = &t->res;
    loom_epoch_stats es;
    loom_status st = epoch_stats(t, &es);
    t->in_epoch = t->epoch_over = false;
    if (st == LOOM_OK) st = loom__check_diverged(t); /* before evaluation and the checkpoint */
    if (st != LOOM_OK) return st;
    int e = t->epoch;
    if (val && (st = evaluate(t, val, &es.val_loss, &es.val_acc)) != LOOM_OK) return st;
    bool eval_now = test && ((e + 1) % d->run.eval_every == 0 || e + 1 == d->run.epochs);
    if (eval_now && (st = evaluate(t, test, &es.test_loss, &es.test_acc)) != LOOM_OK) return st;
    res->epochs_run = e + 1;
    res->train_loss = es.train_loss;
    if (eval_now) res->test_loss = es.test_loss, res->test_acc = es.test_acc;
    if (val) res->val_loss = es.val_loss, res->val_acc = es.val_acc;
    loom_plateau *pl = d->optim.plateau;
    if (pl && (val || eval_now)) {
        loom_plateau_step(pl, val ? es.val_loss : es.test_loss);
        t->plateau_scale = pl->base_lr > 0 ? pl->lr / pl->base_lr : 1.0;
    }
    if (d->run.early_stop > 0) {
        es.best = loom_early_stop_update(&t->stopper, d->run.monitor == LOOM_MONITOR_VAL_ACC ? es.val_acc : es.val_loss);
        res->best_epoch = t->start_epoch + t->stopper.best_epoch;
        if (es.best && !d->run.keep_last && (st = loom__snapshot_take(&t->best, t->tr.plan, t->tr.g, true)) != LOOM_OK)
            return st;
    }
    if (d->run.save_path && (st = save_checkpoint(t, e + 1)) != LOOM_OK) return st;
    t->epoch = e + 1;
    if (t->stopper.stop && e + 1 < d->run.epochs) {
        res->stopped_early = true;
        t->stopped = true;
    }
    es.global_step = loom_optimizer_micro_steps(t->opt);
    es.last = loom_trainer_done(t);
    for (int i = 0; i < t->nobs && st == LOOM_OK; i++)
        if (t->obs[i].on_epoch) st = t->obs[i].on_epoch(t->obs[i].user, &es);
    if (out) *out = es;
    return st;
}

loom_status loom_trainer_finish(loom_trainer *t, loom_train_result *out) {
    const loom_trainer_desc *d = &t->d;
    loom_train_result *res = &t->res;
    loom_status st = LOOM_OK;
    /* early stopping: back to the best epoch's weights, measured again */
    if (d->run.early_stop > 0 && !d->run.keep_last && t->best.n && res->best_epoch != res->epochs_run) {
        if ((st = loom__snapshot_restore(&t->best, t->tr.plan)) != LOOM_OK ||
            (st = evaluate(t, d->data.val, &res->val_loss, &res->val_acc)) != LOOM_OK ||
            (d->data.test && (st = evaluate(t, d->data.test, &res->test_loss, &res->test_acc)) != LOOM_OK))
            return st;
        res->restored_best = true;
    }
    res->seconds = t->t_all;
    res->samples_per_s = t->t_all > 0 ? (double)t->samples_all / t->t_all : 0;
    res->steps = loom_optimizer_steps(t->opt);
    if (d->run.profile) res->n_profile = loom_plan_profile(t->tr.plan, res->profile, 16);
    for (int i = 0; i < t->nobs && st == LOOM_OK; i++)
        if (t->obs[i].on_finish) st = t->obs[i].on_finish(t->obs[i].user, res);
    if (out) *out = *res;
    return st;
}

loom_status loom_train(loom_ctx *ctx, const loom_trainer_desc *desc, loom_train_result *res) {
    memset(res, 0, sizeof *res);
    loom_trainer *t;
    loom_status st = loom_trainer_create(ctx, desc, &t);
    if (st != LOOM_OK) return st;
    while (st == LOOM_OK && !loom_trainer_done(t)) {
        loom_step_result r = {0};
        while ((st = loom_trainer_step(t, &r)) == LOOM_OK && !r.epoch_done) {
        }
        if (st == LOOM_OK) st = loom_trainer_epoch_end(t, NULL);
    }
    if (st == LOOM_OK) st = loom_trainer_finish(t, res);
    else *res = t->res;
    loom_trainer_destroy(t);
    return st;
}
