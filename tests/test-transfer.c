/* tests/test-transfer.c — transfer learning (loom/train.h: init_from,
 * init_map, freeze, head, backbone_lr_mult; loom/checkpoint.h: name_map,
 * weights_only; loom/optim.h: lr_mult groups).
 *
 * - LR groups: one SGD step on a tiny graph whose gradients are given; each
 *   parameter moves by exactly lr * mult * grad (mult 0: not at all).
 * - The acceptance, short: cnn trained on classes 0-4 of
 *   Fashion-MNIST (120 steps) and saved; a 10-class cnn initialised from that
 *   file with conv* and bn* frozen trains the rest (fc1 at half the LR, the
 *   new fc2 head at the full LR) for 150 steps on all 10 classes.
 *   The load reports the fc2 (head) tensors as shape-mismatched, the frozen
 *   parameters are bitwise those of the file afterwards and have no
 *   optimizer state, and the accuracy on all 10 classes beats the same run
 *   from random (not loaded) frozen features: 81% against 77% on the whole
 *   test set (other seeds: +0.2 to +4.4 points; random conv + batch-norm
 *   features are strong on Fashion-MNIST, and freezing fc1 as well makes the
 *   5-class fc1 a handicap: 66% against 70%).
 * - Errors: a freeze or head pattern that matches nothing, a malformed or
 *   colliding name map, a missing init file.
 * Skips (77) without Fashion-MNIST.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/train.h"
#include "testutil.h"

static loom_dataset train_set, test_set;

/* Sanitizer builds (10x slower) check everything but the accuracy claim, on
 * short runs; the release build checks the numbers. */
#if defined(__SANITIZE_ADDRESS__)
static const bool quick = true;
#else
static const bool quick = false;
#endif

static double mult_of(void *user, const char *name) {
    (void)user;
    return !strncmp(name, "head", 4) ? 1.0 : !strcmp(name, "still") ? 0.0 : 0.25;
}

static void lr_groups(loom_ctx *ctx) {
    loom_backend *be = NULL;
    loom_graph *g = NULL;
    loom_plan *plan = NULL;
    loom_optimizer *opt = NULL;
    CHECK_OK(ctx, loom_backend_create(ctx, "cpu", NULL, &be));
    CHECK_OK(ctx, loom_graph_create(ctx, NULL, &g));
    if (!be || !g) return;
    const char *names[3] = {"back", "head", "still"};
    loom_tensor *p[3], *gi[3], *loss = NULL;
    for (int k = 0; k < 3; k++) {
        char in[16];
        snprintf(in, sizeof in, "G%d", k);
        p[k] = loom_param(g, names[k], LOOM_F32, 1, (int64_t[]){4}, NULL);
        gi[k] = loom_input(g, in, LOOM_F32, 1, (int64_t[]){4});
        loom_tensor *t = loom_sum(g, loom_mul(g, p[k], gi[k]), 0, false);
        loss = loss ? loom_add(g, loss, t) : t;
    }
    CHECK_OK(ctx, loom_backward(g, loss));
    loom_optimizer_desc od = {.lr_mult = mult_of};
    CHECK_OK(ctx, loom_optimizer_create(g, &od, &opt));
    CHECK_OK(ctx, loom_plan_compile(g, be, NULL, &plan));
    if (!opt || !plan) goto out;
    double m;
    int n;
    CHECK(loom_optimizer_groups(opt, 0, &m, &n) == 3 && m == 0.25 && n == 1, "3 groups, the first x0.25 with 1 param (%g, %d)",
          m, n);
    float p0[3][4], gr[3][4], got[3][4];
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 4; i++) p0[k][i] = 0.5f + 0.25f * (float)(i - k), gr[k][i] = 0.75f * (float)(i + 1) - (float)k;
    for (int k = 0; k < 3; k++) {
        CHECK_OK(ctx, loom_plan_write(plan, p[k], p0[k], sizeof p0[k]));
        CHECK_OK(ctx, loom_plan_write(plan, gi[k], gr[k], sizeof gr[k]));
    }
    CHECK_OK(ctx, loom_optimizer_begin_step(opt, plan, 0.5));
    CHECK_OK(ctx, loom_plan_run(plan));
    bool exact = true;
    for (int k = 0; k < 3; k++) {
        CHECK_OK(ctx, loom_plan_read(plan, p[k], got[k], sizeof got[k]));
        float lr = (float)(0.5 * mult_of(NULL, names[k]));
        for (int i = 0; i < 4; i++) exact &= got[k][i] == p0[k][i] - lr * gr[k][i];
    }
    CHECK(exact, "each parameter moved by lr * mult * grad exactly (back x0.25, head x1, still x0)");
out:
    loom_plan_destroy(plan);
    loom_optimizer_destroy(opt);
    loom_graph_destroy(g);
    loom_backend_destroy(be);
}

static double neg_mult(void *user, const char *name) {
    (void)user, (void)name;
    return -1;
}

static void lr_group_errors(loom_ctx *ctx) {
    loom_graph *g = NULL;
    loom_optimizer *opt = NULL;
    CHECK_OK(ctx, loom_graph_create(ctx, NULL, &g));
    if (!g) return;
    loom_tensor *w = loom_param(g, "w", LOOM_F32, 1, (int64_t[]){3}, NULL);
    CHECK_OK(ctx, loom_backward(g, loom_sum(g, loom_mul(g, w, w), 0, false)));
    loom_status st = loom_optimizer_create(g, &(loom_optimizer_desc){.lr_mult = neg_mult}, &opt);
    CHECK(st == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "'w'") && !opt,
          "a negative LR multiplier is an error naming the parameter: %s", loom_last_error(ctx));
    loom_optimizer_destroy(opt);
    loom_graph_destroy(g);
}

static bool bytes_equal(const loom_st_tensor *a, const loom_st_tensor *b) {
    return a && b && loom_st_tensor_nbytes(a) == loom_st_tensor_nbytes(b) &&
           !memcmp(a->data, b->data, loom_st_tensor_nbytes(a));
}

static const char *const frozen_pats[] = {"conv*", "bn*", NULL};

static loom_trainer_desc phase2_desc(const loom_dataset *test) {
    /* reproducible mode (core/repro.h): the same numbers on every machine, whatever GEMM kernels
     * OpenBLAS picks for the CPU (with OpenBLAS's own the margin below moved by 4 points) */
    return (loom_trainer_desc){.data = {.train = &train_set, .test = test, .mean = 0.2860f, .std = 0.3530f},
                               .model.net = {.arch = "cnn", .num_classes = 10},
                               .transfer = {.freeze = frozen_pats, .backbone_lr_mult = 0.5},
                               .optim = {.opt = {.momentum = 0.9}, .sched = {.lr = 0.02}},
                               .run = {.backend = "cpu", .backend_desc = {.threads = 2, .reproducible = true}, .epochs = 1,
                                       .max_steps = quick ? 10 : 150, .seed = 5}};
}

static void acceptance(loom_ctx *ctx) {
    /* classes 0-4 only */
    size_t per = (size_t)train_set.c * (size_t)train_set.h * (size_t)train_set.w;
    loom_dataset five = train_set;
    five.pixels = malloc((size_t)train_set.n * per);
    five.labels = malloc((size_t)train_set.n * sizeof *five.labels);
    five.n = 0;
    five.num_classes = 5;
    for (int64_t i = 0; five.pixels && five.labels && i < train_set.n; i++) {
        if (train_set.labels[i] >= 5) continue;
        memcpy(five.pixels + (size_t)five.n * per, train_set.pixels + (size_t)i * per, per);
        five.labels[five.n++] = train_set.labels[i];
    }
    loom_dataset test = test_set;
    if (quick) test.n = 500; /* a view of the first 500 */
    const char *pre = "transfer-pre.safetensors", *post = "transfer-post.safetensors";
    loom_trainer_desc d1 = {.data = {.train = &five, .mean = 0.2860f, .std = 0.3530f}, .model.net.arch = "cnn",
                            .optim = {.opt = {.momentum = 0.9}, .sched = {.lr = 0.02}},
                            .run = {.backend = "cpu", .backend_desc = {.threads = 2, .reproducible = true}, .epochs = 1,
                                    .max_steps = quick ? 20 : 120, .seed = 4, .save_path = pre}};
    loom_train_result r1, r2, r3;
    CHECK_OK(ctx, loom_train(ctx, &d1, &r1));
    printf("pre-training on %lld samples of classes 0-4: train loss %.3f\n", (long long)five.n, r1.train_loss);

    loom_trainer_desc d2 = phase2_desc(&test);
    d2.transfer.init_from = pre;
    d2.run.save_path = post;
    CHECK_OK(ctx, loom_train(ctx, &d2, &r2));
    loom_trainer_desc d3 = phase2_desc(&test);
    if (!quick) CHECK_OK(ctx, loom_train(ctx, &d3, &r3));
    if (quick) r3.test_acc = 0;
    printf("10 classes, conv/bn frozen, %lld steps: test acc %.2f%% from the 5-class features, %.2f%% from random ones%s\n",
           (long long)d2.run.max_steps, 100 * r2.test_acc, 100 * r3.test_acc, quick ? " (not run: sanitizer build)" : "");
    printf("init report: loaded %d, missing %d, unexpected %d, mismatched %d (%s, %s), ignored %d\n", r2.init.loaded,
           r2.init.missing, r2.init.unexpected, r2.init.mismatched, r2.init.mismatched_names[0],
           r2.init.mismatched_names[1], r2.init.ignored);
    if (!quick) CHECK(r2.test_acc > r3.test_acc, "pre-trained features beat random ones (%.4f > %.4f)", r2.test_acc, r3.test_acc);

    /* frozen_16bit (mixed precision): the frozen parameters keep only their 16-bit copy, loaded
     * from the f32 file by rounding: the same losses as with f32 masters, less parameter memory */
    loom_trainer_desc d5 = phase2_desc(&test);
    d5.run.backend_desc.reproducible = false; /* the mode is f32 only; both runs here are ordinary */
    d5.transfer.init_from = pre, d5.model.amp = LOOM_F16, d5.run.max_steps = 20, d5.transfer.backbone_lr_mult = 0;
    loom_train_result r5a, r5b;
    CHECK_OK(ctx, loom_train(ctx, &d5, &r5a));
    d5.transfer.frozen_16bit = true;
    CHECK_OK(ctx, loom_train(ctx, &d5, &r5b));
    printf("frozen_16bit: %d of %d frozen tensors in 16 bits only; parameters %zu -> %zu bytes; train loss %.6f vs %.6f\n",
           r5b.frozen_16bit, r5b.frozen, r5a.train_memory.param_bytes, r5b.train_memory.param_bytes, r5a.train_loss,
           r5b.train_loss);
    CHECK(r5b.frozen_16bit == r5b.frozen && r5b.frozen > 0, "every frozen tensor (%d) kept in 16 bits (%d)", r5b.frozen,
          r5b.frozen_16bit);
    CHECK(r5b.train_memory.param_bytes + (size_t)r5b.frozen_16bit_saved_bytes == r5a.train_memory.param_bytes &&
              r5b.frozen_16bit_saved_bytes > 0,
          "parameter bytes %zu + saved %lld == %zu", r5b.train_memory.param_bytes,
          (long long)r5b.frozen_16bit_saved_bytes, r5a.train_memory.param_bytes);
    CHECK(r5a.train_loss == r5b.train_loss && r5a.test_loss == r5b.test_loss,
          "the same losses with and without frozen_16bit (%.9g / %.9g vs %.9g / %.9g)", r5a.train_loss, r5a.test_loss,
          r5b.train_loss, r5b.test_loss);
    d5.model.amp = LOOM_F32;
    CHECK(loom_train(ctx, &d5, &r5b) == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "needs amp"),
          "frozen_16bit without amp is an error: %s", loom_last_error(ctx));
    /* the head was replaced: fc2 mismatched (5 vs 10 classes), everything else loaded */
    bool head = r2.init.mismatched == 2 && ((!strcmp(r2.init.mismatched_names[0], "fc2.weight") &&
                                             !strcmp(r2.init.mismatched_names[1], "fc2.bias")) ||
                                            (!strcmp(r2.init.mismatched_names[0], "fc2.bias") &&
                                             !strcmp(r2.init.mismatched_names[1], "fc2.weight")));
    CHECK(head, "the fc2 tensors are reported shape-mismatched (%d: %s %s)", r2.init.mismatched,
          r2.init.mismatched_names[0], r2.init.mismatched_names[1]);
    CHECK(r2.init.loaded == 12 && r2.init.missing == 0 && r2.init.unexpected == 0 && r2.init.ignored > 0,
          "conv/bn/fc1 loaded (12), none missing or unexpected, optimizer state ignored (%d, %d, %d, %d)", r2.init.loaded,
          r2.init.missing, r2.init.unexpected, r2.init.ignored);
    CHECK(r2.frozen == 6 && r2.trained == 4 && r2.head_params == 2,
          "6 tensors frozen (conv1/2 weights, bn1/2 gamma and beta), 4 trained, 2 in the head (%d, %d, %d)", r2.frozen,
          r2.trained, r2.head_params);

    /* frozen parameters: bitwise the file's, and no optimizer state */
    loom_safetensors *a = NULL, *b = NULL;
    CHECK_OK(ctx, loom_safetensors_open(ctx, pre, &a));
    CHECK_OK(ctx, loom_safetensors_open(ctx, post, &b));
    if (a && b) {
        const char *frozen[] = {"conv1.weight", "bn1.weight", "bn1.bias", "conv2.weight", "bn2.weight", "bn2.bias"};
        int same = 0, no_state = 0;
        for (int i = 0; i < 6; i++) {
            char st[80];
            snprintf(st, sizeof st, "%s.momentum_buffer", frozen[i]);
            same += bytes_equal(loom_safetensors_find(a, frozen[i]), loom_safetensors_find(b, frozen[i]));
            no_state += loom_safetensors_find(b, st) == NULL;
        }
        CHECK(same == 6, "frozen parameters bitwise unchanged after training (%d of 6)", same);
        CHECK(no_state == 6, "frozen parameters have no optimizer state (%d of 6)", no_state);
        CHECK(!bytes_equal(loom_safetensors_find(a, "fc1.weight"), loom_safetensors_find(b, "fc1.weight")) &&
                  loom_safetensors_find(b, "fc1.weight.momentum_buffer"),
              "fc1 (trained) changed and has a momentum buffer");
        /* batch-norm statistics keep updating in train mode (torch's behaviour) */
        CHECK(!bytes_equal(loom_safetensors_find(a, "bn1.running_mean"), loom_safetensors_find(b, "bn1.running_mean")),
              "running statistics of frozen batch norm still update");
    }
    loom_safetensors_close(a);
    loom_safetensors_close(b);

    /* a name map: fc1 -> other (then missing), the rest kept */
    loom_trainer_desc d4 = phase2_desc(&test);
    const char *const map[] = {"fc1.*", "old_fc1.*", NULL};
    d4.transfer.init_from = pre, d4.transfer.init_map = map, d4.run.max_steps = 1, d4.data.test = NULL;
    loom_train_result r4;
    CHECK_OK(ctx, loom_train(ctx, &d4, &r4));
    CHECK(r4.init.loaded == 10 && r4.init.missing == 2 && r4.init.unexpected == 2 && r4.init.renamed == 4 &&
              !strncmp(r4.init.unexpected_names[0], "old_fc1.", 8),
          "renamed fc1.* -> old_fc1.*: loaded 10, missing 2, unexpected 2 (%s), renamed 4 with the optimizer state (%d %d %d %d)",
          r4.init.unexpected_names[0], r4.init.loaded, r4.init.missing, r4.init.unexpected, r4.init.renamed);

    /* errors */
    loom_status st;
    const char *const nothing[] = {"conv*", "encoder.*", NULL};
    d4 = phase2_desc(NULL), d4.transfer.freeze = nothing;
    st = loom_train(ctx, &d4, &r4);
    CHECK(st == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "'encoder.*'"), "freeze pattern matching nothing: %s",
          loom_last_error(ctx));
    d4 = phase2_desc(NULL), d4.transfer.head = "classifier.*";
    st = loom_train(ctx, &d4, &r4);
    CHECK(st == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "'classifier.*'"), "head pattern matching nothing: %s",
          loom_last_error(ctx));
    const char *const malformed[] = {"a*b", "c*", NULL};
    d4 = phase2_desc(NULL), d4.transfer.init_from = pre, d4.transfer.init_map = malformed;
    st = loom_train(ctx, &d4, &r4);
    CHECK(st == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "malformed"), "malformed name map: %s",
          loom_last_error(ctx));
    const char *const collide[] = {"fc1.*", "fc2.*", NULL};
    d4.transfer.init_map = collide;
    st = loom_train(ctx, &d4, &r4);
    CHECK(st == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "renames both"), "colliding name map: %s",
          loom_last_error(ctx));
    d4 = phase2_desc(NULL), d4.transfer.init_from = "transfer-no-such.safetensors";
    st = loom_train(ctx, &d4, &r4);
    CHECK(st == LOOM_ERR_IO && strstr(loom_last_error(ctx), "transfer-no-such.safetensors"), "missing init file: %s",
          loom_last_error(ctx));
    remove(pre);
    remove(post);
    free(five.pixels);
    free(five.labels);
}

int main(void) {
    loom_ctx *ctx;
    loom_ctx_create(NULL, &ctx);
    lr_groups(ctx);
    lr_group_errors(ctx);
    if (loom_dataset_load_mnist(ctx, NULL, true, &train_set) != LOOM_OK ||
        loom_dataset_load_mnist(ctx, NULL, false, &test_set) != LOOM_OK) {
        printf("%s\n", loom_last_error(ctx));
        loom_dataset_free(&train_set);
        loom_ctx_destroy(ctx);
        tu_summary();
        return tu_skip("Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)");
    }
    acceptance(ctx);
    loom_dataset_free(&train_set);
    loom_dataset_free(&test_set);
    loom_ctx_destroy(ctx);
    return tu_summary();
}
