/* loom/train.h — the training floor: a model on a dataset, end to end.
 *
 * defines: loom_trainer (setup, step, epoch end, finish as separate calls),
 *          loom_trainer_desc (data / model / transfer / optim / run / log),
 *          loom_train_observer (CSV, TensorBoard and progress lines attach
 *          to a trainer as observers), loom_step_result, loom_epoch_stats,
 *          loom_train_result, loom_train (a loop over the trainer),
 *          loom_pick_backend, loom_early_stop (the early-stopping rule, a
 *          pure state machine), the LR range test (loom_trainer_lr_find,
 *          loom_lr_find) and the TensorBoard writer.
 *
 * loom_trainer_create builds the training graph (model, cross-entropy with
 * label smoothing, backward, optimizer) and an evaluation graph sharing its
 * weights, compiles both for the backend and opens the training batches'
 * loader. loom_trainer_step runs one micro-batch (one plan run, the learning
 * rate from the schedule): a host application can call it once per frame.
 * loom_trainer_epoch_end evaluates on the validation and test sets, steps
 * reduce-on-plateau and early stopping and writes the checkpoint (atomic);
 * loom_trainer_finish restores the best epoch's weights when early stopping
 * asks for it and fills the result. A run resumed from a checkpoint
 * continues bitwise as an uninterrupted one would on the CPU backend, with
 * the same seed.
 *
 * Validation and early stopping: with a validation set (data.val, or
 * data.val_split holding out a seeded fraction of the training set) the
 * model is evaluated on it after every epoch; with run.early_stop =
 * PATIENCE, training stops once the monitored metric (validation loss or
 * accuracy) has not improved by more than min_delta for PATIENCE epochs,
 * and the weights (parameters and batch-norm statistics) of the best epoch
 * are restored at the end, from a host copy taken whenever the metric
 * improves.
 *
 * Transfer learning: transfer.init_from loads the model's parameters and
 * batch-norm statistics by name from a safetensors file (a loom checkpoint
 * or any file with the same names; transfer.init_map renames the file's
 * tensors first) before training. Tensors whose shape differs (a classifier
 * head for another class count) are skipped and keep their fresh
 * initialisation: that replaces the head. The file's optimizer state and
 * step counters are not loaded; result.init reports loaded / missing /
 * unexpected / mismatched tensors. transfer.freeze freezes parameters by
 * name pattern (fnmatch): they get no gradient, no update op and no
 * optimizer state. Batch-norm layers whose gamma and beta are frozen still
 * update their running statistics in training mode, as torch does for a
 * module left in train() mode. transfer.backbone_lr_mult scales the LR of
 * every trained parameter outside the head (transfer.head, by default the
 * last fc layer).
 */
#ifndef LOOM_TRAIN_H
#define LOOM_TRAIN_H

#include "checkpoint.h"
#include "data.h"
#include "dist.h"
#include "loader.h"
#include "nn.h"
#include "optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One epoch of a trainer, from loom_trainer_epoch_end and the observers'
 * on_epoch. Accuracies are fractions in [0, 1]. */
typedef struct loom_epoch_stats {
    int epoch;                 /* 1-based number of this epoch (a resumed run continues the count) */
    int epochs;                /* epochs of the whole run (run.epochs) */
    double train_loss;         /* mean over the epoch's batches */
    double test_loss;          /* mean loss on the test set; NaN when not evaluated this epoch */
    double test_acc;           /* accuracy on the test set; NaN when not evaluated this epoch */
    double seconds;            /* wall time of the epoch's training steps, evaluation excluded */
    double samples_per_s;      /* training samples per second over those steps */
    double lr;                 /* learning rate of the epoch's last step */
    double val_loss;           /* mean loss on the validation set; NaN without a validation set */
    double val_acc;            /* accuracy on the validation set; NaN without a validation set */
    double train_acc;          /* accuracy on the epoch's training batches (train mode) */
    bool best;                 /* early stopping: this epoch is the best so far */
    /* the data loader over the epoch's training steps */
    double data_wait_pct;      /* time the step waited for its batch, % of (wait + compute) */
    double load_ms;            /* worker time to load one batch */
    double compute_ms;         /* time per step outside the loader (write, run, read, logs) */
    int workers;               /* loader threads at the end of the epoch (0 = none: synchronous) */
    /* dynamic loss scaling (model.amp): the scale at the end of the epoch
     * (NaN when off) and the optimizer steps it skipped in this epoch */
    double loss_scale;
    int64_t skipped_steps;     /* optimizer steps skipped in this epoch (non-finite gradients); 0 when off */
    int64_t global_step;       /* optimizer micro-steps so far (the logs' x axis) */
    bool last;                 /* no epoch follows: the epochs are done or early stopping ended the run */
} loom_epoch_stats;

/* One micro-batch of loom_trainer_step. */
typedef struct loom_step_result {
    int epoch;                 /* 1-based epoch */
    int epochs;                /* epochs of the whole run (run.epochs) */
    int64_t step;              /* batches done in this epoch, this one included */
    int64_t steps;             /* batches per epoch */
    int64_t global_step;       /* optimizer micro-steps so far (the logs' x axis) */
    int count;                 /* samples in the batch; 0 = no batch was left (epoch_done) */
    double loss;               /* loss of this batch (train mode) */
    double accuracy;           /* accuracy of this batch (train mode), a fraction in [0, 1] */
    double mean_loss;          /* running mean of this epoch's training loss */
    double lr;                 /* learning rate of this step (schedule times reduce-on-plateau) */
    double elapsed_s;          /* seconds since the epoch's first step began */
    double samples_per_s;      /* training samples per second in this epoch so far */
    double eta_s;              /* estimated seconds left in this epoch */
    bool epoch_done;           /* the epoch's batches are done: call loom_trainer_epoch_end */
} loom_step_result;

/* ---- early stopping ----
 * The rule (Keras' EarlyStopping): a value improves on the best if it is
 * lower than best - min_delta (maximize: higher than best + min_delta); the
 * first finite value is always an improvement, NaN never is. After
 * `patience` values in a row without improvement, stop is set. */
typedef enum loom_monitor { LOOM_MONITOR_VAL_LOSS, LOOM_MONITOR_VAL_ACC } loom_monitor;

/* Where the loader's augmentation runs (loom_train_data.augment_on). */
typedef enum loom_augment_on {
    LOOM_AUGMENT_HOST,   /* the loader's worker threads */
    LOOM_AUGMENT_DEVICE, /* the training backend (loom_loader_desc.device_augment) */
    LOOM_AUGMENT_AUTO,   /* the device on a real GPU when the steps allow it, else the host */
} loom_augment_on;
/* "host", "device" or "auto" (NULL = "auto") as a loom_augment_on; -1 for anything else. */
int loom_augment_on_parse(const char *s);

/* The early-stopping state: loom_early_stop_init sets it up, each
 * loom_early_stop_update feeds one value. */
typedef struct loom_early_stop {
    int patience;       /* >= 1 */
    double min_delta;   /* >= 0 */
    bool maximize;      /* higher is better (accuracy); false: lower is better (loss) */
    double best;        /* NaN before the first finite value */
    int best_epoch;     /* 1-based index of the best value, 0 = none yet */
    int seen;           /* values fed */
    int bad;            /* values since the last improvement */
    bool stop;          /* set once `patience` values in a row did not improve; stays set */
} loom_early_stop;

void loom_early_stop_init(loom_early_stop *es, int patience, double min_delta, bool maximize);
/* Feed the next epoch's value; true if it is a new best. */
bool loom_early_stop_update(loom_early_stop *es, double value);


typedef struct loom_train_result loom_train_result;

/* Something that follows a run: each callback may be NULL; a status other
 * than LOOM_OK stops the run with that error. on_close is called once by
 * loom_trainer_destroy (free what user holds). The trainer calls its
 * observers in the order they were attached: the CSV log, the TensorBoard
 * writer, then log.observers in order. */
typedef struct loom_train_observer {
    void *user;                                                      /* passed to every callback */
    loom_status (*on_step)(void *user, const loom_step_result *s);   /* after every batch */
    loom_status (*on_epoch)(void *user, const loom_epoch_stats *s);  /* after the epoch's checkpoint */
    loom_status (*on_finish)(void *user, const loom_train_result *r); /* at the end of loom_trainer_finish */
    void (*on_close)(void *user);                                    /* once, from loom_trainer_destroy */
} loom_train_observer;

/* What is trained on and how its batches are made. */
typedef struct loom_train_data {
    const loom_dataset *train;     /* required */
    const loom_dataset *test;      /* NULL = none */
    const loom_dataset *val;       /* validation set, evaluated every epoch; NULL = none (or val_split) */
    double val_split;              /* no val and > 0: hold out this fraction of train (seeded by run.seed) */
    /* the dataset's input normalisation, x = (pixel / 255 - mean) / std;
     * std 0 = none (mean 0, std 1): the caller describes its data */
    float mean;
    float std;                     /* > 0; 0 (or less) = no normalisation */
    int batch;                     /* 0 = 64 */
    int eval_batch;                /* 0 = 256 */
    /* the training batches' loader (loom/loader.h): worker threads
     * (LOOM_WORKERS_AUTO = 0, the default; LOOM_WORKERS_SYNC; N) and batch
     * slots per worker (0 = 2). Batches are bitwise the same for all. */
    int workers;
    int prefetch;                  /* batch slots per worker; 0 = 2 */
    /* Training samples from a source through per-sample transforms, drawn
     * anew every epoch (Philox of (seed, epoch, index)): e.g. an ImageFolder
     * with random crops. `train` still gives the shape, class count and
     * sample count (they must match what the source and steps produce) and
     * serves lr-find; NULL = the loader reads `train` itself, without
     * transforms. Not with val_split (the split is of `train`). */
    loom_source *train_source;
    const loom_tf_step *train_steps; /* the transforms applied to each train_source sample, in order */
    int train_nsteps;              /* number of train_steps */
    /* Where the training batches' trailing crops, flips, brightness and
     * ToTensor + Normalize run (the same batches either way): on the
     * loader's threads (LOOM_AUGMENT_HOST, the default), on the backend
     * (LOOM_AUGMENT_DEVICE: loom_loader_desc.device_augment), or
     * LOOM_AUGMENT_AUTO: the device when the backend is a real GPU
     * (loom_backend_is_gpu) and the steps allow it
     * (loom_loader_device_capable), else the host. */
    loom_augment_on augment_on;
} loom_train_data;

/* The network and its loss. */
typedef struct loom_train_model {
    loom_model_desc net;           /* in_c/h/w and num_classes default to the data's */
    double label_smoothing;        /* cross-entropy label smoothing in [0, 1); 0 = none (training graph only) */
    /* mixed precision: LOOM_F32 (0, the default) = off; LOOM_F16 or LOOM_BF16
     * builds the model under autocast (loom_graph_set_autocast) with f32
     * master weights. F16 adds dynamic loss scaling (loss_scale; zero =
     * GradScaler's defaults); BF16 runs without scaling unless
     * bf16_loss_scaling is set. */
    loom_dtype amp;
    loom_loss_scale_desc loss_scale; /* dynamic loss scaling of F16 (and of BF16 with bf16_loss_scaling) */
    bool bf16_loss_scaling;        /* with amp = LOOM_BF16: scale the loss too */
} loom_train_model;

/* Transfer learning (see the top of this file). */
typedef struct loom_train_transfer {
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
    void *user;                    /* passed to on_init */
} loom_train_transfer;

/* The optimizer and its learning rate. */
typedef struct loom_train_optim {
    loom_optimizer_desc opt;       /* optimizer kind and hyper-parameters; the LR comes from sched */
    loom_schedule sched;           /* sched.lr is the base LR (0 = 0.01); times in optimizer steps */
    loom_plateau *plateau;         /* reduce-on-plateau, stepped with the val loss (test loss without a
                                      val set) after each evaluation; it scales the schedule's LR */
} loom_train_optim;

/* Where and how long it runs, and what it keeps. */
typedef struct loom_train_run {
    const char *backend;           /* NULL or "auto" = loom_pick_backend */
    loom_backend_desc backend_desc; /* device index, CPU threads, deterministic and reproducible mode */
    bool deterministic;            /* deterministic kernels (see loom_backend_desc.deterministic); set
                                      here or in backend_desc: either turns them on */
    uint64_t seed;                 /* fixes init, data order, validation split, dropout */
    int epochs;                    /* 0 = 1 */
    int eval_every;                /* evaluate on the test set every N epochs (and after the last); 0 = 1 */
    int64_t max_steps;             /* > 0: stop each epoch after this many batches (short runs) */
    int64_t max_eval;              /* > 0: evaluate on the first batches covering this many samples (short runs) */
    const char *save_path;         /* checkpoint after every epoch (atomic), NULL = none */
    const char *resume_path;       /* continue from this checkpoint, NULL = fresh start */
    int early_stop;                /* patience in epochs; 0 = off (needs a validation set) */
    double min_delta;              /* early stopping: smallest improvement that counts */
    loom_monitor monitor;          /* early stopping: val loss (default) or val accuracy */
    bool keep_last;                /* early stopping: keep the last weights instead of the best */
    bool profile;                  /* time every op of the training step (result.profile) */
    bool allow_nonfinite;          /* load transfer.init_from and resume_path even when they hold NaN or
                                      infinite values (loom_checkpoint_load_desc.allow_nonfinite) */
    /* Data parallel (loom/dist.h): this process's group; NULL or one process
     * = not distributed. data.batch is then the batch of each rank (the global
     * batch is world times it); the training set is sharded per epoch
     * (loom_sampler_desc.rank); rank 0's initial (or resumed) weights are
     * broadcast; gradients are averaged over the ranks before each update
     * (with grad_accum, on the last micro-batch only); dropout draws per rank;
     * only rank 0 writes save_path, log.csv and log.tensorboard_dir. In
     * reproducible mode the batch is cut into shards instead (repro_shards). */
    loom_dist *dist;
    /* Data parallel: gradients are exchanged in buckets of about this many
     * bytes (f32), each started as soon as the backward pass has produced
     * it, while the rest of the pass runs; the first bucket (the last
     * layers' gradients) holds at most 1 MiB. 0 = 25 MiB. */
    size_t dist_bucket_bytes;
    /* Reproducible mode (backend_desc.reproducible) across world sizes: the
     * global batch (world * data.batch) is cut into this many equal shards,
     * each a micro-batch of its own through the canonical kernels; rank r of
     * P trains shards r*K/P .. (r+1)*K/P - 1 (contiguous in the batch's
     * order), and every rank sums the shards' gradients in shard order. Runs
     * with the same value give the same bits on 1, 2, 4 ... processes; it
     * must be a multiple of the world size and divide the global batch.
     * 0 = the world size (one shard per rank; one process: no shards). */
    int repro_shards;
} loom_train_run;

/* Who follows the run. */
typedef struct loom_train_log {
    const char *csv;               /* CSV log: a "step" row per batch, an "epoch" row per epoch; NULL = none */
    const char *tensorboard_dir;   /* TensorBoard scalars (train/..., epoch/...); NULL = none */
    const loom_train_observer *observers; /* nobservers more (copied at create) */
    int nobservers;                /* number of observers; at most 16 with the CSV and TensorBoard ones */
} loom_train_log;

/* Zero-initialised fields take defaults. */
typedef struct loom_trainer_desc {
    loom_train_data data;          /* what is trained on and how its batches are made */
    loom_train_model model;        /* the network, its loss and mixed precision */
    loom_train_transfer transfer;  /* initialising from a file, freezing, the head's LR */
    loom_train_optim optim;        /* the optimizer, the LR schedule, reduce-on-plateau */
    loom_train_run run;            /* backend, seed, epochs, checkpoints, early stopping */
    loom_train_log log;            /* CSV, TensorBoard and other observers */
} loom_trainer_desc;

/* What a run did, from loom_trainer_finish or loom_train. Accuracies are
 * fractions in [0, 1]. */
struct loom_train_result {
    const char *backend;   /* static name */
    int epochs_run;        /* including resumed ones */
    double train_loss;     /* mean training loss of the last epoch */
    double test_loss;      /* of the last test evaluation (the best epoch's weights when restored); NaN without test set */
    double test_acc;       /* of the last test evaluation (the best epoch's weights when restored); NaN without test set */
    double samples_per_s;  /* training throughput over all epochs run here */
    double seconds;        /* training time of the epochs run here, evaluation excluded */
    size_t peak_bytes;     /* planned device memory: train + eval plans */
    loom_plan_memory train_memory; /* the training plan's breakdown (params, state, activations, arena) */
    int64_t steps;         /* optimizer steps */
    loom_op_time profile[16]; /* with run.profile: the top ops of the training step by time */
    int n_profile;         /* entries of profile filled (0 without run.profile) */
    double val_loss;       /* of the final weights (the best epoch's when restored); NaN without val */
    double val_acc;        /* of the final weights (the best epoch's when restored); NaN without val */
    int best_epoch;        /* early stopping: the best epoch (1-based), 0 = off */
    bool stopped_early;    /* early stopping ended the run before run.epochs */
    bool restored_best;    /* the best epoch's weights were restored at the end */
    int64_t val_n;         /* validation samples (after val_split) */
    int decayed;           /* parameter tensors with weight decay */
    int not_decayed;       /* parameter tensors without weight decay */
    loom_checkpoint_report init; /* init_from: what the load found */
    int frozen;            /* parameter tensors frozen by transfer.freeze */
    int64_t frozen_numel;  /* their elements */
    int frozen_16bit;      /* frozen parameters stored in 16 bits only (transfer.frozen_16bit) */
    int64_t frozen_16bit_saved_bytes; /* parameter memory that saved (f32 master replaced by the 16-bit copy) */
    int trained;           /* parameter tensors updated by the optimizer */
    int head_params;       /* with backbone_lr_mult: trained parameter tensors of the head (LR x 1) */
};

typedef struct loom_trainer loom_trainer;

/* Set up a run: checks the desc, splits off the validation set, creates the
 * backend, builds and compiles the training and evaluation graphs, loads
 * init_from or the checkpoint to resume, opens the loader and the logs. */
loom_status loom_trainer_create(loom_ctx *ctx, const loom_trainer_desc *desc, loom_trainer **out);
/* Attach one more observer (copied). */
loom_status loom_trainer_observe(loom_trainer *tr, const loom_train_observer *obs);
/* One optimizer (micro-)step on the next training batch; the epoch begins
 * at its first step. out may be NULL. After out->epoch_done, call
 * loom_trainer_epoch_end before the next step. */
loom_status loom_trainer_step(loom_trainer *tr, loom_step_result *out);
/* The end of the epoch: evaluation, plateau and early stopping, the
 * checkpoint, the observers' on_epoch. out may be NULL. */
loom_status loom_trainer_epoch_end(loom_trainer *tr, loom_epoch_stats *out);
/* true when no epoch is left to run (all done, or early stopping ended the run). */
bool loom_trainer_done(const loom_trainer *tr);
/* After the last epoch: restores the best epoch's weights when early
 * stopping asks for it (measured again), fills *res, runs on_finish. */
loom_status loom_trainer_finish(loom_trainer *tr, loom_train_result *res);
void loom_trainer_destroy(loom_trainer *tr);
/* The compiled training plan and its optimizer (owned by the trainer). */
loom_plan *loom_trainer_plan(const loom_trainer *tr);
loom_optimizer *loom_trainer_optimizer(const loom_trainer *tr);

/* create, steps and epoch ends until done, finish, destroy. */
loom_status loom_train(loom_ctx *ctx, const loom_trainer_desc *desc, loom_train_result *result);

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
    double start_lr;         /* first LR of the sweep, > 0; 0 = 1e-7 */
    double end_lr;           /* last LR of the sweep, > start_lr; 0 = 10 */
    int steps;               /* 0 = 100 */
    double beta;             /* smoothing; 0 = 0.98 */
    double diverge;          /* 0 = 4 */
    int skip_start;          /* points left out of the suggestion at the start; 0 = 10; negative = 0 */
    int skip_end;            /* points left out of the suggestion at the end; 0 = 5; negative = 0 */
} loom_lr_find_desc;

/* The points of an LR range test and its suggestion; free with
 * loom_lr_find_result_free. */
typedef struct loom_lr_find_result {
    int n;                   /* points recorded */
    double *lr;              /* n learning rates, increasing (loom_lr_find_result_free) */
    double *loss;            /* n raw losses, one per LR (loom_lr_find_result_free) */
    double *smooth;          /* n smoothed losses (loom_lr_find_result_free) */
    int suggestion_index;    /* -1: too few points for a suggestion */
    double suggestion;       /* the suggested LR (NaN without one) */
    int best_index;          /* lowest smoothed loss */
    bool diverged;           /* stopped before `steps` */
    const char *backend;     /* loom_lr_find: static name */
} loom_lr_find_result;

/* On a trainer: one training batch per point from its loader (epochs from
 * the trainer's current one, restarted at their end), with its plan and
 * optimizer; the trainer's next step continues where it left off. */
loom_status loom_trainer_lr_find(loom_trainer *tr, const loom_lr_find_desc *desc, loom_lr_find_result *res);
/* The range test for the model, data (data.train, without transforms),
 * batch, optimizer, seed and backend of a training description (the
 * schedule, evaluation sets, logs and checkpoints are ignored). */
loom_status loom_lr_find(loom_ctx *ctx, const loom_trainer_desc *train, const loom_lr_find_desc *desc,
                         loom_lr_find_result *res);
void loom_lr_find_result_free(loom_lr_find_result *res);
/* "step,lr,loss,smoothed_loss" rows, written whole (the previous file stays on any failure). */
loom_status loom_lr_find_write_csv(loom_ctx *ctx, const loom_lr_find_result *res, const char *path);
/* The smoothed (and raw) loss against log lr, the suggestion marked. */
loom_status loom_lr_find_write_svg(loom_ctx *ctx, const loom_lr_find_result *res, const char *path);

/* ---- logs ----
 * TensorBoard event files written directly (TFRecord framing, Event and
 * Summary protobufs; see train/logs.c): readable by TensorBoard and its
 * Python event reader. A trainer writes them with log.tensorboard_dir. */
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
