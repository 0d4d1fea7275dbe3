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

/* COSINE_RESTARTS: the t at which period n (0-based) starts, mult > 1 */
static double restart_start(double t0, double mult, double n) { return t0 * (pow(mult, n) - 1) / (mult - 1); }

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
    }
    return v * factor;
}
