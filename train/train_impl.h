/* train/train_impl.h — library-private parts of the training floor shared by
 * its files: the trainer's state (set up in train/setup.c, driven by
 * train/train.c and train/lrfind.c), the host snapshots of a plan's
 * parameters and states (train/snapshot.c) and the built-in observers
 * (train/observers.c). */
#ifndef LOOM_TRAIN_TRAIN_IMPL_H
#define LOOM_TRAIN_TRAIN_IMPL_H

#include "impl.h"
#include "loom/train.h"

/* A host copy of every parameter and state of a graph (weights, batch-norm
 * statistics, optimizer state) as stored in a plan, in their own dtypes. */
typedef struct loom__snapshot {
    int n;
    loom_tensor **t;
    void **data;
} loom__snapshot;

/* Take (or refresh: same graph) the copy; params_only skips optimizer state
 * (states named after a parameter with an optimizer suffix are still
 * states: params_only keeps parameters and batch-norm statistics, i.e. every
 * state whose name does not end in an optimizer suffix). */
loom_status loom__snapshot_take(loom__snapshot *s, loom_plan *plan, loom_graph *g, bool params_only);
loom_status loom__snapshot_restore(const loom__snapshot *s, loom_plan *plan);
void loom__snapshot_free(loom__snapshot *s);

/* A model's graph: its inputs, outputs and compiled plan. */
typedef struct loom__model_graph {
    loom_graph *g;
    loom_tensor *x, *y, *logits, *loss;
    loom_tensor *u8, *prm;    /* device augmentation: the inputs x is computed from (else NULL) */
    loom_tensor *stats;       /* f32 (2): the loss and the count of correct predictions, read back together */
    loom_tensor *scaled_loss; /* what loom_backward starts from: loss, or loss * the loss scale (amp) */
    loom_plan *plan;
    int batch;
} loom__model_graph;
/* Write a training batch's input into m's plan: x (batch * per floats), or
 * with device augmentation the u8 images and the parameter table. */
loom_status loom__train_write_x(loom__model_graph *m, const loom_loader_batch *lb, size_t per);
/* Whether the training loader augments on the device (dd->augment_on, AUTO
 * resolved for backend be; train/augment.c). */
bool loom__train_device_augment(loom_ctx *ctx, const loom_train_data *dd, const loom_backend *be);

/* The head's LR group (transfer.backbone_lr_mult). */
typedef struct loom__head_rule {
    char pattern[80];
    double mult;
    int head; /* parameters the pattern matched (counted by the optimizer's calls) */
} loom__head_rule;

enum { LOOM__MAX_OBSERVERS = 16 };
/* with loss scaling: non-finite losses in a row that count as skipped steps, not divergence */
enum { LOOM__MAX_NONFINITE_RUN = 16 };

struct loom_trainer {
    loom_ctx *ctx;
    loom_trainer_desc d;        /* defaults resolved; data.train/val point at the split when there is one */
    loom_model_desc md;         /* the network, shapes and classes filled from the data */
    loom_dataset split_train, split_val;
    loom_safetensors *ck;       /* the checkpoint to resume from */
    loom_backend *be;
    loom__model_graph tr, ev;   /* training and evaluation graphs (ev.plan NULL: nothing to evaluate) */
    loom_optimizer *opt;
    loom__head_rule hr;
    loom_source *tsrc;          /* data.train wrapped as a source (no train_source) */
    loom_loader *loader;        /* the training batches */
    bool device_augment;        /* the loader augments on the device (loom_train_data.augment_on resolved) */
    float *xbuf, *logits;       /* host buffers for the larger of the two batches */
    int32_t *ybuf;
    size_t per;                 /* values per sample */
    int64_t steps;              /* training batches per epoch */
    loom_train_observer obs[LOOM__MAX_OBSERVERS];
    int nobs;
    /* the run */
    int start_epoch, epoch;     /* 0-based: the first epoch of this run, the current one */
    bool in_epoch, epoch_over, reposition, stopped;
    int64_t s, correct;         /* batches done in the epoch, correct predictions among them */
    double t0, loss_sum, lr;
    double t_all;               /* training seconds over the epochs run here */
    int64_t samples_all;
    double plateau_scale;
    bool scaling;               /* dynamic loss scaling */
    int64_t skipped0;           /* the scaler's skipped-step count at the start of the epoch */
    int nonfinite_run;          /* steps in a row whose loss was not finite (loss scaling) */
    loom_early_stop stopper;
    loom__snapshot best;
    loom_train_result res;
    /* data parallel (train/dist_train.c): the training plan's segments after
     * the first (tr.plan), the gradient buckets and their host staging */
    struct loom__dist_sync *dist_sync;
    int shards;                 /* reproducible shards of the global batch (run.repro_shards resolved); 0 = none */
    int graph_batch;            /* the training graph's batch: data.batch, or one shard's */
};

/* The built-in observers, attached by loom_trainer_create: the CSV log
 * (append: a resumed run, no header) and the TensorBoard writer. */
loom_status loom__csv_observer(loom_ctx *ctx, const char *path, bool append, loom_train_observer *out);
loom_status loom__tb_observer(loom_ctx *ctx, const char *dir, loom_train_observer *out);

/* The text written to mem (open_memstream over *buf, *len) becomes the file
 * at path whole, through core/outfile (train/plot.c). Closes mem, frees *buf. */
loom_status loom__write_whole(loom_ctx *ctx, const char *path, FILE *mem, char **buf, size_t *len);

/* The divergence stop at an epoch's end (train/diverge.c): an error naming
 * the epoch, step, LR and the first parameter or state that is not finite. */
loom_status loom__check_diverged(loom_trainer *t);

/* Data parallel (train/dist_train.c). Active: run.dist has more than one
 * process. Resolve: check run.repro_shards and set shards and graph_batch
 * (before the graphs are built). The sampler's block of this rank (shards
 * over several processes: data.batch; else 0, round-robin). The training
 * graph's seed of this rank (dropout differs per rank; rank 0 and
 * reproducible shards keep run.seed). Compile tr.plan (in segments when
 * active or sharded: one per gradient bucket, then the optimizer's updates
 * from split, its first node). Broadcast rank 0's parameters, states and
 * counters. Train on one batch of data.batch samples at lr (the optimizer's
 * micro-step, the plan runs with the exchanges, the shards): stats receives
 * its loss and correct count. */
bool loom__dist_active(const loom_trainer *t);
loom_status loom__dist_resolve(loom_trainer *t);
int64_t loom__dist_rank_block(const loom_trainer *t);
uint64_t loom__dist_seed(const loom_trainer *t);
loom_status loom__dist_compile(loom_trainer *t, int split);
loom_status loom__dist_broadcast_weights(loom_trainer *t);
loom_status loom__train_batch(loom_trainer *t, const loom_loader_batch *lb, double lr, float stats[2]);
void loom__dist_free(loom_trainer *t);

#endif
