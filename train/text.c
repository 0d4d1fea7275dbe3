/* train/text.c — loom_text_train (loom/text.h): a text model trained on a
 * token file, evaluated on another after every epoch, its configuration
 * saved in the checkpoint's metadata. The observers of loom/train.h follow
 * it as they follow a trainer. */
#include <math.h>

#include "loom/text.h"
#include "text_dyn.h"
#include "train_impl.h"

bool loom_text_val_path(const char *train_path, char *buf, size_t n) {
    size_t len = strlen(train_path);
    if (len >= 4 && !strcmp(train_path + len - 4, ".bin")) len -= 4;
    int w = snprintf(buf, n, "%.*s.val.bin", (int)len, train_path);
    return w >= 0 && (size_t)w < n;
}

/* One compiled graph: ids x (batch, T), targets y (batch T, or batch). */
typedef struct text_graph {
    loom_graph *g;
    loom_tensor *x, *y, *logits, *loss;
    loom_plan *plan;
    int batch;
} text_graph;

typedef struct text_run {
    loom_ctx *ctx;
    const loom_trainer_desc *d;
    loom_model_desc md;
    bool lm;                     /* gpt: a target per position */
    int64_t T;
    loom_source *train, *val;
    loom_backend *be;
    text_graph tr, ev;
    loom_optimizer *opt;
    loom_loader *loader;
    int32_t *xbuf, *ybuf;        /* the larger batch */
    float *logits;
    loom_train_observer obs[LOOM__MAX_OBSERVERS];
    int nobs;
    const loom_text_dyn_desc *dyn; /* dynamic batching: NULL = fixed batches */
    loom__dyn *dy;
    int64_t micro;                 /* micro-steps run */
    int64_t *sizes;                /* dynamic batching: every training sample's length */
    loom_batches bt;               /* dynamic batching: this epoch's batches */
} text_run;

/* The plan holding the weights, and the optimizer steps taken. */
static loom_plan *owner(const text_run *r) { return r->dy ? loom__dyn_plan(r->dy) : r->tr.plan; }
static int64_t opt_steps(const text_run *r) { return r->dy ? r->dy->steps : loom_optimizer_steps(r->opt); }

static loom_status build(text_run *r, bool train, int batch, text_graph *m) {
    loom_status st = loom_graph_create(r->ctx, &(loom_graph_desc){.seed = r->d->run.seed}, &m->g);
    if (st != LOOM_OK) return st;
    m->batch = batch;
    m->x = loom_input(m->g, "x", LOOM_I32, 2, (int64_t[]){batch, r->T});
    m->y = loom_input(m->g, "y", LOOM_I32, 1, (int64_t[]){r->lm ? batch * r->T : batch});
    if ((st = loom_graph_status(m->g)) != LOOM_OK || (st = loom_model_build(m->g, &r->md, m->x, train, &m->logits)) != LOOM_OK)
        return st;
    m->loss = loom_cross_entropy(m->g, m->logits, m->y, train ? r->d->model.label_smoothing : 0.0, -100);
    if ((st = loom_graph_status(m->g)) != LOOM_OK) return st;
    loom_keep(m->loss);
    loom_keep(m->logits);
    if (!train) return loom_plan_compile(m->g, r->be, &(loom_plan_desc){.share = owner(r)}, &m->plan);
    if ((st = loom_backward(m->g, m->loss)) != LOOM_OK ||
        (st = loom_optimizer_create(m->g, &r->d->optim.opt, &r->opt)) != LOOM_OK)
        return st;
    return loom_plan_compile(m->g, r->be, NULL, &m->plan);
}

/* The batch's ids (count, 2, 1, T) into xbuf (batch, T) and, for gpt, the
 * targets into ybuf (batch T); rows past count are padding (ids 0, targets
 * ignored). The transformer's targets are the labels. */
static void split_batch(text_run *r, const loom_loader_batch *lb, int batch) {
    int64_t T = r->T;
    for (int i = 0; i < batch; i++) {
        int32_t *x = r->xbuf + i * T, *y = r->lm ? r->ybuf + i * T : r->ybuf + i;
        if (i < lb->count) {
            memcpy(x, lb->ids + 2 * i * T, (size_t)T * sizeof *x);
            if (r->lm) memcpy(y, lb->ids + (2 * i + 1) * T, (size_t)T * sizeof *y);
            else *y = lb->y[i];
        } else {
            memset(x, 0, (size_t)T * sizeof *x);
            for (int64_t k = 0; k < (r->lm ? T : 1); k++) y[k] = -100;
        }
    }
}

static loom_status write_batch(text_run *r, text_graph *m) {
    size_t ny = (size_t)m->batch * (size_t)(r->lm ? r->T : 1);
    loom_status st = loom_plan_write(m->plan, m->x, r->xbuf, (size_t)m->batch * (size_t)r->T * sizeof *r->xbuf);
    return st == LOOM_OK ? loom_plan_write(m->plan, m->y, r->ybuf, ny * sizeof *r->ybuf) : st;
}

/* Mean loss per target and argmax accuracy over the validation file. */
static loom_status evaluate(text_run *r, double *loss, double *acc) {
    text_graph *m = &r->ev;
    loom_loader *ld = NULL;
    loom_loader_desc lde = {.src = r->val, .batch = m->batch, .workers = LOOM_WORKERS_SYNC};
    loom_status st = loom_loader_create(r->ctx, &lde, &ld);
    int64_t rows = loom_tensor_dim(m->logits, 0), classes = loom_tensor_dim(m->logits, 1), per = r->lm ? r->T : 1;
    double sum = 0;
    int64_t correct = 0, seen = 0;
    if (st == LOOM_OK) loom_loader_begin(ld, 0, 0, 0);
    while (st == LOOM_OK && (r->d->run.max_eval <= 0 || seen < r->d->run.max_eval * per)) {
        loom_loader_batch lb;
        if ((st = loom_loader_next(ld, &lb)) != LOOM_OK || lb.count <= 0) break;
        split_batch(r, &lb, m->batch);
        float l;
        if ((st = write_batch(r, m)) != LOOM_OK || (st = loom_plan_run(m->plan)) != LOOM_OK ||
            (st = loom_plan_read(m->plan, m->loss, &l, sizeof l)) != LOOM_OK ||
            (st = loom_plan_read(m->plan, m->logits, r->logits, (size_t)(rows * classes) * sizeof *r->logits)) != LOOM_OK)
            break;
        int64_t n = lb.count * per;
        sum += (double)l * (double)n;
        for (int64_t i = 0; i < n; i++) {
            const float *row = r->logits + i * classes;
            int64_t best = 0;
            for (int64_t k = 1; k < classes; k++)
                if (row[k] > row[best]) best = k;
            correct += best == r->ybuf[i];
        }
        seen += n;
    }
    loom_loader_destroy(ld);
    *loss = seen ? sum / (double)seen : NAN;
    *acc = seen ? (double)correct / (double)seen : NAN;
    return st;
}

static loom_status save(text_run *r, int epoch) {
    char v[9][32];
    const loom_model_desc *md = &r->md;
    snprintf(v[0], 32, "%d", epoch);
    snprintf(v[1], 32, "%llu", (unsigned long long)r->d->run.seed);
    snprintf(v[2], 32, "%lld", (long long)opt_steps(r));
    snprintf(v[3], 32, "%d", md->layers);
    snprintf(v[4], 32, "%d", md->heads);
    snprintf(v[5], 32, "%d", md->embd);
    snprintf(v[6], 32, "%d", md->seq_len);
    snprintf(v[7], 32, "%d", md->vocab);
    snprintf(v[8], 32, "%d", md->num_classes);
    const char *meta[] = {"loom.epoch", v[0], "loom.seed", v[1], "loom.opt_steps", v[2], "loom.model", md->arch,
                          LOOM_TEXT_META_LAYERS, v[3], LOOM_TEXT_META_HEADS, v[4], LOOM_TEXT_META_EMBD, v[5],
                          LOOM_TEXT_META_SEQ_LEN, v[6], LOOM_TEXT_META_VOCAB, v[7], LOOM_TEXT_META_CLASSES, v[8], NULL};
    return loom_checkpoint_save(owner(r), r->d->run.save_path, meta);
}

/* Training step s: the loader's next batch, or (dynamic batching) batch s
 * of the epoch's, its micro-batches accumulated; *count 0 = no batch left. */
static loom_status train_step(text_run *r, int64_t s, double lr, float *l, int *count) {
    if (r->dy) {
        int64_t at = r->bt.offsets[s], n = r->bt.offsets[s + 1] - at;
        double dl;
        int micro;
        loom_status st = loom__dyn_step(r->dy, r->train, r->bt.idx + at, n, r->sizes, lr, true, &dl, &micro);
        *l = (float)dl, *count = (int)n, r->micro += micro;
        return st;
    }
    loom_loader_batch lb;
    loom_status st = loom_loader_next(r->loader, &lb);
    *count = st == LOOM_OK && lb.count > 0 ? lb.count : 0;
    if (!*count) return st;
    split_batch(r, &lb, r->tr.batch);
    if ((st = write_batch(r, &r->tr)) != LOOM_OK || (st = loom_optimizer_begin_step(r->opt, r->tr.plan, lr)) != LOOM_OK ||
        (st = loom_plan_run_read(r->tr.plan, r->tr.loss, l, sizeof *l)) != LOOM_OK)
        return st;
    r->micro = loom_optimizer_micro_steps(r->opt);
    return LOOM_OK;
}

/* One epoch of training batches; *loss_sum, *done (steps) and *samples for
 * its statistics. */
static loom_status epoch(text_run *r, int e, int64_t steps, double *loss_sum, int64_t *done, int64_t *samples) {
    const loom_trainer_desc *d = r->d;
    double t0 = loom__now_s();
    loom_status st = LOOM_OK;
    *loss_sum = 0, *done = 0, *samples = 0;
    if (r->dy) {
        loom_batches_free(&r->bt);
        if ((st = loom__dyn_batches(r->dy, r->sizes, r->train->n, d->run.seed, e, &r->bt)) != LOOM_OK) return st;
        if (r->bt.count < steps) steps = r->bt.count;
    } else {
        loom_loader_begin(r->loader, e, 0, steps);
    }
    for (int64_t s = 0; s < steps && st == LOOM_OK; s++) {
        double lr = loom_schedule_lr(&d->optim.sched, opt_steps(r));
        float l;
        int count;
        if ((st = train_step(r, s, lr, &l, &count)) != LOOM_OK || !count) break;
        *samples += count;
        if (!isfinite(l))
            return loom__err(r->ctx, LOOM_ERR_STATE, "train: the loss became %g at epoch %d step %lld (lr %g): diverged",
                             (double)l, e + 1, (long long)s + 1, lr);
        *loss_sum += l, *done = s + 1;
        double el = loom__now_s() - t0;
        loom_step_result sr = {.epoch = e + 1, .epochs = d->run.epochs, .step = s + 1, .steps = steps,
                               .global_step = r->micro, .count = count, .loss = l,
                               .accuracy = NAN, .mean_loss = *loss_sum / (double)(s + 1), .lr = lr, .elapsed_s = el,
                               .samples_per_s = (r->dy ? (double)*samples : (double)(s + 1) * r->tr.batch) / el,
                               .eta_s = el / (double)(s + 1) * (double)(steps - s - 1), .epoch_done = s + 1 == steps};
        for (int i = 0; i < r->nobs && st == LOOM_OK; i++)
            if (r->obs[i].on_step) st = r->obs[i].on_step(r->obs[i].user, &sr);
    }
    return st;
}

static loom_status run_epochs(text_run *r, loom_train_result *res) {
    const loom_trainer_desc *d = r->d;
    int64_t steps = r->dy ? INT64_MAX : loom_loader_batches(r->loader);
    if (d->run.max_steps > 0 && d->run.max_steps < steps) steps = d->run.max_steps;
    loom_status st = LOOM_OK;
    for (int e = 0; e < d->run.epochs && st == LOOM_OK; e++) {
        double t0 = loom__now_s(), loss_sum;
        int64_t done, samples;
        if ((st = epoch(r, e, steps, &loss_sum, &done, &samples)) != LOOM_OK) break;
        if (!r->dy) samples = done * r->tr.batch;
        double el = loom__now_s() - t0;
        res->seconds += el;
        res->samples_per_s = (res->samples_per_s * (res->seconds - el) + (double)samples) / res->seconds;
        loom_epoch_stats es = {.epoch = e + 1, .epochs = d->run.epochs, .train_loss = done ? loss_sum / (double)done : NAN,
                               .train_acc = NAN, .test_loss = NAN, .test_acc = NAN, .val_loss = NAN, .val_acc = NAN,
                               .seconds = el, .samples_per_s = (double)samples / el, .loss_scale = NAN,
                               .lr = loom_schedule_lr(&d->optim.sched, opt_steps(r))};
        loom_loader_stats ls = {0};
        if (r->loader) loom_loader_stats_get(r->loader, &ls);
        double busy = ls.wait_s + ls.compute_s;
        es.data_wait_pct = busy > 0 ? 100 * ls.wait_s / busy : 0;
        es.load_ms = ls.batches ? 1e3 * ls.load_s / (double)ls.batches : 0;
        es.compute_ms = ls.batches > 1 ? 1e3 * ls.compute_s / (double)(ls.batches - 1) : 0;
        es.workers = ls.workers;
        if (r->val && (st = evaluate(r, &es.val_loss, &es.val_acc)) != LOOM_OK) break;
        if (d->run.save_path && (st = save(r, e + 1)) != LOOM_OK) break;
        res->epochs_run = e + 1, res->train_loss = es.train_loss, res->val_loss = es.val_loss, res->val_acc = es.val_acc;
        es.global_step = r->micro;
        es.last = e + 1 == d->run.epochs;
        for (int i = 0; i < r->nobs && st == LOOM_OK; i++)
            if (r->obs[i].on_epoch) st = r->obs[i].on_epoch(r->obs[i].user, &es);
    }
    res->steps = opt_steps(r);
    if (d->run.profile && !r->dy) res->n_profile = loom_plan_profile(r->tr.plan, res->profile, 16);
    for (int i = 0; i < r->nobs && st == LOOM_OK; i++)
        if (r->obs[i].on_finish) st = r->obs[i].on_finish(r->obs[i].user, res);
    return st;
}

/* Dynamic batching's graphs (one per length bucket) and every training
 * sample's length; res gets the planned memory of the largest bucket. */
static loom_status dyn_setup(text_run *r, loom_train_result *res) {
    const loom_trainer_desc *d = r->d;
    loom_status st = loom__dyn_create(r->ctx, r->be, &r->md, &d->optim.opt, d->run.seed, d->model.label_smoothing, r->dyn,
                                      &r->dy);
    if (st != LOOM_OK) return st;
    if (!(r->sizes = malloc((size_t)r->train->n * sizeof *r->sizes)))
        return loom__err(r->ctx, LOOM_ERR_OOM, "train: out of memory for %lld sample lengths", (long long)r->train->n);
    if ((st = loom__dyn_sizes(r->dy, r->train, r->sizes)) != LOOM_OK) return st;
    loom_optimizer *o = r->dy->gr[r->dy->nb - 1].opt;
    loom_optimizer_decay_counts(o, &res->decayed, &res->not_decayed);
    res->trained = loom_optimizer_param_count(o);
    loom_plan_memory_stats(loom__dyn_plan(r->dy), &res->train_memory);
    for (int b = 0; b < r->dy->nb; b++) {
        loom_plan_memory m;
        loom_plan_memory_stats(r->dy->gr[b].plan, &m);
        if (m.arena_bytes > res->train_memory.arena_bytes) res->train_memory.arena_bytes = m.arena_bytes;
    }
    return LOOM_OK;
}

/* The sources, the backend, both graphs, the loader and the observers. */
static loom_status setup(text_run *r, const char *train_path, const char *val_path, loom_train_result *res) {
    const loom_trainer_desc *d = r->d;
    loom_status st;
    loom_model_text_defaults(&r->md);
    r->lm = !strcmp(r->md.arch, "gpt");
    r->T = r->md.seq_len;
    loom_tokens_desc td = {.seq_len = r->T, .vocab_size = r->md.vocab};
    if (!r->md.num_classes) r->md.num_classes = r->md.vocab;
    if (d->model.amp != LOOM_F32)
        return loom__err(r->ctx, LOOM_ERR_INVALID_ARG, "train: mixed precision is not supported for text models yet");
    if ((st = loom_source_open_tokens(r->ctx, train_path, &td, &r->train)) != LOOM_OK ||
        (val_path && (st = loom_source_open_tokens(r->ctx, val_path, &td, &r->val)) != LOOM_OK))
        return st;
    int batch = d->data.batch > 0 ? d->data.batch : 64, eb = d->data.eval_batch > 0 ? d->data.eval_batch : batch;
    if (!r->dyn && batch > r->train->n)
        return loom__err(r->ctx, LOOM_ERR_INVALID_ARG, "train: batch %d is larger than the %lld sequences of %lld tokens in '%s'",
                         batch, (long long)r->train->n, (long long)r->T, train_path);
    if (r->val && eb > r->val->n) eb = (int)r->val->n;
    loom_backend_desc bd = d->run.backend_desc;
    bd.deterministic = bd.deterministic || d->run.deterministic;
    const char *bname = d->run.backend && strcmp(d->run.backend, "auto") ? d->run.backend : loom_pick_backend(r->ctx, NULL);
    if ((st = loom_backend_create(r->ctx, bname, &bd, &r->be)) != LOOM_OK) return st;
    res->backend = loom_backend_name(r->be);
    res->val_n = r->val ? r->val->n : 0;
    if (r->dyn) {
        if (!r->lm) return loom__err(r->ctx, LOOM_ERR_INVALID_ARG, "train: dynamic batching (a token budget) is for gpt only");
        if ((st = dyn_setup(r, res)) != LOOM_OK) return st;
    } else {
        if ((st = build(r, true, batch, &r->tr)) != LOOM_OK) return st;
        loom_optimizer_decay_counts(r->opt, &res->decayed, &res->not_decayed);
        res->trained = loom_optimizer_param_count(r->opt);
        loom_plan_memory_stats(r->tr.plan, &res->train_memory);
        if (d->run.profile && (st = loom_plan_set_profiling(r->tr.plan, true)) != LOOM_OK) return st;
    }
    if (r->val && (st = build(r, false, eb, &r->ev)) != LOOM_OK) return st;
    loom_plan_memory m1 = res->train_memory, m2 = {0};
    if (r->ev.plan) loom_plan_memory_stats(r->ev.plan, &m2);
    res->peak_bytes = m1.arena_bytes + m1.persistent_bytes + m2.arena_bytes + m2.persistent_bytes;
    if (r->dyn) batch = 1;
    int maxb = batch > eb ? batch : eb;
    int64_t classes = r->dyn ? r->md.vocab : loom_tensor_dim(r->tr.logits, 1);
    r->xbuf = malloc((size_t)maxb * (size_t)r->T * sizeof *r->xbuf);
    r->ybuf = malloc((size_t)maxb * (size_t)r->T * sizeof *r->ybuf);
    r->logits = malloc((size_t)maxb * (size_t)(r->lm ? r->T : 1) * (size_t)classes * sizeof *r->logits);
    if (!r->xbuf || !r->ybuf || !r->logits) return loom__err(r->ctx, LOOM_ERR_OOM, "train: out of memory for batch buffers");
    loom_loader_desc lde = {.src = r->train, .batch = batch, .shuffle = true, .drop_last = true, .seed = d->run.seed,
                            .workers = d->data.workers, .prefetch = d->data.prefetch, .backend = r->be};
    if (!r->dyn && (st = loom_loader_create(r->ctx, &lde, &r->loader)) != LOOM_OK) return st;
    loom_train_observer o;
    if (d->log.csv && ((st = loom__csv_observer(r->ctx, d->log.csv, false, &o)) != LOOM_OK)) return st;
    if (d->log.csv) r->obs[r->nobs++] = o;
    if (d->log.tensorboard_dir && ((st = loom__tb_observer(r->ctx, d->log.tensorboard_dir, &o)) != LOOM_OK)) return st;
    if (d->log.tensorboard_dir) r->obs[r->nobs++] = o;
    for (int i = 0; i < d->log.nobservers && r->nobs < LOOM__MAX_OBSERVERS; i++) r->obs[r->nobs++] = d->log.observers[i];
    return LOOM_OK;
}

loom_status loom_text_train(loom_ctx *ctx, const loom_trainer_desc *desc, const char *train_path, const char *val_path,
                            loom_train_result *res) {
    return loom_text_train_dyn(ctx, desc, NULL, train_path, val_path, res);
}

loom_status loom_text_train_dyn(loom_ctx *ctx, const loom_trainer_desc *desc, const loom_text_dyn_desc *dyn,
                                const char *train_path, const char *val_path, loom_train_result *res) {
    memset(res, 0, sizeof *res);
    res->test_loss = res->test_acc = res->val_loss = res->val_acc = res->train_loss = NAN;
    if (!desc || !train_path || !loom_model_is_text(desc->model.net.arch))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: a text model (gpt or transformer) and a token file are required");
    text_run r = {.ctx = ctx, .d = desc, .md = desc->model.net};
    loom_trainer_desc d = *desc;
    if (d.run.epochs <= 0) d.run.epochs = 1;
    if (d.optim.sched.lr <= 0) d.optim.sched.lr = 0.01;
    r.d = &d;
    r.dyn = dyn && dyn->token_budget > 0 ? dyn : NULL;
    loom_status st = setup(&r, train_path, val_path, res);
    if (st == LOOM_OK) st = run_epochs(&r, res);
    for (int i = 0; i < r.nobs; i++)
        if (r.obs[i].on_close) r.obs[i].on_close(r.obs[i].user);
    loom_loader_destroy(r.loader);
    free(r.xbuf), free(r.ybuf), free(r.logits);
    loom_plan_destroy(r.ev.plan), loom_graph_destroy(r.ev.g);
    loom_plan_destroy(r.tr.plan), loom_graph_destroy(r.tr.g);
    loom_optimizer_destroy(r.opt);
    loom__dyn_destroy(r.dy);
    loom_batches_free(&r.bt);
    free(r.sizes);
    loom_backend_destroy(r.be);
    loom_source_destroy(r.train), loom_source_destroy(r.val);
    return st;
}
