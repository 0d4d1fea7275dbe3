/* examples/train_mlp.c — the C API end to end: build a small MLP, differentiate
 * it, compile it for a backend and train it on a synthetic two-class problem
 * (points inside/outside a circle). The SGD update runs on the host here;
 * optimizer nodes that run on the device come with `loom train`.
 *
 * Usage: example-train_mlp [backend]   (default: cpu)
 * Exits non-zero if training does not reach 90% accuracy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "loom/loom.h"

#define BATCH 128
#define HIDDEN 32
#define STEPS 600

#define TRY(call)                                                                 \
    do {                                                                          \
        loom_status st_ = (call);                                                 \
        if (st_ != LOOM_OK) {                                                     \
            fprintf(stderr, "%s failed: %s\n", #call, loom_last_error(ctx));      \
            return 1;                                                             \
        }                                                                         \
    } while (0)

/* a batch of points in [-1,1]^2, label 1 inside the circle of radius 0.6 */
static void make_batch(uint64_t step, float *x, int32_t *y) {
    for (int i = 0; i < BATCH; i++) {
        float a = loom_philox_uniform(7, step, 2 * (uint64_t)i) * 2 - 1;
        float b = loom_philox_uniform(7, step, 2 * (uint64_t)i + 1) * 2 - 1;
        x[2 * i] = a, x[2 * i + 1] = b;
        y[i] = a * a + b * b < 0.36f;
    }
}

int main(int argc, char **argv) {
    const char *backend = argc > 1 ? argv[1] : "cpu";
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;

    /* 1. define the graph once: inputs, parameters, forward, loss, backward */
    loom_graph *g;
    TRY(loom_graph_create(ctx, &(loom_graph_desc){.seed = 42}, &g));
    loom_init kaiming = {LOOM_INIT_KAIMING_UNIFORM, 0, 0};
    loom_tensor *x = loom_input(g, "x", LOOM_F32, 2, (int64_t[]){BATCH, 2});
    loom_tensor *y = loom_input(g, "y", LOOM_I32, 1, (int64_t[]){BATCH});
    loom_tensor *w1 = loom_param(g, "fc1.weight", LOOM_F32, 2, (int64_t[]){HIDDEN, 2}, &kaiming);
    loom_tensor *b1 = loom_param(g, "fc1.bias", LOOM_F32, 1, (int64_t[]){HIDDEN}, NULL);
    loom_tensor *w2 = loom_param(g, "fc2.weight", LOOM_F32, 2, (int64_t[]){2, HIDDEN}, &kaiming);
    loom_tensor *b2 = loom_param(g, "fc2.bias", LOOM_F32, 1, (int64_t[]){2}, NULL);
    loom_tensor *h = loom_relu(g, loom_linear(g, x, w1, b1));
    loom_tensor *logits = loom_linear(g, h, w2, b2);
    loom_tensor *loss = loom_cross_entropy(g, logits, y, 0.0, -100);
    TRY(loom_graph_status(g)); /* one check covers every builder above */
    TRY(loom_backward(g, loss));
    loom_keep(loss);
    loom_keep(logits);
    loom_tensor *params[] = {w1, b1, w2, b2};
    for (int i = 0; i < 4; i++) loom_keep(loom_grad(params[i]));

    /* 2. compile for a backend: memory is planned and allocated once */
    loom_backend *be;
    loom_plan *plan;
    TRY(loom_backend_create(ctx, backend, NULL, &be));
    TRY(loom_plan_compile(g, be, NULL, &plan));
    loom_plan_memory mem;
    loom_plan_memory_stats(plan, &mem);
    printf("backend %s: %d nodes per step, activations %zu bytes planned (%zu without reuse)\n", backend,
           mem.nodes_run, mem.arena_bytes, mem.naive_bytes);

    /* 3. train: each run is one forward + backward step */
    float xb[BATCH * 2], p[HIDDEN * 2], gr[HIDDEN * 2], l = 0, first = 0;
    int32_t yb[BATCH];
    for (int step = 0; step < STEPS; step++) {
        make_batch((uint64_t)step, xb, yb);
        TRY(loom_plan_write(plan, x, xb, sizeof xb));
        TRY(loom_plan_write(plan, y, yb, sizeof yb));
        TRY(loom_plan_run(plan));
        TRY(loom_plan_read(plan, loss, &l, sizeof l));
        if (step == 0) first = l;
        for (int i = 0; i < 4; i++) { /* plain SGD, lr 0.5 */
            size_t n = (size_t)loom_tensor_numel(params[i]);
            TRY(loom_plan_read(plan, params[i], p, n * sizeof(float)));
            TRY(loom_plan_read(plan, loom_grad(params[i]), gr, n * sizeof(float)));
            for (size_t k = 0; k < n; k++) p[k] -= 0.5f * gr[k];
            TRY(loom_plan_write(plan, params[i], p, n * sizeof(float)));
        }
        if (step % 100 == 0 || step == STEPS - 1) printf("step %4d  loss %.4f\n", step, l);
    }

    /* 4. evaluate on fresh points */
    float out[BATCH * 2];
    int correct = 0;
    make_batch(1u << 20, xb, yb);
    TRY(loom_plan_write(plan, x, xb, sizeof xb));
    TRY(loom_plan_write(plan, y, yb, sizeof yb));
    TRY(loom_plan_run(plan));
    TRY(loom_plan_read(plan, logits, out, sizeof out));
    for (int i = 0; i < BATCH; i++) correct += (out[2 * i + 1] > out[2 * i]) == (yb[i] == 1);
    double acc = 100.0 * correct / BATCH;
    printf("loss %.4f -> %.4f, held-out accuracy %.1f%%\n", first, l, acc);

    loom_plan_destroy(plan);
    loom_backend_destroy(be);
    loom_graph_destroy(g);
    loom_ctx_destroy(ctx);
    return acc >= 90.0 && l < first ? 0 : 1;
}
