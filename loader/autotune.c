/* loader/autotune.c — the decisions of the loader's worker auto-tuner
 * (loader/autotune.h): pure arithmetic on the timings it is fed. */
#include "autotune.h"

int loom__autotune_limit(int ncores, int max_workers) { return max_workers ? max_workers : 2 * ncores; }

void loom__autotune_reset(loom__autotune *t) { t->n = 0, t->wait = t->compute = t->load = t->cpu = 0; }

void loom__autotune_add(loom__autotune *t, const loom__autotune_obs *o) {
    t->compute += o->compute;
    t->wait += o->wait;
    t->load += o->load;
    t->cpu += o->cpu;
    t->n++;
}

int loom__autotune_decide(loom__autotune *t, int active, int max_workers, int ncores) {
    int64_t window = 2 * (int64_t)active > 8 ? 2 * (int64_t)active : 8;
    if (t->n < window) return active;
    double step = t->wait + t->compute, frac = step > 0 ? t->wait / step : 0;
    double busy = step > 0 ? t->load / step : 0; /* workers kept busy */
    double cores = step > 0 ? t->cpu / step : 0; /* the process's cores in use */
    int n = active, want = n;
    if (frac > 0.05 && n < max_workers && busy >= 0.5 * n && cores < ncores - 0.5)
        want = n + 1;
    else if (n > 1 && ((frac < 0.01 && busy <= 0.75 * (n - 1)) || (frac <= 0.05 && busy <= 0.5 * (n - 1))))
        want = n - 1;
    loom__autotune_reset(t);
    return want;
}
