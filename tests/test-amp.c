/* tests/test-amp.c — dynamic loss scaling (GradScaler semantics) on every
 * backend present: a finite step with a power-of-two scale gives bitwise the
 * parameters of an unscaled run; an injected inf skips exactly that step
 * (parameters and momentum bitwise unchanged) and halves the scale; N finite
 * steps double it (N = 3 here); with gradient accumulation a non-finite
 * micro-batch skips the applying step and clears the accumulator; the scale
 * and the skipped count read back through loom_loss_scale_read. The trainer
 * under fp16 tolerates a run of up to 16 steps whose loss is not finite (an
 * f16 overflow in the forward pass: the scaler skips them) and stops the 17th
 * as diverged. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend_impl.h"
#include "loom/train.h"
#include "testutil.h"

enum { B = 8, IN = 4, OUT = 3 };

typedef struct run {
    loom_ctx *ctx;
    loom_backend *be;
    loom_graph *g;
    loom_optimizer *opt;
    loom_plan *p;
    loom_tensor *x, *w;
} run;

static loom_tensor *named(loom_graph *g, const char *name) {
    for (int i = 0; i < g->n; i++)
        if (!strcmp(g->nodes[i]->name, name)) return g->nodes[i];
    return NULL;
}

/* loss = mean((x w)^2), SGD momentum 0.9; scaled: loss scaling with scale 1024, growth every 3 */
static bool open_run(run *r, loom_ctx *ctx, loom_backend *be, bool scaled, int accum) {
    memset(r, 0, sizeof *r);
    r->ctx = ctx, r->be = be;
    loom_graph_create(ctx, &(loom_graph_desc){.seed = 11}, &r->g);
    loom_graph *g = r->g;
    r->x = loom_input(g, "x", LOOM_F32, 2, (int64_t[]){B, IN});
    loom_init u = {LOOM_INIT_UNIFORM, -1, 1};
    r->w = loom_param(g, "w", LOOM_F32, 2, (int64_t[]){IN, OUT}, &u);
    loom_tensor *y = loom_matmul(g, r->x, r->w, false, false);
    loom_tensor *loss = loom_mean(g, loom_mul(g, y, y), 0, false);
    if (scaled) loss = loom_scale_loss(g, loss, &(loom_loss_scale_desc){.init_scale = 1024, .growth_interval = 3});
    loom_status st = loom_backward(g, loss);
    if (st == LOOM_OK)
        st = loom_optimizer_create(g, &(loom_optimizer_desc){.kind = LOOM_OPT_SGD, .momentum = 0.9, .grad_accum = accum},
                                   &r->opt);
    if (st == LOOM_OK) st = loom_plan_compile(g, be, NULL, &r->p);
    CHECK(st == LOOM_OK, "%s: building the %s graph: %s", loom_backend_name(be), scaled ? "scaled" : "plain",
          loom_last_error(ctx));
    return st == LOOM_OK;
}

static void close_run(run *r) {
    loom_plan_destroy(r->p);
    loom_optimizer_destroy(r->opt);
    loom_graph_destroy(r->g);
}

/* one micro-step on batch `step` (bad: one element of x is inf) */
static loom_status step(run *r, int k, bool bad) {
    float x[B * IN];
    for (int i = 0; i < B * IN; i++) x[i] = (float)sin(0.7 * i + 1.3 * k);
    if (bad) x[5] = INFINITY;
    loom_status st = loom_plan_write(r->p, r->x, x, sizeof x);
    if (st == LOOM_OK) st = loom_optimizer_begin_step(r->opt, r->p, 0.1);
    if (st == LOOM_OK) st = loom_plan_run(r->p);
    return st;
}

static void read(run *r, const char *name, float *out, size_t n) {
    loom_tensor *t = named(r->g, name);
    CHECK(t != NULL, "tensor '%s' exists", name);
    if (t) CHECK_OK(r->ctx, loom_plan_read(r->p, t, out, n * sizeof *out));
}

static void scaler(run *r, double *scale, int64_t *skipped) {
    *scale = -1, *skipped = -1;
    CHECK_OK(r->ctx, loom_loss_scale_read(r->p, scale, skipped));
}

static void test_backend(loom_ctx *ctx, loom_backend *be) {
    const char *bn = loom_backend_name(be);
    run s, p;
    if (!open_run(&s, ctx, be, true, 1)) return;
    if (!open_run(&p, ctx, be, false, 1)) {
        close_run(&s);
        return;
    }
    float ws[IN * OUT], wp[IN * OUT], w0[IN * OUT], m0[IN * OUT], m1[IN * OUT];
    double sc;
    int64_t sk;
    /* a finite step: the same parameters as the unscaled run, bit for bit */
    CHECK_OK(ctx, step(&s, 0, false));
    CHECK_OK(ctx, step(&p, 0, false));
    read(&s, "w", ws, IN * OUT), read(&p, "w", wp, IN * OUT);
    CHECK(!memcmp(ws, wp, sizeof ws), "%s: a finite step with scale 1024 updates w bitwise as without scaling", bn);
    scaler(&s, &sc, &sk);
    CHECK(sc == 1024 && sk == 0, "%s: scale 1024, 0 skipped after a finite step (got %g, %lld)", bn, sc, (long long)sk);
    /* an inf in the batch: the step is skipped and the scale halves */
    read(&s, "w", w0, IN * OUT), read(&s, "w.momentum_buffer", m0, IN * OUT);
    CHECK_OK(ctx, step(&s, 1, true));
    read(&s, "w", ws, IN * OUT), read(&s, "w.momentum_buffer", m1, IN * OUT);
    CHECK(!memcmp(ws, w0, sizeof ws) && !memcmp(m1, m0, sizeof m1),
          "%s: the non-finite step leaves w and its momentum buffer bitwise unchanged", bn);
    scaler(&s, &sc, &sk);
    CHECK(sc == 512 && sk == 1, "%s: scale 1024 -> 512 and 1 skipped step (got %g, %lld)", bn, sc, (long long)sk);
    /* the unscaled run skips nothing: it takes the same finite steps from here on, so
     * the scaled run equals a plain run that never saw batch 1 */
    CHECK_OK(ctx, step(&s, 2, false));
    CHECK_OK(ctx, step(&s, 3, false));
    scaler(&s, &sc, &sk);
    CHECK(sc == 512, "%s: 2 finite steps after a back-off keep the scale (got %g)", bn, sc);
    CHECK_OK(ctx, step(&s, 4, false));
    scaler(&s, &sc, &sk);
    CHECK(sc == 1024 && sk == 1, "%s: the 3rd consecutive finite step doubles it (got %g, %lld skipped)", bn, sc,
          (long long)sk);
    for (int k = 2; k <= 4; k++) CHECK_OK(ctx, step(&p, k, false));
    read(&s, "w", ws, IN * OUT), read(&p, "w", wp, IN * OUT);
    CHECK(!memcmp(ws, wp, sizeof ws), "%s: after the skip, w equals a plain run that skipped batch 1, bit for bit",
          bn);
    close_run(&s), close_run(&p);

    /* gradient accumulation over 2 micro-batches: inf in the first one skips the
     * applying step and clears the accumulator */
    if (!open_run(&s, ctx, be, true, 2)) return;
    read(&s, "w", w0, IN * OUT);
    CHECK_OK(ctx, step(&s, 0, true));
    CHECK_OK(ctx, step(&s, 1, false));
    float acc[IN * OUT];
    read(&s, "w", ws, IN * OUT), read(&s, "w.grad_accum", acc, IN * OUT);
    bool zero = true;
    for (int i = 0; i < IN * OUT; i++) zero &= acc[i] == 0;
    CHECK(!memcmp(ws, w0, sizeof ws) && zero, "%s: accumulation: the skipped step leaves w and clears the accumulator",
          bn);
    scaler(&s, &sc, &sk);
    CHECK(sc == 512 && sk == 1, "%s: accumulation: one skip, scale 512 (got %g, %lld)", bn, sc, (long long)sk);
    CHECK_OK(ctx, step(&s, 2, false));
    CHECK_OK(ctx, step(&s, 3, false));
    read(&s, "w", ws, IN * OUT);
    CHECK(memcmp(ws, w0, sizeof ws) != 0, "%s: accumulation: the next applying step updates w", bn);
    close_run(&s);
}

/* the autocast policy: 16-bit matmul inputs, one cast per tensor, f32
 * softmax/loss, f32 master gradients, backward unaffected */
static void test_autocast(void) {
    loom_ctx *ctx;
    loom_backend *be;
    if (!tu_cpu_open(1, &ctx, &be)) return;
    for (int k = 0; k < 2; k++) {
        loom_dtype lo = k ? LOOM_BF16 : LOOM_F16;
        loom_graph *g;
        loom_graph_create(ctx, NULL, &g);
        CHECK_OK(ctx, loom_graph_set_autocast(g, lo));
        loom_tensor *x = loom_input(g, "x", LOOM_F32, 2, (int64_t[]){4, 3});
        loom_init u = {LOOM_INIT_UNIFORM, -1, 1};
        loom_tensor *w = loom_param(g, "w", LOOM_F32, 2, (int64_t[]){3, 3}, &u);
        loom_tensor *h = loom_relu(g, loom_matmul(g, x, w, false, false));
        loom_tensor *y = loom_matmul(g, h, w, false, false); /* w used twice */
        loom_tensor *l = loom_mean(g, loom_softmax(g, y), 0, false);
        int casts_of_w = 0;
        for (int i = 0; i < g->n; i++) casts_of_w += g->nodes[i]->op == LOOM_OP_CAST && g->nodes[i]->src[0] == w;
        CHECK(h->dtype == lo && y->dtype == lo, "%s: matmul outputs are 16-bit", loom_dtype_name(lo));
        CHECK(casts_of_w == 1, "%s: w is cast once for its two uses (%d casts)", loom_dtype_name(lo), casts_of_w);
        CHECK(l->dtype == LOOM_F32, "%s: softmax and mean run in f32", loom_dtype_name(lo));
        CHECK_OK(ctx, loom_backward(g, l));
        CHECK(loom_grad(w) && loom_grad(w)->dtype == LOOM_F32, "%s: the master weight's gradient is f32",
              loom_dtype_name(lo));
        CHECK_OK(ctx, loom_graph_set_autocast(g, LOOM_F32));
        CHECK(loom_graph_set_autocast(g, LOOM_I32) == LOOM_ERR_INVALID_ARG, "autocast to i32 is refused");
        loom_graph_destroy(g);
    }
    tu_cpu_close(ctx, be);
}

/* A trainer (mlp, fp16, cpu) on a small synthetic set; after 4 steps the
 * master fc3.weight gets 1e6 (finite in f32, inf in its f16 copy), so every
 * step's logits and loss are not finite, for `bad` steps; then the weight is
 * restored. Returns the status of the first failing step (LOOM_OK: the run
 * finished) and the skipped steps of its epoch. */
static loom_status poisoned_run(int bad, int64_t *skipped, char *err, size_t errn) {
    enum { N = 64 * 40, HW = 8, CLS = 4 };
    loom_ctx *ctx;
    loom_ctx_create(NULL, &ctx);
    loom_dataset ds = {.n = N, .c = 1, .h = HW, .w = HW, .num_classes = CLS};
    ds.pixels = malloc((size_t)N * HW * HW), ds.labels = malloc((size_t)N * sizeof *ds.labels);
    for (int i = 0; i < N; i++) {
        ds.labels[i] = i % CLS;
        for (int k = 0; k < HW * HW; k++) /* the class lights one quarter of the image */
            ds.pixels[(size_t)i * HW * HW + k] = (uint8_t)((k * CLS / (HW * HW) == i % CLS ? 160 : 40) + (i * 7 + k) % 31);
    }
    loom_trainer_desc d = {.data = {.mean = 0.3f, .std = 0.3f},
                           .model = {.net.arch = "mlp", .amp = LOOM_F16},
                           .optim = {.opt = {.momentum = 0.9}, .sched = {.lr = 0.01}},
                           .run = {.backend = "cpu", .epochs = 1, .max_steps = 40, .seed = 2}};
    d.data.train = &ds;
    loom_trainer *tr = NULL;
    loom_status st = loom_trainer_create(ctx, &d, &tr);
    CHECK_OK(ctx, st);
    loom_plan *p = tr ? loom_trainer_plan(tr) : NULL;
    loom_tensor *w = p ? named(p->g, "fc3.weight") : NULL;
    CHECK(w != NULL, "the mlp's fc3.weight is in the training plan");
    int64_t nw = w ? loom_tensor_numel(w) : 0;
    double *keep = malloc((size_t)(nw ? nw : 1) * sizeof *keep), *big = malloc((size_t)(nw ? nw : 1) * sizeof *big);
    for (int64_t k = 0; k < nw; k++) big[k] = 1e6;
    loom_epoch_stats es = {0};
    for (int s = 0; w && st == LOOM_OK && !loom_trainer_done(tr); s++) {
        if (s == 4) (void)(loom_plan_read_f64(p, w, keep, (size_t)nw) || loom_plan_write_f64(p, w, big, (size_t)nw));
        if (s == 4 + bad) (void)loom_plan_write_f64(p, w, keep, (size_t)nw);
        loom_step_result r;
        st = loom_trainer_step(tr, &r);
        if (st == LOOM_OK && r.epoch_done) st = loom_trainer_epoch_end(tr, &es);
    }
    *skipped = es.skipped_steps;
    snprintf(err, errn, "%s", st ? loom_last_error(ctx) : "");
    free(keep), free(big);
    loom_trainer_destroy(tr);
    free(ds.pixels), free(ds.labels);
    loom_ctx_destroy(ctx);
    return st;
}

static void test_trainer_tolerance(void) {
    char err[1024];
    int64_t skipped = -1;
    loom_status st = poisoned_run(16, &skipped, err, sizeof err);
    printf("trainer, fp16: 16 steps with a non-finite loss: %s, %lld skipped\n", loom_status_str(st), (long long)skipped);
    CHECK(st == LOOM_OK, "16 non-finite losses in a row are skipped steps, the run goes on (%s '%s')",
          loom_status_str(st), err);
    CHECK(skipped >= 16 && skipped < 40, "those steps are counted as skipped (%lld)", (long long)skipped);
    st = poisoned_run(17, &skipped, err, sizeof err);
    printf("trainer, fp16: 17 in a row: %s '%s'\n", loom_status_str(st), err);
    CHECK(st == LOOM_ERR_STATE && strstr(err, "diverged") && strstr(err, "more steps in a row"),
          "the 17th non-finite loss in a row stops the run as diverged (%s '%s')", loom_status_str(st), err);
}

static void test_errors(void) {
    loom_ctx *ctx;
    loom_backend *be;
    if (!tu_cpu_open(1, &ctx, &be)) return;
    loom_graph *g;
    loom_graph_create(ctx, NULL, &g);
    loom_tensor *x = loom_param(g, "x", LOOM_F32, 1, (int64_t[]){3}, NULL);
    CHECK(!loom_scale_loss(g, x, NULL) && strstr(loom_last_error(ctx), "one-element"), "a non-scalar loss is refused");
    loom_graph_destroy(g);
    loom_graph_create(ctx, NULL, &g);
    x = loom_param(g, "x", LOOM_F32, 1, (int64_t[]){3}, NULL);
    loom_tensor *l = loom_sum(g, x, 0, false);
    CHECK(!loom_scale_loss(g, l, &(loom_loss_scale_desc){.backoff_factor = 2}) &&
              strstr(loom_last_error(ctx), "backoff_factor"),
          "backoff_factor outside (0, 1) is refused with its name");
    loom_graph_destroy(g);
    tu_cpu_close(ctx, be);
}

int main(void) {
    test_errors();
    test_autocast();
    test_trainer_tolerance();
    const char *names[8];
    int n = loom_backend_list(names, 8), ran = 0;
    for (int i = 0; i < n; i++) {
        loom_ctx *ctx;
        loom_ctx_create(NULL, &ctx);
        const char *why = NULL;
        if (!loom_backend_available(ctx, names[i], &why)) {
            printf("skip %s: %s\n", names[i], why ? why : "not available");
            loom_ctx_destroy(ctx);
            continue;
        }
        loom_backend *be;
        if (loom_backend_create(ctx, names[i], NULL, &be) == LOOM_OK) {
            test_backend(ctx, be);
            loom_backend_destroy(be);
            ran++;
        } else {
            CHECK(0, "creating backend %s: %s", names[i], loom_last_error(ctx));
        }
        loom_ctx_destroy(ctx);
    }
    CHECK(ran >= 1, "at least the cpu backend ran");
    return tu_summary();
}
