/* tools/train_data.h — the data of a `loom train` / `loom lr-find` run:
 * Fashion-MNIST / IDX, or .npy images, a packed shard or an ImageFolder
 * decoded once through the --transform steps (tools/train_data.c). */
#ifndef LOOM_TOOLS_TRAIN_DATA_H
#define LOOM_TOOLS_TRAIN_DATA_H
#include <stdbool.h>
#include <stdint.h>

#include "loom/loom.h"
#include "loom/train.h"

/* The command-line options the data depends on. */
typedef struct loom__train_data_opts {
    const char *data_dir;  /* NULL = Fashion-MNIST from its standard places */
    const char *transform; /* torchvision-style steps for an ImageFolder, or NULL */
    bool skip_bad;         /* --skip-bad-samples */
    int workers;           /* loader workers (LOOM_WORKERS_AUTO) */
    int classes;           /* --classes N; 0 = the dataset's */
    double val_split;      /* --val-split: IDX with --transform splits here (the trainer cannot split a source) */
    uint64_t seed;         /* --seed: the split's, as the trainer's own would be */
} loom__train_data_opts;

/* The data of a run: Fashion-MNIST / IDX, or through the loader (folder). */
typedef struct loom__run_data {
    loom_dataset train, test;
    loom_dataset val; /* IDX with --transform and --val-split: the held-out part (n 0 = none) */
    bool folder, folder_test;
    loom_source *train_src;
    loom_tf_step train_steps[32];
    int train_nsteps;
} loom__run_data;

loom_status loom__train_load_data(loom_ctx *ctx, const loom__train_data_opts *c, loom__run_data *rd);
void loom__train_free_data(loom__run_data *rd);
/* --resume PATH of a run already at (or past) `epochs`: prints so, true. An
 * unreadable checkpoint: false (the trainer reports it). */
bool loom__train_resume_done(loom_ctx *ctx, const char *path, long long epochs);
/* --grad-accum against the batches of the run: more than the whole run is an
 * error (prints it, returns 2), more than an epoch a warning that says what
 * happens (returns -1: go on). */
int loom__train_check_accum(long long accum, long long batch, long long max_steps, long long epochs, int64_t train_n);

#endif
