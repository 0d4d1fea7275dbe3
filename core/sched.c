/* core/sched.c — learning-rate schedules (closed forms of torch's schedulers)
 * and linear warm-up. */
#include <math.h>

#include "impl.h"

static const char *const names[] = {"constant", "step", "multistep", "exponential", "cosine", "cosine-restarts"};

int loom_schedule_parse(const char *name) {
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
        if (name && !strcmp(name, names[i])) return i;
    return -1;
}

double loom_schedule_lr(const loom_schedule *s, int64_t t) {
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
        } else { /* torch: n = floor(log(t/t0 (mult-1) + 1, mult)) */
            double n = floor(log(tc / t0 * (mult - 1) + 1) / log(mult));
            tc = tc - t0 * (pow(mult, n) - 1) / (mult - 1);
            ti = t0 * pow(mult, n);
        }
        v = s->eta_min + (lr - s->eta_min) * (1 + cos(3.14159265358979323846 * tc / ti)) / 2;
        break;
    }
    }
    return v * factor;
}
