/* tests/test-autotune.c — the loader's worker auto-tuner (loader/autotune.c)
 * as the pure state machine it is, fed synthetic timings: no threads, no
 * clock, the same result on any machine under any load.
 *
 * A simulated pool: each batch costs one worker `load` seconds, the caller
 * computes `compute` seconds per batch, and with n workers the caller waits
 * max(0, load / n - compute) (+ a fixed latency where a case says so). The
 * cases:
 * - no decision before a window of max(8, 2n) batches; each decision starts
 *   a new window;
 * - the pool grows while the caller waits for busy workers, and settles at
 *   the count that keeps up (also with jittered timings);
 * - it stops at its limit: max_workers, by default twice the cores;
 * - idle workers are removed, down to the count that stays busy enough, also
 *   when a loaded machine makes the caller wait a little;
 * - a wait with idle workers (scheduling latency) adds no worker;
 * - loading bound by the CPU with every core in use (the process's CPU time
 *   per step near the cores) adds no worker: the time slices would only get
 *   thinner.
 */
#include <stdio.h>

#include "../loader/autotune.h"
#include "testutil.h"

typedef struct sim {
    double load, compute, latency, jitter; /* jitter: +- this fraction on load and compute */
    uint32_t rng;
    int cores; /* > 0: loading is CPU work on this many cores (n workers share them; CPU time reported) */
} sim;

/* a deterministic uniform in [-1, 1) */
static double sim_u(sim *s) {
    s->rng = s->rng * 1664525u + 1013904223u;
    return (double)(s->rng >> 8) / (double)(1u << 23) - 1.0;
}

static loom__autotune_obs sim_batch(sim *s, int n) {
    double load = s->load * (1 + s->jitter * sim_u(s)), compute = s->compute * (1 + s->jitter * sim_u(s));
    const double work = load; /* CPU time per batch when loading is CPU work */
    if (s->cores > 0 && n > s->cores) load *= (double)n / s->cores; /* a worker's wall time on shared cores */
    double wait = load / n - compute;
    loom__autotune_obs o = {.wait = (wait > 0 ? wait : 0) + s->latency, .compute = compute, .load = load};
    if (s->cores > 0) o.cpu = work + compute; /* each delivered batch: its loading and the caller's compute */
    return o;
}

/* Run `batches` batches from n workers; returns the final count, *changes
 * the decisions that changed it at or after batch `from`, *lo / *hi the
 * range of counts seen. */
static int run(sim *s, int n, int max_workers, int batches, int from, int *changes, int *lo, int *hi) {
    loom__autotune t = {0};
    *changes = 0, *lo = *hi = n;
    for (int b = 0; b < batches; b++) {
        loom__autotune_obs o = sim_batch(s, n);
        loom__autotune_add(&t, &o);
        int want = loom__autotune_decide(&t, n, max_workers, s->cores > 0 ? s->cores : 16);
        if (want != n && b >= from) (*changes)++;
        n = want;
        if (n < *lo) *lo = n;
        if (n > *hi) *hi = n;
    }
    return n;
}

static void test_window(void) {
    /* the caller always waits, 6 workers fully busy: a decision to grow,
     * but only once the window is full */
    loom__autotune t = {0};
    loom__autotune_obs o = {.wait = 0.03, .compute = 0.01, .load = 0.24};
    int n = 6, window = 12; /* max(8, 2 * 6) */
    for (int b = 0; b < window - 1; b++) {
        loom__autotune_add(&t, &o);
        CHECK(loom__autotune_decide(&t, n, 16, 16) == n, "batch %d of a window of %d: no decision yet", b + 1, window);
    }
    loom__autotune_add(&t, &o);
    CHECK(loom__autotune_decide(&t, n, 16, 16) == n + 1, "a full window of waiting: one more worker");
    CHECK(t.n == 0 && t.wait == 0 && t.compute == 0 && t.load == 0, "the decision starts a new window");
    for (int b = 0; b < 7; b++) loom__autotune_add(&t, &o);
    CHECK(loom__autotune_decide(&t, 2, 16, 16) == 2, "7 batches with 2 workers: the window is 8");
    loom__autotune_add(&t, &o);
    CHECK(loom__autotune_decide(&t, 2, 16, 16) == 3, "8 batches with 2 workers: a decision");
    loom__autotune_reset(&t);
    CHECK(loom__autotune_decide(&t, 4, 16, 16) == 4, "an empty window (reset): no decision");
}

static void test_grow_and_settle(void) {
    /* a batch takes 4 steps of the caller's compute to load: 4 workers keep up */
    sim s = {.load = 0.040, .compute = 0.010};
    int changes, lo, hi;
    int n = run(&s, 1, 16, 400, 100, &changes, &lo, &hi);
    CHECK(n == 4 && hi == 4 && lo == 1, "grows from 1 to the 4 that keep up: %d (seen %d..%d)", n, lo, hi);
    CHECK(changes == 0, "then settles: %d changes after batch 100", changes);
    /* the same with +-10% jitter on every timing */
    s = (sim){.load = 0.035, .compute = 0.010, .jitter = 0.1, .rng = 12345};
    n = run(&s, 1, 16, 2000, 200, &changes, &lo, &hi);
    CHECK(n == 4 && hi == 4, "jittered timings (3.5 steps per load): settles at 4: %d (seen %d..%d)", n, lo, hi);
    CHECK(changes == 0, "and stays: %d changes after batch 200", changes);
}

static void test_limit(void) {
    CHECK(loom__autotune_limit(4, 0) == 8, "the default limit is twice the cores: %d", loom__autotune_limit(4, 0));
    CHECK(loom__autotune_limit(4, 3) == 3, "max_workers sets it: %d", loom__autotune_limit(4, 3));
    /* loading is 100x the compute: it would take 100 workers */
    sim s = {.load = 1.0, .compute = 0.010};
    int changes, lo, hi, max = loom__autotune_limit(4, 0);
    int n = run(&s, 4, max, 1000, 200, &changes, &lo, &hi);
    CHECK(n == max && hi == max, "grows to the limit and stops there: %d (seen up to %d, limit %d)", n, hi, max);
    CHECK(changes == 0, "and stays: %d changes after batch 200", changes);
}

static void test_shrink(void) {
    /* loading takes 2 steps of compute: 8 workers are mostly idle; the rule
     * (the rest at most 75% busy) keeps 3 */
    sim s = {.load = 0.020, .compute = 0.010};
    int changes, lo, hi;
    int n = run(&s, 8, 16, 400, 150, &changes, &lo, &hi);
    CHECK(n == 3 && lo == 3 && hi == 8, "idle workers removed: 8 -> %d (seen %d..%d)", n, lo, hi);
    CHECK(changes == 0, "then settles: %d changes after batch 150", changes);
    /* a loaded machine wakes threads late: the caller waits 3% of its step
     * although 8 workers are idle; the rule for that (the rest at most 50%
     * busy) still removes them, down to 4 */
    s = (sim){.load = 0.020, .compute = 0.010, .latency = 0.0003};
    n = run(&s, 8, 16, 400, 150, &changes, &lo, &hi);
    CHECK(n == 4 && lo == 4, "with a small wait: 8 -> %d (seen %d..%d)", n, lo, hi);
    CHECK(changes == 0, "then settles: %d changes after batch 150", changes);
    /* one worker is never removed */
    s = (sim){.load = 0.001, .compute = 0.010};
    n = run(&s, 1, 16, 200, 0, &changes, &lo, &hi);
    CHECK(n == 1 && changes == 0, "one worker stays: %d, %d changes", n, changes);
}

static void test_latency(void) {
    /* the caller waits a third of its step, but the 4 workers load for only
     * a tenth of it: more threads would not help, and the wait is too long
     * to remove any */
    sim s = {.load = 0.001, .compute = 0.010, .latency = 0.005};
    int changes, lo, hi;
    int n = run(&s, 4, 16, 400, 0, &changes, &lo, &hi);
    CHECK(n == 4 && changes == 0, "a wait with idle workers changes nothing: %d, %d changes", n, changes);
}

static void test_cpu_bound(void) {
    /* decoding takes 20 steps of compute per batch on 2 cores: the caller
     * always waits; from 2 workers (auto's start: the cores) the CPU time per
     * step is 2 cores, so no third; without the CPU time it grows to 4 */
    sim s = {.load = 0.200, .compute = 0.010, .cores = 2};
    int changes, lo, hi;
    int n = run(&s, 2, 4, 400, 0, &changes, &lo, &hi);
    CHECK(n == 2 && hi == 2 && changes == 0, "CPU-bound on full cores: stays at 2: %d (seen %d..%d)", n, lo, hi);
    /* from 1 worker: one core idle, so one more, then no more */
    n = run(&s, 1, 4, 400, 100, &changes, &lo, &hi);
    CHECK(n == 2 && hi == 2 && changes == 0, "from 1: grows to the 2 cores and stops: %d (seen %d..%d)", n, lo, hi);
    /* the same timings without the CPU time (an I/O-like source): up to the limit */
    s.cores = 0;
    n = run(&s, 2, 4, 400, 100, &changes, &lo, &hi);
    CHECK(n == 4 && hi == 4, "without the CPU time: grows to the limit 4: %d (seen %d..%d)", n, lo, hi);
}

int main(void) {
    test_window();
    test_grow_and_settle();
    test_limit();
    test_shrink();
    test_latency();
    test_cpu_bound();
    return tu_summary();
}
