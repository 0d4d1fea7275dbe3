/* tests/test-planner.c — the memory planner (core/plan.c): buffer reuse,
 * in-place execution and dead-node removal must save memory without
 * changing a single bit of any result.
 *
 * Every graph is compiled twice from the same graph, once normally and once
 * with desc.no_reuse (every intermediate gets its own memory), and the kept
 * results of both plans are compared bitwise:
 * - a chain of 20 elementwise ops on (256, 256): peak far below naive, in-place
 * - diamonds (a value read by two branches joined later), in both orders
 * - a kept intermediate in the middle of an in-place chain
 * - an unused branch: fewer nodes run than the graph has
 * - random DAGs of elementwise ops with broadcasting, casts, views (reshape,
 *   once it exists) and random keeps,
 *   also against the same graph with every node kept (no arena at all)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/loom.h"
#include "testutil.h"

static loom_ctx *ctx;
static loom_backend *be;

#define D(...) (sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), ((const int64_t[]){__VA_ARGS__})

static loom_graph *graph(uint64_t seed) {
    loom_graph *g = NULL;
    loom_graph_desc d = {.seed = seed};
    CHECK_OK(ctx, loom_graph_create(ctx, &d, &g));
    return g;
}

static loom_plan *compile(loom_graph *g, bool no_reuse) {
    loom_plan *p = NULL;
    loom_plan_desc d = {.no_reuse = no_reuse};
    CHECK_OK(ctx, loom_plan_compile(g, be, &d, &p));
    return p;
}

static void print_mem(const char *what, const loom_plan *p, int graph_nodes) {
    loom_plan_memory m;
    loom_plan_memory_stats(p, &m);
    printf("%-28s planned peak %zu bytes vs naive %zu bytes (%.1fx), persistent %zu, nodes run %d of %d, in-place %d\n",
           what, m.arena_bytes, m.naive_bytes, m.arena_bytes ? (double)m.naive_bytes / (double)m.arena_bytes : 0.0,
           m.persistent_bytes, m.nodes_run, graph_nodes, m.inplace_count);
}

/* Read t from both plans and compare bitwise; returns true if equal. */
static bool same_bits(loom_plan *a, loom_plan *b, const loom_tensor *t, const char *what) {
    size_t bytes = (size_t)loom_tensor_numel(t) * loom_dtype_size(loom_tensor_dtype(t));
    void *x = malloc(bytes), *y = malloc(bytes);
    bool ok = x && y;
    if (ok) {
        CHECK_OK(ctx, loom_plan_read(a, t, x, bytes));
        CHECK_OK(ctx, loom_plan_read(b, t, y, bytes));
        ok = memcmp(x, y, bytes) == 0;
    }
    CHECK(ok, "%s: '%s' differs between the reusing and the no_reuse plan", what, loom_tensor_name(t));
    free(x), free(y);
    return ok;
}

static void fill_input(loom_plan *p, const loom_tensor *t, uint32_t salt) {
    size_t n = (size_t)loom_tensor_numel(t);
    double *v = malloc(n * sizeof *v);
    if (!v) return;
    for (size_t i = 0; i < n; i++) v[i] = loom_philox_uniform(7, salt, i) * 2 - 1;
    CHECK_OK(ctx, loom_plan_write_f64(p, t, v, n));
    free(v);
}

/* ---- a long elementwise chain ---- */
static void test_chain(void) {
    loom_graph *g = graph(11);
    loom_tensor *x = loom_input(g, "x", LOOM_F32, D(256, 256));
    loom_tensor *w = loom_param(g, "w", LOOM_F32, D(256, 256), &(loom_init){LOOM_INIT_UNIFORM, -0.1, 0.1});
    loom_tensor *h = x, *mid = NULL;
    for (int i = 0; i < 20; i++) {
        h = i % 2 == 0 ? loom_scale(g, h, 0.9 + 0.01 * i) : loom_add(g, h, w);
        if (i == 9) mid = h;
    }
    loom_keep(h);
    CHECK(loom_graph_status(g) == LOOM_OK, "chain: %s", loom_last_error(ctx));
    loom_plan *pr = compile(g, false), *pn = compile(g, true);
    if (!pr || !pn) goto done;
    print_mem("chain of 20 (reuse):", pr, loom_graph_node_count(g));
    print_mem("chain of 20 (no_reuse):", pn, loom_graph_node_count(g));
    loom_plan_memory mr, mn;
    loom_plan_memory_stats(pr, &mr);
    loom_plan_memory_stats(pn, &mn);
    CHECK(mr.arena_bytes <= mr.naive_bytes / 4, "chain: peak %zu not <= naive %zu / 4", mr.arena_bytes, mr.naive_bytes);
    CHECK(mr.inplace_count > 0, "chain: no node ran in place");
    CHECK(mr.naive_bytes >= 19 * 256 * 256 * 4, "chain: naive %zu is below 19 tensors", mr.naive_bytes);
    CHECK(mn.inplace_count == 0 && mn.arena_bytes == mn.naive_bytes, "no_reuse: in-place %d, arena %zu, naive %zu",
          mn.inplace_count, mn.arena_bytes, mn.naive_bytes);
    CHECK(mr.nodes_run == 20 && mn.nodes_run == 20, "chain: nodes run %d / %d, expected 20", mr.nodes_run,
          mn.nodes_run);
    fill_input(pr, x, 1);
    fill_input(pn, x, 1);
    CHECK_OK(ctx, loom_plan_run(pr));
    CHECK_OK(ctx, loom_plan_run(pn));
    same_bits(pr, pn, h, "chain");
    /* against a host computation of the same f32 steps */
    {
        enum { N = 256 * 256 };
        float *xv = malloc(N * sizeof *xv), *wv = malloc(N * sizeof *wv), *yv = malloc(N * sizeof *yv);
        if (xv && wv && yv) {
            CHECK_OK(ctx, loom_plan_read(pr, x, xv, N * sizeof *xv));
            CHECK_OK(ctx, loom_plan_read(pr, w, wv, N * sizeof *wv));
            CHECK_OK(ctx, loom_plan_read(pr, h, yv, N * sizeof *yv));
            int bad = 0;
            for (int k = 0; k < N; k++) {
                float v = xv[k];
                for (int i = 0; i < 20; i++) v = i % 2 == 0 ? (float)(0.9 + 0.01 * i) * v : v + wv[k];
                bad += v != yv[k];
            }
            CHECK(bad == 0, "chain: %d of %d values differ from the host computation", bad, N);
        }
        free(xv), free(wv), free(yv);
    }
    /* a second run on the same input gives the same bits (no input was overwritten in place) */
    {
        size_t bytes = 256 * 256 * 4;
        float *r1 = malloc(bytes), *r2 = malloc(bytes);
        if (r1 && r2) {
            CHECK_OK(ctx, loom_plan_read(pr, h, r1, bytes));
            CHECK_OK(ctx, loom_plan_run(pr));
            CHECK_OK(ctx, loom_plan_read(pr, h, r2, bytes));
            CHECK(memcmp(r1, r2, bytes) == 0, "chain: a second run gives other values");
        }
        free(r1), free(r2);
    }
    /* the mid-chain tensor was not kept: not readable */
    float tmp[1];
    CHECK(loom_plan_read_f32(pr, mid, tmp, 1) != LOOM_OK, "a non-kept mid-chain tensor is readable");
done:
    loom_plan_destroy(pr);
    loom_plan_destroy(pn);
    loom_graph_destroy(g);
}

/* ---- the same chain with a kept intermediate in the middle ---- */
static void test_kept_intermediate(void) {
    loom_graph *g = graph(12);
    loom_tensor *x = loom_input(g, "x", LOOM_F32, D(64, 100));
    loom_tensor *h = x, *kept[3] = {0};
    for (int i = 0; i < 12; i++) {
        h = i % 3 == 2 ? loom_mul(g, h, h) : loom_scale(g, h, 1.5);
        if (i == 3) kept[0] = h;
        if (i == 4) kept[1] = h; /* kept and then immediately the source of an in-place op */
    }
    kept[2] = h;
    for (int i = 0; i < 3; i++) loom_keep(kept[i]);
    loom_plan *pr = compile(g, false), *pn = compile(g, true);
    if (pr && pn) {
        print_mem("kept intermediates (reuse):", pr, loom_graph_node_count(g));
        fill_input(pr, x, 2);
        fill_input(pn, x, 2);
        CHECK_OK(ctx, loom_plan_run(pr));
        CHECK_OK(ctx, loom_plan_run(pn));
        for (int i = 0; i < 3; i++) same_bits(pr, pn, kept[i], "kept intermediate");
        /* kept[0] = 1.5 ((1.5 (1.5 x))^2): one value against the host */
        float xv, k0, all_x[6400], all_k[6400];
        CHECK_OK(ctx, loom_plan_read(pr, x, all_x, sizeof all_x));
        CHECK_OK(ctx, loom_plan_read(pr, kept[0], all_k, sizeof all_k));
        xv = all_x[17];
        float v = 1.5f * xv;
        v = 1.5f * v;
        v = v * v;
        v = 1.5f * v;
        k0 = all_k[17];
        CHECK(k0 == v, "kept[0][17] = %g, host %g", k0, v);
    }
    loom_plan_destroy(pr);
    loom_plan_destroy(pn);
    loom_graph_destroy(g);
}

/* ---- diamonds: a is read by two branches that join later ---- */
static void test_diamond(void) {
    for (int variant = 0; variant < 4; variant++) {
        loom_graph *g = graph(13);
        loom_tensor *x = loom_input(g, "x", LOOM_F32, D(128, 130));
        loom_tensor *w = loom_param(g, "w", LOOM_F32, D(130), &(loom_init){LOOM_INIT_UNIFORM, 0.5, 1.5});
        loom_tensor *a = loom_scale(g, x, 2.0); /* an intermediate both branches read */
        loom_tensor *b1, *b2;
        if (variant == 0) { /* each branch one in-place-able op */
            b1 = loom_scale(g, a, 3.0);
            b2 = loom_scale(g, a, 5.0);
        } else if (variant == 1) { /* longer branches, a read first by a broadcasting op */
            b1 = loom_add(g, a, w);
            b1 = loom_scale(g, b1, 0.5);
            b1 = loom_mul(g, b1, b1);
            b2 = loom_sub(g, a, w);
            b2 = loom_div(g, b2, w);
        } else if (variant == 2) { /* a is src[1] in one branch and src[0] in the other */
            b1 = loom_sub(g, loom_scale(g, x, -1.0), a);
            b2 = loom_mul(g, a, a);
        } else { /* a read again after the join */
            b1 = loom_scale(g, a, 3.0);
            b2 = loom_add(g, a, b1);
        }
        loom_tensor *c = loom_add(g, b1, b2);
        if (variant == 3) c = loom_sub(g, c, a);
        loom_keep(c);
        loom_plan *pr = compile(g, false), *pn = compile(g, true);
        if (pr && pn) {
            char what[48];
            snprintf(what, sizeof what, "diamond %d (reuse):", variant);
            print_mem(what, pr, loom_graph_node_count(g));
            fill_input(pr, x, 3);
            fill_input(pn, x, 3);
            CHECK_OK(ctx, loom_plan_run(pr));
            CHECK_OK(ctx, loom_plan_run(pn));
            same_bits(pr, pn, c, what);
            if (variant == 0) { /* c = 6a + 10a with a = 2x */
                float xs[128 * 130], cs[128 * 130];
                CHECK_OK(ctx, loom_plan_read(pr, x, xs, sizeof xs));
                CHECK_OK(ctx, loom_plan_read(pr, c, cs, sizeof cs));
                int bad = 0;
                for (int i = 0; i < 128 * 130; i++) {
                    float av = 2.0f * xs[i];
                    bad += cs[i] != 3.0f * av + 5.0f * av;
                }
                CHECK(bad == 0, "diamond 0: %d values differ from 3a + 5a", bad);
            }
        }
        loom_plan_destroy(pr);
        loom_plan_destroy(pn);
        loom_graph_destroy(g);
    }
}

/* ---- dead-node removal ---- */
static void test_unused_branch(void) {
    loom_graph *g = graph(14);
    loom_tensor *x = loom_input(g, "x", LOOM_F32, D(32, 32));
    loom_tensor *y = loom_scale(g, loom_add(g, x, x), 0.25);
    loom_tensor *dead = loom_mul(g, x, y); /* a branch nobody reads */
    dead = loom_scale(g, dead, 3.0);
    dead = loom_sub(g, dead, x);
    const float cz[32] = {0};
    loom_tensor *c = loom_constant(g, "unused_const", LOOM_F32, D(32), cz);
    loom_tensor *dead2 = loom_add(g, x, c);
    (void)dead2;
    loom_tensor *z = loom_div(g, y, loom_fill(g, LOOM_F32, D(32), 4.0));
    loom_keep(z);
    int ops = loom_graph_node_count(g) - 2; /* less the input and the constant */
    loom_plan *p = compile(g, false);
    if (p) {
        loom_plan_memory m;
        loom_plan_memory_stats(p, &m);
        print_mem("unused branch:", p, loom_graph_node_count(g));
        CHECK(m.nodes_run == 4, "nodes run %d, expected 4 (add, scale, fill, div) of %d ops", m.nodes_run, ops);
        CHECK(m.nodes_run < ops, "nodes run %d not below the %d ops", m.nodes_run, ops);
        fill_input(p, x, 4);
        CHECK_OK(ctx, loom_plan_run(p));
        float xs[32 * 32], zs[32 * 32];
        CHECK_OK(ctx, loom_plan_read(p, x, xs, sizeof xs));
        CHECK_OK(ctx, loom_plan_read(p, z, zs, sizeof zs));
        int bad = 0;
        for (int i = 0; i < 32 * 32; i++) bad += zs[i] != (xs[i] + xs[i]) * 0.25f / 4.0f;
        CHECK(bad == 0, "unused branch: %d values wrong", bad);
        loom_status st = loom_plan_read(p, dead, zs, sizeof zs);
        CHECK(st == LOOM_ERR_INVALID_ARG, "reading a removed node: %s", loom_status_str(st));
    }
    loom_plan_destroy(p);
    loom_graph_destroy(g);
}

/* batch norm is an effect only when it updates running statistics: an unused
 * training BN with running stats still runs (it writes them); unused eval-mode
 * and stat-less BNs are removed like any dead node */
static void test_batch_norm_effects(void) {
    for (int k = 0; k < 3; k++) {
        loom_graph *g = graph(15);
        loom_tensor *x = loom_input(g, "x", LOOM_F32, D(4, 3, 5));
        loom_init one = {LOOM_INIT_ONES, 0, 0};
        loom_tensor *rm = loom_state(g, "rm", LOOM_F32, D(3), NULL), *rv = loom_state(g, "rv", LOOM_F32, D(3), &one);
        bool train = k != 1, stats = k != 2;
        loom_tensor *bn = loom_batch_norm(g, x,
                                          &(loom_batch_norm_desc){.running_mean = stats ? rm : NULL,
                                                                  .running_var = stats ? rv : NULL, .eval = !train});
        (void)bn;
        loom_keep(loom_scale(g, x, 2.0));
        loom_plan *p = compile(g, false);
        if (p) {
            loom_plan_memory m;
            loom_plan_memory_stats(p, &m);
            int want = k == 0 ? 2 : 1;
            CHECK(m.nodes_run == want, "unused batch_norm (%s, %s running stats): %d nodes run, expected %d",
                  train ? "train" : "eval", stats ? "with" : "without", m.nodes_run, want);
        }
        loom_plan_destroy(p);
        loom_graph_destroy(g);
    }
}

/* ---- random DAGs ----
 * Each graph is built twice from the same seed: as is (with a few kept
 * tensors), and with every node kept, which puts every node in its own
 * persistent buffer: an oracle that does not depend on the planner at all. */
static uint64_t rng_state;
static bool have_reshape; /* loom_reshape builds and runs on the CPU */
static uint32_t rnd(uint32_t n) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33) % n;
}

typedef struct rgraph {
    loom_graph *g;
    loom_tensor *inputs[2];
    loom_tensor *pool[80];
    int n;
    int kept[64]; /* pool indices */
    int nkept;
} rgraph;

static loom_tensor *mark(loom_tensor *t, bool keep_all) {
    if (keep_all) loom_keep(t);
    return t;
}

/* Nodes are f32 (or f16 after a cast) of shape (12, 20), (20) or (12, 1) and
 * ops are drawn at random from the elementwise ones (and reshape). */
static void build_random(rgraph *r, uint64_t seed, bool keep_all) {
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
    loom_graph *g = r->g = graph(seed);
    loom_tensor **pool = r->pool;
    int n = 0;
    pool[n++] = r->inputs[0] = loom_input(g, "x", LOOM_F32, D(12, 20));
    pool[n++] = r->inputs[1] = loom_input(g, "v", LOOM_F32, D(20));
    pool[n++] = loom_param(g, "w", LOOM_F32, D(12, 20), &(loom_init){LOOM_INIT_UNIFORM, 0.5, 1.5});
    pool[n++] = loom_param(g, "u", LOOM_F32, D(12, 1), &(loom_init){LOOM_INIT_UNIFORM, 0.5, 1.5});
    int nops = 10 + (int)rnd(40);
    for (int i = 0; i < nops && n < 80; i++) {
        /* prefer recent nodes, so chains (in-place candidates) are common */
        loom_tensor *a = pool[n - 1 - (int)rnd(rnd(2) ? 3 : (uint32_t)n)];
        loom_tensor *b = pool[n - 1 - (int)rnd((uint32_t)n)];
        loom_tensor *y = NULL;
        if (loom_tensor_dtype(a) != loom_tensor_dtype(b)) b = mark(loom_cast(g, b, loom_tensor_dtype(a)), keep_all);
        loom_dtype bt = loom_tensor_dtype(b);
        switch (rnd(have_reshape ? 8 : 7)) {
        case 0: y = loom_add(g, a, b); break;
        case 1: y = loom_sub(g, a, b); break;
        case 2: y = loom_mul(g, a, mark(loom_scale(g, b, 0.5), keep_all)); break;
        case 3: {
            loom_tensor *bb = mark(loom_mul(g, b, b), keep_all), *one = mark(loom_fill(g, bt, D(1), 1.0), keep_all);
            y = loom_div(g, a, mark(loom_add(g, bb, one), keep_all));
            break;
        }
        case 4: y = loom_scale(g, a, rnd(2) ? -0.75 : 1.25); break;
        case 5: y = loom_cast(g, a, loom_tensor_dtype(a) == LOOM_F32 ? LOOM_F16 : LOOM_F32); break;
        case 6: y = loom_expand(g, a, D(12, 20)); break;
        default: { /* a view of a view: (d0, d1) -> (1, d0 * d1) -> (d0, d1) */
            int nd = loom_tensor_ndim(a);
            int64_t d[2] = {loom_tensor_dim(a, 0), nd > 1 ? loom_tensor_dim(a, 1) : 1};
            loom_tensor *flat = mark(loom_reshape(g, a, 2, (const int64_t[]){1, d[0] * d[1]}), keep_all);
            y = loom_reshape(g, flat, nd, d);
            break;
        }
        }
        if (!y) break;
        pool[n++] = mark(y, keep_all);
        if (rnd(6) == 0 && r->nkept < 63) {
            loom_keep(y);
            r->kept[r->nkept++] = n - 1;
        }
    }
    loom_keep(pool[n - 1]);
    r->kept[r->nkept++] = n - 1;
    r->n = n;
}

static bool read_bits(loom_plan *p, const loom_tensor *t, void *buf, size_t bytes) {
    return loom_plan_read(p, t, buf, bytes) == LOOM_OK;
}

/* Whether reshape (a view op) is available yet: then the random graphs use it. */
static bool probe_reshape(void) {
    loom_graph *g = graph(1);
    loom_tensor *x = loom_input(g, "x", LOOM_F32, D(2, 3));
    loom_tensor *y = loom_scale(g, loom_reshape(g, loom_scale(g, x, 2.0), 1, (const int64_t[]){6}), 1.0);
    loom_plan *p = NULL;
    bool ok = y && (loom_keep(y), loom_plan_compile(g, be, NULL, &p)) == LOOM_OK && loom_plan_run(p) == LOOM_OK;
    if (!ok) printf("note: random DAGs without views: reshape is not available (%s)\n", loom_last_error(ctx));
    loom_plan_destroy(p);
    loom_graph_destroy(g);
    return ok;
}

static void test_random_dags(void) {
    have_reshape = probe_reshape();
    int graphs = 0, compared = 0, failures = 0;
    size_t sum_arena = 0, sum_naive = 0;
    int sum_inplace = 0;
    for (int t = 0; t < 150; t++) {
        rgraph r = {0}, o = {0};
        build_random(&r, (uint64_t)t, false);
        build_random(&o, (uint64_t)t, true);
        CHECK(loom_graph_status(r.g) == LOOM_OK && loom_graph_status(o.g) == LOOM_OK && r.n == o.n,
              "random graph %d: %s", t, loom_last_error(ctx));
        loom_plan *pr = NULL, *pn = NULL, *po = NULL;
        if (loom_graph_status(r.g) == LOOM_OK && loom_graph_status(o.g) == LOOM_OK) {
            pr = compile(r.g, false), pn = compile(r.g, true), po = compile(o.g, false);
        }
        if (pr && pn && po) {
            loom_plan *ps[3] = {pr, pn, po};
            const rgraph *gs[3] = {&r, &r, &o};
            for (int k = 0; k < 3; k++) {
                for (int i = 0; i < 2; i++) fill_input(ps[k], gs[k]->inputs[i], 10u + (uint32_t)i);
                CHECK_OK(ctx, loom_plan_run(ps[k]));
            }
            int bad = 0;
            for (int k = 0; k < r.nkept; k++) {
                const loom_tensor *a = r.pool[r.kept[k]], *b = o.pool[r.kept[k]];
                size_t bytes = (size_t)loom_tensor_numel(a) * loom_dtype_size(loom_tensor_dtype(a));
                unsigned char x[12 * 20 * 4], y[12 * 20 * 4], z[12 * 20 * 4];
                bool ok = read_bits(pr, a, x, bytes) && read_bits(pn, a, y, bytes) && read_bits(po, b, z, bytes);
                if (!ok || memcmp(x, z, bytes) != 0 || memcmp(y, z, bytes) != 0) bad++;
            }
            CHECK(bad == 0, "random DAG %d: %d of %d kept tensors differ from the all-kept oracle", t, bad, r.nkept);
            if (bad && failures++ < 3)
                printf("  random DAG %d (%d nodes) differs; rerun with this seed to inspect\n", t,
                       loom_graph_node_count(r.g));
            compared += r.nkept;
            loom_plan_memory m;
            loom_plan_memory_stats(pr, &m);
            sum_arena += m.arena_bytes, sum_naive += m.naive_bytes, sum_inplace += m.inplace_count;
            graphs++;
        }
        loom_plan_destroy(pr);
        loom_plan_destroy(pn);
        loom_plan_destroy(po);
        loom_graph_destroy(r.g);
        loom_graph_destroy(o.g);
    }
    printf("random DAGs: %d graphs, %d kept tensors compared bitwise (reuse, no_reuse, all-kept oracle), %d graphs "
           "differ; planned peak %zu bytes vs naive %zu bytes in total, %d in-place nodes\n",
           graphs, compared, failures, sum_arena, sum_naive, sum_inplace);
    CHECK(sum_inplace > 0 && sum_arena < sum_naive, "random DAGs: no reuse at all");
}

int main(void) {
    if (!tu_cpu_open(1, &ctx, &be)) {
        CHECK(0, "cannot open the cpu backend");
        return tu_summary();
    }
    test_chain();
    test_kept_intermediate();
    test_diamond();
    test_unused_branch();
    test_batch_norm_effects();
    test_random_dags();
    tu_cpu_close(ctx, be);
    return tu_summary();
}
