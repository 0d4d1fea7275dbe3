/* core/sched.c — learning-rate schedules (closed forms of torch's schedulers)
 * and linear warm-up. */
#include <math.h>

#include "impl.h"

static const char *const names[] = {"constant", "step", "multistep", "exponential", "cosine", "cosine-restarts",
                                     "one-cycle", "polynomial"};

int loom_schedule_parse(const char *name) {
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
        if (name && !strcmp(name, names[i])) return i;
    return -1;
}

/* COSINE_RESTARTS: the t at which period n (0-based) starts, mult > 1 */
static double restart_start(double t0, double mult, double n) { return t0 * (pow(mult, n) - 1) / (mult - 1); }

#define PI 3.14159265358979323846

/* torch OneCycleLR's _annealing_cos / _annealing_linear */
static double anneal(double start, double end, double pct, bool linear) {
    if (linear) return (end - start) * pct + start;
    return end + (start - end) / 2.0 * (cos(PI * pct) + 1);
}

static double lr_at(const loom_schedule *s, int64_t t, int depth);

/* a sub-schedule of SEQUENTIAL / CHAIN, its lr 0 inheriting the parent's */
static double sub_lr(const loom_schedule *parent, int i, int64_t t, int depth) {
    loom_schedule c = parent->seq[i];
    if (c.lr <= 0) c.lr = parent->lr;
    return lr_at(&c, t, depth + 1);
}

double loom_schedule_lr(const loom_schedule *s, int64_t t) { return lr_at(s, t, 0); }

static double lr_at(const loom_schedule *s, int64_t t, int depth) {
    double lr = s->lr, gamma = s->gamma > 0 ? s->gamma : 0.1;
    double factor = 1.0;
    if (s->warmup > 0) {
        double start = s->warmup_start > 0 ? s->warmup_start : 0.1;
        if (t < s->warmup) factor = start + (1.0 - start) * (double)t / (double)s->warmup;
        t = t < s->warmup ? 0 : t - s->warmup;
    }
    if (t < 0) t = 0;
    double v = lr;
    switch (s->kind) {
    case LOOM_SCHED_CONSTANT: break;
    case LOOM_SCHED_STEP: v = lr * pow(gamma, (double)(s->step_size > 0 ? t / s->step_size : 0)); break;
    case LOOM_SCHED_MULTISTEP: {
        int k = 0;
        for (int i = 0; i < s->n_milestones; i++) k += s->milestones[i] <= t;
        v = lr * pow(gamma, k);
        break;
    }
    case LOOM_SCHED_EXPONENTIAL: v = lr * pow(gamma, (double)t); break;
    case LOOM_SCHED_COSINE: {
        double tm = s->t_max > 0 ? (double)s->t_max : 1.0, tt = (double)t < tm ? (double)t : tm;
        v = s->eta_min + (lr - s->eta_min) * (1 + cos(3.14159265358979323846 * tt / tm)) / 2;
        break;
    }
    case LOOM_SCHED_COSINE_RESTARTS: {
        double t0 = s->t0 > 0 ? (double)s->t0 : 1.0, mult = s->t_mult >= 1 ? s->t_mult : 1.0, tc = (double)t, ti = t0;
        if (mult == 1.0) {
            tc = fmod(tc, t0);
        } else {
            /* torch's closed form n = floor(log(t/t0 (mult-1) + 1, mult)) can
             * round below a restart (t0 1, mult 3, t 121: log gives 4.999...),
             * so step n onto the period that holds t: start(n) <= t < start(n+1) */
            double n = floor(log(tc / t0 * (mult - 1) + 1) / log(mult));
            if (n < 0) n = 0;
            while (n > 0 && restart_start(t0, mult, n) > tc) n--;
            while (restart_start(t0, mult, n + 1) <= tc) n++;
            tc = tc - restart_start(t0, mult, n);
            ti = t0 * pow(mult, n);
        }
        v = s->eta_min + (lr - s->eta_min) * (1 + cos(3.14159265358979323846 * tc / ti)) / 2;
        break;
    }
    case LOOM_SCHED_ONE_CYCLE: {
        /* torch: phase 1 ends at float(pct_start * total) - 1, phase 2 at total - 1 */
        double total = s->t_max > 1 ? (double)s->t_max : 2.0, pct = s->pct_start > 0 ? s->pct_start : 0.3;
        double div = s->div_factor > 0 ? s->div_factor : 25.0, fdiv = s->final_div_factor > 0 ? s->final_div_factor : 1e4;
        double init = lr / div, fin = init / fdiv, e1 = pct * total - 1, e2 = total - 1;
        double tt = (double)t < e2 ? (double)t : e2;
        if (tt <= e1) v = anneal(init, lr, e1 > 0 ? tt / e1 : 1.0, s->anneal_linear);
        else v = anneal(lr, fin, (tt - e1) / (e2 - e1), s->anneal_linear);
        break;
    }
    case LOOM_SCHED_POLYNOMIAL: {
        double total = s->t_max > 0 ? (double)s->t_max : 5.0, p = s->power > 0 ? s->power : 1.0;
        double tt = (double)t < total ? (double)t : total;
        v = lr * pow(1.0 - tt / total, p);
        break;
    }
    case LOOM_SCHED_SEQUENTIAL: {
        if (!s->seq || s->n_seq < 1 || depth > 8) break;
        int i = 0;
        while (i + 1 < s->n_seq && i < s->n_milestones && t >= s->milestones[i]) i++;
        v = sub_lr(s, i, i ? t - s->milestones[i - 1] : t, depth);
        break;
    }
    case LOOM_SCHED_CHAIN: {
        if (!s->seq || depth > 8) break;
        for (int i = 0; i < s->n_seq; i++) {
            double base = s->seq[i].lr > 0 ? s->seq[i].lr : lr;
            v *= sub_lr(s, i, t, depth) / base;
        }
        break;
    }
    }
    return v * factor;
}

/* ---- reduce-on-plateau: torch ReduceLROnPlateau.step(metrics) ---- */
void loom_plateau_init(loom_plateau *p, double lr) {
    if (p->factor <= 0) p->factor = 0.1;
    if (p->patience == 0) p->patience = 10;
    if (p->patience < 0) p->patience = 0;
    if (p->threshold <= 0) p->threshold = 1e-4;
    if (p->eps <= 0) p->eps = 1e-8;
    p->lr = p->base_lr = lr;
    p->best = p->maximize ? -INFINITY : INFINITY;
    p->bad = p->cooldown_left = p->reductions = 0;
}

static bool plateau_better(const loom_plateau *p, double a) {
    if (p->maximize) return p->abs_threshold ? a > p->best + p->threshold : a > p->best * (1 + p->threshold);
    return p->abs_threshold ? a < p->best - p->threshold : a < p->best * (1 - p->threshold);
}

double loom_plateau_step(loom_plateau *p, double metric) {
    if (plateau_better(p, metric)) {
        p->best = metric;
        p->bad = 0;
    } else {
        p->bad++;
    }
    if (p->cooldown_left > 0) {
        p->cooldown_left--;
        p->bad = 0;
    }
    if (p->bad > p->patience) {
        double nl = fmax(p->lr * p->factor, p->min_lr);
        if (p->lr - nl > p->eps) p->lr = nl, p->reductions++;
        p->cooldown_left = p->cooldown;
        p->bad = 0;
    }
    return p->lr;
}
