/* tools/train_data.h — the data of a `loom train` / `loom lr-find` run:
 * Fashion-MNIST / IDX, or .npy images, a packed shard or an ImageFolder
 * decoded once through the --transform steps (tools/train_data.c). */
#ifndef LOOM_TOOLS_TRAIN_DATA_H
#define LOOM_TOOLS_TRAIN_DATA_H
#include <stdbool.h>

#include "loom/loom.h"
#include "loom/train.h"

/* The command-line options the data depends on. */
typedef struct loom__train_data_opts {
    const char *data_dir;  /* NULL = Fashion-MNIST from its standard places */
    const char *transform; /* torchvision-style steps for an ImageFolder, or NULL */
    bool skip_bad;         /* --skip-bad-samples */
    int workers;           /* loader workers (LOOM_WORKERS_AUTO) */
    int classes;           /* --classes N; 0 = the dataset's */
} loom__train_data_opts;

/* The data of a run: Fashion-MNIST / IDX, or through the loader (folder). */
typedef struct loom__run_data {
    loom_dataset train, test;
    bool folder, folder_test;
    loom_source *train_src;
    loom_tf_step train_steps[32];
    int train_nsteps;
} loom__run_data;

loom_status loom__train_load_data(loom_ctx *ctx, const loom__train_data_opts *c, loom__run_data *rd);
void loom__train_free_data(loom__run_data *rd);

#endif
