/* loom/optim.h — optimizers and learning-rate schedules.
 *
 * defines: loom_optimizer (SGD with momentum/Nesterov, Adam, AdamW; weight
 *          decay; gradient clipping by global norm; gradient accumulation),
 *          loom_schedule (constant, step, multistep, exponential, cosine,
 *          cosine with warm restarts; linear warm-up composes with any).
 *
 * The optimizer appends its update ops to the graph after loom_backward, so a
 * plan run is a whole training step on the device. Before each run the host
 * calls loom_optimizer_begin_step, which writes the step's learning rate and
 * bias corrections into a small input (one tiny upload, no read-back).
 * Optimizer state (momentum buffers, Adam moments) is held in state tensors
 * named "<param>.momentum_buffer", "<param>.exp_avg", "<param>.exp_avg_sq"
 * (torch's names), so checkpoints carry it.
 */
#ifndef LOOM_OPTIM_H
#define LOOM_OPTIM_H

#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum loom_optimizer_kind { LOOM_OPT_SGD, LOOM_OPT_ADAM, LOOM_OPT_ADAMW } loom_optimizer_kind;

/* Zero is default for every field. */
typedef struct loom_optimizer_desc {
    loom_optimizer_kind kind;
    double momentum;       /* SGD; 0 = plain SGD */
    double dampening;      /* SGD */
    bool nesterov;         /* SGD (needs momentum > 0) */
    double beta1, beta2;   /* Adam/AdamW; 0 = 0.9, 0.999 */
    double eps;            /* Adam/AdamW; 0 = 1e-8 */
    double weight_decay;   /* SGD/Adam: L2 added to the gradient; AdamW: decoupled */
    double clip_grad_norm; /* > 0: scale gradients so their global L2 norm is at most this */
    int grad_accum;        /* micro-batches per optimizer step; 0 or 1 = none */
} loom_optimizer_desc;

typedef struct loom_optimizer loom_optimizer;

/* Append the update ops for every parameter of g that has a gradient. Call
 * after loom_backward and before compiling. The optimizer is owned by the
 * caller and must outlive plans that use it. */
loom_status loom_optimizer_create(loom_graph *g, const loom_optimizer_desc *desc, loom_optimizer **out);
void loom_optimizer_destroy(loom_optimizer *opt);
/* Before each plan run: set this micro-step's learning rate. With
 * grad_accum = N, parameters change on every N-th call only. */
loom_status loom_optimizer_begin_step(loom_optimizer *opt, loom_plan *plan, double lr);
/* Optimizer steps taken (parameter updates), and micro-steps seen. */
int64_t loom_optimizer_steps(const loom_optimizer *opt);
int64_t loom_optimizer_micro_steps(const loom_optimizer *opt);
/* Restore the counters (checkpoint resume). */
void loom_optimizer_set_counters(loom_optimizer *opt, int64_t steps, int64_t micro_steps);
/* Parameters updated / state tensors created. */
int loom_optimizer_param_count(const loom_optimizer *opt);

/* ---- schedules ---- */
typedef enum loom_schedule_kind {
    LOOM_SCHED_CONSTANT,
    LOOM_SCHED_STEP,        /* lr * gamma^(floor(t / step_size)) */
    LOOM_SCHED_MULTISTEP,   /* lr * gamma^(number of milestones <= t) */
    LOOM_SCHED_EXPONENTIAL, /* lr * gamma^t */
    LOOM_SCHED_COSINE,      /* eta_min + (lr - eta_min) (1 + cos(pi t / t_max)) / 2;
                               holds eta_min for t >= t_max (torch's
                               CosineAnnealingLR would rise again) */
    LOOM_SCHED_COSINE_RESTARTS /* SGDR: periods t0, t0*t_mult, ... */
} loom_schedule_kind;

#define LOOM_MAX_MILESTONES 16

/* t counts in whatever unit the caller steps with (loom train uses optimizer
 * steps). Warm-up: for t < warmup the LR is lr * (warmup_start + (1 -
 * warmup_start) t / warmup), warmup_start 0 = 0.1 (the guide's "a tenth"),
 * so it reaches lr at t = warmup; the schedule itself then starts, at its own
 * t = 0, at t = warmup. This is torch's SequentialLR([LinearLR(optimizer,
 * start_factor=warmup_start, total_iters=warmup), schedule], milestones=[warmup]). */
typedef struct loom_schedule {
    loom_schedule_kind kind;
    double lr;             /* base learning rate */
    int64_t step_size;     /* STEP */
    double gamma;          /* STEP, MULTISTEP, EXPONENTIAL; 0 = 0.1 */
    int64_t milestones[LOOM_MAX_MILESTONES];
    int n_milestones;
    int64_t t_max;         /* COSINE */
    double eta_min;        /* COSINE, COSINE_RESTARTS */
    int64_t t0;            /* COSINE_RESTARTS: first period */
    double t_mult;         /* COSINE_RESTARTS: period growth; 0 = 1 */
    int64_t warmup;        /* warm-up length; 0 = none */
    double warmup_start;   /* starting factor; 0 = 0.1 */
} loom_schedule;

/* The learning rate at t. */
double loom_schedule_lr(const loom_schedule *s, int64_t t);
/* Parse a schedule name ("constant", "step", "multistep", "exponential",
 * "cosine", "cosine-restarts"); -1 if unknown. */
int loom_schedule_parse(const char *name);

#ifdef __cplusplus
}
#endif
#endif
