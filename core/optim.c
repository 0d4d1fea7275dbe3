/* core/optim.c — the host side of the optimizers: appending update ops to a
 * graph and writing each step's hyper-parameters. */
#include <math.h>

#include "impl.h"
#include "optim_impl.h"
#include "backend_impl.h"

/* A parameter group: the parameters with one LR multiplier, reading their
 * own hyper input (group 0's is "optim.hyper", the others "optim.hyper.<i>"). */
typedef struct opt_group {
    double mult;
    loom_tensor *hyper; /* the input the host writes */
    loom_tensor *use;   /* what the update ops read: hyper, or its unscaled copy (loss scaling) */
    int params;
} opt_group;

bool loom__is_optimizer_state(const char *name) {
    static const char *const sfx[] = {".momentum_buffer", ".exp_avg", ".exp_avg_sq", ".grad_accum"};
    size_t n = strlen(name);
    if (!strncmp(name, "amp.", 4)) return true; /* the loss scaler's state */
    for (int i = 0; i < 4; i++) {
        size_t k = strlen(sfx[i]);
        if (n > k && !strcmp(name + n - k, sfx[i])) return true;
    }
    return false;
}

struct loom_optimizer {
    loom_graph *g;
    loom_optimizer_desc d;
    opt_group *groups;
    int ngroups;
    int nparams, ndecay;
    int64_t steps, micro;
};

/* The group of multiplier m, created (with its hyper input) on first use. */
static opt_group *group_of(loom_optimizer *o, double m) {
    for (int i = 0; i < o->ngroups; i++)
        if (o->groups[i].mult == m) return &o->groups[i];
    char name[32];
    if (o->ngroups)
        snprintf(name, sizeof name, "optim.hyper.%d", o->ngroups);
    else
        snprintf(name, sizeof name, "optim.hyper");
    opt_group *gr = &o->groups[o->ngroups++];
    loom_tensor *h = loom_input(o->g, name, LOOM_F32, 1, (int64_t[]){LOOM__HYPER_LEN});
    *gr = (opt_group){m, h, h, 0};
    return gr;
}

static loom_tensor *state_like(loom_graph *g, const loom_tensor *p, const char *suffix) {
    char name[128];
    snprintf(name, sizeof name, "%s.%s", p->name, suffix);
    if (strlen(name) >= sizeof p->name)
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "optimizer: state name '%s' is longer than 63 bytes", name);
    return loom_state(g, name, p->dtype, p->ndim, p->dims, NULL);
}

static bool nonneg(double x) { return x >= 0 && isfinite(x); }

static loom_status optimizer_create(loom_graph *g, const loom_optimizer_desc *desc, loom_optimizer **out);

/* The update ops are built with autocast off (they read f32 master weights). */
loom_status loom_optimizer_create(loom_graph *g, const loom_optimizer_desc *desc, loom_optimizer **out) {
    if (!g) return LOOM_ERR_INVALID_ARG;
    loom_dtype ac = g->autocast;
    g->autocast = LOOM_F32;
    loom_status st = optimizer_create(g, desc, out);
    g->autocast = ac;
    return st;
}

static loom_status optimizer_create(loom_graph *g, const loom_optimizer_desc *desc, loom_optimizer **out) {
    *out = NULL;
    loom_ctx *ctx = g->ctx;
    if (g->status != LOOM_OK) return loom__err(ctx, g->status, "optimizer: the graph has a failed builder: %s", g->error);
    if (!g->has_backward) return loom__err(ctx, LOOM_ERR_STATE, "optimizer: call loom_backward before creating the optimizer");
    loom_optimizer_desc d = desc ? *desc : (loom_optimizer_desc){0};
    if (d.kind != LOOM_OPT_SGD && d.kind != LOOM_OPT_ADAM && d.kind != LOOM_OPT_ADAMW)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "optimizer: unknown kind %d", (int)d.kind);
    if (d.beta1 == 0) d.beta1 = 0.9;
    if (d.beta2 == 0) d.beta2 = 0.999;
    if (d.eps == 0) d.eps = 1e-8;
    if (d.grad_accum < 1) d.grad_accum = 1;
    /* written so that NaN fails every test */
    if (!nonneg(d.momentum) || !nonneg(d.weight_decay) || !nonneg(d.clip_grad_norm) || !nonneg(d.dampening) ||
        !(d.beta1 >= 0 && d.beta1 < 1) || !(d.beta2 >= 0 && d.beta2 < 1) || !(d.eps > 0 && isfinite(d.eps)))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                         "optimizer: momentum %g, dampening %g, weight_decay %g, clip %g must be finite and >= 0; betas (%g, %g) in [0,1); eps %g finite and > 0",
                         d.momentum, d.dampening, d.weight_decay, d.clip_grad_norm, d.beta1, d.beta2, d.eps);
    if (d.nesterov && (d.momentum <= 0 || d.dampening != 0))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "optimizer: Nesterov needs momentum > 0 and dampening 0");
    for (int i = 0; i < g->n; i++)
        if (g->nodes[i]->leaf == LOOM__INPUT && !strcmp(g->nodes[i]->name, "optim.hyper"))
            return loom__err(ctx, LOOM_ERR_STATE, "optimizer: the graph already has an optimizer (one per graph)");
    loom_optimizer *o = calloc(1, sizeof *o);
    if (!o) return loom__err(ctx, LOOM_ERR_OOM, "optimizer: out of memory");
    o->g = g;
    o->d = d;

    /* the parameters to update (fixed list: nodes appended below are not params) */
    int n = g->n, np = 0;
    loom_tensor **params = malloc((size_t)n * sizeof *params), **grads = malloc((size_t)n * sizeof *grads);
    double *mults = malloc((size_t)n * sizeof *mults);
    o->groups = calloc((size_t)n + 1, sizeof *o->groups);
    if (!params || !grads || !mults || !o->groups) {
        free(params), free(grads), free(mults), free(o->groups), free(o);
        return loom__err(ctx, LOOM_ERR_OOM, "optimizer: out of memory");
    }
    for (int i = 0; i < n; i++) {
        loom_tensor *t = g->nodes[i];
        if (t->leaf == LOOM__PARAM && t->requires_grad && t->grad) params[np] = t, grads[np++] = t->grad;
    }
    if (np == 0) {
        free(params), free(grads), free(mults), free(o->groups), free(o);
        return loom__err(ctx, LOOM_ERR_STATE, "optimizer: no parameter of the graph has a gradient");
    }
    for (int i = 0; i < np; i++) {
        mults[i] = d.lr_mult ? d.lr_mult(d.lr_mult_user, params[i]->name) : 1.0;
        if (!(mults[i] >= 0) || !isfinite(mults[i])) {
            loom_status st = loom__err(ctx, LOOM_ERR_INVALID_ARG,
                                       "optimizer: LR multiplier %g for parameter '%s' must be finite and >= 0", mults[i],
                                       params[i]->name);
            free(params), free(grads), free(mults), free(o->groups), free(o);
            return st;
        }
    }
    /* group 0 first: the one of the first parameter (clipping reads its hyper) */
    for (int i = 0; i < np; i++) group_of(o, mults[i])->params++;
    /* gradient accumulation: persistent accumulators, zeroed by the update */
    bool accum = d.grad_accum > 1;
    for (int i = 0; accum && i < np; i++) {
        loom_tensor *acc = state_like(g, params[i], "grad_accum");
        loom__accumulate(g, acc, grads[i]);
        grads[i] = acc;
    }
    /* dynamic loss scaling: one non-finite flag over every gradient, and each
     * group's hyper with 1/scale folded in (and the skip when the flag is set) */
    loom_tensor *found = NULL;
    if (g->amp.scale) {
        for (int i = 0; i < np; i++) found = loom__amp_found_inf(g, grads[i], found);
        for (int i = 0; i < o->ngroups; i++)
            o->groups[i].use = loom__amp_unscale(g, o->groups[i].hyper, g->amp.scale, found);
    }
    /* clipping coefficient from the global norm */
    loom_tensor *coef = NULL;
    if (d.clip_grad_norm > 0) {
        loom_tensor *sumsq = NULL;
        for (int i = 0; i < np; i++) {
            loom_tensor *s = loom_sum(g, loom_mul(g, grads[i], grads[i]), 0, false);
            if (s && s->dtype != LOOM_F32 && s->dtype != LOOM_F64) s = loom_cast(g, s, LOOM_F32);
            if (sumsq && s && s->dtype != sumsq->dtype) s = loom_cast(g, s, sumsq->dtype);
            sumsq = sumsq ? loom_add(g, sumsq, s) : s;
        }
        coef = loom__clip_coef(g, sumsq, o->groups[0].use, d.clip_grad_norm);
    }
    for (int i = 0; i < np; i++) {
        loom_tensor *p = params[i];
        /* weights only by default: biases and norm parameters (ndim < 2) are not decayed */
        double wd = d.decay_all || p->ndim >= 2 ? d.weight_decay : 0.0;
        o->ndecay += wd > 0;
        loom_tensor *hyper = group_of(o, mults[i])->use;
        if (d.kind == LOOM_OPT_SGD) {
            loom__sgd_params sp = {d.momentum, d.dampening, wd, d.nesterov, accum};
            loom_tensor *buf = d.momentum > 0 ? state_like(g, p, "momentum_buffer") : NULL;
            loom__sgd_step(g, p, grads[i], hyper, buf, coef, &sp);
        } else {
            loom__adam_params ap = {d.beta1, d.beta2, d.eps, wd, d.kind == LOOM_OPT_ADAMW, accum};
            loom__adam_step(g, p, grads[i], hyper, state_like(g, p, "exp_avg"), state_like(g, p, "exp_avg_sq"),
                            coef, &ap);
        }
    }
    /* after every update op has read the scale: grow or back it off */
    if (g->amp.scale)
        loom__amp_scaler_update(g, g->amp.scale, g->amp.tracker, g->amp.skipped, found, o->groups[0].hyper,
                                g->amp.growth, g->amp.backoff, g->amp.interval);
    free(params), free(grads), free(mults);
    if (g->status != LOOM_OK) {
        free(o->groups), free(o);
        return g->status;
    }
    o->nparams = np;
    *out = o;
    return LOOM_OK;
}

void loom_optimizer_destroy(loom_optimizer *o) {
    if (o) free(o->groups);
    free(o);
}

loom_status loom_optimizer_begin_step(loom_optimizer *o, loom_plan *plan, double lr) {
    if (!(lr >= 0) || !isfinite(lr))
        return loom__err(o->g->ctx, LOOM_ERR_INVALID_ARG, "optimizer: learning rate %g must be finite and >= 0", lr);
    bool apply = (o->micro + 1) % o->d.grad_accum == 0;
    int64_t t = o->steps + 1; /* the step this micro-step contributes to */
    float h[LOOM__HYPER_LEN] = {0};
    h[LOOM__H_BC1] = (float)(1.0 - pow(o->d.beta1, (double)t));
    h[LOOM__H_BC2] = (float)(1.0 - pow(o->d.beta2, (double)t));
    h[LOOM__H_APPLY] = apply ? 1.0f : 0.0f;
    h[LOOM__H_GMULT] = (float)(1.0 / o->d.grad_accum);
    h[LOOM__H_FIRST] = t == 1 ? 1.0f : 0.0f;
    for (int i = 0; i < o->ngroups; i++) {
        h[LOOM__H_LR] = (float)(lr * o->groups[i].mult);
        loom_status st = loom_plan_write(plan, o->groups[i].hyper, h, sizeof h);
        if (st != LOOM_OK) return st;
    }
    o->micro++;
    if (apply) o->steps++;
    return LOOM_OK;
}

int64_t loom_optimizer_steps(const loom_optimizer *o) { return o->steps; }
int64_t loom_optimizer_micro_steps(const loom_optimizer *o) { return o->micro; }
void loom_optimizer_set_counters(loom_optimizer *o, int64_t steps, int64_t micro) {
    o->steps = steps;
    o->micro = micro;
}
int loom_optimizer_param_count(const loom_optimizer *o) { return o->nparams; }
void loom_optimizer_decay_counts(const loom_optimizer *o, int *decayed, int *not_decayed) {
    if (decayed) *decayed = o->ndecay;
    if (not_decayed) *not_decayed = o->nparams - o->ndecay;
}

int loom_optimizer_groups(const loom_optimizer *o, int i, double *mult, int *params) {
    if (i >= 0 && i < o->ngroups) {
        if (mult) *mult = o->groups[i].mult;
        if (params) *params = o->groups[i].params;
    }
    return o->ngroups;
}
