/* tests/test-sched.c — learning-rate schedules (core/sched.c) against torch.
 *
 * The fixtures (tests/sched_fixtures.h, from tests/gen_sched_fixtures.py) are
 * torch's LR at t = 0..20 for every schedule kind, alone and with a 3-step
 * linear warm-up from 0.1 (torch: SequentialLR(LinearLR, sched, [3])). loom
 * computes closed forms in double, so the tolerance is relative 1e-9. One
 * documented difference: loom's cosine holds eta_min for t >= t_max, where
 * torch's CosineAnnealingLR rises again; those points are checked against
 * eta_min. Cosine with warm restarts is also walked for a long t against the
 * step-by-step recurrence torch uses, which is exact at every restart.
 * One-cycle (cos and linear), polynomial, sequences (SequentialLR) and
 * products (ChainedScheduler) are in the same fixtures; reduce-on-plateau is
 * fed a scripted metric sequence and checked against torch's LR after each
 * step(metric).
 */
#include <math.h>
#include <string.h>

#include "testutil.h"
#include "sched_fixtures.h"

static bool close_rel(double a, double b) { return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b)); }

static void check_fixtures(void) {
    int n = (int)(sizeof sched_fixtures / sizeof *sched_fixtures);
    for (int i = 0; i < n; i++) {
        const sched_fixture *f = &sched_fixtures[i];
        for (int t = 0; t < SCHED_FIX_T; t++) {
            double want = f->lr[t], got = loom_schedule_lr(&f->s, t);
            int64_t ts = t - f->s.warmup; /* the schedule's own t */
            if (f->s.kind == LOOM_SCHED_COSINE && ts > f->s.t_max) want = f->s.eta_min; /* loom holds eta_min */
            CHECK(close_rel(got, want), "%s: t %d: loom %.17g, expected %.17g", f->name, t, got, want);
        }
    }
}

/* Cosine with warm restarts the way torch steps it (T_cur, T_i), exact at
 * every restart; loom's closed form must agree for every t. */
static void check_restarts_long(int64_t t0, double mult, int64_t tmax) {
    loom_schedule s = {.kind = LOOM_SCHED_COSINE_RESTARTS, .lr = 0.1, .t0 = t0, .t_mult = mult, .eta_min = 1e-4};
    double tcur = 0, ti = (double)t0, worst = 0;
    int64_t bad_t = -1, restarts = 0;
    for (int64_t t = 0; t <= tmax; t++) {
        double want = s.eta_min + (s.lr - s.eta_min) * (1 + cos(3.14159265358979323846 * tcur / ti)) / 2;
        double got = loom_schedule_lr(&s, t);
        double err = fabs(got - want) / want;
        if (err > worst) worst = err, bad_t = t;
        if (++tcur >= ti) tcur -= ti, ti *= mult, restarts++;
    }
    CHECK(worst <= 1e-9, "cosine-restarts t0 %lld t_mult %g over t <= %lld (%lld restarts): worst rel err %.3g at t %lld",
          (long long)t0, mult, (long long)tmax, (long long)restarts, worst, (long long)bad_t);
}

static void check_warmup(void) {
    /* a custom start factor, over a 4-step warm-up, in front of a step schedule */
    loom_schedule s = {.kind = LOOM_SCHED_STEP, .lr = 0.2, .step_size = 2, .gamma = 0.5, .warmup = 4, .warmup_start = 0.25};
    const double want[] = {0.05, 0.0875, 0.125, 0.1625, 0.2, 0.2, 0.1, 0.1, 0.05};
    for (int t = 0; t < (int)(sizeof want / sizeof *want); t++)
        CHECK(close_rel(loom_schedule_lr(&s, t), want[t]), "warm-up 4 from 0.25: t %d: %.17g, expected %.17g", t,
              loom_schedule_lr(&s, t), want[t]);
    /* the default start is a tenth of the LR (the guide's rule) */
    loom_schedule d = {.kind = LOOM_SCHED_CONSTANT, .lr = 3.0, .warmup = 5};
    CHECK(close_rel(loom_schedule_lr(&d, 0), 0.3), "default warm-up start: %.17g, expected 0.3", loom_schedule_lr(&d, 0));
    CHECK(close_rel(loom_schedule_lr(&d, 5), 3.0), "warm-up end: %.17g, expected 3", loom_schedule_lr(&d, 5));
    /* warm-up into restarts: the first period starts at t = warmup */
    loom_schedule r = {.kind = LOOM_SCHED_COSINE_RESTARTS, .lr = 1.0, .t0 = 2, .t_mult = 1, .warmup = 2};
    CHECK(close_rel(loom_schedule_lr(&r, 2), 1.0) && close_rel(loom_schedule_lr(&r, 3), 0.5) &&
              close_rel(loom_schedule_lr(&r, 4), 1.0),
          "warm-up then restarts: %.17g %.17g %.17g, expected 1 0.5 1", loom_schedule_lr(&r, 2), loom_schedule_lr(&r, 3),
          loom_schedule_lr(&r, 4));
    /* defaults: gamma 0 = 0.1 */
    loom_schedule e = {.kind = LOOM_SCHED_EXPONENTIAL, .lr = 1.0};
    CHECK(close_rel(loom_schedule_lr(&e, 2), 0.01), "exponential default gamma: %.17g, expected 0.01", loom_schedule_lr(&e, 2));
}

static void check_plateau(void) {
    int n = (int)(sizeof plateau_fixtures / sizeof *plateau_fixtures);
    for (int i = 0; i < n; i++) {
        loom_plateau p = plateau_fixtures[i].p;
        loom_plateau_init(&p, 0.1);
        for (int t = 0; t < SCHED_FIX_T; t++) {
            double got = loom_plateau_step(&p, plateau_metrics[t]), want = plateau_fixtures[i].lr[t];
            CHECK(close_rel(got, want), "%s: after metric %d (%g): loom %.17g, torch %.17g", plateau_fixtures[i].name, t,
                  plateau_metrics[t], got, want);
        }
    }
    /* beyond t_max: one-cycle holds its final LR, polynomial 0 */
    loom_schedule oc = {.kind = LOOM_SCHED_ONE_CYCLE, .lr = 1, .t_max = 10};
    CHECK(close_rel(loom_schedule_lr(&oc, 50), 1.0 / 25 / 1e4), "one-cycle after t_max: %.17g", loom_schedule_lr(&oc, 50));
    loom_schedule po = {.kind = LOOM_SCHED_POLYNOMIAL, .lr = 1, .t_max = 4};
    CHECK(loom_schedule_lr(&po, 9) == 0, "polynomial after t_max: %.17g", loom_schedule_lr(&po, 9));
}

static void check_parse(void) {
    const char *names[] = {"constant", "step", "multistep", "exponential", "cosine", "cosine-restarts", "one-cycle", "polynomial"};
    const int kinds[] = {LOOM_SCHED_CONSTANT, LOOM_SCHED_STEP, LOOM_SCHED_MULTISTEP, LOOM_SCHED_EXPONENTIAL,
                         LOOM_SCHED_COSINE, LOOM_SCHED_COSINE_RESTARTS, LOOM_SCHED_ONE_CYCLE, LOOM_SCHED_POLYNOMIAL};
    for (int i = 0; i < 8; i++)
        CHECK(loom_schedule_parse(names[i]) == kinds[i], "parse '%s' -> %d", names[i], loom_schedule_parse(names[i]));
    CHECK(loom_schedule_parse("cosine_restarts") == -1, "unknown name must give -1");
    CHECK(loom_schedule_parse("") == -1 && loom_schedule_parse(NULL) == -1, "empty / NULL name must give -1");
}

int main(void) {
    check_fixtures();
    check_restarts_long(3, 2, 100000);
    check_restarts_long(4, 1, 1000);
    check_restarts_long(1, 3, 100000); /* restarts at 121 and 29524, where log(.)/log(3) rounds down */
    check_restarts_long(2, 3, 100000);
    check_restarts_long(1, 10, 200000); /* 111, 111111 */
    check_restarts_long(5, 1.5, 10000); /* non-integer growth (loom allows it; torch does not) */
    check_warmup();
    check_plateau();
    check_parse();
    return tu_summary();
}
