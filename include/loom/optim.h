/* loom/optim.h — optimizers and learning-rate schedules.
 *
 * defines: loom_optimizer (SGD with momentum/Nesterov, Adam, AdamW; weight
 *          decay; gradient clipping by global norm; gradient accumulation),
 *          loom_schedule (constant, step, multistep, exponential, cosine,
 *          cosine with warm restarts, one-cycle, polynomial; sequences of
 *          schedules and products of schedules; linear warm-up composes with
 *          any), loom_plateau (reduce-on-plateau, stateful), dynamic loss
 *          scaling (loom_scale_loss).
 *
 * Weight decay applies by default to weights only (parameters with ndim >= 2:
 * linear and conv weights), not to biases and normalisation parameters
 * (decay_all changes that); loom_optimizer_decay_counts reports the split.
 *
 * The optimizer appends its update ops to the graph after loom_backward, so a
 * plan run is a whole training step on the device. Before each run the host
 * calls loom_optimizer_begin_step, which writes the step's learning rate and
 * bias corrections into a small input (one tiny upload per parameter group,
 * no read-back; see desc.lr_mult for groups). Parameters with
 * requires_grad off (loom_set_requires_grad, before loom_backward) have no
 * gradient, so they get no update op and no state: frozen.
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
    loom_optimizer_kind kind;  /* SGD (0, the default), Adam or AdamW */
    double momentum;       /* SGD; 0 = plain SGD */
    double dampening;      /* SGD */
    bool nesterov;         /* SGD (needs momentum > 0) */
    double beta1;          /* Adam/AdamW: decay of the first moment, in [0, 1); 0 = 0.9 */
    double beta2;          /* Adam/AdamW: decay of the second moment, in [0, 1); 0 = 0.999 */
    double eps;            /* Adam/AdamW; 0 = 1e-8 */
    double weight_decay;   /* SGD/Adam: L2 added to the gradient; AdamW: decoupled */
    double clip_grad_norm; /* > 0: scale gradients so their global L2 norm is at most this */
    int grad_accum;        /* micro-batches per optimizer step; 0 or 1 = none */
    bool decay_all;        /* weight decay on every parameter (default: ndim >= 2 only) */
    /* Per-parameter learning-rate multipliers (torch's parameter groups):
     * NULL = 1 for every parameter. loom_optimizer_create calls it once per
     * updated parameter with its name; it must return a finite value >= 0.
     * Parameters with the same multiplier form a group, and each group reads
     * its own hyper input (below) whose LR is lr * mult, formed in double and
     * rounded once to f32, as a torch group's LR reaches its kernel. */
    double (*lr_mult)(void *user, const char *param);
    void *lr_mult_user;    /* passed to lr_mult */
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
/* Parameters with weight decay applied, and without (both 0 counted as
 * "without" when weight_decay is 0). */
void loom_optimizer_decay_counts(const loom_optimizer *opt, int *decayed, int *not_decayed);
/* Parameter groups (distinct LR multipliers, in order of first use): the
 * count; with i < count, *mult and *params receive group i's multiplier and
 * its number of parameters (either may be NULL). */
int loom_optimizer_groups(const loom_optimizer *opt, int i, double *mult, int *params);

/* ---- dynamic loss scaling (mixed precision; PyTorch GradScaler semantics) ----
 * loom_scale_loss returns loss * scale, the scale living on the device in the
 * state tensor "amp.scale" (with "amp.growth_tracker" and "amp.skipped_steps";
 * checkpoints carry all three). Pass its result to loom_backward, then create
 * the optimizer: it finds the scale and appends, on the device, a non-finite
 * check over every gradient, the unscaling (1/scale folded into the gradient
 * multiplier, so gradient clipping sees true norms), the skip of the whole
 * step when any gradient is inf or NaN (parameters and optimizer state left
 * bitwise unchanged; gradient accumulators cleared), and the scale update:
 * x backoff_factor after a skipped step, x growth_factor after
 * growth_interval consecutive finite steps. No host round trip per step.
 * Zero is default for every field. */
typedef struct loom_loss_scale_desc {
    double init_scale;     /* 0 = 65536 (2^16) */
    double growth_factor;  /* 0 = 2 */
    double backoff_factor; /* 0 = 0.5 */
    int growth_interval;   /* 0 = 2000 */
} loom_loss_scale_desc;
/* Call once per graph, before loom_backward. desc may be NULL. */
loom_tensor *loom_scale_loss(loom_graph *g, loom_tensor *loss, const loom_loss_scale_desc *desc);
/* The current scale and the number of skipped optimizer steps (two small
 * reads: call it per epoch or per log line, not per step). */
loom_status loom_loss_scale_read(loom_plan *plan, double *scale, int64_t *skipped);

/* ---- schedules ---- */
typedef enum loom_schedule_kind {
    LOOM_SCHED_CONSTANT,
    LOOM_SCHED_STEP,        /* lr * gamma^(floor(t / step_size)) */
    LOOM_SCHED_MULTISTEP,   /* lr * gamma^(number of milestones <= t) */
    LOOM_SCHED_EXPONENTIAL, /* lr * gamma^t */
    LOOM_SCHED_COSINE,      /* eta_min + (lr - eta_min) (1 + cos(pi t / t_max)) / 2;
                               holds eta_min for t >= t_max (torch's
                               CosineAnnealingLR would rise again) */
    LOOM_SCHED_COSINE_RESTARTS, /* SGDR: periods t0, t0*t_mult, ... */
    LOOM_SCHED_ONE_CYCLE,   /* torch OneCycleLR (two phases, cos or linear anneal): over t_max
                               steps from lr/div_factor up to lr at pct_start (t = pct_start
                               t_max - 1), then down to lr/div_factor/final_div_factor at
                               t_max - 1 (held after) */
    LOOM_SCHED_POLYNOMIAL,  /* torch PolynomialLR: lr (1 - min(t, t_max)/t_max)^power */
    LOOM_SCHED_SEQUENTIAL,  /* torch SequentialLR: seq[i] runs from milestones[i-1] (its own t
                               restarting at 0) up to milestones[i] */
    LOOM_SCHED_CHAIN        /* torch ChainedScheduler of multiplicative schedules: lr times the
                               product of every seq[i]'s factor lr_i(t) / lr_i */
} loom_schedule_kind;

#define LOOM_MAX_MILESTONES 16

/* t counts in whatever unit the caller steps with (loom train uses optimizer
 * steps). Warm-up: for t < warmup the LR is lr * (warmup_start + (1 -
 * warmup_start) t / warmup), warmup_start 0 = 0.1 (the guide's "a tenth"),
 * so it reaches lr at t = warmup; the schedule itself then starts, at its own
 * t = 0, at t = warmup. This is torch's SequentialLR([LinearLR(optimizer,
 * start_factor=warmup_start, total_iters=warmup), schedule], milestones=[warmup]). */
typedef struct loom_schedule loom_schedule;
struct loom_schedule {
    loom_schedule_kind kind; /* the shape of the schedule; 0 = constant */
    double lr;             /* base learning rate */
    int64_t step_size;     /* STEP */
    double gamma;          /* STEP, MULTISTEP, EXPONENTIAL; 0 = 0.1 */
    int64_t milestones[LOOM_MAX_MILESTONES]; /* MULTISTEP: the t at which the LR is multiplied by gamma;
                                                SEQUENTIAL: the t at which seq[i + 1] takes over (increasing) */
    int n_milestones;      /* entries of milestones used, at most LOOM_MAX_MILESTONES */
    int64_t t_max;         /* COSINE; ONE_CYCLE: total steps; POLYNOMIAL: total iters (0 = 5) */
    double eta_min;        /* COSINE, COSINE_RESTARTS */
    int64_t t0;            /* COSINE_RESTARTS: first period */
    double t_mult;         /* COSINE_RESTARTS: period growth; 0 = 1 */
    int64_t warmup;        /* warm-up length; 0 = none */
    double warmup_start;   /* starting factor; 0 = 0.1 */
    double pct_start;      /* ONE_CYCLE: 0 = 0.3 */
    double div_factor;     /* ONE_CYCLE: 0 = 25 */
    double final_div_factor; /* ONE_CYCLE: 0 = 1e4 */
    bool anneal_linear;    /* ONE_CYCLE: linear instead of cosine annealing */
    double power;          /* POLYNOMIAL: 0 = 1 */
    const loom_schedule *seq; /* SEQUENTIAL, CHAIN: the sub-schedules (a sub-schedule's lr 0 = this lr) */
    int n_seq;             /* SEQUENTIAL: n_milestones = n_seq - 1 */
};

/* The learning rate at t. */
double loom_schedule_lr(const loom_schedule *s, int64_t t);
/* Parse a schedule name ("constant", "step", "multistep", "exponential",
 * "cosine", "cosine-restarts", "one-cycle", "polynomial"); -1 if unknown. */
int loom_schedule_parse(const char *name);

/* ---- reduce-on-plateau (torch ReduceLROnPlateau) ----
 * Stateful: after each evaluation call loom_plateau_step with the metric;
 * when it has not improved (min mode: below best (1 - threshold), or best -
 * threshold with abs_threshold; max mode mirrored) for more than `patience`
 * calls, the LR is multiplied by factor (not below min_lr; changes smaller
 * than eps are skipped) and `cooldown` calls follow in which bad epochs are
 * not counted. */
typedef struct loom_plateau {
    double lr;             /* current LR; set by loom_plateau_init */
    double factor;         /* 0 = 0.1 */
    int patience;          /* 0 = 10 (use -1 for torch's patience 0) */
    double threshold;      /* 0 = 1e-4 */
    bool abs_threshold;    /* torch threshold_mode 'abs' (default 'rel') */
    bool maximize;         /* torch mode 'max' */
    int cooldown;          /* calls after a reduction in which bad epochs are not counted; 0 = none */
    double min_lr;         /* the LR is not reduced below this; 0 = no floor */
    double eps;            /* 0 = 1e-8 */
    /* state */
    double best;           /* best metric so far (+-infinity after loom_plateau_init) */
    int bad;               /* calls since the last improvement */
    int cooldown_left;     /* cooldown calls still to come */
    int reductions;        /* times the LR was reduced */
    double base_lr;        /* the starting LR given to loom_plateau_init */
} loom_plateau;

/* Fill the defaults of the fields left 0 and reset the state; lr is the
 * starting LR. */
void loom_plateau_init(loom_plateau *p, double lr);
/* Feed a metric; returns the LR to use from now on. */
double loom_plateau_step(loom_plateau *p, double metric);

#ifdef __cplusplus
}
#endif
#endif
