/* tests/test-attention.c — loom_attention against the composed version on
 * the CPU backend in f32: matmul(q, k^T) -> scale -> causal_mask (when
 * causal) -> softmax -> matmul(., v), forward output and the gradients of q,
 * k and v within 1e-5 relative (max |a - b| <= 1e-5 max |b| per tensor), for
 * causal and not, Tq = Tk, Tq < Tk, Tq > Tk, D not a multiple of 4 and sizes
 * that span several blocks. Also: the same results with 1 and 3 threads (bit
 * for bit), autocast (16-bit q, k, v and output), and bad input (clear errors,
 * no node). */
#include <math.h>
#include <string.h>

#include "testutil.h"

#define RTOL 1e-5

typedef struct shape {
    int64_t B, H, Tq, Tk, D;
    bool causal;
    double scale; /* 0 = 1/sqrt(D) */
} shape;

static const shape SHAPES[] = {
    {1, 1, 4, 4, 8, false, 0}, {2, 3, 7, 7, 5, true, 0},  {1, 2, 5, 9, 6, true, 0},     {2, 1, 9, 4, 3, true, 0},
    {2, 2, 3, 6, 7, false, 0}, {1, 2, 80, 80, 16, true, 0}, {1, 1, 37, 100, 12, false, 0.3}, {1, 1, 100, 37, 9, true, 0},
    {2, 2, 150, 130, 20, true, 0},
};

/* What one graph produces: y, dq, dk, dv (f32, host). */
typedef struct result {
    float *t[4];
    int64_t n[4];
} result;

static void result_free(result *r) {
    for (int i = 0; i < 4; i++) free(r->t[i]);
}

static loom_tensor *composed(loom_graph *g, loom_tensor *q, loom_tensor *k, loom_tensor *v, const shape *s) {
    loom_tensor *sc = loom_matmul(g, q, k, false, true);
    sc = loom_scale(g, sc, s->scale ? s->scale : 1.0 / sqrt((double)s->D));
    if (s->causal) sc = loom_causal_mask(g, sc);
    return loom_matmul(g, loom_softmax(g, sc), v, false, false);
}

/* Build (fused or composed), loss = sum(y * R), run on be; fill r. */
static bool run(loom_ctx *ctx, loom_backend *be, const shape *s, bool fused, result *r) {
    memset(r, 0, sizeof *r);
    loom_graph *g;
    loom_graph_desc gd = {7};
    if (loom_graph_create(ctx, &gd, &g) != LOOM_OK) return false;
    loom_init u = {LOOM_INIT_UNIFORM, -1.5, 1.5};
    loom_tensor *q = loom_param(g, "q", LOOM_F32, 4, (int64_t[]){s->B, s->H, s->Tq, s->D}, &u);
    loom_tensor *k = loom_param(g, "k", LOOM_F32, 4, (int64_t[]){s->B, s->H, s->Tk, s->D}, &u);
    loom_tensor *v = loom_param(g, "v", LOOM_F32, 4, (int64_t[]){s->B, s->H, s->Tk, s->D}, &u);
    loom_tensor *y = fused ? loom_attention(g, q, k, v, s->causal, s->scale) : composed(g, q, k, v, s);
    loom_tensor *R = loom_param(g, "R", LOOM_F32, 4, (int64_t[]){s->B, s->H, s->Tq, s->D}, &u);
    loom_set_requires_grad(R, false);
    loom_tensor *loss = loom_sum(g, loom_mul(g, y, R), 0, false);
    bool ok = loss && loom_backward(g, loss) == LOOM_OK;
    loom_plan *p = NULL;
    if (ok) {
        loom_keep(y);
        loom_tensor *ts[4] = {y, loom_grad(q), loom_grad(k), loom_grad(v)};
        for (int i = 0; i < 4; i++) loom_keep(ts[i]);
        ok = loom_plan_compile(g, be, NULL, &p) == LOOM_OK && loom_plan_run(p) == LOOM_OK;
        for (int i = 0; ok && i < 4; i++) {
            r->n[i] = loom_tensor_numel(ts[i]);
            r->t[i] = malloc((size_t)r->n[i] * sizeof(float));
            ok = r->t[i] && loom_plan_read_f32(p, ts[i], r->t[i], (size_t)r->n[i]) == LOOM_OK;
        }
    }
    if (!ok) printf("  graph failed: %s\n", loom_last_error(ctx));
    loom_plan_destroy(p);
    loom_graph_destroy(g);
    return ok;
}

static double rel_err(const float *a, const float *b, int64_t n) {
    double dmax = 0, bmax = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= dmax)) dmax = d; /* NaN propagates */
        if (fabs((double)b[i]) > bmax) bmax = fabs((double)b[i]);
    }
    return bmax > 0 ? dmax / bmax : dmax;
}

static void test_composed(loom_ctx *ctx, loom_backend *be) {
    static const char *const what[4] = {"y", "dq", "dk", "dv"};
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
        const shape *s = &SHAPES[i];
        result a, b;
        bool ok = run(ctx, be, s, true, &a) && run(ctx, be, s, false, &b);
        CHECK(ok, "shape %zu: graphs ran", i);
        for (int t = 0; ok && t < 4; t++) {
            double e = rel_err(a.t[t], b.t[t], a.n[t]);
            CHECK(e <= RTOL, "(%lld,%lld,%lld,%lld,%lld)%s %s: relative error %.2e > %.0e", (long long)s->B,
                  (long long)s->H, (long long)s->Tq, (long long)s->Tk, (long long)s->D, s->causal ? " causal" : "",
                  what[t], e, RTOL);
        }
        if (ok)
            printf("  (%lld,%lld,%lld,%lld,%lld)%s: y %.1e dq %.1e dk %.1e dv %.1e\n", (long long)s->B,
                   (long long)s->H, (long long)s->Tq, (long long)s->Tk, (long long)s->D, s->causal ? " causal" : "",
                   rel_err(a.t[0], b.t[0], a.n[0]), rel_err(a.t[1], b.t[1], a.n[1]), rel_err(a.t[2], b.t[2], a.n[2]),
                   rel_err(a.t[3], b.t[3], a.n[3]));
        result_free(&a), result_free(&b);
    }
}

/* no result may depend on the thread count */
static void test_threads(loom_ctx *ctx, loom_backend *be1) {
    loom_backend *be3;
    loom_backend_desc d = {0};
    d.threads = 3;
    CHECK_OK(ctx, loom_backend_create(ctx, "cpu", &d, &be3));
    const shape *s = &SHAPES[5];
    result a, b;
    bool ok = run(ctx, be1, s, true, &a) && run(ctx, be3, s, true, &b);
    CHECK(ok, "thread runs");
    for (int t = 0; ok && t < 4; t++)
        CHECK(memcmp(a.t[t], b.t[t], (size_t)a.n[t] * sizeof(float)) == 0, "tensor %d differs with 1 and 3 threads", t);
    result_free(&a), result_free(&b);
    loom_backend_destroy(be3);
}

/* autocast: q, k, v and the output in 16 bits, the result near the f32 one */
static void test_autocast(loom_ctx *ctx, loom_backend *be) {
    loom_graph *g;
    loom_graph_desc gd = {7};
    CHECK_OK(ctx, loom_graph_create(ctx, &gd, &g));
    CHECK_OK(ctx, loom_graph_set_autocast(g, LOOM_BF16));
    loom_init u = {LOOM_INIT_UNIFORM, -1, 1};
    int64_t dims[4] = {1, 2, 6, 8};
    loom_tensor *q = loom_param(g, "q", LOOM_F32, 4, dims, &u);
    loom_tensor *y = loom_attention(g, q, q, q, true, 0);
    CHECK(y && loom_tensor_dtype(y) == LOOM_BF16, "autocast attention has dtype %s",
          y ? loom_dtype_name(loom_tensor_dtype(y)) : "(null)");
    loom_tensor *loss = loom_sum(g, y, 0, false);
    CHECK_OK(ctx, loom_backward(g, loss));
    CHECK(loom_grad(q) && loom_tensor_dtype(loom_grad(q)) == LOOM_F32, "the f32 master gets an f32 gradient");
    loom_plan *p = NULL;
    loom_keep(y);
    CHECK_OK(ctx, loom_plan_compile(g, be, NULL, &p));
    if (p) {
        CHECK_OK(ctx, loom_plan_run(p));
        float out[96];
        CHECK_OK(ctx, loom_plan_read_f32(p, y, out, 96));
        bool finite = true;
        for (int i = 0; i < 96; i++) finite = finite && isfinite(out[i]) && fabsf(out[i]) <= 1;
        CHECK(finite, "autocast output finite and within the range of v");
    }
    loom_plan_destroy(p);
    loom_graph_destroy(g);
}

static void expect_fail(loom_ctx *ctx, loom_graph *g, loom_tensor *t, loom_status want, const char *needle) {
    CHECK(t == NULL && loom_graph_status(g) == want, "expected %s, got node %p status %s", loom_status_str(want),
          (void *)t, loom_status_str(loom_graph_status(g)));
    CHECK(strstr(loom_last_error(ctx), needle) != NULL, "message '%s' lacks '%s'", loom_last_error(ctx), needle);
}

/* each bad input on a fresh graph (the status is sticky) */
static void test_bad_input(loom_ctx *ctx) {
    for (int c = 0; c < 7; c++) {
        loom_graph *g;
        loom_graph_desc gd = {1};
        if (loom_graph_create(ctx, &gd, &g) != LOOM_OK) continue;
        loom_tensor *q = loom_input(g, "q", LOOM_F32, 4, (int64_t[]){2, 3, 5, 8});
        loom_tensor *k = loom_input(g, "k", LOOM_F32, 4, (int64_t[]){2, 3, 6, 8});
        switch (c) {
        case 0: expect_fail(ctx, g, loom_attention(g, q, k, loom_input(g, "v", LOOM_F32, 4, (int64_t[]){2, 3, 6, 7}),
                                                  false, 0), LOOM_ERR_SHAPE, "D differs");
            break;
        case 1: expect_fail(ctx, g, loom_attention(g, q, k, loom_input(g, "v", LOOM_F32, 4, (int64_t[]){2, 3, 5, 8}),
                                                  false, 0), LOOM_ERR_SHAPE, "different Tk");
            break;
        case 2: expect_fail(ctx, g, loom_attention(g, q, k, loom_input(g, "v", LOOM_F32, 3, (int64_t[]){3, 6, 8}),
                                                  true, 0), LOOM_ERR_SHAPE, "4 dims");
            break;
        case 3: expect_fail(ctx, g, loom_attention(g, q, loom_input(g, "k2", LOOM_F32, 4, (int64_t[]){2, 4, 6, 8}), k,
                                                  true, 0), LOOM_ERR_SHAPE, "B and H differ");
            break;
        case 4: expect_fail(ctx, g, loom_attention(g, q, k, loom_input(g, "v", LOOM_F64, 4, (int64_t[]){2, 3, 6, 8}),
                                                  false, 0), LOOM_ERR_DTYPE, "share a float dtype");
            break;
        case 5: expect_fail(ctx, g, loom_attention(g, q, k, k, false, NAN), LOOM_ERR_INVALID_ARG, "scale");
            break;
        default: expect_fail(ctx, g, loom_causal_mask(g, loom_input(g, "x", LOOM_F32, 1, (int64_t[]){4})),
                             LOOM_ERR_SHAPE, "causal_mask");
            break;
        }
        loom_graph_destroy(g);
    }
}

int main(void) {
    loom_ctx *ctx;
    loom_backend *be;
    if (!tu_cpu_open(1, &ctx, &be)) return 1;
    test_composed(ctx, be);
    test_threads(ctx, be);
    test_autocast(ctx, be);
    test_bad_input(ctx);
    tu_cpu_close(ctx, be);
    return tu_summary();
}
