/* tools/bench_run.h — what `loom compare` and `loom bench` share
 * (tools/bench_run.c): a seeded synthetic image set, one short training run
 * on a backend with its per-step losses, step times, per-op times and
 * planned memory, and the option parsing and table output they both use. */
#ifndef LOOM_TOOLS_BENCH_RUN_H
#define LOOM_TOOLS_BENCH_RUN_H

#include <stdio.h>

#include "loom/loom.h"
#include "loom/train.h"

enum { BR_MAX_STEPS = 100000, BR_TOP_OPS = 3 };

/* One run: a model on the synthetic set. */
typedef struct br_cfg {
    const char *model;       /* an image model (loom_model_names) */
    int depth, width;        /* resnets: 0 = the name's */
    bool small_stem;
    int size, channels;      /* the images: size x size, channels */
    int batch;
    int64_t steps;           /* training steps timed (after one warm-up step) */
    uint64_t seed;
    const char *backend;
    int workers;             /* LOOM_WORKERS_SYNC, _AUTO or N */
    loom_dtype amp;          /* LOOM_F32 = off */
    bool profile;            /* per-op timers (when the backend has them) */
    bool reproducible;
    const char *save;        /* checkpoint of the final weights; NULL = none */
    loom_dist *dist;         /* data parallel: this rank's group (every rank runs it); NULL = one process */
} br_cfg;

/* What the run measured. */
typedef struct br_out {
    double loss[BR_MAX_STEPS + 1]; /* per step, the warm-up step first */
    int64_t nloss;
    double step_s;           /* mean seconds per step after the warm-up step */
    double samples_per_s;    /* batch / step_s (this rank's) */
    size_t peak_bytes;       /* planned device memory (train + eval plans) */
    loom_op_time ops[16];    /* top ops by time over the timed steps' share */
    int nops;                /* -1: the backend has no per-op timer */
    double op_s;             /* per-op time summed, per step (0 without timers) */
    const char *backend;     /* the backend's name */
} br_out;

/* The run; on failure the message is in loom_last_error(ctx). */
loom_status br_run(loom_ctx *ctx, const br_cfg *cfg, br_out *out);
/* The run options both commands take (--steps --batch --size --channels
 * --depth --width --seed; --batch up to max_batch) into c: 1 when a was one
 * of them, 0 when not, -1 when its value v is bad. */
int br_parse_run_opt(const char *a, const char *v, int max_batch, br_cfg *c);
/* One comma-separated list item after another: the next item of *s into buf
 * (n bytes); false at the end or when an item is empty or too long. */
bool br_next_item(const char **s, char *buf, size_t n, bool *bad);
/* A JSON string (quotes escaped) to f. */
void br_json_str(FILE *f, const char *s);

#endif
