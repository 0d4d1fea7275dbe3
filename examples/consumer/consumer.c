/* examples/consumer/consumer.c — a program that uses an installed loom the
 * way any C library is used: built with `cc consumer.c $(pkg-config --cflags
 * --libs loom)` or with CMake's find_package(loom CONFIG) (CMakeLists.txt
 * beside it). It fits y = 2x + 1 with one linear layer on the CPU backend
 * and exits 0 when the fit is right, 1 with the library's message otherwise. */
#include <math.h>
#include <stdio.h>

#include <loom/loom.h>

#define N 16

int main(void) {
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    loom_graph *g = NULL;
    loom_backend *be = NULL;
    loom_plan *plan = NULL;
    int rc = 1;
    if (loom_graph_create(ctx, &(loom_graph_desc){.seed = 1}, &g) != LOOM_OK) goto done;
    loom_tensor *x = loom_input(g, "x", LOOM_F32, 2, (int64_t[]){N, 1});
    loom_tensor *t = loom_input(g, "t", LOOM_F32, 2, (int64_t[]){N, 1});
    loom_tensor *w = loom_param(g, "w", LOOM_F32, 2, (int64_t[]){1, 1}, NULL);
    loom_tensor *b = loom_param(g, "b", LOOM_F32, 1, (int64_t[]){1}, NULL);
    loom_tensor *loss = loom_mse(g, loom_linear(g, x, w, b), t);
    if (loom_graph_status(g) != LOOM_OK || loom_backward(g, loss) != LOOM_OK) goto done;
    loom_keep(loss);
    loom_keep(loom_grad(w));
    loom_keep(loom_grad(b));
    if (loom_backend_create(ctx, "cpu", NULL, &be) != LOOM_OK) goto done;
    if (loom_plan_compile(g, be, NULL, &plan) != LOOM_OK) goto done;

    float xs[N], ts[N], wv = 0, bv = 0, gw, gb, l = 0;
    for (int i = 0; i < N; i++) xs[i] = (float)i / N, ts[i] = 2 * xs[i] + 1;
    if (loom_plan_write(plan, x, xs, sizeof xs) != LOOM_OK || loom_plan_write(plan, t, ts, sizeof ts) != LOOM_OK)
        goto done;
    for (int step = 0; step < 2000; step++) {
        if (loom_plan_write(plan, w, &wv, sizeof wv) != LOOM_OK || loom_plan_write(plan, b, &bv, sizeof bv) != LOOM_OK ||
            loom_plan_run(plan) != LOOM_OK || loom_plan_read(plan, loom_grad(w), &gw, sizeof gw) != LOOM_OK ||
            loom_plan_read(plan, loom_grad(b), &gb, sizeof gb) != LOOM_OK ||
            loom_plan_read(plan, loss, &l, sizeof l) != LOOM_OK)
            goto done;
        wv -= 0.5f * gw, bv -= 0.5f * gb;
    }
    printf("consumer: w %.4f b %.4f loss %.2e\n", wv, bv, l);
    rc = fabsf(wv - 2) < 1e-2f && fabsf(bv - 1) < 1e-2f ? 0 : 1;
    if (rc) fprintf(stderr, "consumer: the fit is off (expected w 2, b 1)\n");
done:
    if (rc && loom_last_error(ctx)[0]) fprintf(stderr, "consumer: %s\n", loom_last_error(ctx));
    loom_plan_destroy(plan);
    loom_backend_destroy(be);
    loom_graph_destroy(g);
    loom_ctx_destroy(ctx);
    return rc;
}
