/* tests/test-train.c — end-to-end training on Fashion-MNIST (short runs): the
 * loss falls and accuracy beats chance by a wide margin for mlp and cnn; a
 * run resumed from a checkpoint ends bitwise equal to an uninterrupted one;
 * the trainer driven step by step (with an LR range test between steps)
 * ends bitwise equal to loom_train; under fp16 loss scaling, overflowing
 * gradients are skipped steps, not a divergence, while a real divergence is
 * still stopped; bad training settings are clear errors. Skips if the dataset is absent. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/train.h"
#include "testutil.h"

static loom_dataset train_set, test_set;

/* Fashion-MNIST's normalisation (the data's statistics, given by the caller) */
static const loom_train_data FMNIST = {.mean = 0.2860f, .std = 0.3530f};

static loom_status on_epoch(void *user, const loom_epoch_stats *s) {
    double *first = user;
    if (s->epoch == 1) *first = s->train_loss;
    return LOOM_OK;
}

static void short_run(loom_ctx *ctx, const char *arch, int64_t steps, int64_t test_n, double min_acc) {
    loom_dataset test = test_set;
    test.n = test_n; /* a prefix of the test set: a view, not a copy */
    double first = NAN;
    loom_train_observer obs = {.user = &first, .on_epoch = on_epoch};
    loom_trainer_desc d = {.data = FMNIST, .model.net.arch = arch, .optim = {.opt = {.momentum = 0.9}, .sched = {.lr = 0.01}},
                           .run = {.backend = "cpu", .epochs = 2, .max_steps = steps, .seed = 3},
                           .log = {.observers = &obs, .nobservers = 1}};
    d.data.train = &train_set, d.data.test = &test;
    loom_train_result r;
    CHECK_OK(ctx, loom_train(ctx, &d, &r));
    printf("%s: %lld steps/epoch x 2: train loss %.3f -> %.3f, test acc %.1f%% on %lld samples, %.0f samples/s\n",
           arch, (long long)steps, first, r.train_loss, 100 * r.test_acc, (long long)test_n, r.samples_per_s);
    CHECK(r.train_loss < first, "%s: train loss fell (%.3f -> %.3f)", arch, first, r.train_loss);
    CHECK(r.test_acc >= min_acc, "%s: test accuracy %.3f >= %.2f (chance is 0.10)", arch, r.test_acc, min_acc);
    CHECK(r.epochs_run == 2 && r.steps == 2 * steps, "%s: 2 epochs, %lld optimizer steps (got %d, %lld)", arch,
          (long long)(2 * steps), r.epochs_run, (long long)r.steps);
    CHECK(r.peak_bytes > 0, "peak bytes reported");
}

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len);
    *n = b && fread(b, 1, (size_t)len, f) == (size_t)len ? (size_t)len : 0;
    fclose(f);
    return b;
}

/* 2 epochs straight vs 1 epoch + checkpoint + resume for the second: the
 * final checkpoints (weights, batch-norm statistics, optimizer state) must
 * be byte-identical. cnn: dropout and batch norm; grad accumulation and
 * AdamW with the mlp. */
static void resume(loom_ctx *ctx, const char *arch, loom_optimizer_desc opt) {
    loom_dataset sub = train_set;
    sub.n = 640;
    loom_trainer_desc d = {.data = FMNIST, .model.net.arch = arch, .optim = {.opt = opt, .sched = {.lr = 0.01}},
                           .run = {.backend = "cpu", .epochs = 2, .seed = 11}};
    d.data.train = &sub, d.data.batch = 64;
    loom_train_result r;
    d.run.save_path = "resume-full.safetensors";
    CHECK_OK(ctx, loom_train(ctx, &d, &r));
    d.run.epochs = 1;
    d.run.save_path = "resume-half.safetensors";
    CHECK_OK(ctx, loom_train(ctx, &d, &r));
    d.run.epochs = 2;
    d.run.seed = 999; /* the checkpoint's seed wins */
    d.run.resume_path = "resume-half.safetensors";
    d.run.save_path = "resume-rest.safetensors";
    CHECK_OK(ctx, loom_train(ctx, &d, &r));
    CHECK(r.epochs_run == 2, "resumed run ends at epoch 2 (got %d)", r.epochs_run);
    size_t na = 0, nb = 0;
    unsigned char *a = slurp("resume-full.safetensors", &na), *b = slurp("resume-rest.safetensors", &nb);
    CHECK(a && b && na == nb && na > 0 && !memcmp(a, b, na), "%s: resumed run is bitwise equal to the uninterrupted one",
          arch);
    free(a), free(b);
    remove("resume-full.safetensors"), remove("resume-half.safetensors"), remove("resume-rest.safetensors");
}

/* The trainer driven step by step, with an LR range test in the middle of
 * the first epoch, ends with the same checkpoint as loom_train: the range
 * test puts back every weight, state and counter and the loader continues
 * where the epoch was. */
static void stepwise(loom_ctx *ctx) {
    loom_dataset sub = train_set;
    sub.n = 640;
    loom_trainer_desc d = {.data = FMNIST, .model.net.arch = "cnn",
                           .optim = {.opt = {.momentum = 0.9}, .sched = {.lr = 0.01}},
                           .run = {.backend = "cpu", .epochs = 2, .seed = 4, .save_path = "stepwise-loop.safetensors"}};
    d.data.train = &sub, d.data.batch = 64;
    loom_train_result r, r2;
    CHECK_OK(ctx, loom_train(ctx, &d, &r));
    d.run.save_path = "stepwise-steps.safetensors";
    loom_trainer *t;
    CHECK_OK(ctx, loom_trainer_create(ctx, &d, &t));
    int steps = 0, epochs = 0, found = 0;
    loom_status st = LOOM_OK;
    while (st == LOOM_OK && !loom_trainer_done(t)) {
        loom_step_result sr = {0};
        while (st == LOOM_OK && !sr.epoch_done) {
            if ((st = loom_trainer_step(t, &sr)) == LOOM_OK) steps++;
            if (st == LOOM_OK && steps == 3) {
                loom_lr_find_result fr;
                st = loom_trainer_lr_find(t, &(loom_lr_find_desc){.steps = 20}, &fr);
                found = st == LOOM_OK ? fr.n : 0;
                loom_lr_find_result_free(&fr);
            }
        }
        loom_epoch_stats es;
        if (st == LOOM_OK && (st = loom_trainer_epoch_end(t, &es)) == LOOM_OK) epochs++;
        CHECK(st != LOOM_OK || es.last == (epochs == 2), "epoch %d: last %d", epochs, es.last);
    }
    CHECK_OK(ctx, st);
    CHECK(loom_trainer_step(t, NULL) == LOOM_ERR_STATE, "a step after the last epoch is an error");
    CHECK_OK(ctx, loom_trainer_finish(t, &r2));
    loom_trainer_destroy(t);
    CHECK(steps == 20 && epochs == 2 && found > 0, "10 steps x 2 epochs (%d steps, %d epochs), range test %d points",
          steps, epochs, found);
    CHECK(r2.steps == r.steps && r2.train_loss == r.train_loss, "step by step: %lld steps, train loss %.9g (loop: %lld, %.9g)",
          (long long)r2.steps, r2.train_loss, (long long)r.steps, r.train_loss);
    size_t na = 0, nb = 0;
    unsigned char *a = slurp("stepwise-loop.safetensors", &na), *b = slurp("stepwise-steps.safetensors", &nb);
    CHECK(a && b && na == nb && na > 0 && !memcmp(a, b, na), "step by step (with a range test) == loom_train, bitwise");
    free(a), free(b);
    remove("stepwise-loop.safetensors"), remove("stepwise-steps.safetensors");
}

static loom_status on_epoch_scale(void *user, const loom_epoch_stats *s) {
    loom_epoch_stats *last = user;
    *last = *s;
    return LOOM_OK;
}

/* fp16 with a loss scale of 2^40: the first steps' scaled gradients overflow
 * f16, so the scaler skips them and halves the scale until they fit; the
 * divergence checks (a non-finite step loss, non-finite weights at the epoch
 * end) must let that run finish and learn. The same model at lr 1e6 still
 * diverges: the scaler does not hide a real divergence. */
static void amp_overflow(loom_ctx *ctx) {
    loom_epoch_stats last = {0};
    loom_train_observer obs = {.user = &last, .on_epoch = on_epoch_scale};
    loom_dataset test = test_set;
    test.n = 1000;
    loom_trainer_desc d = {.data = FMNIST, .model = {.net.arch = "cnn", .amp = LOOM_F16,
                                                     .loss_scale = {.init_scale = 0x1p40, .growth_interval = 1000}},
                           .optim = {.opt = {.momentum = 0.9}, .sched = {.lr = 0.01}},
                           .run = {.backend = "cpu", .epochs = 1, .max_steps = 80, .seed = 5},
                           .log = {.observers = &obs, .nobservers = 1}};
    d.data.train = &train_set, d.data.test = &test;
    loom_train_result r;
    loom_status st = loom_train(ctx, &d, &r);
    CHECK(st == LOOM_OK, "fp16 with scale 2^40: the overflowing steps are skipped, the run ends (%s '%s')",
          loom_status_str(st), st ? loom_last_error(ctx) : "");
    if (st != LOOM_OK) return;
    printf("fp16 from scale 2^40: %lld skipped steps, scale now %g, test acc %.1f%%\n", (long long)last.skipped_steps,
           last.loss_scale, 100 * r.test_acc);
    CHECK(last.skipped_steps >= 10 && last.skipped_steps < 80, "some steps skipped, not all (%lld of 80)",
          (long long)last.skipped_steps);
    CHECK(last.loss_scale < 0x1p40 && last.loss_scale >= 1, "the scale backed off (%g)", last.loss_scale);
    CHECK(isfinite(r.train_loss) && r.test_acc >= 0.4, "the run learned (train loss %.3f, test acc %.3f)",
          r.train_loss, r.test_acc);
    d.optim.sched.lr = 1e6;
    d.model.loss_scale.init_scale = 0;
    st = loom_train(ctx, &d, &r);
    CHECK(st == LOOM_ERR_STATE && strstr(loom_last_error(ctx), "diverged"),
          "fp16 at lr 1e6 still stops as diverged: %s '%s'", loom_status_str(st), loom_last_error(ctx));
}

static void bad_settings(loom_ctx *ctx) {
    loom_train_result r;
    loom_trainer_desc d = {.data = FMNIST, .model.net.arch = "resnet", .run.backend = "cpu"};
    d.data.train = &train_set;
    CHECK(loom_train(ctx, &d, &r) == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "resnet"),
          "unknown model: '%s'", loom_last_error(ctx));
    d.model.net.arch = "mlp";
    d.data.batch = 100000000;
    CHECK(loom_train(ctx, &d, &r) == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "batch"),
          "batch larger than the data: '%s'", loom_last_error(ctx));
    d.data.batch = 64;
    d.run.backend = "nosuch";
    CHECK(loom_train(ctx, &d, &r) == LOOM_ERR_UNSUPPORTED && strstr(loom_last_error(ctx), "nosuch"),
          "unknown backend: '%s'", loom_last_error(ctx));
    d.run.backend = "cpu";
    d.run.resume_path = "no-such-checkpoint.safetensors";
    CHECK(loom_train(ctx, &d, &r) == LOOM_ERR_IO && strstr(loom_last_error(ctx), "no-such-checkpoint"),
          "missing checkpoint: '%s'", loom_last_error(ctx));
    d.run.resume_path = NULL;
    d.model.label_smoothing = 1.5;
    CHECK(loom_train(ctx, &d, &r) == LOOM_ERR_INVALID_ARG, "label smoothing 1.5 rejected");
    d.model.label_smoothing = 0;
    d.optim.sched.lr = 1e6; /* diverges: a clear error, not NaN weights */
    d.run.max_steps = 50;
    loom_status st = loom_train(ctx, &d, &r);
    CHECK(st == LOOM_ERR_STATE && strstr(loom_last_error(ctx), "diverged"), "divergence detected: %s '%s'",
          loom_status_str(st), loom_last_error(ctx));
}

int main(void) {
    loom_ctx *ctx;
    loom_ctx_create(NULL, &ctx);
    if (loom_dataset_load_mnist(ctx, NULL, true, &train_set) != LOOM_OK ||
        loom_dataset_load_mnist(ctx, NULL, false, &test_set) != LOOM_OK) {
        printf("%s\n", loom_last_error(ctx));
        loom_ctx_destroy(ctx);
        return tu_skip("Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)");
    }
    short_run(ctx, "mlp", 150, 10000, 0.65);
    short_run(ctx, "cnn", 30, 1000, 0.50);
    resume(ctx, "cnn", (loom_optimizer_desc){.momentum = 0.9});
    resume(ctx, "mlp", (loom_optimizer_desc){.kind = LOOM_OPT_ADAMW, .weight_decay = 0.01, .grad_accum = 3});
    stepwise(ctx);
    amp_overflow(ctx);
    bad_settings(ctx);
    loom_dataset_free(&train_set);
    loom_dataset_free(&test_set);
    loom_ctx_destroy(ctx);
    return tu_summary();
}
