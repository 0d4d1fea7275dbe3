/* loader/autotune.h — the loader's worker auto-tuner as a pure state
 * machine (loader/autotune.c): fed the timings of each delivered batch, it
 * says after each window of batches whether the pool should gain a worker,
 * lose one, or stay. No clock and no threads: loader/pool.c measures and
 * acts, tests/test-autotune.c feeds it synthetic timings. */
#ifndef LOOM_LOADER_AUTOTUNE_H
#define LOOM_LOADER_AUTOTUNE_H

#include <stdint.h>

/* The timings of one delivered batch, in seconds. */
typedef struct loom__autotune_obs {
    double wait;    /* the caller's time blocked in next() for it */
    double compute; /* the caller's time between the previous next() and this one (0 for an epoch's first) */
    double load;    /* the worker time that loaded it */
    double cpu;     /* the process's CPU time over wait + compute, all threads (0: not measured) */
} loom__autotune_obs;

/* The window being gathered: zero-initialised is the empty window. */
typedef struct loom__autotune {
    int64_t n;                       /* batches in it */
    double wait, compute, load, cpu; /* their sums */
} loom__autotune;

/* The most workers auto mode may use: max_workers when set (> 0), else
 * twice the cores. */
int loom__autotune_limit(int ncores, int max_workers);
/* Start a new window (an epoch's begin). */
void loom__autotune_reset(loom__autotune *t);
/* One delivered batch's timings into the window. */
void loom__autotune_add(loom__autotune *t, const loom__autotune_obs *o);
/* The worker count wanted with `active` workers (at most max_workers).
 * Until the window holds max(8, 2 active) batches: active. Then, from the
 * window's step (wait + compute), the caller's waiting fraction and the
 * workers' busy-ness (load / step, in workers): active + 1 while the caller
 * waits for data more than 5% of its step and the workers are at least half
 * busy (a wait with idle workers is scheduling latency that more threads
 * would not cure) and the process leaves at least half of one of its
 * ncores idle (cpu / step below ncores - 0.5: when loading is bound by the
 * CPU and the cores are full, another thread only slices them finer);
 * active - 1 when the rest would still be at most 75% busy while the
 * caller waits under 1%, or at most 50% busy while the wait is
 * under the 5% that adds one (a loaded machine wakes threads late, so an
 * idle pool may never see a wait under 1%); else active. The window then
 * starts again. */
int loom__autotune_decide(loom__autotune *t, int active, int max_workers, int ncores);

#endif
