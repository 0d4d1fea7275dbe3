/* loom/train.h — the training loop: a model on a dataset, end to end.
 *
 * defines: loom_train_desc, loom_train_progress, loom_epoch_stats,
 *          loom_train_result, loom_train, loom_pick_backend,
 *          loom_early_stop (the early-stopping rule, a pure state machine),
 *          loom_lr_find / loom_lr_find_plan (the LR range test).
 *
 * loom_train builds the training graph (model, cross-entropy with label
 * smoothing, backward, optimizer) and an evaluation graph sharing its
 * weights, compiles both for the backend, and runs epochs: one plan run per
 * micro-batch, the learning rate from the schedule each step, evaluation on
 * the test set, checkpoints after each epoch (atomic), resume from a
 * checkpoint. With the same seed a resumed run continues bitwise as an
 * uninterrupted one would on the CPU backend.
 *
 * Validation and early stopping: with a validation set (desc.val, or
 * desc.val_split holding out a seeded fraction of the training set) the model
 * is evaluated on it after every epoch; with desc.early_stop = PATIENCE,
 * training stops once the monitored metric (validation loss or accuracy) has
 * not improved by more than min_delta for PATIENCE epochs, and the weights
 * (parameters and batch-norm statistics) of the best epoch are restored at
 * the end, from a host copy taken whenever the metric improves.
 *
 * Transfer learning: desc.init_from loads the model's parameters and
 * batch-norm statistics by name from a safetensors file (a loom checkpoint
 * or any file with the same names; desc.init_map renames the file's tensors
 * first) before training. Tensors whose shape differs (a classifier head
 * for another class count) are skipped and keep their fresh initialisation:
 * that replaces the head. The file's optimizer state and step counters are
 * not loaded; result.init reports loaded / missing / unexpected /
 * mismatched tensors. desc.freeze freezes parameters by name pattern
 * (fnmatch): they get no gradient, no update op and no optimizer state.
 * Batch-norm layers whose gamma and beta are frozen still update their
 * running statistics in training mode, as torch does for a module left in
 * train() mode. desc.backbone_lr_mult scales the LR of every trained
 * parameter outside the head (desc.head, by default the last fc layer).
 */
#ifndef LOOM_TRAIN_H
#define LOOM_TRAIN_H

#include "checkpoint.h"
#include "data.h"
#include "loader.h"
#include "nn.h"
#include "optim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_train_progress {
    int epoch, epochs;         /* 1-based epoch */
    int64_t step, steps;       /* batches done / per epoch */
    double loss;               /* running mean of this epoch's training loss */
    double samples_per_s;
    double eta_s;              /* this epoch */
    double lr;
} loom_train_progress;

typedef struct loom_epoch_stats {
    int epoch, epochs;
    double train_loss;         /* mean over the epoch's batches */
    double test_loss, test_acc;/* NaN when not evaluated this epoch */
    double seconds, samples_per_s, lr;
    double val_loss, val_acc;  /* NaN without a validation set */
    double train_acc;          /* accuracy on the epoch's training batches (train mode) */
    bool best;                 /* early stopping: this epoch is the best so far */
    /* the data loader over the epoch's training steps */
    double data_wait_pct;      /* time the step waited for its batch, % of (wait + compute) */
    double load_ms;            /* worker time to load one batch */
    double compute_ms;         /* time per step outside the loader (write, run, read, logs) */
    int workers;               /* loader threads at the end of the epoch (0 = none: synchronous) */
    /* dynamic loss scaling (desc.amp): the scale at the end of the epoch
     * (NaN when off) and the optimizer steps it skipped in this epoch */
    double loss_scale;
    int64_t skipped_steps;
} loom_epoch_stats;

/* ---- early stopping ----
 * The rule (Keras' EarlyStopping): a value improves on the best if it is
 * lower than best - min_delta (maximize: higher than best + min_delta); the
 * first finite value is always an improvement, NaN never is. After
 * `patience` values in a row without improvement, stop is set. */
typedef enum loom_monitor { LOOM_MONITOR_VAL_LOSS, LOOM_MONITOR_VAL_ACC } loom_monitor;

typedef struct loom_early_stop {
    int patience;       /* >= 1 */
    double min_delta;   /* >= 0 */
    bool maximize;
    double best;        /* NaN before the first finite value */
    int best_epoch;     /* 1-based index of the best value, 0 = none yet */
    int seen, bad;      /* values fed; values since the last improvement */
    bool stop;
} loom_early_stop;

void loom_early_stop_init(loom_early_stop *es, int patience, double min_delta, bool maximize);
/* Feed the next epoch's value; true if it is a new best. */
bool loom_early_stop_update(loom_early_stop *es, double value);


typedef struct loom_train_desc {
    const char *backend;           /* NULL or "auto" = loom_pick_backend */
    loom_backend_desc backend_desc;
    loom_model_desc model;         /* in_c/h/w and num_classes default to the data's */
    const loom_dataset *train, *test; /* test may be NULL */
    int epochs;                    /* 0 = 1 */
    int batch;                     /* 0 = 64 */
    int eval_batch;                /* 0 = 256 */
    loom_optimizer_desc opt;
    loom_schedule sched;           /* sched.lr is the base LR (0 = 0.01); times in optimizer steps */
    double label_smoothing;
    uint64_t seed;                 /* fixes init, data order, validation split, dropout */
    bool deterministic;            /* deterministic kernels (see loom_backend_desc.deterministic); set
                                      here or in backend_desc: either turns them on */
    int eval_every;                /* evaluate every N epochs (and after the last); 0 = 1 */
    int64_t max_steps;             /* > 0: stop each epoch after this many batches (short runs) */
    int64_t max_eval;              /* > 0: evaluate on the first batches covering this many samples (short runs) */
    const char *save_path;         /* checkpoint after every epoch (atomic), NULL = none */
    const char *resume_path;       /* continue from this checkpoint, NULL = fresh start */
    float mean, std;               /* input normalisation; std 0 = Fashion-MNIST's (0.2860, 0.3530) */
    bool profile;                  /* time every op of the training step (result.profile) */
    const loom_dataset *val;       /* validation set, evaluated every epoch; NULL = none (or val_split) */
    double val_split;              /* no val and > 0: hold out this fraction of train (seeded by seed) */
    int early_stop;                /* patience in epochs; 0 = off (needs a validation set) */
    double min_delta;              /* early stopping: smallest improvement that counts */
    loom_monitor monitor;          /* early stopping: val loss (default) or val accuracy */
    bool keep_last;                /* early stopping: keep the last weights instead of the best */
    const char *log_csv;           /* CSV log: a "step" row per batch, an "epoch" row per epoch; NULL = none */
    const char *tensorboard_dir;   /* TensorBoard scalars (train/..., epoch/...); NULL = none */
    loom_plateau *plateau;         /* reduce-on-plateau, stepped with the val loss (test loss without a
                                      val set) after each evaluation; it scales the schedule's LR */
    void (*on_progress)(void *user, const loom_train_progress *p); /* after every batch */
    void (*on_epoch)(void *user, const loom_epoch_stats *s);
    void *user;
    /* transfer learning (see the top of this file) */
    const char *init_from;         /* safetensors file to initialise the model from; NULL = none; ignored
                                      when resuming (the checkpoint has everything) */
    const char *const *init_map;   /* name map for init_from: pairs "old", "new", ..., NULL (see
                                      loom_checkpoint_load_desc.name_map: exact names or "prefix.*") */
    const char *const *freeze;     /* NULL-terminated fnmatch patterns of parameter names to freeze;
                                      a pattern that matches no parameter is LOOM_ERR_INVALID_ARG */
    bool frozen_16bit;             /* with amp and freeze: frozen parameters keep only their 16-bit copy
                                      (no f32 master; loaded from f32 files by rounding); the parameters
                                      that have any f32 use stay f32. res->frozen_16bit counts them */
    const char *head;              /* fnmatch pattern of the head's parameters; NULL = the last fc layer
                                      of the model ("fc2.*" for cnn, "fc3.*" for mlp) */
    double backbone_lr_mult;       /* > 0: LR multiplier for the trained parameters outside the head
                                      (0 = 1: one LR for all); it overrides opt.lr_mult */
    void (*on_init)(void *user, const loom_checkpoint_report *r); /* after init_from is loaded */
    /* the training batches' loader (loom/loader.h): worker threads
     * (LOOM_WORKERS_AUTO = 0, the default; LOOM_WORKERS_SYNC; N) and batch
     * slots per worker (0 = 2). Batches are bitwise the same for all. */
    int workers;
    int prefetch;
    /* Training samples from a source through per-sample transforms, drawn
     * anew every epoch (Philox of (seed, epoch, index)): e.g. an ImageFolder
     * with random crops. `train` still gives the shape, class count and
     * sample count (they must match what the source and steps produce) and
     * serves lr-find; NULL = the loader reads `train` itself, without
     * transforms. Not with val_split (the split is of `train`). */
    loom_source *train_source;
    const loom_tf_step *train_steps;
    int train_nsteps;
    /* mixed precision: LOOM_F32 (0, the default) = off; LOOM_F16 or LOOM_BF16
     * builds the model under autocast (loom_graph_set_autocast) with f32
     * master weights. F16 adds dynamic loss scaling (loss_scale; zero =
     * GradScaler's defaults); BF16 runs without scaling unless
     * bf16_loss_scaling is set. */
    loom_dtype amp;
    loom_loss_scale_desc loss_scale;
    bool bf16_loss_scaling;
} loom_train_desc;

typedef struct loom_train_result {
    const char *backend;   /* static name */
    int epochs_run;        /* including resumed ones */
    double train_loss, test_loss, test_acc;
    double samples_per_s;  /* training throughput over all epochs run here */
    double seconds;
    size_t peak_bytes;     /* planned device memory: train + eval plans */
    loom_plan_memory train_memory; /* the training plan's breakdown (params, state, activations, arena) */
    int64_t steps;         /* optimizer steps */
    loom_op_time profile[16]; /* with desc.profile: the top ops of the training step by time */
    int n_profile;
    double val_loss, val_acc; /* of the final weights (the best epoch's when restored); NaN without val */
    int best_epoch;        /* early stopping: the best epoch (1-based), 0 = off */
    bool stopped_early;    /* early stopping ended the run before desc.epochs */
    bool restored_best;    /* the best epoch's weights were restored at the end */
    int64_t val_n;         /* validation samples (after val_split) */
    int decayed, not_decayed; /* parameter tensors with / without weight decay */
    loom_checkpoint_report init; /* init_from: what the load found */
    int frozen;            /* parameter tensors frozen by desc.freeze */
    int64_t frozen_numel;  /* their elements */
    int frozen_16bit;      /* frozen parameters stored in 16 bits only (desc.frozen_16bit) */
    int64_t frozen_16bit_saved_bytes; /* parameter memory that saved (f32 master replaced by the 16-bit copy) */
    int trained;           /* parameter tensors updated by the optimizer */
    int head_params;       /* with backbone_lr_mult: trained parameter tensors of the head (LR x 1) */
} loom_train_result;

loom_status loom_train(loom_ctx *ctx, const loom_train_desc *desc, loom_train_result *result);

/* "auto": the fastest real device available — CUDA, then a Vulkan or OpenCL
 * device that is a real GPU, then the CPU. Returns the backend name and, in
 * *why, the reason for the choice. */
const char *loom_pick_backend(loom_ctx *ctx, const char **why);

/* ---- LR range test ----
 * Exponential sweep of the learning rate from start_lr to end_lr over `steps`
 * optimizer steps (lr_i = start (end/start)^(i/(steps-1))), one training
 * batch each; the loss is smoothed with an exponential moving average with
 * bias correction (avg = beta avg + (1-beta) loss, smooth = avg / (1 -
 * beta^(i+1))), and the sweep stops when the smoothed loss exceeds
 * `diverge` times the best one (or the loss is not finite). The suggestion is
 * the point of steepest descent of the smoothed loss against log(lr) (central
 * differences, ignoring the first skip_start and last skip_end points, as
 * torch-lr-finder does). Afterwards every parameter and state (weights,
 * batch-norm statistics, optimizer state), the plan's step counter and the
 * optimizer's counters are restored bitwise. */
typedef struct loom_lr_find_desc {
    double start_lr, end_lr; /* 0 = 1e-7, 10 */
    int steps;               /* 0 = 100 */
    double beta;             /* smoothing; 0 = 0.98 */
    double diverge;          /* 0 = 4 */
    int skip_start, skip_end;/* 0 = 10, 5; negative = 0 */
} loom_lr_find_desc;

typedef struct loom_lr_find_result {
    int n;                   /* points recorded */
    double *lr, *loss, *smooth; /* n each (loom_lr_find_result_free) */
    int suggestion_index;    /* -1: too few points for a suggestion */
    double suggestion;       /* the suggested LR (NaN without one) */
    int best_index;          /* lowest smoothed loss */
    bool diverged;           /* stopped before `steps` */
    const char *backend;     /* loom_lr_find: static name */
} loom_lr_find_result;

/* On a compiled training plan: x (N, C, H, W) f32 and y (N) i32 are the
 * plan's inputs, loss its kept loss, opt the graph's optimizer; batches come
 * from it (restarted at the end of an epoch). */
loom_status loom_lr_find_plan(loom_plan *plan, loom_optimizer *opt, loom_tensor *x, loom_tensor *y, loom_tensor *loss,
                              loom_batch_iter *it, const loom_lr_find_desc *desc, loom_lr_find_result *res);
/* The range test for the model, data (train), batch, optimizer, seed and
 * backend of a training description (the schedule is ignored). */
loom_status loom_lr_find(loom_ctx *ctx, const loom_train_desc *train, const loom_lr_find_desc *desc,
                         loom_lr_find_result *res);
void loom_lr_find_result_free(loom_lr_find_result *res);
/* "step,lr,loss,smoothed_loss" rows; atomic enough for a log (plain write). */
loom_status loom_lr_find_write_csv(loom_ctx *ctx, const loom_lr_find_result *res, const char *path);
/* The smoothed (and raw) loss against log lr, the suggestion marked. */
loom_status loom_lr_find_write_svg(loom_ctx *ctx, const loom_lr_find_result *res, const char *path);

/* ---- logs ----
 * TensorBoard event files written directly (TFRecord framing, Event and
 * Summary protobufs; see train/logs.c): readable by TensorBoard and its
 * Python event reader. loom_train writes them with desc.tensorboard_dir. */
typedef struct loom_tb_writer loom_tb_writer;
/* Create dir if needed and a new events.out.tfevents.<time>.<host>.<pid>.loom file in it. */
loom_status loom_tb_open(loom_ctx *ctx, const char *dir, loom_tb_writer **out);
/* One scalar (stored as float32, like tf.summary.scalar's simple_value). */
loom_status loom_tb_scalar(loom_ctx *ctx, loom_tb_writer *w, const char *tag, int64_t step, double value);
const char *loom_tb_path(const loom_tb_writer *w);
void loom_tb_close(loom_tb_writer *w);

#ifdef __cplusplus
}
#endif
#endif
