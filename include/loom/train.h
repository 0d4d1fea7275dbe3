/* loom/train.h — the training loop: a model on a dataset, end to end.
 *
 * defines: loom_train_desc, loom_train_progress, loom_epoch_stats,
 *          loom_train_result, loom_train, loom_pick_backend.
 *
 * loom_train builds the training graph (model, cross-entropy with label
 * smoothing, backward, optimizer) and an evaluation graph sharing its
 * weights, compiles both for the backend, and runs epochs: one plan run per
 * micro-batch, the learning rate from the schedule each step, evaluation on
 * the test set, checkpoints after each epoch (atomic), resume from a
 * checkpoint. With the same seed a resumed run continues bitwise as an
 * uninterrupted one would on the CPU backend.
 */
#ifndef LOOM_TRAIN_H
#define LOOM_TRAIN_H

#include "checkpoint.h"
#include "data.h"
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
} loom_epoch_stats;

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
    uint64_t seed;
    int eval_every;                /* evaluate every N epochs (and after the last); 0 = 1 */
    int64_t max_steps;             /* > 0: stop each epoch after this many batches (short runs) */
    const char *save_path;         /* checkpoint after every epoch (atomic), NULL = none */
    const char *resume_path;       /* continue from this checkpoint, NULL = fresh start */
    float mean, std;               /* input normalisation; std 0 = Fashion-MNIST's (0.2860, 0.3530) */
    bool profile;                  /* time every op of the training step (result.profile) */
    void (*on_progress)(void *user, const loom_train_progress *p); /* after every batch */
    void (*on_epoch)(void *user, const loom_epoch_stats *s);
    void *user;
} loom_train_desc;

typedef struct loom_train_result {
    const char *backend;   /* static name */
    int epochs_run;        /* including resumed ones */
    double train_loss, test_loss, test_acc;
    double samples_per_s;  /* training throughput over all epochs run here */
    double seconds;
    size_t peak_bytes;     /* planned device memory: train + eval plans */
    int64_t steps;         /* optimizer steps */
    loom_op_time profile[16]; /* with desc.profile: the top ops of the training step by time */
    int n_profile;
} loom_train_result;

loom_status loom_train(loom_ctx *ctx, const loom_train_desc *desc, loom_train_result *result);

/* "auto": the fastest real device available — CUDA, then a Vulkan or OpenCL
 * device that is a real GPU, then the CPU. Returns the backend name and, in
 * *why, the reason for the choice. */
const char *loom_pick_backend(loom_ctx *ctx, const char **why);

#ifdef __cplusplus
}
#endif
#endif
