/* train/train.c — the training loop behind `loom train` (see loom/train.h). */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>

#include "impl.h"
#include "train_impl.h"

/* ---- host copies of parameters and states ---- */
loom_status loom__snapshot_take(loom__snapshot *s, loom_plan *plan, loom_graph *g, bool params_only) {
    if (!s->t) {
        int n = 0;
        for (int i = 0; i < g->n; i++) n += g->nodes[i]->leaf == LOOM__PARAM || g->nodes[i]->leaf == LOOM__STATE;
        s->t = calloc((size_t)(n ? n : 1), sizeof *s->t);
        s->data = calloc((size_t)(n ? n : 1), sizeof *s->data);
        if (!s->t || !s->data) return loom__err(g->ctx, LOOM_ERR_OOM, "snapshot: out of memory");
        for (int i = 0; i < g->n; i++) {
            loom_tensor *t = g->nodes[i];
            if (t->leaf != LOOM__PARAM && t->leaf != LOOM__STATE) continue;
            if (params_only && t->leaf == LOOM__STATE && loom__is_optimizer_state(t->name)) continue;
            if (!(s->data[s->n] = malloc(loom__nbytes(t) ? loom__nbytes(t) : 1)))
                return loom__err(g->ctx, LOOM_ERR_OOM, "snapshot: out of memory for '%s'", t->name);
            s->t[s->n++] = t;
        }
    }
    for (int i = 0; i < s->n; i++) {
        loom_status st = loom_plan_read(plan, s->t[i], s->data[i], loom__nbytes(s->t[i]));
        if (st != LOOM_OK) return st;
    }
    return LOOM_OK;
}

loom_status loom__snapshot_restore(const loom__snapshot *s, loom_plan *plan) {
    for (int i = 0; i < s->n; i++) {
        loom_status st = loom_plan_write(plan, s->t[i], s->data[i], loom__nbytes(s->t[i]));
        if (st != LOOM_OK) return st;
    }
    return LOOM_OK;
}

void loom__snapshot_free(loom__snapshot *s) {
    for (int i = 0; s->data && i < s->n; i++) free(s->data[i]);
    free(s->t), free(s->data);
    memset(s, 0, sizeof *s);
}

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

typedef struct model_graph {
    loom_graph *g;
    loom_tensor *x, *y, *logits, *loss;
    loom_tensor *scaled_loss; /* what loom_backward starts from: loss, or loss * the loss scale (amp) */
    loom_plan *plan;
    int batch;
} model_graph;

static loom_status build_graph(loom_ctx *ctx, const loom_train_desc *d, const loom_model_desc *md, bool train,
                               int batch, uint64_t seed, model_graph *m) {
    const loom_dataset *ds = d->train;
    loom_status st = loom_graph_create(ctx, &(loom_graph_desc){.seed = seed}, &m->g);
    if (st != LOOM_OK) return st;
    m->batch = batch;
    m->x = loom_input(m->g, "x", LOOM_F32, 4, (int64_t[]){batch, ds->c, ds->h, ds->w});
    m->y = loom_input(m->g, "y", LOOM_I32, 1, (int64_t[]){batch});
    if ((st = loom_graph_status(m->g)) != LOOM_OK) return st;
    if (d->amp != LOOM_F32 && (st = loom_graph_set_autocast(m->g, d->amp)) != LOOM_OK) return st;
    if ((st = loom_model_build(m->g, md, m->x, train, &m->logits)) != LOOM_OK) return st;
    /* mixed precision: the logits are read (accuracy) and the loss taken in f32 */
    if (m->logits->dtype != LOOM_F32) m->logits = loom_cast(m->g, m->logits, LOOM_F32);
    m->loss = loom_cross_entropy(m->g, m->logits, m->y, train ? d->label_smoothing : 0.0, -100);
    if ((st = loom_graph_status(m->g)) != LOOM_OK) return st;
    loom_keep(m->loss);
    loom_keep(m->logits);
    m->scaled_loss = m->loss;
    if (train && (d->amp == LOOM_F16 || (d->amp == LOOM_BF16 && d->bf16_loss_scaling))) {
        m->scaled_loss = loom_scale_loss(m->g, m->loss, &d->loss_scale);
        if ((st = loom_graph_status(m->g)) != LOOM_OK) return st;
    }
    return LOOM_OK;
}

/* ---- transfer learning: freezing, the head's LR group, init_from ---- */
typedef struct head_rule {
    char pattern[80];
    double mult;
    int head; /* parameters the pattern matched (counted by the optimizer's calls) */
} head_rule;

static double head_lr_mult(void *user, const char *name) {
    head_rule *h = user;
    if (fnmatch(h->pattern, name, 0) == 0) {
        h->head++;
        return 1.0;
    }
    return h->mult;
}

/* Before loom_backward: freeze the parameters matching d->freeze, and with
 * d->backbone_lr_mult point od's LR multiplier at the head rule. */
static loom_status prepare_transfer(loom_ctx *ctx, loom_graph *g, const loom_train_desc *d, loom_optimizer_desc *od,
                                    head_rule *hr, int *frozen, int64_t *frozen_numel) {
    *frozen = 0, *frozen_numel = 0;
    for (int k = 0; d->freeze && d->freeze[k]; k++) {
        int hits = 0;
        for (int i = 0; i < g->n; i++) {
            loom_tensor *t = g->nodes[i];
            if (t->leaf != LOOM__PARAM || fnmatch(d->freeze[k], t->name, 0) != 0) continue;
            hits++;
            if (!t->requires_grad) continue; /* frozen by an earlier pattern */
            loom_status st = loom_set_requires_grad(t, false);
            if (st != LOOM_OK) return st;
            (*frozen)++, *frozen_numel += loom_tensor_numel(t);
        }
        if (!hits)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: freeze pattern '%s' matches no parameter of model '%s'",
                             d->freeze[k], d->model.arch ? d->model.arch : "?");
    }
    if (!(d->backbone_lr_mult >= 0) || !isfinite(d->backbone_lr_mult))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: backbone LR multiplier %g must be finite and >= 0 (0 = 1)",
                         d->backbone_lr_mult);
    if (d->backbone_lr_mult <= 0) return LOOM_OK;
    *hr = (head_rule){.mult = d->backbone_lr_mult};
    if (d->head) {
        if (strlen(d->head) >= sizeof hr->pattern)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: head pattern '%.80s...' is longer than %zu bytes", d->head,
                             sizeof hr->pattern - 1);
        snprintf(hr->pattern, sizeof hr->pattern, "%s", d->head);
    } else {
        /* the last fc layer: "fc2.weight" -> "fc2.*" */
        const char *last = NULL;
        for (int i = 0; i < g->n; i++)
            if (g->nodes[i]->leaf == LOOM__PARAM && !strncmp(g->nodes[i]->name, "fc", 2)) last = g->nodes[i]->name;
        if (!last)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: a backbone LR multiplier needs a head, and model '%s' has no fc layer: give a head pattern",
                             d->model.arch ? d->model.arch : "?");
        size_t k = strcspn(last, ".");
        snprintf(hr->pattern, sizeof hr->pattern, "%.*s.*", (int)k, last);
    }
    int hits = 0;
    for (int i = 0; i < g->n; i++)
        hits += g->nodes[i]->leaf == LOOM__PARAM && fnmatch(hr->pattern, g->nodes[i]->name, 0) == 0;
    if (!hits)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: head pattern '%s' matches no parameter of model '%s'",
                         hr->pattern, d->model.arch ? d->model.arch : "?");
    od->lr_mult = head_lr_mult;
    od->lr_mult_user = hr;
    return LOOM_OK;
}

/* After compiling: the model's weights from d->init_from (shape mismatches skipped). */
static loom_status load_init(loom_ctx *ctx, loom_plan *plan, const loom_train_desc *d, loom_checkpoint_report *rep) {
    loom_checkpoint_load_desc ld = {.skip_mismatched = true, .weights_only = true, .name_map = d->init_map};
    loom_status st = loom_checkpoint_load_ex(plan, d->init_from, &ld, rep, NULL);
    if (st == LOOM_OK && rep->loaded == 0)
        st = loom__err(ctx, LOOM_ERR_FORMAT,
                       "train: nothing of '%s' fits the model (%d tensors unexpected, e.g. '%s'; %d mismatched): check the name map",
                       d->init_from, rep->unexpected, rep->unexpected ? rep->unexpected_names[0] : "-", rep->mismatched);
    if (st == LOOM_OK && d->on_init) d->on_init(d->user, rep);
    return st;
}

static void free_graph(model_graph *m) {
    loom_plan_destroy(m->plan);
    loom_graph_destroy(m->g);
    memset(m, 0, sizeof *m);
}

/* The number of correct argmax predictions among the first n rows. */
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

/* Evaluate on ds: mean loss and accuracy. The last partial batch is padded
 * with ignored rows (label -100), which neither the loss nor the count sees. */
static loom_status evaluate(loom_ctx *ctx, model_graph *m, const loom_dataset *ds, const loom_train_desc *d,
                            float *xbuf, int32_t *ybuf, float *logits, double *loss, double *acc) {
    loom_batch_iter *it;
    loom_batch_iter_desc id = {.batch = m->batch, .mean = d->mean, .std = d->std};
    loom_status st = loom_batch_iter_create(ctx, ds, &id, &it);
    if (st != LOOM_OK) return st;
    size_t per = (size_t)ds->c * (size_t)ds->h * (size_t)ds->w;
    int classes = (int)loom_tensor_dim(m->logits, 1);
    double loss_sum = 0;
    int64_t correct = 0, seen = 0;
    int n;
    while (st == LOOM_OK && (d->max_eval <= 0 || seen < d->max_eval) && (n = loom_batch_iter_next(it, xbuf, ybuf)) > 0) {
        for (int i = n; i < m->batch; i++) {
            memset(xbuf + (size_t)i * per, 0, per * sizeof *xbuf);
            ybuf[i] = -100;
        }
        float l;
        if ((st = loom_plan_write(m->plan, m->x, xbuf, (size_t)m->batch * per * sizeof *xbuf)) != LOOM_OK ||
            (st = loom_plan_write(m->plan, m->y, ybuf, (size_t)m->batch * sizeof *ybuf)) != LOOM_OK ||
            (st = loom_plan_run(m->plan)) != LOOM_OK || (st = loom_plan_read(m->plan, m->loss, &l, sizeof l)) != LOOM_OK ||
            (st = loom_plan_read(m->plan, m->logits, logits, (size_t)m->batch * (size_t)classes * sizeof *logits)) != LOOM_OK)
            break;
        loss_sum += (double)l * n;
        correct += count_correct(logits, ybuf, n, classes);
        seen += n;
    }
    loom_batch_iter_destroy(it);
    *loss = seen ? loss_sum / (double)seen : NAN;
    *acc = seen ? (double)correct / (double)seen : NAN;
    return st;
}

/* A non-negative integer from the checkpoint's metadata. */
static loom_status meta_int(loom_ctx *ctx, loom_safetensors *f, const char *path, const char *key, int64_t *out) {
    const char *v = loom_safetensors_meta(f, key);
    char *end = NULL;
    long long x = v ? strtoll(v, &end, 10) : -1;
    if (!v || end == v || *end || x < 0)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: metadata '%s' is %s%s%s, expected a non-negative integer", path, key,
                         v ? "'" : "missing", v ? v : "", v ? "'" : "");
    *out = x;
    return LOOM_OK;
}

static loom_status copy_dataset(loom_ctx *ctx, const loom_dataset *src, loom_dataset *dst) {
    size_t per = (size_t)src->c * (size_t)src->h * (size_t)src->w;
    *dst = *src;
    dst->pixels = malloc((size_t)src->n * per);
    dst->labels = malloc((size_t)src->n * sizeof *dst->labels);
    if (!dst->pixels || !dst->labels) {
        free(dst->pixels), free(dst->labels);
        memset(dst, 0, sizeof *dst);
        return loom__err(ctx, LOOM_ERR_OOM, "train: out of memory for the validation split");
    }
    memcpy(dst->pixels, src->pixels, (size_t)src->n * per);
    memcpy(dst->labels, src->labels, (size_t)src->n * sizeof *dst->labels);
    return LOOM_OK;
}

loom_status loom_train(loom_ctx *ctx, const loom_train_desc *desc, loom_train_result *res) {
    loom_train_desc d = *desc;
    memset(res, 0, sizeof *res);
    const loom_dataset *ds = d.train;
    if (!ds || ds->n < 1) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: no training data");
    if (d.epochs <= 0) d.epochs = 1;
    if (d.batch <= 0) d.batch = 64;
    if (d.eval_batch <= 0) d.eval_batch = 256;
    if (d.eval_every <= 0) d.eval_every = 1;
    if (d.sched.lr <= 0) d.sched.lr = 0.01;
    if (d.std <= 0) d.mean = 0.2860f, d.std = 0.3530f;
    d.backend_desc.deterministic = d.backend_desc.deterministic || d.deterministic;
    if (d.batch > ds->n)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: batch %d is larger than the %lld training samples", d.batch,
                         (long long)ds->n);
    if (!(d.label_smoothing >= 0 && d.label_smoothing < 1))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: label smoothing %g must be in [0, 1)", d.label_smoothing);
    if (!(d.val_split >= 0 && d.val_split < 1))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: validation split %g must be in [0, 1)", d.val_split);
    if (d.train_source && d.val_split > 0)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                         "train: a validation split (%g) of a training source '%s' is not supported; give a val set",
                         d.val_split, d.train_source->name);
    if (d.early_stop < 0 || !(d.min_delta >= 0) ||
        (d.monitor != LOOM_MONITOR_VAL_LOSS && d.monitor != LOOM_MONITOR_VAL_ACC))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: early stopping patience %d must be >= 0, min_delta %g >= 0, monitor %d val_loss (0) or val_acc (1)",
                         d.early_stop, d.min_delta, (int)d.monitor);
    if (d.early_stop > 0 && !d.val && d.val_split <= 0)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: early stopping (patience %d) needs a validation set: give val or val_split",
                         d.early_stop);
    loom_model_desc md = d.model;
    if (!md.in_c) md.in_c = ds->c, md.in_h = ds->h, md.in_w = ds->w;
    if (!md.num_classes) md.num_classes = ds->num_classes > 2 ? ds->num_classes : 2;
    if (d.test && d.test->num_classes > md.num_classes) md.num_classes = d.test->num_classes;
    if (d.test && (d.test->c != ds->c || d.test->h != ds->h || d.test->w != ds->w))
        return loom__err(ctx, LOOM_ERR_SHAPE, "train: test samples are %dx%dx%d but training samples %dx%dx%d",
                         d.test->c, d.test->h, d.test->w, ds->c, ds->h, ds->w);
    if (d.val && (d.val->c != ds->c || d.val->h != ds->h || d.val->w != ds->w))
        return loom__err(ctx, LOOM_ERR_SHAPE, "train: validation samples are %dx%dx%d but training samples %dx%dx%d",
                         d.val->c, d.val->h, d.val->w, ds->c, ds->h, ds->w);

    /* a resumed run takes its seed and counters from the checkpoint */
    loom_safetensors *ck = NULL;
    loom_status st = LOOM_OK;
    if (d.resume_path) {
        if ((st = loom_safetensors_open(ctx, d.resume_path, &ck)) != LOOM_OK) return st;
        if (!loom_safetensors_meta(ck, "loom.epoch") || !loom_safetensors_meta(ck, "loom.seed")) {
            loom_safetensors_close(ck);
            return loom__err(ctx, LOOM_ERR_FORMAT, "%s: not a loom training checkpoint (no loom.epoch/loom.seed metadata)",
                             d.resume_path);
        }
        int64_t seed = 0;
        if ((st = meta_int(ctx, ck, d.resume_path, "loom.seed", &seed)) != LOOM_OK) {
            loom_safetensors_close(ck);
            return st;
        }
        d.seed = (uint64_t)seed;
    }

    /* the validation split: a seeded shuffle of a copy of the training set */
    loom_dataset split_train = {0}, split_val = {0};
    if (!d.val && d.val_split > 0) {
        int64_t nv = (int64_t)llround(d.val_split * (double)ds->n);
        if (nv < 1 || nv >= ds->n || ds->n - nv < d.batch) {
            if (ck) loom_safetensors_close(ck);
            return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                             "train: validation split %g of %lld samples leaves %lld for validation and %lld for training (batch %d)",
                             d.val_split, (long long)ds->n, (long long)nv, (long long)(ds->n - nv), d.batch);
        }
        if ((st = copy_dataset(ctx, ds, &split_train)) != LOOM_OK ||
            (st = loom_dataset_split(ctx, &split_train, nv, d.seed, &split_val)) != LOOM_OK) {
            loom_dataset_free(&split_train);
            if (ck) loom_safetensors_close(ck);
            return st;
        }
        ds = d.train = &split_train;
        d.val = &split_val;
    }
    res->val_n = d.val ? d.val->n : 0;
    loom__snapshot best = {0};
    FILE *csv = NULL;
    loom_tb_writer *tb = NULL;
    loom_early_stop stopper;
    loom_early_stop_init(&stopper, d.early_stop, d.min_delta, d.monitor == LOOM_MONITOR_VAL_ACC);

    const char *bname = d.backend && strcmp(d.backend, "auto") ? d.backend : loom_pick_backend(ctx, NULL);
    loom_backend *be = NULL;
    model_graph tr = {0}, ev = {0};
    loom_optimizer *opt = NULL;
    loom_source *tsrc = NULL;
    loom_loader *loader = NULL;
    float *xbuf = NULL, *logits = NULL;
    int32_t *ybuf = NULL;
    if ((st = loom_backend_create(ctx, bname, &d.backend_desc, &be)) != LOOM_OK) goto done;
    res->backend = loom_backend_name(be);

    if ((st = build_graph(ctx, &d, &md, true, d.batch, d.seed, &tr)) != LOOM_OK) goto done;
    head_rule hr = {.head = 0};
    if ((st = prepare_transfer(ctx, tr.g, &d, &d.opt, &hr, &res->frozen, &res->frozen_numel)) != LOOM_OK) goto done;
    if (d.frozen_16bit) {
        if (d.amp == LOOM_F32 || !res->frozen) {
            st = loom__err(ctx, LOOM_ERR_INVALID_ARG, "train: frozen_16bit keeps frozen parameters in 16 bits only: it "
                           "needs amp (fp16 or bf16) and frozen parameters (freeze)");
            goto done;
        }
        res->frozen_16bit = loom__autocast_frozen_lowp(tr.g, NULL, &res->frozen_16bit_saved_bytes);
    }
    if ((st = loom_backward(tr.g, tr.scaled_loss)) != LOOM_OK) goto done;
    if ((st = loom_optimizer_create(tr.g, &d.opt, &opt)) != LOOM_OK) goto done;
    loom_optimizer_decay_counts(opt, &res->decayed, &res->not_decayed);
    res->trained = loom_optimizer_param_count(opt);
    res->head_params = hr.head;
    if ((st = loom_plan_compile(tr.g, be, NULL, &tr.plan)) != LOOM_OK) goto done;
    if (d.profile && (st = loom_plan_set_profiling(tr.plan, true)) != LOOM_OK) goto done;
    int64_t eval_n = d.test ? d.test->n : 0;
    if (d.val && d.val->n > eval_n) eval_n = d.val->n;
    int eb = eval_n ? (d.eval_batch < eval_n ? d.eval_batch : (int)eval_n) : 0;
    if (eval_n) {
        if ((st = build_graph(ctx, &d, &md, false, eb, d.seed, &ev)) != LOOM_OK) goto done;
        int64_t saved_ev = 0;
        if (res->frozen_16bit) loom__autocast_frozen_lowp(ev.g, tr.g, &saved_ev); /* the same parameters as tr */
        if ((st = loom_plan_compile(ev.g, be, &(loom_plan_desc){.share = tr.plan}, &ev.plan)) != LOOM_OK) goto done;
    }
    loom_plan_memory m1, m2 = {0};
    loom_plan_memory_stats(tr.plan, &m1);
    if (ev.plan) loom_plan_memory_stats(ev.plan, &m2);
    res->peak_bytes = m1.arena_bytes + m1.persistent_bytes + m2.arena_bytes + m2.persistent_bytes;
    res->train_memory = m1;

    if (d.init_from && !ck && (st = load_init(ctx, tr.plan, &d, &res->init)) != LOOM_OK) goto done;
    int start_epoch = 0;
    if (ck) {
        /* strict: a checkpoint of another model or optimizer is an error */
        loom_checkpoint_load_desc ld = {.strict = true};
        int64_t ep, pstep, osteps, omicro;
        if ((st = meta_int(ctx, ck, d.resume_path, "loom.epoch", &ep)) != LOOM_OK ||
            (st = meta_int(ctx, ck, d.resume_path, "loom.plan_step", &pstep)) != LOOM_OK ||
            (st = meta_int(ctx, ck, d.resume_path, "loom.opt_steps", &osteps)) != LOOM_OK ||
            (st = meta_int(ctx, ck, d.resume_path, "loom.opt_micro", &omicro)) != LOOM_OK ||
            (st = loom_checkpoint_load_ex(tr.plan, d.resume_path, &ld, NULL, NULL)) != LOOM_OK)
            goto done;
        start_epoch = ep > INT32_MAX ? INT32_MAX : (int)ep;
        loom_plan_set_step(tr.plan, (uint64_t)pstep);
        loom_optimizer_set_counters(opt, osteps, omicro);
    }

    size_t per = (size_t)ds->c * (size_t)ds->h * (size_t)ds->w;
    int maxb = d.batch > eb ? d.batch : eb;
    xbuf = malloc((size_t)maxb * per * sizeof *xbuf);
    ybuf = malloc((size_t)maxb * sizeof *ybuf);
    logits = malloc((size_t)maxb * (size_t)md.num_classes * sizeof *logits);
    if (!xbuf || !ybuf || !logits) {
        st = loom__err(ctx, LOOM_ERR_OOM, "train: out of memory for batch buffers");
        goto done;
    }
    /* training batches: the threaded loader, in pinned staging memory; its
     * order and values are loom_batch_iter's (shuffled from (seed, epoch),
     * the same normalisation), for every worker count */
    if (!d.train_source && (st = loom_source_wrap(ctx, ds, &tsrc)) != LOOM_OK) goto done;
    loom_loader_desc lde = {.src = d.train_source ? d.train_source : tsrc, .batch = d.batch, .shuffle = true,
                            .drop_last = true, .seed = d.seed, .workers = d.workers, .prefetch = d.prefetch,
                            .mean = &d.mean, .std = &d.std, .nstat = 1, .backend = be,
                            .steps = d.train_source ? d.train_steps : NULL,
                            .nsteps = d.train_source ? d.train_nsteps : 0};
    if ((st = loom_loader_create(ctx, &lde, &loader)) != LOOM_OK) goto done;
    if (d.train_source) {
        int c;
        int64_t h, w;
        loom_loader_shape(loader, &c, &h, &w);
        if (c != ds->c || h != ds->h || w != ds->w || d.train_source->n != ds->n) {
            st = loom__err(ctx, LOOM_ERR_SHAPE,
                           "train: the training source '%s' gives %lld samples of %dx%lldx%lld through its transforms, "
                           "but the training dataset has %lld of %dx%dx%d",
                           d.train_source->name, (long long)d.train_source->n, c, (long long)h, (long long)w,
                           (long long)ds->n, ds->c, ds->h, ds->w);
            goto done;
        }
    }
    int64_t steps = loom_loader_batches(loader);
    if (d.max_steps > 0 && d.max_steps < steps) steps = d.max_steps;

    double t_all = 0;
    int64_t samples_all = 0;
    res->epochs_run = start_epoch;
    res->test_loss = res->test_acc = res->val_loss = res->val_acc = NAN;
    if (d.log_csv) {
        if (!(csv = fopen(d.log_csv, start_epoch ? "a" : "w"))) {
            st = loom__err(ctx, LOOM_ERR_IO, "train: cannot write the CSV log '%s': %s", d.log_csv, strerror(errno));
            goto done;
        }
        if (!start_epoch)
            fprintf(csv, "kind,epoch,step,loss,accuracy,lr,samples_per_s,val_loss,val_acc,test_loss,test_acc,seconds\n");
    }
    if (d.tensorboard_dir && (st = loom_tb_open(ctx, d.tensorboard_dir, &tb)) != LOOM_OK) goto done;
    double plateau_scale = 1.0;
    bool scaling = tr.scaled_loss != tr.loss;
    int64_t skipped0 = 0; /* the scaler's skipped-step count at the start of the epoch */
    if (scaling) st = loom_loss_scale_read(tr.plan, NULL, &skipped0);
    for (int e = start_epoch; e < d.epochs && st == LOOM_OK; e++) {
        double t0 = loom__now_s(), loss_sum = 0, lr = 0;
        int64_t correct = 0;
        loom_loader_begin(loader, e, 0, steps);
        int64_t s = 0;
        for (; s < steps; s++) {
            loom_loader_batch lb;
            if ((st = loom_loader_next(loader, &lb)) != LOOM_OK) break;
            int n = lb.count;
            if (n <= 0) break;
            float l;
            lr = loom_schedule_lr(&d.sched, loom_optimizer_steps(opt)) * plateau_scale;
            if ((st = loom_plan_write(tr.plan, tr.x, lb.x, (size_t)d.batch * per * sizeof *lb.x)) != LOOM_OK ||
                (st = loom_plan_write(tr.plan, tr.y, lb.y, (size_t)d.batch * sizeof *lb.y)) != LOOM_OK ||
                (st = loom_optimizer_begin_step(opt, tr.plan, lr)) != LOOM_OK || (st = loom_plan_run(tr.plan)) != LOOM_OK ||
                (st = loom_plan_read(tr.plan, tr.loss, &l, sizeof l)) != LOOM_OK ||
                (st = loom_plan_read(tr.plan, tr.logits, logits, (size_t)d.batch * (size_t)md.num_classes * sizeof *logits)) != LOOM_OK)
                break;
            int64_t ok_now = count_correct(logits, lb.y, n, md.num_classes);
            correct += ok_now;
            if (!isfinite(l)) {
                st = loom__err(ctx, LOOM_ERR_STATE, "train: the loss became %g at epoch %d step %lld (lr %g): diverged",
                               (double)l, e + 1, (long long)s + 1, lr);
                break;
            }
            loss_sum += l;
            if (csv || tb) {
                int64_t gstep = loom_optimizer_micro_steps(opt);
                double el = loom__now_s() - t0, sps = (double)(s + 1) * d.batch / el, acc = (double)ok_now / n;
                if (csv)
                    fprintf(csv, "step,%d,%lld,%.6g,%.6g,%.6g,%.6g,,,,,%.3f\n", e + 1, (long long)gstep, (double)l, acc, lr,
                            sps, el);
                if (tb && ((st = loom_tb_scalar(ctx, tb, "train/loss", gstep, l)) != LOOM_OK ||
                           (st = loom_tb_scalar(ctx, tb, "train/accuracy", gstep, acc)) != LOOM_OK ||
                           (st = loom_tb_scalar(ctx, tb, "train/lr", gstep, lr)) != LOOM_OK ||
                           (st = loom_tb_scalar(ctx, tb, "train/samples_per_s", gstep, sps)) != LOOM_OK))
                    break;
            }
            if (d.on_progress) {
                double el = loom__now_s() - t0;
                loom_train_progress p = {e + 1, d.epochs, s + 1, steps, loss_sum / (double)(s + 1),
                                         (double)(s + 1) * d.batch / el, el / (double)(s + 1) * (double)(steps - s - 1), lr};
                d.on_progress(d.user, &p);
            }
        }
        if (st != LOOM_OK) break;
        double el = loom__now_s() - t0;
        t_all += el;
        samples_all += s * d.batch;
        loom_epoch_stats es = {e + 1, d.epochs, s ? loss_sum / (double)s : NAN, NAN, NAN, el, s * d.batch / el, lr,
                               NAN, NAN, s ? (double)correct / (double)(s * d.batch) : NAN, false, 0, 0, 0, 0, NAN, 0};
        loom_loader_stats ls;
        loom_loader_stats_get(loader, &ls);
        double busy = ls.wait_s + ls.compute_s;
        es.data_wait_pct = busy > 0 ? 100 * ls.wait_s / busy : 0;
        es.load_ms = ls.batches ? 1e3 * ls.load_s / (double)ls.batches : 0;
        es.compute_ms = ls.batches > 1 ? 1e3 * ls.compute_s / (double)(ls.batches - 1) : 0;
        es.workers = ls.workers;
        es.loss_scale = NAN;
        if (scaling) {
            int64_t skipped;
            if ((st = loom_loss_scale_read(tr.plan, &es.loss_scale, &skipped)) != LOOM_OK) break;
            es.skipped_steps = skipped - skipped0;
            skipped0 = skipped;
        }
        if (d.val && (st = evaluate(ctx, &ev, d.val, &d, xbuf, ybuf, logits, &es.val_loss, &es.val_acc)) != LOOM_OK) break;
        bool eval_now = d.test && ((e + 1) % d.eval_every == 0 || e + 1 == d.epochs);
        if (eval_now &&
            (st = evaluate(ctx, &ev, d.test, &d, xbuf, ybuf, logits, &es.test_loss, &es.test_acc)) != LOOM_OK)
            break;
        res->epochs_run = e + 1;
        res->train_loss = es.train_loss;
        if (eval_now) res->test_loss = es.test_loss, res->test_acc = es.test_acc;
        if (d.val) res->val_loss = es.val_loss, res->val_acc = es.val_acc;
        if (d.plateau && (d.val || eval_now)) {
            loom_plateau_step(d.plateau, d.val ? es.val_loss : es.test_loss);
            plateau_scale = d.plateau->base_lr > 0 ? d.plateau->lr / d.plateau->base_lr : 1.0;
        }
        if (d.early_stop > 0) {
            es.best = loom_early_stop_update(&stopper, d.monitor == LOOM_MONITOR_VAL_ACC ? es.val_acc : es.val_loss);
            res->best_epoch = start_epoch + stopper.best_epoch;
            if (es.best && !d.keep_last && (st = loom__snapshot_take(&best, tr.plan, tr.g, true)) != LOOM_OK) break;
        }
        if (d.save_path) {
            char v[5][32];
            snprintf(v[0], 32, "%d", e + 1);
            snprintf(v[1], 32, "%llu", (unsigned long long)d.seed);
            snprintf(v[2], 32, "%llu", (unsigned long long)loom_plan_step(tr.plan));
            snprintf(v[3], 32, "%lld", (long long)loom_optimizer_steps(opt));
            snprintf(v[4], 32, "%lld", (long long)loom_optimizer_micro_steps(opt));
            const char *meta[] = {"loom.epoch", v[0], "loom.seed", v[1], "loom.plan_step", v[2], "loom.opt_steps", v[3],
                                  "loom.opt_micro", v[4], "loom.model", md.arch, NULL};
            if ((st = loom_checkpoint_save(tr.plan, d.save_path, meta)) != LOOM_OK) break;
        }
        if (csv) {
            fprintf(csv, "epoch,%d,%lld,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.3f\n", e + 1,
                    (long long)loom_optimizer_micro_steps(opt), es.train_loss, es.train_acc, lr, es.samples_per_s,
                    es.val_loss, es.val_acc, es.test_loss, es.test_acc, el);
            fflush(csv);
        }
        if (tb) {
            const char *tags[] = {"epoch/train_loss", "epoch/train_acc", "epoch/val_loss",      "epoch/val_acc",
                                  "epoch/test_loss",  "epoch/test_acc",  "epoch/lr",            "epoch/samples_per_s",
                                  "epoch/data_wait_pct", "epoch/loss_scale", "epoch/skipped_steps"};
            double vals[] = {es.train_loss, es.train_acc, es.val_loss, es.val_acc, es.test_loss, es.test_acc, lr,
                             es.samples_per_s, es.data_wait_pct, es.loss_scale, scaling ? (double)es.skipped_steps : NAN};
            for (int k = 0; k < 11 && st == LOOM_OK; k++)
                if (!isnan(vals[k])) st = loom_tb_scalar(ctx, tb, tags[k], e + 1, vals[k]);
            if (st != LOOM_OK) break;
        }
        if (d.on_epoch) d.on_epoch(d.user, &es);
        if (stopper.stop && e + 1 < d.epochs) {
            res->stopped_early = true;
            break;
        }
    }
    /* early stopping: back to the best epoch's weights, measured again */
    if (st == LOOM_OK && d.early_stop > 0 && !d.keep_last && best.n && res->best_epoch != res->epochs_run) {
        if ((st = loom__snapshot_restore(&best, tr.plan)) != LOOM_OK ||
            (st = evaluate(ctx, &ev, d.val, &d, xbuf, ybuf, logits, &res->val_loss, &res->val_acc)) != LOOM_OK)
            goto done;
        if (d.test && (st = evaluate(ctx, &ev, d.test, &d, xbuf, ybuf, logits, &res->test_loss, &res->test_acc)) != LOOM_OK)
            goto done;
        res->restored_best = true;
    }
    res->seconds = t_all;
    res->samples_per_s = t_all > 0 ? (double)samples_all / t_all : 0;
    res->steps = opt ? loom_optimizer_steps(opt) : 0;
    if (d.profile) res->n_profile = loom_plan_profile(tr.plan, res->profile, 16);
done:
    loom_loader_destroy(loader);
    loom_source_destroy(tsrc);
    free(xbuf), free(ybuf), free(logits);
    free_graph(&ev);
    free_graph(&tr);
    loom_optimizer_destroy(opt);
    loom_backend_destroy(be);
    if (ck) loom_safetensors_close(ck);
    loom__snapshot_free(&best);
    if (csv && fclose(csv) != 0 && st == LOOM_OK)
        st = loom__err(ctx, LOOM_ERR_IO, "train: writing the CSV log '%s' failed", d.log_csv);
    loom_tb_close(tb);
    loom_dataset_free(&split_train);
    loom_dataset_free(&split_val);
    return st;
}

/* ---- the LR range test for a training description ---- */
loom_status loom_lr_find(loom_ctx *ctx, const loom_train_desc *desc, const loom_lr_find_desc *fd, loom_lr_find_result *r) {
    loom_train_desc d = *desc;
    memset(r, 0, sizeof *r);
    r->suggestion_index = -1;
    r->suggestion = NAN;
    const loom_dataset *ds = d.train;
    if (!ds || ds->n < 1) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "lr-find: no training data");
    if (d.batch <= 0) d.batch = 64;
    if (d.std <= 0) d.mean = 0.2860f, d.std = 0.3530f;
    d.backend_desc.deterministic = d.backend_desc.deterministic || d.deterministic;
    if (d.batch > ds->n)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "lr-find: batch %d is larger than the %lld training samples", d.batch,
                         (long long)ds->n);
    loom_model_desc md = d.model;
    if (!md.in_c) md.in_c = ds->c, md.in_h = ds->h, md.in_w = ds->w;
    if (!md.num_classes) md.num_classes = ds->num_classes > 2 ? ds->num_classes : 2;
    const char *bname = d.backend && strcmp(d.backend, "auto") ? d.backend : loom_pick_backend(ctx, NULL);
    loom_backend *be = NULL;
    model_graph tr = {0};
    loom_optimizer *opt = NULL;
    loom_batch_iter *it = NULL;
    loom_status st;
    if ((st = loom_backend_create(ctx, bname, &d.backend_desc, &be)) != LOOM_OK) goto done;
    r->backend = loom_backend_name(be);
    head_rule hr = {.head = 0};
    int frozen;
    int64_t frozen_numel;
    loom_checkpoint_report rep;
    if ((st = build_graph(ctx, &d, &md, true, d.batch, d.seed, &tr)) != LOOM_OK ||
        (st = prepare_transfer(ctx, tr.g, &d, &d.opt, &hr, &frozen, &frozen_numel)) != LOOM_OK ||
        (st = loom_backward(tr.g, tr.scaled_loss)) != LOOM_OK || (st = loom_optimizer_create(tr.g, &d.opt, &opt)) != LOOM_OK ||
        (st = loom_plan_compile(tr.g, be, NULL, &tr.plan)) != LOOM_OK)
        goto done;
    if (d.init_from && (st = load_init(ctx, tr.plan, &d, &rep)) != LOOM_OK) goto done;
    loom_batch_iter_desc id = {.batch = d.batch, .shuffle = true, .drop_last = true, .seed = d.seed, .mean = d.mean, .std = d.std};
    if ((st = loom_batch_iter_create(ctx, ds, &id, &it)) != LOOM_OK) goto done;
    const char *be_name = r->backend;
    st = loom_lr_find_plan(tr.plan, opt, tr.x, tr.y, tr.loss, it, fd, r);
    r->backend = be_name;
done:
    loom_batch_iter_destroy(it);
    free_graph(&tr);
    loom_optimizer_destroy(opt);
    loom_backend_destroy(be);
    return st;
}
