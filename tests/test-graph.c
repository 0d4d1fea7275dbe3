/* tests/test-graph.c — graph API behaviour and bad input: status strings,
 * the context's last error, sticky builder failures, leaf validation,
 * loom_backward misuse, frozen parameters, gradient accumulation, plan host
 * access errors and backend lookup.
 *
 * Uses the elementwise ops (add/sub/mul/div/scale/fill/expand/cast); the
 * vector form of the gradient-accumulation check also uses loom_sum and runs
 * only when loom_sum compiles and runs on the CPU (it says so otherwise).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "loom/loom.h"
#include "testutil.h"

static loom_ctx *ctx;
static loom_backend *be;

static loom_graph *graph(void) {
    loom_graph *g = NULL;
    CHECK_OK(ctx, loom_graph_create(ctx, NULL, &g));
    return g;
}

static bool has(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

#define D(...) (sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), ((const int64_t[]){__VA_ARGS__})

static void test_status_strings(void) {
    for (int i = 0; i < LOOM_STATUS_COUNT; i++) {
        const char *s = loom_status_str((loom_status)i);
        CHECK(s && *s, "status %d has an empty string", i);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(s, loom_status_str((loom_status)j)) != 0, "statuses %d and %d share the string '%s'", i, j, s);
    }
    CHECK(strcmp(loom_status_str(LOOM_OK), "ok") == 0, "LOOM_OK is '%s'", loom_status_str(LOOM_OK));
    const char *bad = loom_status_str((loom_status)LOOM_STATUS_COUNT);
    CHECK(bad && *bad, "an out-of-range status has no string");
    CHECK(loom_status_str((loom_status)-1) != NULL, "status -1 gives NULL");
    CHECK(loom_version() && strlen(loom_version()) >= 5, "version '%s'", loom_version());
}

static void test_ctx_error(void) {
    loom_ctx *c = NULL;
    CHECK(loom_ctx_create(NULL, &c) == LOOM_OK && c, "ctx_create(NULL)");
    if (!c) return;
    CHECK(strcmp(loom_last_error(c), "") == 0, "fresh context has error '%s'", loom_last_error(c));
    CHECK(loom_last_status(c) == LOOM_OK, "fresh context has a status");
    CHECK(loom_ctx_threads(c) >= 1, "threads %d", loom_ctx_threads(c));
    loom_backend *b = NULL;
    loom_status st = loom_backend_create(c, "no-such-backend", NULL, &b);
    CHECK(st == LOOM_ERR_UNSUPPORTED && !b, "unknown backend: %s", loom_status_str(st));
    CHECK(loom_last_status(c) == LOOM_ERR_UNSUPPORTED, "last status %d", loom_last_status(c));
    CHECK(has(loom_last_error(c), "no-such-backend"), "last error '%s'", loom_last_error(c));
    loom_clear_error(c);
    CHECK(loom_last_status(c) == LOOM_OK && strcmp(loom_last_error(c), "") == 0, "clear_error leaves '%s'",
          loom_last_error(c));
    loom_ctx_destroy(c);
    loom_ctx_destroy(NULL); /* a no-op */
    loom_ctx_desc d = {.threads = 3};
    CHECK(loom_ctx_create(&d, &c) == LOOM_OK && loom_ctx_threads(c) == 3, "ctx threads 3");
    loom_ctx_destroy(c);
}

static void test_sticky_failure(void) {
    loom_graph *g = graph();
    if (!g) return;
    loom_tensor *a = loom_input(g, "a", LOOM_F32, D(2, 3));
    loom_tensor *b = loom_input(g, "b", LOOM_F32, D(4));
    loom_tensor *ok = loom_add(g, a, a);
    CHECK(ok && loom_graph_status(g) == LOOM_OK, "a + a works");
    int nodes = loom_graph_node_count(g);
    loom_tensor *y = loom_add(g, a, b);
    const char *msg = loom_last_error(ctx);
    CHECK(y == NULL, "add of [2, 3] and [4] returned a tensor");
    CHECK(loom_graph_status(g) == LOOM_ERR_SHAPE, "graph status %s", loom_status_str(loom_graph_status(g)));
    CHECK(loom_last_status(ctx) == LOOM_ERR_SHAPE, "ctx status %s", loom_status_str(loom_last_status(ctx)));
    CHECK(has(msg, "add") && has(msg, "[2, 3]") && has(msg, "[4]"), "message does not name op and both shapes: '%s'",
          msg);
    CHECK(has(msg, "'a'") && has(msg, "'b'"), "message does not name the tensors: '%s'", msg);
    printf("shape error: %s\n", msg);
    char first[1024];
    snprintf(first, sizeof first, "%s", msg);

    /* every later builder returns NULL, NULL inputs do not crash, the first message stays */
    loom_tensor *z = loom_mul(g, y, a);
    CHECK(z == NULL, "mul(NULL, a) after a failure");
    z = loom_scale(g, loom_sub(g, loom_div(g, y, y), NULL), 2.0);
    CHECK(z == NULL, "a chain of builders on NULL");
    CHECK(loom_add(g, a, a) == NULL, "a valid add on a failed graph must return NULL (sticky)");
    CHECK(loom_cast(g, y, LOOM_F16) == NULL && loom_expand(g, y, D(2, 3)) == NULL, "cast/expand of NULL");
    CHECK(loom_fill(g, LOOM_F32, D(2), 1.0) == NULL, "fill on a failed graph");
    CHECK(loom_param(g, "late", LOOM_F32, D(2), NULL) == NULL, "param on a failed graph");
    CHECK(loom_graph_node_count(g) == nodes, "nodes were added after the failure (%d -> %d)", nodes,
          loom_graph_node_count(g));
    CHECK(loom_graph_status(g) == LOOM_ERR_SHAPE, "status changed to %s", loom_status_str(loom_graph_status(g)));
    CHECK(strcmp(loom_last_error(ctx), first) == 0, "the first error was overwritten: '%s'", loom_last_error(ctx));
    loom_status st = loom_backward(g, ok);
    CHECK(st == LOOM_ERR_SHAPE, "backward on a failed graph: %s", loom_status_str(st));
    loom_plan *p = NULL;
    st = loom_plan_compile(g, be, NULL, &p);
    CHECK(st == LOOM_ERR_SHAPE && p == NULL, "compile of a failed graph: %s", loom_status_str(st));
    CHECK(has(loom_last_error(ctx), "[2, 3]"), "compile error does not carry the builder's message: '%s'",
          loom_last_error(ctx));
    loom_graph_destroy(g);

    /* dtype mismatch names both dtypes */
    g = graph();
    a = loom_input(g, "a", LOOM_F32, D(3));
    b = loom_input(g, "b64", LOOM_F64, D(3));
    CHECK(loom_mul(g, a, b) == NULL && loom_graph_status(g) == LOOM_ERR_DTYPE, "f32 * f64");
    msg = loom_last_error(ctx);
    CHECK(has(msg, "mul") && has(msg, "f32") && has(msg, "f64"), "dtype message: '%s'", msg);
    loom_graph_destroy(g);

    /* a tensor of another graph */
    loom_graph *g1 = graph(), *g2 = graph();
    a = loom_input(g1, "a", LOOM_F32, D(3));
    b = loom_input(g2, "b", LOOM_F32, D(3));
    CHECK(loom_add(g1, a, b) == NULL && loom_graph_status(g1) == LOOM_ERR_INVALID_ARG, "tensor of another graph");
    CHECK(has(loom_last_error(ctx), "another graph"), "message: '%s'", loom_last_error(ctx));
    loom_graph_destroy(g1);
    loom_graph_destroy(g2);

    /* expand to an incompatible shape */
    g = graph();
    a = loom_input(g, "a", LOOM_F32, D(2, 3));
    CHECK(loom_expand(g, a, D(4, 3, 2)) == NULL && loom_graph_status(g) == LOOM_ERR_SHAPE, "expand [2,3] -> [4,3,2]");
    CHECK(has(loom_last_error(ctx), "expand") && has(loom_last_error(ctx), "[2, 3]") &&
              has(loom_last_error(ctx), "[4, 3, 2]"),
          "message: '%s'", loom_last_error(ctx));
    loom_graph_destroy(g);
}

/* One bad leaf on a fresh graph: returns NULL, sets `want`, message has `sub`. */
static void bad_leaf(const char *what, loom_status want, const char *sub, loom_tensor *(*make)(loom_graph *g)) {
    loom_graph *g = graph();
    if (!g) return;
    loom_tensor *t = make(g);
    CHECK(t == NULL, "%s: accepted", what);
    CHECK(loom_graph_status(g) == want, "%s: status %s, expected %s", what, loom_status_str(loom_graph_status(g)),
          loom_status_str(want));
    CHECK(has(loom_last_error(ctx), sub), "%s: message '%s' lacks '%s'", what, loom_last_error(ctx), sub);
    loom_graph_destroy(g);
}

static loom_tensor *mk_dup_param(loom_graph *g) {
    loom_param(g, "w", LOOM_F32, D(3), NULL);
    return loom_param(g, "w", LOOM_F32, D(3), NULL);
}
static loom_tensor *mk_dup_input_param(loom_graph *g) {
    loom_input(g, "x", LOOM_F32, D(3));
    return loom_param(g, "x", LOOM_F32, D(3), NULL);
}
static loom_tensor *mk_dup_state(loom_graph *g) {
    loom_param(g, "s", LOOM_F32, D(3), NULL);
    return loom_state(g, "s", LOOM_F32, D(3), NULL);
}
static loom_tensor *mk_6dims(loom_graph *g) { return loom_param(g, "w6", LOOM_F32, D(1, 2, 1, 2, 1, 2), NULL); }
static loom_tensor *mk_6dims_input(loom_graph *g) { return loom_input(g, "x6", LOOM_F32, D(1, 2, 1, 2, 1, 2)); }
static loom_tensor *mk_neg_ndim(loom_graph *g) { return loom_input(g, "xn", LOOM_F32, -1, (const int64_t[]){1}); }
static loom_tensor *mk_zero_dim(loom_graph *g) { return loom_param(g, "w0", LOOM_F32, D(2, 0), NULL); }
static loom_tensor *mk_neg_dim(loom_graph *g) { return loom_input(g, "xneg", LOOM_F32, D(-3)); }
static loom_tensor *mk_null_name(loom_graph *g) { return loom_param(g, NULL, LOOM_F32, D(3), NULL); }
static loom_tensor *mk_null_name_input(loom_graph *g) { return loom_input(g, NULL, LOOM_F32, D(3)); }
static loom_tensor *mk_empty_name(loom_graph *g) { return loom_input(g, "", LOOM_F32, D(3)); }
static loom_tensor *mk_long_name(loom_graph *g) {
    char name[80];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = 0;
    return loom_param(g, name, LOOM_F32, D(3), NULL);
}
static loom_tensor *mk_int_param(loom_graph *g) { return loom_param(g, "wi", LOOM_I32, D(3), NULL); }
static loom_tensor *mk_bad_dtype(loom_graph *g) { return loom_input(g, "xd", (loom_dtype)42, D(3)); }
static loom_tensor *mk_null_const(loom_graph *g) { return loom_constant(g, "c", LOOM_F32, D(3), NULL); }
static loom_tensor *mk_fill_6dims(loom_graph *g) { return loom_fill(g, LOOM_F32, D(1, 1, 1, 1, 1, 1), 0.0); }
static loom_tensor *mk_fill_int(loom_graph *g) { return loom_fill(g, LOOM_I32, D(2), 0.0); }

static void test_leaves(void) {
    bad_leaf("duplicate param name", LOOM_ERR_INVALID_ARG, "'w'", mk_dup_param);
    bad_leaf("param named like an input", LOOM_ERR_INVALID_ARG, "already used", mk_dup_input_param);
    bad_leaf("state named like a param", LOOM_ERR_INVALID_ARG, "already used", mk_dup_state);
    bad_leaf("6 dims (param)", LOOM_ERR_SHAPE, "6 dimensions", mk_6dims);
    bad_leaf("6 dims (input)", LOOM_ERR_SHAPE, "6 dimensions", mk_6dims_input);
    bad_leaf("-1 dims", LOOM_ERR_SHAPE, "-1", mk_neg_ndim);
    bad_leaf("dimension 0", LOOM_ERR_SHAPE, "[2, 0]", mk_zero_dim);
    bad_leaf("dimension -3", LOOM_ERR_SHAPE, "[-3]", mk_neg_dim);
    bad_leaf("NULL param name", LOOM_ERR_INVALID_ARG, "name", mk_null_name);
    bad_leaf("NULL input name", LOOM_ERR_INVALID_ARG, "name", mk_null_name_input);
    bad_leaf("empty name", LOOM_ERR_INVALID_ARG, "name", mk_empty_name);
    bad_leaf("79-byte name", LOOM_ERR_INVALID_ARG, "63", mk_long_name);
    bad_leaf("i32 param", LOOM_ERR_DTYPE, "i32", mk_int_param);
    bad_leaf("dtype 42", LOOM_ERR_DTYPE, "42", mk_bad_dtype);
    bad_leaf("constant without data", LOOM_ERR_INVALID_ARG, "'c'", mk_null_const);
    bad_leaf("fill with 6 dims", LOOM_ERR_SHAPE, "fill", mk_fill_6dims);
    bad_leaf("fill i32", LOOM_ERR_DTYPE, "fill", mk_fill_int);

    /* what is allowed: 5 dims, 0 dims (a scalar), a 63-byte name, queries */
    loom_graph *g = graph();
    char name[64];
    memset(name, 'n', 63);
    name[63] = 0;
    loom_tensor *t5 = loom_param(g, "w5", LOOM_F32, D(1, 2, 3, 4, 5), NULL);
    loom_tensor *t0 = loom_input(g, "scalar", LOOM_F64, 0, NULL);
    loom_tensor *tl = loom_input(g, name, LOOM_F16, D(7));
    CHECK(t5 && t0 && tl && loom_graph_status(g) == LOOM_OK, "valid leaves rejected: %s", loom_last_error(ctx));
    if (t5 && t0 && tl) {
        char s[64];
        CHECK(loom_tensor_ndim(t5) == 5 && loom_tensor_numel(t5) == 120 && loom_tensor_dim(t5, -1) == 5 &&
                  loom_tensor_dim(t5, 1) == 2 && loom_tensor_dim(t5, 7) == 0,
              "queries on (1,2,3,4,5)");
        CHECK(strcmp(loom_tensor_shape_str(t5, s, sizeof s), "[1, 2, 3, 4, 5]") == 0, "shape_str '%s'", s);
        CHECK(loom_tensor_ndim(t0) == 0 && loom_tensor_numel(t0) == 1 &&
                  strcmp(loom_tensor_shape_str(t0, s, sizeof s), "[]") == 0,
              "scalar: ndim %d numel %lld '%s'", loom_tensor_ndim(t0), (long long)loom_tensor_numel(t0), s);
        CHECK(strcmp(loom_tensor_name(tl), name) == 0 && loom_tensor_dtype(tl) == LOOM_F16, "63-byte name kept");
        CHECK(loom_requires_grad(t5) && !loom_requires_grad(t0), "params need grad, inputs do not");
        CHECK(loom_cast(g, t5, LOOM_F32) == t5, "cast to the same dtype returns x");
    }
    loom_graph_destroy(g);

    /* op names: every op has a distinct non-empty name */
    int n = loom_op_count(), dup = 0;
    for (int i = 0; i < n; i++) {
        CHECK(loom_op_name(i) && *loom_op_name(i), "op %d has no name", i);
        for (int j = 0; j < i; j++) dup += strcmp(loom_op_name(i), loom_op_name(j)) == 0;
    }
    CHECK(dup == 0, "%d duplicate op names", dup);
    CHECK(n > 8 && strcmp(loom_op_name(0), "add") == 0, "op table: %d ops, op 0 '%s'", n, loom_op_name(0));
    CHECK(loom_op_name(-1) != NULL && loom_op_name(n) != NULL, "op_name out of range returns NULL");
}

static void test_backward_misuse(void) {
    loom_graph *g = graph();
    loom_tensor *w = loom_param(g, "w", LOOM_F32, D(3), NULL);
    loom_tensor *y = loom_mul(g, w, w);
    loom_status st = loom_backward(g, y);
    CHECK(st == LOOM_ERR_SHAPE, "backward on a (3) loss: %s", loom_status_str(st));
    CHECK(has(loom_last_error(ctx), "[3]") && has(loom_last_error(ctx), "one"), "message: '%s'", loom_last_error(ctx));
    CHECK(loom_grad(w) == NULL, "a failed backward left a gradient");
    st = loom_backward(g, NULL);
    CHECK(st == LOOM_ERR_INVALID_ARG, "backward(NULL): %s", loom_status_str(st));
    loom_graph_destroy(g);

    g = graph();
    loom_tensor *x = loom_input(g, "x", LOOM_F32, D(1));
    loom_tensor *c = loom_fill(g, LOOM_F32, D(1), 2.0);
    w = loom_param(g, "w", LOOM_F32, D(1), NULL);
    y = loom_mul(g, x, c);
    (void)w;
    st = loom_backward(g, y);
    CHECK(st == LOOM_ERR_STATE, "backward on a loss without params: %s", loom_status_str(st));
    CHECK(has(loom_last_error(ctx), "does not depend"), "message: '%s'", loom_last_error(ctx));
    loom_graph_destroy(g);

    g = graph();
    x = loom_input(g, "x", LOOM_I32, D(1));
    st = loom_backward(g, x);
    CHECK(st == LOOM_ERR_SHAPE, "backward on an i32 loss: %s", loom_status_str(st));
    loom_graph_destroy(g);

    g = graph();
    w = loom_param(g, "w", LOOM_F32, D(1), NULL);
    y = loom_scale(g, loom_mul(g, w, w), 0.5);
    st = loom_backward(g, y);
    CHECK(st == LOOM_OK, "first backward: %s", loom_last_error(ctx));
    int nodes = loom_graph_node_count(g);
    st = loom_backward(g, y);
    CHECK(st == LOOM_ERR_STATE, "second backward: %s", loom_status_str(st));
    CHECK(has(loom_last_error(ctx), "already"), "message: '%s'", loom_last_error(ctx));
    CHECK(loom_graph_node_count(g) == nodes, "the second backward added nodes");
    st = loom_set_requires_grad(w, false);
    CHECK(st == LOOM_ERR_STATE, "freezing after backward: %s", loom_status_str(st));
    loom_graph_destroy(g);

    g = graph();
    x = loom_input(g, "x", LOOM_F32, D(1));
    st = loom_set_requires_grad(x, true);
    CHECK(st == LOOM_ERR_INVALID_ARG, "requires_grad on an input: %s", loom_status_str(st));
    CHECK(has(loom_last_error(ctx), "'x'"), "message: '%s'", loom_last_error(ctx));
    CHECK(loom_set_requires_grad(NULL, true) == LOOM_ERR_INVALID_ARG, "requires_grad(NULL)");
    loom_graph_destroy(g);
}

static loom_plan *compile(loom_graph *g) {
    loom_plan *p = NULL;
    CHECK_OK(ctx, loom_plan_compile(g, be, NULL, &p));
    return p;
}

/* y = w1 * w2 * x with w1 frozen: no gradient for w1, dy/dw2 = w1 * x. */
static void test_frozen(void) {
    loom_graph *g = graph();
    loom_tensor *w1 = loom_param(g, "w1", LOOM_F32, D(1), NULL);
    loom_tensor *w2 = loom_param(g, "w2", LOOM_F32, D(1), NULL);
    loom_tensor *x = loom_input(g, "x", LOOM_F32, D(1));
    CHECK_OK(ctx, loom_set_requires_grad(w1, false));
    CHECK(!loom_requires_grad(w1) && loom_requires_grad(w2), "requires_grad flags");
    loom_tensor *y = loom_mul(g, loom_mul(g, w1, w2), x);
    CHECK_OK(ctx, loom_backward(g, y));
    CHECK(loom_grad(w1) == NULL, "frozen w1 got a gradient");
    CHECK(loom_grad(x) == NULL, "input x got a gradient");
    loom_tensor *gw2 = loom_grad(w2);
    CHECK(gw2 != NULL, "w2 has no gradient");
    if (!gw2) {
        loom_graph_destroy(g);
        return;
    }
    loom_keep(gw2);
    loom_plan *p = compile(g);
    if (p) {
        float v1 = 3, v2 = -2, vx = 5, got = 0;
        CHECK_OK(ctx, loom_plan_write(p, w1, &v1, sizeof v1));
        CHECK_OK(ctx, loom_plan_write(p, w2, &v2, sizeof v2));
        CHECK_OK(ctx, loom_plan_write(p, x, &vx, sizeof vx));
        CHECK_OK(ctx, loom_plan_run(p));
        CHECK_OK(ctx, loom_plan_read(p, gw2, &got, sizeof got));
        CHECK(got == 15.0f, "d(w1 w2 x)/dw2 = %g, expected 15", got);
        loom_plan_destroy(p);
    }
    loom_graph_destroy(g);
}

/* x used several times: y = x*x + x -> dy/dx = 2x + 1, for several x (one
 * scalar param each), in f32 and f64. */
static void test_grad_accumulation(void) {
    const double xs[] = {0.5, -3.0, 2.25, 10.0, -0.125};
    enum { NX = sizeof xs / sizeof *xs };
    for (int k = 0; k < 2; k++) {
        loom_dtype dt = k ? LOOM_F64 : LOOM_F32;
        loom_graph *g = graph();
        loom_tensor *x[NX], *loss = NULL;
        for (int i = 0; i < NX; i++) {
            char name[16];
            snprintf(name, sizeof name, "x%d", i);
            x[i] = loom_param(g, name, dt, D(1), NULL);
            loom_tensor *yi = loom_add(g, loom_mul(g, x[i], x[i]), x[i]);
            loss = loss ? loom_add(g, loss, yi) : yi;
        }
        loom_keep(loss);
        CHECK_OK(ctx, loom_backward(g, loss));
        bool all = true;
        for (int i = 0; i < NX; i++) {
            if (loom_grad(x[i]))
                loom_keep(loom_grad(x[i]));
            else
                all = false;
        }
        CHECK(all, "a used-twice param has no gradient");
        loom_plan *p = all ? compile(g) : NULL;
        if (p) {
            for (int i = 0; i < NX; i++) CHECK_OK(ctx, loom_plan_write_f64(p, x[i], &xs[i], 1));
            CHECK_OK(ctx, loom_plan_run(p));
            double want_loss = 0, l = 0;
            for (int i = 0; i < NX; i++) {
                double gi = 0;
                CHECK_OK(ctx, loom_plan_read_f64(p, loom_grad(x[i]), &gi, 1));
                CHECK(gi == 2 * xs[i] + 1, "%s: d(x*x + x)/dx at %g = %g, expected %g", loom_dtype_name(dt), xs[i], gi,
                      2 * xs[i] + 1);
                want_loss += xs[i] * xs[i] + xs[i];
            }
            CHECK_OK(ctx, loom_plan_read_f64(p, loss, &l, 1));
            CHECK(l == want_loss, "%s: loss %g, expected %g", loom_dtype_name(dt), l, want_loss);
            loom_plan_destroy(p);
        }
        loom_graph_destroy(g);
    }

    /* the vector form, once loom_sum is available: loss = sum(x*x + x) */
    loom_graph *g = graph();
    loom_tensor *x = loom_param(g, "x", LOOM_F32, D(2, 3), NULL);
    loom_tensor *loss = loom_sum(g, loom_add(g, loom_mul(g, x, x), x), 0, false);
    loom_plan *p = NULL;
    if (!loss || loom_backward(g, loss) != LOOM_OK || !loom_grad(x) ||
        (loom_keep(loom_grad(x)), loom_plan_compile(g, be, NULL, &p)) != LOOM_OK) {
        printf("note: vector gradient-accumulation check not run: %s\n", loom_last_error(ctx));
    } else {
        const float v[6] = {1, -2, 0.5f, 3, -0.25f, 4};
        float gx[6];
        CHECK_OK(ctx, loom_plan_write(p, x, v, sizeof v));
        CHECK_OK(ctx, loom_plan_run(p));
        CHECK_OK(ctx, loom_plan_read(p, loom_grad(x), gx, sizeof gx));
        int bad = 0;
        for (int i = 0; i < 6; i++) bad += gx[i] != 2 * v[i] + 1;
        CHECK(bad == 0, "vector d sum(x*x + x)/dx: %d of 6 wrong", bad);
        loom_plan_destroy(p);
    }
    loom_graph_destroy(g);
}

static void test_plan_access(void) {
    loom_graph *g = graph();
    loom_tensor *a = loom_input(g, "a", LOOM_F32, D(4));
    loom_tensor *w = loom_param(g, "w", LOOM_F32, D(4), &(loom_init){LOOM_INIT_CONST, 2.0, 0});
    const float cdata[4] = {1, 1, 1, 1};
    loom_tensor *c = loom_constant(g, "c", LOOM_F32, D(4), cdata);
    loom_tensor *mid = loom_mul(g, a, w);
    loom_tensor *out = loom_add(g, mid, c);
    loom_tensor *dead = loom_scale(g, a, 3.0); /* not kept, not used: removed */
    loom_keep(out);
    loom_plan *p = compile(g);
    if (!p) {
        loom_graph_destroy(g);
        return;
    }
    const float av[4] = {1, 2, 3, 4};
    float buf[4];
    CHECK_OK(ctx, loom_plan_write(p, a, av, sizeof av));
    CHECK_OK(ctx, loom_plan_run(p));
    CHECK_OK(ctx, loom_plan_read(p, out, buf, sizeof buf));
    CHECK(buf[0] == 3 && buf[1] == 5 && buf[2] == 7 && buf[3] == 9, "a*w + c = %g %g %g %g", buf[0], buf[1], buf[2],
          buf[3]);
    CHECK(loom_plan_step(p) == 1, "step %llu after one run", (unsigned long long)loom_plan_step(p));

    loom_status st = loom_plan_read(p, mid, buf, sizeof buf);
    CHECK(st == LOOM_ERR_INVALID_ARG, "read of a non-kept intermediate: %s", loom_status_str(st));
    CHECK(has(loom_last_error(ctx), loom_tensor_name(mid)) && has(loom_last_error(ctx), "loom_keep"), "message: '%s'",
          loom_last_error(ctx));
    printf("read error: %s\n", loom_last_error(ctx));
    st = loom_plan_read(p, dead, buf, sizeof buf);
    CHECK(st == LOOM_ERR_INVALID_ARG, "read of a removed node: %s", loom_status_str(st));
    st = loom_plan_read_f32(p, mid, buf, 4);
    CHECK(st == LOOM_ERR_INVALID_ARG, "read_f32 of a non-kept intermediate: %s", loom_status_str(st));

    st = loom_plan_write(p, a, av, sizeof av - 1);
    CHECK(st == LOOM_ERR_INVALID_ARG, "write of 15 bytes into 16: %s", loom_status_str(st));
    CHECK(has(loom_last_error(ctx), "'a'") && has(loom_last_error(ctx), "16") && has(loom_last_error(ctx), "15"),
          "message: '%s'", loom_last_error(ctx));
    printf("write error: %s\n", loom_last_error(ctx));
    st = loom_plan_read(p, out, buf, sizeof buf + 4);
    CHECK(st == LOOM_ERR_INVALID_ARG, "read of 20 bytes from 16: %s", loom_status_str(st));
    st = loom_plan_read_f64(p, out, (double[8]){0}, 8);
    CHECK(st == LOOM_ERR_INVALID_ARG, "read_f64 of 8 elements from 4: %s", loom_status_str(st));
    st = loom_plan_write(p, out, av, sizeof av);
    CHECK(st == LOOM_ERR_INVALID_ARG, "write into a computed tensor: %s", loom_status_str(st));
    st = loom_plan_write(p, c, av, sizeof av);
    CHECK(st == LOOM_ERR_INVALID_ARG, "write into a constant: %s", loom_status_str(st));
    st = loom_plan_write(p, NULL, av, sizeof av);
    CHECK(st == LOOM_ERR_INVALID_ARG, "write to NULL: %s", loom_status_str(st));
    /* params, inputs and constants stay readable */
    CHECK_OK(ctx, loom_plan_read(p, w, buf, sizeof buf));
    CHECK(buf[0] == 2 && buf[3] == 2, "param w = %g", buf[0]);
    CHECK_OK(ctx, loom_plan_read(p, c, buf, sizeof buf));
    CHECK_OK(ctx, loom_plan_read(p, a, buf, sizeof buf));
    CHECK(buf[3] == 4, "input a[3] = %g", buf[3]);

    /* a tensor of another graph */
    loom_graph *g2 = graph();
    loom_tensor *o = loom_input(g2, "a", LOOM_F32, D(4));
    st = loom_plan_read(p, o, buf, sizeof buf);
    CHECK(st == LOOM_ERR_INVALID_ARG, "read of another graph's tensor: %s", loom_status_str(st));
    loom_graph_destroy(g2);
    loom_plan_destroy(p);
    loom_graph_destroy(g);
}

static void test_backends(void) {
    const char *names[8] = {0};
    int n = loom_backend_list(names, 8);
    CHECK(n >= 1, "no backends built");
    bool cpu = false;
    for (int i = 0; i < n && i < 8; i++) cpu |= names[i] && strcmp(names[i], "cpu") == 0;
    CHECK(cpu, "cpu is not in the backend list");
    CHECK(loom_backend_list(NULL, 0) == n, "list count without a buffer");

    loom_backend *b = (loom_backend *)&b;
    loom_status st = loom_backend_create(ctx, "tpu", NULL, &b);
    CHECK(st == LOOM_ERR_UNSUPPORTED, "backend 'tpu': %s", loom_status_str(st));
    CHECK(b == NULL, "failed create leaves *out set");
    const char *msg = loom_last_error(ctx);
    CHECK(has(msg, "'tpu'"), "message does not name the request: '%s'", msg);
    for (int i = 0; i < n && i < 8; i++)
        CHECK(has(msg, names[i]), "message does not list built backend '%s': '%s'", names[i], msg);
    printf("backend error: %s\n", msg);
    st = loom_backend_create(ctx, NULL, NULL, &b);
    CHECK(st == LOOM_ERR_UNSUPPORTED && b == NULL, "backend NULL: %s", loom_status_str(st));
    const char *why = NULL;
    CHECK(!loom_backend_available(ctx, "tpu", &why) && why && *why, "available('tpu')");
    CHECK(loom_backend_available(ctx, "cpu", NULL), "cpu not available");
    CHECK(strcmp(loom_backend_name(be), "cpu") == 0, "backend name '%s'", loom_backend_name(be));
    CHECK(loom_backend_supports(be, 0, LOOM_F32) && !loom_backend_supports(be, -1, LOOM_F32) &&
              !loom_backend_supports(be, loom_op_count(), LOOM_F32) && !loom_backend_supports(be, 0, (loom_dtype)42),
          "supports() bounds");
}

int main(void) {
    if (!tu_cpu_open(1, &ctx, &be)) {
        CHECK(0, "cannot open the cpu backend");
        return tu_summary();
    }
    test_status_strings();
    test_ctx_error();
    test_sticky_failure();
    test_leaves();
    test_backward_misuse();
    test_frozen();
    test_grad_accumulation();
    test_plan_access();
    test_backends();
    tu_cpu_close(ctx, be);
    return tu_summary();
}
