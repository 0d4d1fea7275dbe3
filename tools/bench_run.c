/* tools/bench_run.c — one short training run for `loom compare` and `loom
 * bench`: a seeded synthetic image set (pixels drawn around a per-class
 * level, so the loss falls), the trainer with the given backend, loader,
 * precision and per-op timers, and what it measured. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_run.h"
#include "cli_num.h"

static loom_status synthetic(const br_cfg *c, int64_t n, loom_dataset *ds) {
    memset(ds, 0, sizeof *ds);
    ds->n = n, ds->c = c->channels, ds->h = c->size, ds->w = c->size, ds->num_classes = 10;
    size_t per = (size_t)c->channels * (size_t)c->size * (size_t)c->size;
    ds->pixels = malloc((size_t)n * per);
    ds->labels = malloc((size_t)n * sizeof *ds->labels);
    if (!ds->pixels || !ds->labels) return LOOM_ERR_OOM;
    uint64_t s = c->seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        int32_t y = (int32_t)(i % 10);
        ds->labels[i] = y;
        for (size_t k = 0; k < per; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            ds->pixels[(size_t)i * per + k] = (uint8_t)(20 * y + (int)((s >> 33) % 64));
        }
    }
    return LOOM_OK;
}

typedef struct steps_seen {
    br_out *out;
    double t_first;          /* elapsed_s after the warm-up step */
    double t_last;
} steps_seen;

static loom_status on_step(void *user, const loom_step_result *s) {
    steps_seen *ss = user;
    if (ss->out->nloss <= BR_MAX_STEPS) ss->out->loss[ss->out->nloss++] = s->loss;
    if (s->step == 1) ss->t_first = s->elapsed_s;
    ss->t_last = s->elapsed_s;
    return LOOM_OK;
}

loom_status br_run(loom_ctx *ctx, const br_cfg *c, br_out *out) {
    memset(out, 0, sizeof *out);
    loom_dataset ds;
    int64_t steps = c->steps + 1; /* the first step compiles kernels and warms caches: not timed */
    /* data parallel: each rank trains its share of the set, `steps` batches */
    loom_status st = synthetic(c, steps * c->batch * loom_dist_world(c->dist), &ds);
    if (st != LOOM_OK) {
        loom_dataset_free(&ds);
        return st;
    }
    steps_seen ss = {.out = out};
    loom_train_observer obs = {.user = &ss, .on_step = on_step};
    loom_trainer_desc d = {0};
    d.data.train = &ds;
    d.data.mean = 0.5f, d.data.std = 0.25f;
    d.data.batch = c->batch;
    d.data.workers = c->workers;
    d.model.net = (loom_model_desc){.arch = c->model, .depth = c->depth, .width = c->width, .small_stem = c->small_stem};
    d.model.amp = c->amp;
    d.optim.opt = (loom_optimizer_desc){.kind = LOOM_OPT_SGD, .momentum = 0.9};
    d.optim.sched = (loom_schedule){.kind = LOOM_SCHED_CONSTANT, .lr = 0.01};
    d.run.backend = c->backend;
    d.run.backend_desc.reproducible = c->reproducible;
    d.run.seed = c->seed;
    d.run.epochs = 1;
    d.run.max_steps = steps;
    d.run.save_path = c->save;
    d.run.dist = c->dist;
    d.log.observers = &obs;
    d.log.nobservers = 1;
    loom_train_result r;
    out->nops = -1;
    loom_trainer *tr = NULL;
    st = loom_trainer_create(ctx, &d, &tr);
    loom_step_result sr = {0};
    /* the per-op timers start after the warm-up step, so their totals are the timed steps' */
    if (st == LOOM_OK) st = loom_trainer_step(tr, &sr);
    if (st == LOOM_OK && c->profile) {
        if (loom_plan_set_profiling(loom_trainer_plan(tr), true) == LOOM_OK) out->nops = 0;
        else if ((st = loom_plan_set_profiling(loom_trainer_plan(tr), false)) == LOOM_OK)
            out->nops = -1; /* no per-op timer on this backend */
    }
    while (st == LOOM_OK && !sr.epoch_done) st = loom_trainer_step(tr, &sr);
    if (st == LOOM_OK) st = loom_trainer_epoch_end(tr, NULL);
    if (st == LOOM_OK && out->nops >= 0) out->nops = loom_plan_profile(loom_trainer_plan(tr), out->ops, 16);
    if (st == LOOM_OK) st = loom_trainer_finish(tr, &r);
    loom_trainer_destroy(tr);
    loom_dataset_free(&ds);
    if (st != LOOM_OK) return st;
    out->backend = r.backend;
    out->peak_bytes = r.peak_bytes;
    out->step_s = c->steps > 0 ? (ss.t_last - ss.t_first) / (double)c->steps : NAN;
    out->samples_per_s = out->step_s > 0 ? c->batch / out->step_s : NAN;
    if (out->nops > 0) {
        double sum = 0;
        for (int i = 0; i < out->nops; i++) sum += out->ops[i].seconds;
        out->op_s = out->ops[0].runs ? sum / (double)out->ops[0].runs : 0;
    } else if (out->nops < 0) {
        out->nops = -1;
    }
    return LOOM_OK;
}

bool br_next_item(const char **s, char *buf, size_t n, bool *bad) {
    *bad = false;
    if (!*s || !**s) return false;
    const char *e = strchr(*s, ',');
    size_t len = e ? (size_t)(e - *s) : strlen(*s);
    if (!len || len >= n) {
        *bad = true;
        return false;
    }
    memcpy(buf, *s, len);
    buf[len] = 0;
    *s = e ? e + 1 : *s + len;
    if (e && !**s) *bad = true; /* a trailing comma */
    return !*bad;
}

void br_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if ((unsigned char)*s >= 0x20) fputc(*s, f);
    }
    fputc('"', f);
}

int br_parse_run_opt(const char *a, const char *v, int max_batch, br_cfg *c) {
    static const struct {
        const char *name;
        long long lo, hi;
    } t[] = {{"--steps", 1, BR_MAX_STEPS - 1}, {"--batch", 1, 0},     {"--size", 1, 4096}, {"--channels", 1, 64},
             {"--depth", 1, 1000},             {"--width", 1, 4096}, {"--seed", 0, INT64_MAX}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        if (strcmp(a, t[i].name)) continue;
        long long x;
        if (!loom_cli_int(v, t[i].lo, i == 1 ? max_batch : t[i].hi, &x)) return -1;
        switch (i) {
        case 0: c->steps = x; break;
        case 1: c->batch = (int)x; break;
        case 2: c->size = (int)x; break;
        case 3: c->channels = (int)x; break;
        case 4: c->depth = (int)x; break;
        case 5: c->width = (int)x; break;
        default: c->seed = (uint64_t)x; break;
        }
        return 1;
    }
    return 0;
}
