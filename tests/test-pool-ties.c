/* tests/test-pool-ties.c — 2x2 max pooling's gradient at tied maxima goes to
 * the first maximum in window order (top row left to right, then the bottom
 * row), as PyTorch's CPU kernel and loom's CPU reference do, on every
 * available backend (ordinary and reproducible kernels). The op-check's
 * random inputs never tie, and a tie made by duplicating values sums back
 * in the duplicate's gradient, so this test writes tied inputs itself. */
#include <string.h>

#include "testutil.h"

enum { N = 1, C = 2, H = 4, W = 4, NX = N * C * H * W, NW = N * C * (H / 2) * (W / 2) };

/* the eight windows (a, b, c, d) and the position of the first maximum */
static const double win[NW][4] = {{1, 1, 0, 0},   {0, 2, 2, 1},  {3, 3, 3, 3}, {-1, -2, -1, -2},
                                  {0, 1, 0, 1},   {-3, -3, -2, -2}, {5, 4, 5, 4}, {0, 0, 0, 7}};
static const int first[NW] = {0, 1, 0, 0, 1, 2, 0, 3};

/* flat index in x (N, C, H, W) of element e (0..3) of window k */
static int at(int k, int e) {
    int per = (H / 2) * (W / 2), plane = k / per, i = (k % per) / (W / 2), j = k % (W / 2);
    return plane * H * W + (2 * i + e / 2) * W + 2 * j + e % 2;
}

static void check_backend(loom_ctx *ctx, loom_backend *be, const char *name, bool repro) {
    loom_graph *g = NULL;
    CHECK_OK(ctx, loom_graph_create(ctx, &(loom_graph_desc){.seed = 1}, &g));
    loom_tensor *x = loom_param(g, "x", LOOM_F32, 4, (const int64_t[]){N, C, H, W}, NULL);
    loom_tensor *p = loom_max_pool2d(g, x, &(loom_pool2d_desc){.kernel_h = 2, .kernel_w = 2});
    loom_tensor *loss = loom_sum(g, p, 0xf, false); /* dloss/dp = 1 for every window */
    CHECK_OK(ctx, loom_backward(g, loss));
    loom_tensor *dx = loom_grad(x);
    loom_keep(p), loom_keep(dx);
    loom_plan *plan = NULL;
    CHECK_OK(ctx, loom_plan_compile(g, be, NULL, &plan));
    double xv[NX], pv[NW], dv[NX];
    for (int k = 0; k < NW; k++)
        for (int e = 0; e < 4; e++) xv[at(k, e)] = win[k][e];
    if (plan) {
        CHECK_OK(ctx, loom_plan_write_f64(plan, x, xv, NX));
        CHECK_OK(ctx, loom_plan_run(plan));
        CHECK_OK(ctx, loom_plan_read_f64(plan, p, pv, NW));
        CHECK_OK(ctx, loom_plan_read_f64(plan, dx, dv, NX));
        int bad = 0;
        for (int k = 0; k < NW; k++) {
            double m = win[k][first[k]];
            bool ok = pv[k] == m;
            for (int e = 0; e < 4; e++) ok = ok && dv[at(k, e)] == (e == first[k] ? 1.0 : 0.0);
            if (!ok) {
                bad++;
                printf("  %s: window (%g %g / %g %g): max %g, gradient %g %g / %g %g; want %g at position %d\n", name,
                       win[k][0], win[k][1], win[k][2], win[k][3], pv[k], dv[at(k, 0)], dv[at(k, 1)], dv[at(k, 2)],
                       dv[at(k, 3)], m, first[k]);
            }
        }
        CHECK(bad == 0, "%s%s: max_pool2d: %d of %d tied windows send the gradient elsewhere than the first maximum",
              name, repro ? " repro" : "", bad, NW);
        printf("%s%s: 2x2 max pooling's gradient at tied maxima checked\n", name, repro ? " (reproducible)" : "");
    }
    loom_plan_destroy(plan);
    loom_graph_destroy(g);
}

int main(void) { return tu_every_backend(check_backend); }
