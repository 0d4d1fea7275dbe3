/* tests/test-conv-direct.c — the CPU backend's direct convolution
 * (backends/cpu/ops/conv2d_direct.c) against its im2col path
 * (LOOM_CPU_DIRECT_CONV=0): conv2d's output and the gradients of its input,
 * weight and bias agree within f32 rounding (1e-5 of the tensor's largest
 * magnitude) over shapes that exercise odd widths, output channels not a
 * multiple of 16, one input channel, padding 0 to KH-1, 5x5 and 1x3
 * kernels, with and without bias, on 1 and 3 threads (the weight gradient
 * runs direct on the larger planes only); and the direct path must take
 * every one of these shapes. Both kernel sets where the CPU has them: the
 * AVX-512 ones and the AVX2 ones (LOOM_CPU_DIRECT_CONV=avx2); on a CPU
 * without AVX2 + FMA the test skips. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backends/cpu/ops/conv2d_direct.h"
#include "../backends/cpu/vmath.h"
#include "loom/loom.h"
#include "testutil.h"

static loom_ctx *ctx;
static loom_backend *be;
static bool have_avx512;

typedef struct shape {
    int64_t n, c, h, w, o, kh, kw, ph, pw;
    bool bias;
} shape;

/* mode: the value of LOOM_CPU_DIRECT_CONV ("0": the im2col path; "avx2"; NULL: the best kernels) */
static void run(const shape *s, const char *mode, float **out, loom_tensor **t, int nt, loom_graph *g,
                loom_tensor *r) {
    if (mode)
        setenv("LOOM_CPU_DIRECT_CONV", mode, 1);
    else
        unsetenv("LOOM_CPU_DIRECT_CONV");
    loom_plan *p = NULL;
    CHECK_OK(ctx, loom_plan_compile(g, be, NULL, &p));
    if (p) {
        size_t n = (size_t)loom_tensor_numel(r);
        double *v = malloc(n * sizeof *v);
        for (size_t i = 0; v && i < n; i++) v[i] = loom_philox_uniform(9, 2, i) * 2 - 1;
        if (v) CHECK_OK(ctx, loom_plan_write_f64(p, r, v, n));
        free(v);
        CHECK_OK(ctx, loom_plan_run(p));
        for (int i = 0; i < nt; i++) {
            size_t bytes = (size_t)loom_tensor_numel(t[i]) * sizeof(float);
            out[i] = malloc(bytes);
            if (out[i]) CHECK_OK(ctx, loom_plan_read(p, t[i], out[i], bytes));
        }
    }
    loom_plan_destroy(p);
    unsetenv("LOOM_CPU_DIRECT_CONV");
    (void)s;
}

static void test_shape(const shape *s) {
    char what[160];
    snprintf(what, sizeof what, "x (%lld,%lld,%lld,%lld) w (%lld,%lld,%lld,%lld) pad (%lld,%lld)%s", (long long)s->n,
             (long long)s->c, (long long)s->h, (long long)s->w, (long long)s->o, (long long)s->c, (long long)s->kh,
             (long long)s->kw, (long long)s->ph, (long long)s->pw, s->bias ? " bias" : "");
    loom_graph *g = NULL;
    CHECK_OK(ctx, loom_graph_create(ctx, &(loom_graph_desc){.seed = 11}, &g));
    if (!g) return;
    loom_tensor *x = loom_param(g, "x", LOOM_F32, 4, (int64_t[]){s->n, s->c, s->h, s->w},
                                &(loom_init){LOOM_INIT_NORMAL, 0, 1});
    loom_tensor *w = loom_param(g, "w", LOOM_F32, 4, (int64_t[]){s->o, s->c, s->kh, s->kw},
                                &(loom_init){LOOM_INIT_NORMAL, 0, 0.3});
    loom_tensor *b = s->bias ? loom_param(g, "b", LOOM_F32, 1, &s->o, &(loom_init){LOOM_INIT_NORMAL, 0, 1}) : NULL;
    loom_conv2d_desc cd = {.pad_h = (int)s->ph, .pad_w = (int)s->pw};
    loom_tensor *y = loom_conv2d(g, x, w, b, &cd);
    loom_tensor *r = y ? loom_input(g, "r", LOOM_F32, 4, (int64_t[]){loom_tensor_dim(y, 0), loom_tensor_dim(y, 1),
                                                                     loom_tensor_dim(y, 2), loom_tensor_dim(y, 3)})
                       : NULL;
    loom_tensor *loss = loom_sum(g, loom_mul(g, y, r), 0xF, false);
    CHECK(loom_graph_status(g) == LOOM_OK && loom_backward(g, loss) == LOOM_OK, "%s: graph: %s", what,
          loom_last_error(ctx));
    if (loom_graph_status(g) != LOOM_OK) {
        loom_graph_destroy(g);
        return;
    }
    loom__conv_geom q = {.N = s->n, .C = s->c, .H = s->h, .W = s->w, .O = s->o, .KH = s->kh, .KW = s->kw,
                         .sh = 1, .sw = 1, .ph = s->ph, .pw = s->pw, .dh = 1, .dw = 1, .G = 1};
    q.OH = s->h + 2 * s->ph - s->kh + 1, q.OW = s->w + 2 * s->pw - s->kw + 1;
    CHECK(loom__cpu_conv_direct_ok(NULL, &q), "%s: the direct path does not take this shape", what);
    bool gw = loom__cpu_conv_direct_gw_ok(NULL, &q);
    printf("%-64s weight gradient: %s\n", what, gw ? "direct" : "im2col (a small plane)");
    loom_tensor *t[4] = {y, loom_grad(x), loom_grad(w), b ? loom_grad(b) : NULL};
    const char *names[4] = {"y", "dx", "dw", "db"};
    int nt = b ? 4 : 3;
    for (int i = 0; i < nt; i++) loom_keep(t[i]);
    float *ref[4] = {0};
    run(s, "0", ref, t, nt, g, r);
    const char *modes[2] = {NULL, "avx2"}, *mode_names[2] = {"best", "avx2"};
    for (int md = 0; md < 2; md++) {
        if (md == 1 && !have_avx512) continue; /* without AVX-512 the best kernels are the AVX2 ones */
        float *d[4] = {0};
        run(s, modes[md], d, t, nt, g, r);
        for (int i = 0; i < nt; i++) {
            if (!d[i] || !ref[i]) continue;
            int64_t n = loom_tensor_numel(t[i]);
            double mx = 0, diff = 0;
            for (int64_t k = 0; k < n; k++) {
                mx = fmax(mx, fabs(ref[i][k]));
                diff = fmax(diff, fabs((double)d[i][k] - ref[i][k]));
            }
            printf("%-64s %-4s %-2s max |direct - im2col| %.2e (largest %.3g)\n", what, mode_names[md], names[i], diff,
                   mx);
            CHECK(diff <= 1e-5 * mx + 1e-6, "%s (%s kernels): %s differs by %.3g (largest magnitude %.3g)", what,
                  mode_names[md], names[i], diff, mx);
        }
        for (int i = 0; i < 4; i++) free(d[i]);
    }
    for (int i = 0; i < 4; i++) free(ref[i]);
    loom_graph_destroy(g);
}

int main(void) {
#if !LOOM__X86
    return tu_skip("not x86-64: the CPU backend has no direct convolution here");
#endif
    if (!LOOM__HAS("avx2") || !LOOM__HAS("fma"))
        return tu_skip("this CPU has neither AVX-512 nor AVX2 + FMA: the direct path is off");
    have_avx512 = LOOM__HAS("avx512f");
    const shape shapes[] = {
        {3, 5, 9, 11, 7, 3, 3, 1, 1, true},    {2, 16, 28, 28, 16, 3, 3, 1, 1, false},
        {2, 1, 28, 28, 16, 3, 3, 1, 1, true},  {2, 3, 7, 7, 20, 3, 3, 0, 0, false},
        {1, 4, 6, 13, 17, 5, 5, 2, 2, true},   {2, 2, 5, 8, 33, 3, 3, 2, 2, false},
        {3, 32, 14, 14, 32, 3, 3, 1, 1, false}, {2, 6, 4, 19, 5, 1, 3, 0, 1, true},
        {5, 64, 7, 7, 64, 3, 3, 1, 1, false},  {3, 7, 20, 30, 19, 3, 3, 1, 1, true},
        {2, 3, 17, 40, 4, 5, 5, 2, 2, false},
    };
    int threads[2] = {1, 3};
    for (int k = 0; k < 2; k++) {
        if (!tu_cpu_open(threads[k], &ctx, &be)) return 1;
        printf("-- %d thread(s)\n", threads[k]);
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) test_shape(&shapes[i]);
        tu_cpu_close(ctx, be);
    }
    return tu_summary();
}
