/* tests/test-roundtrips.c — host round trips per training step, counted by
 * the backends (loom_backend_stats, loom/backend.h): the cnn trained through
 * the trainer on every available backend (cpu, vulkan, opencl; a backend
 * without a device here is skipped with a message). After a first step
 * (which may set things up), each step must:
 *   - upload its batch (x and y) and the optimizer's small hyper-parameter
 *     table, nothing else;
 *   - read back the loss and the correct count (8 bytes: accuracy is
 *     counted on the device, the logits stay there) in one read, on Vulkan
 *     and OpenCL together with the plan's run-time error flags
 *     (loom_plan_run_read: the stats are copied behind the flags in the
 *     run's own submit);
 *   - submit and wait once: on Vulkan the plan run (on a CPU device such as
 *     lavapipe, whose memory the host maps; on a GPU each upload may add one
 *     staging copy: an upper bound there), on OpenCL the run's blocking read
 *     (its writes are queued and run with the plan); never on the CPU.
 * Evaluation after the epoch is checked the same way per batch: its
 * uploads are the batch, its reads the stats and the error flags.
 * The counts are exact (an upper bound only for a Vulkan GPU's staging
 * copies), so they cannot grow unnoticed. */
#include <stdlib.h>
#include <string.h>

#include "loom/train.h"
#include "testutil.h"

enum { BATCH = 32, STEPS = 4, N = BATCH * (STEPS + 1), NTEST = 2 * BATCH, HW = 28, HYPER_BYTES_MAX = 64 };

/* n samples 1 x 28 x 28 of a seeded pattern, labels 0..9 */
static void make_set(loom_dataset *ds, int64_t n, uint32_t salt) {
    memset(ds, 0, sizeof *ds);
    ds->n = n, ds->c = 1, ds->h = HW, ds->w = HW, ds->num_classes = 10;
    ds->pixels = malloc((size_t)n * HW * HW);
    ds->labels = malloc((size_t)n * sizeof *ds->labels);
    for (int64_t i = 0; i < n; i++) {
        uint32_t w[4];
        loom_philox(5, salt, (uint64_t)i, w);
        ds->labels[i] = (int32_t)(w[0] % 10u);
        for (int k = 0; k < HW * HW; k++) ds->pixels[i * HW * HW + k] = (uint8_t)((k * (ds->labels[i] + 1) + w[1]) & 0xff);
    }
}

static void print_stats(const char *be, const char *what, const loom_backend_stats *s) {
    printf("  %-7s %-10s uploads %lld (%lld B), readbacks %lld (%lld B), submits %lld, waits %lld\n", be, what,
           (long long)s->uploads, (long long)s->upload_bytes, (long long)s->readbacks, (long long)s->readback_bytes,
           (long long)s->submits, (long long)s->waits);
}

/* the expected reads: one; the stats (on Vulkan and OpenCL with the error flags) */
static void check_reads(const char *be, const char *what, const loom_backend_stats *s, int64_t logits_bytes) {
    bool cpu = !strcmp(be, "cpu");
    CHECK(s->readbacks == 1, "%s %s: %lld readbacks, expected 1 (the loss and count%s)", be, what,
          (long long)s->readbacks, cpu ? "" : " with the error flags");
    if (cpu)
        CHECK(s->readback_bytes == 8, "%s %s: %lld bytes read back, expected 8", be, what, (long long)s->readback_bytes);
    else
        CHECK(s->readback_bytes > 8 && s->readback_bytes < logits_bytes,
              "%s %s: %lld bytes read back: the stats and a few flags, less than the %lld bytes of logits", be, what,
              (long long)s->readback_bytes, (long long)logits_bytes);
}

static void check_submits(const char *be, bool gpu, const char *what, const loom_backend_stats *s, int64_t opencl_n) {
    if (!strcmp(be, "cpu")) {
        CHECK(s->submits == 0 && s->waits == 0, "cpu %s: no submits or waits (got %lld, %lld)", what,
              (long long)s->submits, (long long)s->waits);
    } else if (!strcmp(be, "vulkan") && !gpu) {
        /* a CPU device (lavapipe): transfers are copies into mapped memory, the run is the one submit */
        CHECK(s->submits == 1 && s->waits == 1, "vulkan %s: one submit and one wait (got %lld, %lld)", what,
              (long long)s->submits, (long long)s->waits);
    } else if (!strcmp(be, "vulkan")) {
        /* a GPU: each upload into device-local memory is a staging copy, one submit each (the stats
         * come back in the run's submit, the error flags from mapped memory) */
        int64_t most = 1 + s->uploads;
        CHECK(s->submits >= 1 && s->submits <= most && s->waits == s->submits,
              "vulkan %s: the run and at most one staging copy per transfer: %lld submits, at most %lld", what,
              (long long)s->submits, (long long)most);
    } else {
        CHECK(s->submits == opencl_n && s->waits == s->submits, "opencl %s: %lld submits (got %lld, waits %lld)",
              what, (long long)opencl_n, (long long)s->submits, (long long)s->waits);
    }
}

static void run_backend(loom_ctx *ctx, const char *be, const loom_dataset *train, const loom_dataset *test) {
    const char *why = NULL;
    if (!loom_backend_available(ctx, be, &why)) {
        printf("SKIP %s: %s\n", be, why ? why : "not available");
        return;
    }
    /* a GPU, or lavapipe made to copy through staging memory as on a discrete GPU (LOOM_VULKAN_STAGING=1,
     * the test-roundtrips-staging run): the stats read must still ride on the run's submit */
    const char *stg = getenv("LOOM_VULKAN_STAGING");
    bool gpu = loom_backend_is_gpu(ctx, be) || (!strcmp(be, "vulkan") && stg && !strcmp(stg, "1"));
    loom_trainer_desc d = {.model.net.arch = "cnn", .optim = {.opt = {.momentum = 0.9}, .sched = {.lr = 0.01}},
                           .run = {.backend = be, .epochs = 1, .max_steps = STEPS + 1, .seed = 7}};
    d.data.train = train, d.data.test = test, d.data.batch = BATCH, d.data.eval_batch = BATCH;
    /* the divergence check reads every parameter and state once per epoch, before
     * the evaluation (train/diverge.c), like a checkpoint: not the evaluation's
     * per-batch cost this test counts, so it is off here */
    d.run.allow_nonfinite = true;
    d.data.workers = LOOM_WORKERS_SYNC;
    loom_trainer *t = NULL;
    CHECK_OK(ctx, loom_trainer_create(ctx, &d, &t));
    if (!t) return;
    loom_backend *b = loom_plan_backend(loom_trainer_plan(t));
    const int64_t x_bytes = (int64_t)BATCH * HW * HW * 4, y_bytes = BATCH * 4, logits_bytes = BATCH * 10 * 4;
    loom_step_result r;
    CHECK_OK(ctx, loom_trainer_step(t, &r)); /* the first step: may set up */
    for (int s = 0; s < STEPS; s++) {
        loom_backend_stats st;
        loom_backend_stats_reset(b);
        CHECK_OK(ctx, loom_trainer_step(t, &r));
        loom_backend_stats_get(b, &st);
        if (s == 0) print_stats(be, "step", &st);
        CHECK(r.accuracy >= 0 && r.accuracy <= 1 && r.accuracy * BATCH == (double)(int)(r.accuracy * BATCH + 0.5),
              "%s: step accuracy %g is a count out of %d", be, r.accuracy, BATCH);
        CHECK(st.uploads <= 3 && st.upload_bytes >= x_bytes + y_bytes && st.upload_bytes <= x_bytes + y_bytes + HYPER_BYTES_MAX,
              "%s step %d: uploads %lld (%lld bytes): the batch (%lld bytes) and the optimizer's hyper table only", be, s,
              (long long)st.uploads, (long long)st.upload_bytes, (long long)(x_bytes + y_bytes));
        check_reads(be, "step", &st, logits_bytes);
        check_submits(be, gpu, "step", &st, 1);
    }
    CHECK(r.epoch_done, "%s: the epoch ends after %d steps", be, STEPS + 1);
    /* evaluation: NTEST / BATCH batches, each its batch in and the stats out */
    loom_backend_stats st;
    loom_backend_stats_reset(b);
    loom_epoch_stats es;
    CHECK_OK(ctx, loom_trainer_epoch_end(t, &es));
    loom_backend_stats_get(b, &st);
    print_stats(be, "evaluation", &st);
    const int nb = NTEST / BATCH;
    CHECK(st.uploads == 2 * nb && st.upload_bytes == nb * (x_bytes + y_bytes),
          "%s evaluation: %lld uploads (%lld bytes), expected %d (%lld bytes)", be, (long long)st.uploads,
          (long long)st.upload_bytes, 2 * nb, (long long)(nb * (x_bytes + y_bytes)));
    loom_backend_stats per = st;
    per.readbacks /= nb, per.readback_bytes /= nb, per.submits /= nb, per.waits /= nb;
    check_reads(be, "eval batch", &per, logits_bytes);
    check_submits(be, gpu, "eval batch", &per, 1);
    CHECK(es.test_acc >= 0 && es.test_acc <= 1, "%s: test accuracy %g in [0, 1]", be, es.test_acc);
    loom_trainer_destroy(t);
}

int main(void) {
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return tu_skip("no context");
    loom_dataset train, test;
    make_set(&train, N, 1);
    make_set(&test, NTEST, 2);
    static const char *const backends[] = {"cpu", "vulkan", "opencl"};
    for (int i = 0; i < 3; i++) run_backend(ctx, backends[i], &train, &test);
    loom_dataset_free(&train);
    loom_dataset_free(&test);
    loom_ctx_destroy(ctx);
    return tu_summary();
}
