/* train/setup.c — a trainer's setup and teardown (loom_trainer_create,
 * loom_trainer_destroy; see loom/train.h): the desc's defaults and checks,
 * the validation split, the graphs and the optimizer, transfer learning
 * (freezing, the head's LR group, init_from), resuming from a checkpoint,
 * the training loader and the logs. */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>

#include "train_impl.h"

/* Defaults and the checks that need no backend. */
static loom_status resolve_desc(loom_ctx *ctx, loom_trainer_desc *d, loom_model_desc *md) {
    const loom_dataset *ds = d->data.train;
    loom_train_data *dd = &d->data;
    loom_train_run *r = &d->run;
    if (!ds || ds->n < 1) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: no training data");
    if (r->epochs <= 0) r->epochs = 1;
    if (dd->batch <= 0) dd->batch = 64;
    if (dd->eval_batch <= 0) dd->eval_batch = 256;
    if (r->eval_every <= 0) r->eval_every = 1;
    if (d->optim.sched.lr <= 0) d->optim.sched.lr = 0.01;
    if (dd->std <= 0) dd->mean = 0.0f, dd->std = 1.0f;
    r->backend_desc.deterministic = r->backend_desc.deterministic || r->deterministic;
    if (dd->batch > ds->n)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: batch %d is larger than the %lld training samples", dd->batch,
                         (long long)ds->n);
    if (!(d->model.label_smoothing >= 0 && d->model.label_smoothing < 1))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: label smoothing %g must be in [0, 1)", d->model.label_smoothing);
    if (!(dd->val_split >= 0 && dd->val_split < 1))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: validation split %g must be in [0, 1)", dd->val_split);
    if (dd->train_source && dd->val_split > 0)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                         "train: a validation split (%g) of a training source '%s' is not supported; give a val set",
                         dd->val_split, dd->train_source->name);
    if (r->early_stop < 0 || !(r->min_delta >= 0) || (r->monitor != LOOM_MONITOR_VAL_LOSS && r->monitor != LOOM_MONITOR_VAL_ACC))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: early stopping patience %d must be >= 0, min_delta %g >= 0, monitor %d val_loss (0) or val_acc (1)",
                         r->early_stop, r->min_delta, (int)r->monitor);
    if (r->early_stop > 0 && !dd->val && dd->val_split <= 0)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: early stopping (patience %d) needs a validation set: give val or val_split",
                         r->early_stop);
    *md = d->model.net;
    if (!md->in_c) md->in_c = ds->c, md->in_h = ds->h, md->in_w = ds->w;
    if (!md->num_classes) md->num_classes = ds->num_classes > 2 ? ds->num_classes : 2;
    const loom_dataset *test = dd->test, *val = dd->val;
    if (test && test->num_classes > md->num_classes) md->num_classes = test->num_classes;
    if (test && (test->c != ds->c || test->h != ds->h || test->w != ds->w))
        return loom__err(ctx, LOOM_ERR_SHAPE, "train: test samples are %dx%dx%d but training samples %dx%dx%d", test->c,
                         test->h, test->w, ds->c, ds->h, ds->w);
    if (val && (val->c != ds->c || val->h != ds->h || val->w != ds->w))
        return loom__err(ctx, LOOM_ERR_SHAPE, "train: validation samples are %dx%dx%d but training samples %dx%dx%d",
                         val->c, val->h, val->w, ds->c, ds->h, ds->w);
    return LOOM_OK;
}

/* A decimal integer in 0..max from the checkpoint's metadata (digits only:
 * no sign, blanks or hex; a value past max, or past 2^64, is an error). */
static loom_status meta_num(loom_ctx *ctx, loom_safetensors *f, const char *path, const char *key, uint64_t max,
                            uint64_t *out) {
    const char *v = loom_safetensors_meta(f, key);
    bool ok = v && v[0];
    for (const char *p = v; ok && *p; p++) ok = *p >= '0' && *p <= '9';
    errno = 0;
    unsigned long long x = ok ? strtoull(v, NULL, 10) : 0;
    if (!ok || errno || x > max)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: metadata '%s' is %s%.40s%s, expected an integer in 0..%llu", path, key,
                         v ? "'" : "missing", v ? v : "", v ? "'" : "", (unsigned long long)max);
    *out = x;
    return LOOM_OK;
}

static loom_status meta_int(loom_ctx *ctx, loom_safetensors *f, const char *path, const char *key, int64_t max,
                            int64_t *out) {
    uint64_t x = 0;
    loom_status st = meta_num(ctx, f, path, key, (uint64_t)max, &x);
    *out = (int64_t)x;
    return st;
}

/* A resumed run takes its seed (and later its counters) from the checkpoint. */
static loom_status open_resume(loom_trainer *t) {
    const char *path = t->d.run.resume_path;
    if (!path) return LOOM_OK;
    loom_status st = loom_safetensors_open(t->ctx, path, &t->ck);
    if (st != LOOM_OK) return st;
    if (!loom_safetensors_meta(t->ck, "loom.epoch") || !loom_safetensors_meta(t->ck, "loom.seed"))
        return loom__err(t->ctx, LOOM_ERR_FORMAT, "%s: not a loom training checkpoint (no loom.epoch/loom.seed metadata)",
                         path);
    uint64_t seed = 0;
    if ((st = meta_num(t->ctx, t->ck, path, "loom.seed", UINT64_MAX, &seed)) != LOOM_OK) return st;
    t->d.run.seed = seed;
    return LOOM_OK;
}

/* The validation split: a seeded shuffle of a copy of the training set. */
static loom_status make_split(loom_trainer *t) {
    loom_train_data *dd = &t->d.data;
    const loom_dataset *ds = dd->train;
    if (dd->val || dd->val_split <= 0) return LOOM_OK;
    int64_t nv = (int64_t)llround(dd->val_split * (double)ds->n);
    if (nv < 1 || nv >= ds->n || ds->n - nv < dd->batch)
        return loom__err(t->ctx, LOOM_ERR_INVALID_ARG,
                         "train: validation split %g of %lld samples leaves %lld for validation and %lld for training (batch %d)",
                         dd->val_split, (long long)ds->n, (long long)nv, (long long)(ds->n - nv), dd->batch);
    size_t per = (size_t)ds->c * (size_t)ds->h * (size_t)ds->w;
    loom_dataset *c = &t->split_train;
    *c = *ds;
    c->pixels = malloc((size_t)ds->n * per);
    c->labels = malloc((size_t)ds->n * sizeof *c->labels);
    if (!c->pixels || !c->labels) return loom__err(t->ctx, LOOM_ERR_OOM, "train: out of memory for the validation split");
    memcpy(c->pixels, ds->pixels, (size_t)ds->n * per);
    memcpy(c->labels, ds->labels, (size_t)ds->n * sizeof *c->labels);
    loom_status st = loom_dataset_split(t->ctx, c, nv, t->d.run.seed, &t->split_val);
    if (st != LOOM_OK) return st;
    dd->train = c;
    dd->val = &t->split_val;
    return LOOM_OK;
}

/* The training loader's desc (open_data creates the loader from it). */
static loom_loader_desc loader_desc(loom_trainer *t, const loom_source *src) {
    loom_train_data *dd = &t->d.data;
    return (loom_loader_desc){.src = src, .batch = dd->batch, .shuffle = true, .drop_last = true,
                              .seed = t->d.run.seed, .workers = dd->workers, .prefetch = dd->prefetch,
                              .rank = loom_dist_rank(t->d.run.dist), .world = loom_dist_world(t->d.run.dist),
                              .rank_block = loom__dist_rank_block(t), .mean = &dd->mean, .std = &dd->std, .nstat = 1, .backend = t->be,
                              .steps = dd->train_source ? dd->train_steps : NULL,
                              .nsteps = dd->train_source ? dd->train_nsteps : 0, .device_augment = t->device_augment};
}

/* Device augmentation: x from the loader's u8 images and parameter table. */
static loom_status device_input(loom_trainer *t, loom__model_graph *m) {
    loom_source *wrap = NULL;
    loom_status st = t->d.data.train_source ? LOOM_OK : loom_source_wrap(t->ctx, t->d.data.train, &wrap);
    if (st != LOOM_OK) return st;
    loom_loader_desc lde = loader_desc(t, t->d.data.train_source ? t->d.data.train_source : wrap);
    m->x = loom_loader_device_input(m->g, &lde, "x", LOOM_F32, &m->u8, &m->prm);
    loom_source_destroy(wrap);
    return loom_graph_status(m->g);
}

static loom_status build_graph(loom_trainer *t, bool train, int batch, loom__model_graph *m) {
    const loom_trainer_desc *d = &t->d;
    const loom_dataset *ds = d->data.train;
    uint64_t seed = train ? loom__dist_seed(t) : d->run.seed; /* dropout per rank */
    loom_status st = loom_graph_create(t->ctx, &(loom_graph_desc){.seed = seed}, &m->g);
    if (st != LOOM_OK) return st;
    m->batch = batch;
    if (train && t->device_augment) {
        if ((st = device_input(t, m)) != LOOM_OK) return st;
    } else {
        m->x = loom_input(m->g, "x", LOOM_F32, 4, (int64_t[]){batch, ds->c, ds->h, ds->w});
    }
    m->y = loom_input(m->g, "y", LOOM_I32, 1, (int64_t[]){batch});
    if ((st = loom_graph_status(m->g)) != LOOM_OK) return st;
    loom_dtype amp = d->model.amp;
    if (amp != LOOM_F32 && (st = loom_graph_set_autocast(m->g, amp)) != LOOM_OK) return st;
    if ((st = loom_model_build(m->g, &t->md, m->x, train, &m->logits)) != LOOM_OK) return st;
    /* mixed precision: accuracy is counted and the loss taken in f32 */
    if (m->logits->dtype != LOOM_F32) m->logits = loom_cast(m->g, m->logits, LOOM_F32);
    m->loss = loom_cross_entropy(m->g, m->logits, m->y, train ? d->model.label_smoothing : 0.0, -100);
    /* the loss and the correct count in one tensor: a step reads back 8 bytes, not the logits */
    const int64_t one = 1;
    loom_tensor *parts[2] = {loom_reshape(m->g, m->loss, 1, &one),
                             loom_reshape(m->g, loom_correct_count(m->g, m->logits, m->y), 1, &one)};
    m->stats = loom_concat(m->g, parts, 2, 0);
    if ((st = loom_graph_status(m->g)) != LOOM_OK) return st;
    loom_keep(m->loss);
    loom_keep(m->logits); /* read back only for a partial training batch (train/train.c) */
    loom_keep(m->stats);
    m->scaled_loss = m->loss;
    if (train && (amp == LOOM_F16 || (amp == LOOM_BF16 && d->model.bf16_loss_scaling))) {
        m->scaled_loss = loom_scale_loss(m->g, m->loss, &d->model.loss_scale);
        if ((st = loom_graph_status(m->g)) != LOOM_OK) return st;
    }
    return LOOM_OK;
}

static void free_graph(loom__model_graph *m) {
    loom_plan_destroy(m->plan);
    loom_graph_destroy(m->g);
    memset(m, 0, sizeof *m);
}

/* ---- transfer learning: freezing, the head's LR group, init_from ---- */
static double head_lr_mult(void *user, const char *name) {
    loom__head_rule *h = user;
    if (fnmatch(h->pattern, name, 0) == 0) {
        h->head++;
        return 1.0;
    }
    return h->mult;
}

static loom_status freeze(loom_ctx *ctx, loom_graph *g, const loom_trainer_desc *d, int *frozen, int64_t *frozen_numel) {
    *frozen = 0, *frozen_numel = 0;
    const char *const *pat = d->transfer.freeze;
    for (int k = 0; pat && pat[k]; k++) {
        int hits = 0;
        for (int i = 0; i < g->n; i++) {
            loom_tensor *t = g->nodes[i];
            if (t->leaf != LOOM__PARAM || fnmatch(pat[k], t->name, 0) != 0) continue;
            hits++;
            if (!t->requires_grad) continue; /* frozen by an earlier pattern */
            loom_status st = loom_set_requires_grad(t, false);
            if (st != LOOM_OK) return st;
            (*frozen)++, *frozen_numel += loom_tensor_numel(t);
        }
        if (!hits)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: freeze pattern '%s' matches no parameter of model '%s'",
                             pat[k], d->model.net.arch ? d->model.net.arch : "?");
    }
    return LOOM_OK;
}

/* Before loom_backward: freeze the parameters matching transfer.freeze, and
 * with transfer.backbone_lr_mult point od's LR multiplier at the head rule. */
static loom_status prepare_transfer(loom_ctx *ctx, loom_graph *g, const loom_trainer_desc *d, loom_optimizer_desc *od,
                                    loom__head_rule *hr, int *frozen, int64_t *frozen_numel) {
    const loom_train_transfer *tf = &d->transfer;
    const char *arch = d->model.net.arch ? d->model.net.arch : "?";
    loom_status st = freeze(ctx, g, d, frozen, frozen_numel);
    if (st != LOOM_OK) return st;
    if (!(tf->backbone_lr_mult >= 0) || !isfinite(tf->backbone_lr_mult))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: backbone LR multiplier %g must be finite and >= 0 (0 = 1)",
                         tf->backbone_lr_mult);
    if (tf->backbone_lr_mult <= 0) return LOOM_OK;
    *hr = (loom__head_rule){.mult = tf->backbone_lr_mult};
    if (tf->head) {
        if (strlen(tf->head) >= sizeof hr->pattern)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: head pattern '%.80s...' is longer than %zu bytes", tf->head,
                             sizeof hr->pattern - 1);
        snprintf(hr->pattern, sizeof hr->pattern, "%s", tf->head);
    } else {
        /* the last fc layer: "fc2.weight" -> "fc2.*" */
        const char *last = NULL;
        for (int i = 0; i < g->n; i++)
            if (g->nodes[i]->leaf == LOOM__PARAM && !strncmp(g->nodes[i]->name, "fc", 2)) last = g->nodes[i]->name;
        if (!last)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: a backbone LR multiplier needs a head, and model '%s' has no fc layer: give a head pattern",
                             arch);
        size_t k = strcspn(last, ".");
        snprintf(hr->pattern, sizeof hr->pattern, "%.*s.*", (int)k, last);
    }
    int hits = 0;
    for (int i = 0; i < g->n; i++)
        hits += g->nodes[i]->leaf == LOOM__PARAM && fnmatch(hr->pattern, g->nodes[i]->name, 0) == 0;
    if (!hits)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: head pattern '%s' matches no parameter of model '%s'",
                         hr->pattern, arch);
    od->lr_mult = head_lr_mult;
    od->lr_mult_user = hr;
    return LOOM_OK;
}

/* The backend, the training graph with its optimizer, the evaluation graph
 * sharing its weights; both compiled. */
static loom_status build_plans(loom_trainer *t) {
    loom_trainer_desc *d = &t->d;
    loom_train_result *res = &t->res;
    loom_status st;
    const char *bname = d->run.backend && strcmp(d->run.backend, "auto") ? d->run.backend : loom_pick_backend(t->ctx, NULL);
    if ((st = loom_backend_create(t->ctx, bname, &d->run.backend_desc, &t->be)) != LOOM_OK) return st;
    res->backend = loom_backend_name(t->be);
    if ((st = loom__dist_resolve(t)) != LOOM_OK) return st;
    /* sharded reproducible steps slice host batches, so augmentation stays on the host there (the same bits) */
    t->device_augment = !t->shards && loom__train_device_augment(t->ctx, &d->data, t->be);
    if ((st = build_graph(t, true, t->graph_batch, &t->tr)) != LOOM_OK) return st;
    t->hr = (loom__head_rule){.head = 0};
    if ((st = prepare_transfer(t->ctx, t->tr.g, d, &d->optim.opt, &t->hr, &res->frozen, &res->frozen_numel)) != LOOM_OK)
        return st;
    if (d->transfer.frozen_16bit) {
        if (d->model.amp == LOOM_F32 || !res->frozen)
            return loom__err(t->ctx, LOOM_ERR_INVALID_ARG, "train: frozen_16bit keeps frozen parameters in 16 bits only: it "
                             "needs amp (fp16 or bf16) and frozen parameters (freeze)");
        res->frozen_16bit = loom__autocast_frozen_lowp(t->tr.g, NULL, &res->frozen_16bit_saved_bytes);
    }
    if ((st = loom_backward(t->tr.g, t->tr.scaled_loss)) != LOOM_OK) return st;
    int split = t->tr.g->n; /* the optimizer's first node: data parallel exchanges gradients before it */
    if ((st = loom_optimizer_create(t->tr.g, &d->optim.opt, &t->opt)) != LOOM_OK) return st;
    loom_optimizer_decay_counts(t->opt, &res->decayed, &res->not_decayed);
    res->trained = loom_optimizer_param_count(t->opt);
    res->head_params = t->hr.head;
    if ((st = loom__dist_compile(t, split)) != LOOM_OK) return st;
    if (d->run.profile && (st = loom_plan_set_profiling(t->tr.plan, true)) != LOOM_OK) return st;
    const loom_dataset *test = d->data.test, *val = d->data.val;
    int64_t eval_n = test ? test->n : 0;
    if (val && val->n > eval_n) eval_n = val->n;
    int eb = eval_n ? (d->data.eval_batch < eval_n ? d->data.eval_batch : (int)eval_n) : 0;
    if (eval_n) {
        if ((st = build_graph(t, false, eb, &t->ev)) != LOOM_OK) return st;
        int64_t saved_ev = 0;
        if (res->frozen_16bit) loom__autocast_frozen_lowp(t->ev.g, t->tr.g, &saved_ev); /* the same parameters as tr */
        if ((st = loom_plan_compile(t->ev.g, t->be, &(loom_plan_desc){.share = t->tr.plan}, &t->ev.plan)) != LOOM_OK)
            return st;
    }
    loom_plan_memory m1, m2 = {0};
    loom_plan_memory_stats(t->tr.plan, &m1);
    if (t->ev.plan) loom_plan_memory_stats(t->ev.plan, &m2);
    res->peak_bytes = m1.arena_bytes + m1.persistent_bytes + m2.arena_bytes + m2.persistent_bytes;
    res->train_memory = m1;
    return LOOM_OK;
}

/* The weights: from init_from (shape mismatches skipped) on a fresh run,
 * or everything with the counters from the checkpoint to resume. */
static loom_status load_weights(loom_trainer *t) {
    const loom_trainer_desc *d = &t->d;
    loom_status st;
    if (d->transfer.init_from && !t->ck) {
        loom_checkpoint_report *rep = &t->res.init;
        loom_checkpoint_load_desc ld = {.skip_mismatched = true, .weights_only = true, .name_map = d->transfer.init_map,
                                      .allow_nonfinite = d->run.allow_nonfinite};
        if ((st = loom_checkpoint_load(t->tr.plan, d->transfer.init_from, &ld, rep, NULL)) != LOOM_OK) return st;
        if (rep->loaded == 0)
            return loom__err(t->ctx, LOOM_ERR_FORMAT,
                             "train: nothing of '%s' fits the model (%d tensors unexpected, e.g. '%s'; %d mismatched): check the name map",
                             d->transfer.init_from, rep->unexpected, rep->unexpected ? rep->unexpected_names[0] : "-",
                             rep->mismatched);
        if (d->transfer.on_init) d->transfer.on_init(d->transfer.user, rep);
    }
    if (!t->ck) return LOOM_OK;
    /* strict: a checkpoint of another model or optimizer is an error */
    loom_checkpoint_load_desc ld = {.strict = true, .allow_nonfinite = d->run.allow_nonfinite};
    const char *path = d->run.resume_path;
    int64_t ep = 0, pstep = 0, osteps = 0, omicro = 0;
    if ((st = meta_int(t->ctx, t->ck, path, "loom.epoch", INT32_MAX - 1, &ep)) != LOOM_OK ||
        (st = meta_int(t->ctx, t->ck, path, "loom.plan_step", INT64_MAX / 2, &pstep)) != LOOM_OK ||
        (st = meta_int(t->ctx, t->ck, path, "loom.opt_steps", INT64_MAX / 2, &osteps)) != LOOM_OK ||
        (st = meta_int(t->ctx, t->ck, path, "loom.opt_micro", INT64_MAX / 2, &omicro)) != LOOM_OK)
        return st;
    if (osteps > omicro) /* every optimizer step is one or more micro-steps */
        return loom__err(t->ctx, LOOM_ERR_FORMAT, "%s: metadata loom.opt_steps %lld is more than loom.opt_micro %lld", path,
                         (long long)osteps, (long long)omicro);
    if ((st = loom_checkpoint_load(t->tr.plan, path, &ld, NULL, NULL)) != LOOM_OK) return st;
    t->start_epoch = (int)ep;
    loom_plan_set_step(t->tr.plan, (uint64_t)pstep);
    loom_optimizer_set_counters(t->opt, osteps, omicro);
    return LOOM_OK;
}

/* Host buffers and the training batches' loader: shuffled from (seed,
 * epoch), the last partial batch dropped, in pinned staging memory. */
static loom_status open_data(loom_trainer *t) {
    loom_train_data *dd = &t->d.data;
    const loom_dataset *ds = dd->train;
    loom_status st;
    t->per = (size_t)ds->c * (size_t)ds->h * (size_t)ds->w;
    int maxb = dd->batch > t->ev.batch ? dd->batch : t->ev.batch;
    t->xbuf = malloc((size_t)maxb * t->per * sizeof *t->xbuf);
    t->ybuf = malloc((size_t)maxb * sizeof *t->ybuf);
    t->logits = malloc((size_t)maxb * (size_t)t->md.num_classes * sizeof *t->logits);
    if (!t->xbuf || !t->ybuf || !t->logits) return loom__err(t->ctx, LOOM_ERR_OOM, "train: out of memory for batch buffers");
    if (!dd->train_source && (st = loom_source_wrap(t->ctx, ds, &t->tsrc)) != LOOM_OK) return st;
    loom_loader_desc lde = loader_desc(t, dd->train_source ? dd->train_source : t->tsrc);
    if ((st = loom_loader_create(t->ctx, &lde, &t->loader)) != LOOM_OK) return st;
    if (dd->train_source) {
        int c;
        int64_t h, w;
        loom_loader_shape(t->loader, &c, &h, &w);
        if (c != ds->c || h != ds->h || w != ds->w || dd->train_source->n != ds->n)
            return loom__err(t->ctx, LOOM_ERR_SHAPE,
                             "train: the training source '%s' gives %lld samples of %dx%lldx%lld through its transforms, "
                             "but the training dataset has %lld of %dx%dx%d",
                             dd->train_source->name, (long long)dd->train_source->n, c, (long long)h, (long long)w,
                             (long long)ds->n, ds->c, ds->h, ds->w);
    }
    t->steps = loom_loader_batches(t->loader);
    if (t->d.run.max_steps > 0 && t->d.run.max_steps < t->steps) t->steps = t->d.run.max_steps;
    return LOOM_OK;
}

/* The run's counters and the observers: the CSV log, TensorBoard, then the desc's. */
static loom_status start_run(loom_trainer *t) {
    const loom_trainer_desc *d = &t->d;
    loom_status st = LOOM_OK;
    t->epoch = t->start_epoch;
    t->res.epochs_run = t->start_epoch;
    t->res.test_loss = t->res.test_acc = t->res.val_loss = t->res.val_acc = NAN;
    t->plateau_scale = 1.0;
    t->scaling = t->tr.scaled_loss != t->tr.loss;
    loom_early_stop_init(&t->stopper, d->run.early_stop, d->run.min_delta, d->run.monitor == LOOM_MONITOR_VAL_ACC);
    loom_train_observer o;
    if (d->log.csv) {
        if ((st = loom__csv_observer(t->ctx, d->log.csv, t->start_epoch > 0, &o)) != LOOM_OK ||
            (st = loom_trainer_observe(t, &o)) != LOOM_OK)
            return st;
    }
    if (d->log.tensorboard_dir) {
        if ((st = loom__tb_observer(t->ctx, d->log.tensorboard_dir, &o)) != LOOM_OK ||
            (st = loom_trainer_observe(t, &o)) != LOOM_OK)
            return st;
    }
    for (int i = 0; i < d->log.nobservers; i++)
        if ((st = loom_trainer_observe(t, &d->log.observers[i])) != LOOM_OK) return st;
    if (t->scaling) st = loom_loss_scale_read(t->tr.plan, NULL, &t->skipped0);
    return st;
}

loom_status loom_trainer_create(loom_ctx *ctx, const loom_trainer_desc *desc, loom_trainer **out) {
    *out = NULL;
    loom_trainer *t = calloc(1, sizeof *t);
    if (!t) return loom__err(ctx, LOOM_ERR_OOM, "train: out of memory for the trainer");
    t->ctx = ctx;
    t->d = *desc;
    if (loom_dist_rank(desc->run.dist) != 0) /* only rank 0 writes checkpoints and logs */
        t->d.run.save_path = NULL, t->d.log.csv = NULL, t->d.log.tensorboard_dir = NULL;
    loom_status st;
    if ((st = resolve_desc(ctx, &t->d, &t->md)) != LOOM_OK || (st = open_resume(t)) != LOOM_OK ||
        (st = make_split(t)) != LOOM_OK) {
        loom_trainer_destroy(t);
        return st;
    }
    t->res.val_n = t->d.data.val ? t->d.data.val->n : 0;
    if ((st = build_plans(t)) != LOOM_OK || (st = load_weights(t)) != LOOM_OK ||
        (st = loom__dist_broadcast_weights(t)) != LOOM_OK || (st = open_data(t)) != LOOM_OK ||
        (st = start_run(t)) != LOOM_OK) {
        loom_trainer_destroy(t);
        return st;
    }
    *out = t;
    return LOOM_OK;
}

loom_status loom_trainer_observe(loom_trainer *t, const loom_train_observer *obs) {
    if (t->nobs == LOOM__MAX_OBSERVERS) {
        if (obs->on_close) obs->on_close(obs->user);
        return loom__err(t->ctx, LOOM_ERR_INVALID_ARG, "train: more than %d observers", LOOM__MAX_OBSERVERS);
    }
    t->obs[t->nobs++] = *obs;
    return LOOM_OK;
}

void loom_trainer_destroy(loom_trainer *t) {
    if (!t) return;
    for (int i = 0; i < t->nobs; i++)
        if (t->obs[i].on_close) t->obs[i].on_close(t->obs[i].user);
    loom_loader_destroy(t->loader);
    loom_source_destroy(t->tsrc);
    free(t->xbuf), free(t->ybuf), free(t->logits);
    free_graph(&t->ev);
    loom__dist_free(t);
    free_graph(&t->tr);
    loom_optimizer_destroy(t->opt);
    loom_backend_destroy(t->be);
    if (t->ck) loom_safetensors_close(t->ck);
    loom__snapshot_free(&t->best);
    loom_dataset_free(&t->split_train);
    loom_dataset_free(&t->split_val);
    free(t);
}

loom_plan *loom_trainer_plan(const loom_trainer *t) { return t->tr.plan; }
loom_optimizer *loom_trainer_optimizer(const loom_trainer *t) { return t->opt; }
