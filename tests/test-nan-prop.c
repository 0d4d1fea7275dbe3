/* tests/test-nan-prop.c — NaN propagates through relu, leaky_relu and
 * max_pool2d as in PyTorch, on every available backend (ordinary and
 * reproducible kernels): relu(NaN) = NaN (a ReLU that maps NaN to 0 hides
 * diverged weights), a max-pool window holding a NaN gives NaN, and relu's
 * gradient at a NaN input passes the incoming gradient on (torch's
 * threshold_backward: only x <= 0 blocks it). The op-check (tests/ops/nan.c)
 * compares the same cases between backends; this test holds each backend to
 * the expected values themselves, so the CPU reference cannot be wrong with
 * them. */
#include <math.h>
#include <string.h>

#include "testutil.h"

enum { N = 2, C = 1, H = 4, W = 4, NX = N * C * H * W, NP = N * C * (H / 2) * (W / 2) };

/* x (2,1,4,4): NaN at flat 5 (window (0,0,0,0)) and 26 (window (1,0,0,1)),
 * -inf at 12, +inf at 19, the rest finite of both signs. */
static void fill_x(double *x) {
    for (int i = 0; i < NX; i++) x[i] = ((i * 7) % 11 - 5) * 0.25;
    x[5] = NAN, x[26] = NAN, x[12] = -INFINITY, x[19] = INFINITY;
}

static bool same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

static void check_backend(loom_ctx *ctx, loom_backend *be, const char *name, bool repro) {
    loom_graph *g = NULL;
    CHECK_OK(ctx, loom_graph_create(ctx, &(loom_graph_desc){.seed = 1}, &g));
    loom_tensor *x = loom_param(g, "x", LOOM_F32, 4, (const int64_t[]){N, C, H, W}, NULL);
    loom_tensor *r = loom_relu(g, x);
    loom_tensor *l = loom_leaky_relu(g, x, 0.1);
    loom_tensor *p = loom_max_pool2d(g, x, &(loom_pool2d_desc){.kernel_h = 2, .kernel_w = 2});
    loom_keep(r), loom_keep(l), loom_keep(p);
    /* loss = sum(relu(x)) is NaN; dx = relu_grad(x, 1) */
    loom_tensor *loss = loom_sum(g, r, 0xf, false);
    CHECK_OK(ctx, loom_backward(g, loss));
    loom_tensor *dx = loom_grad(x);
    loom_keep(dx);
    loom_plan *plan = NULL;
    CHECK_OK(ctx, loom_plan_compile(g, be, NULL, &plan));
    double xv[NX], rv[NX], lv[NX], pv[NP], dv[NX];
    fill_x(xv);
    if (plan) {
        CHECK_OK(ctx, loom_plan_write_f64(plan, x, xv, NX));
        CHECK_OK(ctx, loom_plan_run(plan));
        CHECK_OK(ctx, loom_plan_read_f64(plan, r, rv, NX));
        CHECK_OK(ctx, loom_plan_read_f64(plan, l, lv, NX));
        CHECK_OK(ctx, loom_plan_read_f64(plan, p, pv, NP));
        CHECK_OK(ctx, loom_plan_read_f64(plan, dx, dv, NX));
        int bad_r = 0, bad_l = 0, bad_p = 0, bad_d = 0;
        for (int i = 0; i < NX; i++) {
            double v = xv[i];
            double want_r = isnan(v) ? NAN : v > 0 ? v : 0, want_d = isnan(v) || v > 0 ? 1 : 0;
            double want_l = isnan(v) ? NAN : v > 0 ? v : (double)(float)(0.1f * (float)v);
            bad_r += !same(rv[i], want_r), bad_d += !same(dv[i], want_d);
            bad_l += isnan(lv[i]) != isnan(want_l) || (!isnan(v) && fabs(lv[i] - want_l) > 1e-6 * fabs(want_l));
            if (!same(rv[i], want_r)) printf("  %s: relu(%g) = %g, want %g\n", name, v, rv[i], want_r);
            if (!same(dv[i], want_d)) printf("  %s: relu'(%g) = %g, want %g\n", name, v, dv[i], want_d);
        }
        for (int n = 0; n < N; n++)
            for (int i = 0; i < H / 2; i++)
                for (int j = 0; j < W / 2; j++) {
                    double m = -INFINITY;
                    for (int a = 0; a < 2; a++)
                        for (int b = 0; b < 2; b++) {
                            double v = xv[n * H * W + (2 * i + a) * W + 2 * j + b];
                            m = isnan(m) || isnan(v) ? NAN : v > m ? v : m;
                        }
                    double got = pv[n * (H / 2) * (W / 2) + i * (W / 2) + j];
                    if (!same(got, m)) {
                        bad_p++;
                        printf("  %s: max_pool2d window (%d,%d,%d) = %g, want %g\n", name, n, i, j, got, m);
                    }
                }
        CHECK(bad_r == 0, "%s%s: relu: %d values differ (NaN must stay NaN)", name, repro ? " repro" : "", bad_r);
        CHECK(bad_l == 0, "%s%s: leaky_relu: %d values differ", name, repro ? " repro" : "", bad_l);
        CHECK(bad_p == 0, "%s%s: max_pool2d: %d windows differ (a NaN in the window gives NaN)", name,
              repro ? " repro" : "", bad_p);
        CHECK(bad_d == 0, "%s%s: relu gradient: %d values differ (a NaN input passes the gradient)", name,
              repro ? " repro" : "", bad_d);
        printf("%s%s: relu, leaky_relu, max_pool2d and relu's gradient with NaN and infinite inputs checked\n", name,
               repro ? " (reproducible)" : "");
    }
    loom_plan_destroy(plan);
    loom_graph_destroy(g);
}

int main(void) { return tu_every_backend(check_backend); }
