/* tests/test-rng.c — the Philox4x32-10 generator (core/rng.c) and parameter
 * initialisation (core/init.c, through loom_param and a CPU plan).
 *
 * - the published Random123 known-answer vectors
 * - the (seed, stream, counter) layout, uniform and normal maps: range,
 *   moments, determinism, stream and seed independence
 * - every init kind: bounds and standard deviations against theory, and
 *   bitwise reproducibility across graphs, creation orders and dtypes
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/loom.h"
#include "testutil.h"

/* ---- known answers ----
 * Random123 tests/kat_vectors, rows "philox4x32 10" (counter[4] key[2] ->
 * output[4]). Taken from DEShawResearch/Random123-Boost,
 * libs/random/test/test_philox.cpp @ 916db91ae4c6fd8324ef054a518851321ab41f91
 * ("cut-and-pasted from the kat_vectors file in the original Random123
 * distribution"); the same three rows appear in copies of tests/kat_vectors
 * from the random123 1.14.0 distribution. */
static const uint32_t kat[3][10] = {
    {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, /* -> */ 0x6627e8d5, 0xe169c58d,
     0xbc57ac4c, 0x9b00dbd8},
    {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, /* -> */ 0x408f276d, 0x41c83b0e,
     0xa20bc7c6, 0x6d5451fd},
    {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, /* -> */ 0xd16cfe09, 0x94fdcceb,
     0x5001e420, 0x24126ea1},
};

static void test_kat(void) {
    for (int i = 0; i < 3; i++) {
        uint32_t out[4];
        loom_philox4x32_10(kat[i], kat[i] + 4, out);
        CHECK(memcmp(out, kat[i] + 6, sizeof out) == 0, "KAT %d: got %08x %08x %08x %08x, expected %08x %08x %08x %08x",
              i, (unsigned)out[0], (unsigned)out[1], (unsigned)out[2], (unsigned)out[3], (unsigned)kat[i][6],
              (unsigned)kat[i][7], (unsigned)kat[i][8], (unsigned)kat[i][9]);
    }
    /* the documented layout: key = seed (lo, hi), counter = (counter lo, hi, stream lo, hi) */
    uint32_t a[4], b[4];
    loom_philox(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull, a);
    CHECK(memcmp(a, kat[2] + 6, sizeof a) == 0, "loom_philox(seed, stream, counter) layout does not match KAT 3");
    loom_philox(0, 0, 0, b);
    CHECK(memcmp(b, kat[0] + 6, sizeof b) == 0, "loom_philox(0, 0, 0) is not KAT 1");
    printf("philox4x32-10: 3 published known answers checked\n");
}

/* ---- uniform and normal maps ---- */
static void test_uniform(void) {
    const uint64_t seed = 1234, stream = 77, n = 1000000;
    double sum = 0, sum2 = 0;
    float lo = 1, hi = 0;
    int out_of_range = 0, layout_bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        float u = loom_philox_uniform(seed, stream, i);
        if (!(u >= 0.0f && u < 1.0f)) out_of_range++;
        if (u < lo) lo = u;
        if (u > hi) hi = u;
        sum += u, sum2 += (double)u * u;
        if (i < 4096) {
            uint32_t w[4];
            loom_philox(seed, stream, i / 4, w);
            if (u != loom_u32_to_unit(w[i % 4])) layout_bad++;
        }
    }
    double mean = sum / (double)n, var = sum2 / (double)n - mean * mean;
    printf("uniform: %llu samples, mean %.5f (0.5), var %.5f (%.5f), min %.2e, max 1-%.2e\n", (unsigned long long)n,
           mean, var, 1.0 / 12, lo, 1.0 - hi);
    CHECK(out_of_range == 0, "%d uniforms outside [0, 1)", out_of_range);
    CHECK(fabs(mean - 0.5) < 2e-3, "uniform mean %.5f", mean); /* sigma of the mean: 2.9e-4 */
    CHECK(fabs(var - 1.0 / 12) < 1e-3, "uniform variance %.5f", var);
    CHECK(lo < 1e-4 && hi > 1 - 1e-4, "uniform does not cover [0, 1): min %g max %g", lo, hi);
    CHECK(layout_bad == 0, "%d uniforms are not word i%%4 of block i/4", layout_bad);
    /* the map's extremes */
    CHECK(loom_u32_to_unit(0) == 0.0f && loom_u32_to_unit(0xffffffffu) < 1.0f, "u32_to_unit(max) = %.9g",
          loom_u32_to_unit(0xffffffffu));
}

static void test_normal(void) {
    const uint64_t seed = 42, stream = 5, n = 1000000;
    double sum = 0, sum2 = 0, sum4 = 0;
    int nonfinite = 0, beyond4 = 0, layout_bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        double z = loom_philox_normal(seed, stream, i);
        if (!isfinite(z)) nonfinite++;
        if (fabs(z) > 4) beyond4++;
        sum += z, sum2 += z * z, sum4 += z * z * z * z;
        if (i < 4096) { /* Box-Muller over words (0,1) (even i) or (2,3) (odd i) of block i/2 */
            uint32_t w[4];
            loom_philox(seed, stream, i / 2, w);
            int k = (int)(i & 1) * 2;
            double u1 = ((double)(w[k] >> 8) + 1.0) / 16777216.0, u2 = (double)(w[k + 1] >> 8) / 16777216.0;
            double ref = sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
            if (fabs(z - ref) > 1e-12) layout_bad++;
        }
    }
    double mean = sum / (double)n, var = sum2 / (double)n - mean * mean, kurt = sum4 / (double)n / (var * var);
    printf("normal: %llu samples, mean %.5f (0), std %.5f (1), kurtosis %.3f (3), |z|>4: %d (~63)\n",
           (unsigned long long)n, mean, sqrt(var), kurt, beyond4);
    CHECK(nonfinite == 0, "%d normals are not finite", nonfinite);
    CHECK(fabs(mean) < 5e-3, "normal mean %.5f", mean); /* sigma of the mean: 1e-3 */
    CHECK(fabs(sqrt(var) - 1) < 5e-3, "normal std %.5f", sqrt(var));
    CHECK(fabs(kurt - 3) < 0.05, "normal kurtosis %.4f", kurt);
    CHECK(beyond4 > 20 && beyond4 < 130, "%d of 1e6 normals beyond 4 sigma (expected ~63)", beyond4);
    CHECK(layout_bad == 0, "%d normals differ from Box-Muller over the documented words", layout_bad);
}

static void test_determinism(void) {
    int same_repeat = 0, same_stream = 0, same_seed = 0, same_ctr_hi = 0;
    const int n = 10000;
    for (int i = 0; i < n; i++) {
        float u = loom_philox_uniform(7, 3, (uint64_t)i);
        same_repeat += u == loom_philox_uniform(7, 3, (uint64_t)i);
        same_stream += u == loom_philox_uniform(7, 4, (uint64_t)i);
        same_seed += u == loom_philox_uniform(8, 3, (uint64_t)i);
        same_ctr_hi += u == loom_philox_uniform(7, 3, (uint64_t)i + (1ull << 34)); /* counter high word matters */
    }
    /* two independent 24-bit uniforms agree with probability 2^-24 */
    CHECK(same_repeat == n, "same (seed, stream, i) gave a different value %d times", n - same_repeat);
    CHECK(same_stream <= 2, "streams 3 and 4 agree on %d of %d values", same_stream, n);
    CHECK(same_seed <= 2, "seeds 7 and 8 agree on %d of %d values", same_seed, n);
    CHECK(same_ctr_hi <= 2, "counters i and i + 2^34 agree on %d of %d values", same_ctr_hi, n);
    double z = loom_philox_normal(9, 1ull << 40, 12345);
    CHECK(z == loom_philox_normal(9, 1ull << 40, 12345), "normal is not a pure function");
    CHECK(z != loom_philox_normal(9, (1ull << 40) + 1, 12345), "normal ignores the stream's high bits");
    CHECK(loom_hash_name("w") != loom_hash_name("b") && loom_hash_name("fc1.weight") == loom_hash_name("fc1.weight"),
          "hash of names");
    CHECK(loom_hash_name("") == 0xcbf29ce484222325ull, "FNV-1a offset basis for \"\"");
    CHECK(loom_hash_name("a") == 0xaf63dc4c8601ec8cull, "FNV-1a 64 of \"a\" is %016llx",
          (unsigned long long)loom_hash_name("a"));
}

/* ---- parameter init through a plan ---- */
typedef struct env {
    loom_ctx *ctx;
    loom_backend *be;
} env;

static loom_graph *new_graph(env *e, uint64_t seed) {
    loom_graph *g = NULL;
    loom_graph_desc gd = {.seed = seed};
    loom_status st = loom_graph_create(e->ctx, &gd, &g);
    CHECK(st == LOOM_OK, "graph_create: %s", loom_last_error(e->ctx));
    return g;
}

static loom_plan *compile(env *e, loom_graph *g) {
    loom_plan *p = NULL;
    loom_status st = loom_plan_compile(g, e->be, NULL, &p);
    CHECK(st == LOOM_OK, "plan_compile: %s", loom_last_error(e->ctx));
    return p;
}

static double *read_all(env *e, loom_plan *p, const loom_tensor *t) {
    size_t n = (size_t)loom_tensor_numel(t);
    double *v = malloc(n * sizeof *v);
    if (!v) return NULL;
    loom_status st = loom_plan_read_f64(p, t, v, n);
    CHECK(st == LOOM_OK, "read '%s': %s", loom_tensor_name(t), loom_last_error(e->ctx));
    return v;
}

typedef struct stats {
    double mean, std, min, max;
} stats;

static stats moments(const double *v, size_t n) {
    stats s = {0, 0, INFINITY, -INFINITY};
    double sum = 0, sum2 = 0;
    for (size_t i = 0; i < n; i++) {
        sum += v[i], sum2 += v[i] * v[i];
        if (v[i] < s.min) s.min = v[i];
        if (v[i] > s.max) s.max = v[i];
    }
    s.mean = sum / (double)n;
    s.std = sqrt(sum2 / (double)n - s.mean * s.mean);
    return s;
}

static bool near_rel(double got, double want, double rel) { return fabs(got - want) <= rel * fabs(want); }

static void test_init(env *e) {
    loom_graph *g = new_graph(e, 2024);
    if (!g) return;
    const int64_t wd[2] = {256, 128}, cd[4] = {32, 16, 3, 3}, vd[1] = {1000};
    const loom_init ku = {LOOM_INIT_KAIMING_UNIFORM, 0, 0}, ku5 = {LOOM_INIT_KAIMING_UNIFORM, sqrt(5.0), 0},
                    kn = {LOOM_INIT_KAIMING_NORMAL, 0, 0}, xu = {LOOM_INIT_XAVIER_UNIFORM, 0, 0},
                    xn = {LOOM_INIT_XAVIER_NORMAL, 0, 0}, xn2 = {LOOM_INIT_XAVIER_NORMAL, 2.0, 0},
                    nm = {LOOM_INIT_NORMAL, 3.0, 0.5}, un = {LOOM_INIT_UNIFORM, -2.0, 5.0}, on = {LOOM_INIT_ONES, 0, 0},
                    ze = {LOOM_INIT_ZEROS, 0, 0}, cs = {LOOM_INIT_CONST, 2.5, 0};
    loom_tensor *t_ku = loom_param(g, "ku", LOOM_F32, 2, wd, &ku);
    loom_tensor *t_ku5 = loom_param(g, "ku5", LOOM_F32, 2, wd, &ku5);
    loom_tensor *t_kn = loom_param(g, "kn", LOOM_F32, 2, wd, &kn);
    loom_tensor *t_xu = loom_param(g, "xu", LOOM_F32, 2, wd, &xu);
    loom_tensor *t_xn = loom_param(g, "xn", LOOM_F32, 2, wd, &xn);
    loom_tensor *t_xn2 = loom_param(g, "xn2", LOOM_F32, 2, wd, &xn2);
    loom_tensor *t_conv = loom_param(g, "conv", LOOM_F32, 4, cd, &ku);
    loom_tensor *t_nm = loom_param(g, "nm", LOOM_F32, 2, wd, &nm);
    loom_tensor *t_un = loom_param(g, "un", LOOM_F32, 2, wd, &un);
    loom_tensor *t_on = loom_param(g, "on", LOOM_F32, 1, vd, &on);
    loom_tensor *t_ze = loom_param(g, "ze", LOOM_F32, 1, vd, &ze);
    loom_tensor *t_cs = loom_param(g, "cs", LOOM_F64, 1, vd, &cs);
    loom_tensor *t_def = loom_param(g, "default", LOOM_F32, 1, vd, NULL);
    loom_tensor *t_st = loom_state(g, "running_var", LOOM_F32, 1, vd, &on);
    CHECK(loom_graph_status(g) == LOOM_OK, "building params: %s", loom_last_error(e->ctx));
    loom_plan *p = compile(e, g);
    if (!p) {
        loom_graph_destroy(g);
        return;
    }
    const double fan_in = 128, fan_out = 256;
    struct {
        loom_tensor *t;
        const char *what;
        bool uniform;
        double bound, std, mean; /* bound 0: normal */
    } cases[] = {
        {t_ku, "kaiming_uniform", true, sqrt(6.0 / fan_in), sqrt(2.0 / fan_in), 0},
        {t_ku5, "kaiming_uniform a=sqrt(5) (torch Linear)", true, 1.0 / sqrt(fan_in), 1.0 / sqrt(3 * fan_in), 0},
        {t_kn, "kaiming_normal", false, 0, sqrt(2.0 / fan_in), 0},
        {t_xu, "xavier_uniform", true, sqrt(6.0 / (fan_in + fan_out)), sqrt(2.0 / (fan_in + fan_out)), 0},
        {t_xn, "xavier_normal", false, 0, sqrt(2.0 / (fan_in + fan_out)), 0},
        {t_xn2, "xavier_normal gain 2", false, 0, 2 * sqrt(2.0 / (fan_in + fan_out)), 0},
        {t_conv, "kaiming_uniform conv (32,16,3,3)", true, sqrt(6.0 / 144), sqrt(2.0 / 144), 0},
        {t_nm, "normal(3, 0.5)", false, 0, 0.5, 3.0},
        {t_un, "uniform(-2, 5)", true, 0, 7 / sqrt(12.0), 1.5},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        size_t cnt = (size_t)loom_tensor_numel(cases[c].t);
        double *v = read_all(e, p, cases[c].t);
        if (!v) continue;
        stats s = moments(v, cnt);
        printf("init %-40s n %6zu mean %+.5f std %.5f (theory %.5f) min %+.4f max %+.4f", cases[c].what, cnt, s.mean,
               s.std, cases[c].std, s.min, s.max);
        if (cases[c].bound) printf(" bound %.4f", cases[c].bound);
        printf("\n");
        CHECK(near_rel(s.std, cases[c].std, 0.02), "%s: std %.5f, theory %.5f", cases[c].what, s.std, cases[c].std);
        CHECK(fabs(s.mean - cases[c].mean) < 4 * cases[c].std / sqrt((double)cnt), "%s: mean %.5f, theory %.5f",
              cases[c].what, s.mean, cases[c].mean);
        if (cases[c].uniform && cases[c].bound) {
            double b = cases[c].bound;
            CHECK(s.min >= -b && s.max <= b, "%s: values outside +-%.5f: [%.5f, %.5f]", cases[c].what, b, s.min, s.max);
            CHECK(s.min < -0.99 * b && s.max > 0.99 * b, "%s: does not reach the bound %.5f: [%.5f, %.5f]",
                  cases[c].what, b, s.min, s.max);
        }
        if (cases[c].uniform && !cases[c].bound) {
            CHECK(s.min >= -2.0 && s.max < 5.0 && s.min < -1.99 && s.max > 4.99, "uniform(-2, 5) range [%.5f, %.5f]",
                  s.min, s.max);
        }
        free(v);
    }
    struct {
        loom_tensor *t;
        double value;
    } consts[] = {{t_on, 1.0}, {t_ze, 0.0}, {t_cs, 2.5}, {t_def, 0.0}, {t_st, 1.0}};
    for (size_t c = 0; c < sizeof consts / sizeof *consts; c++) {
        double *v = read_all(e, p, consts[c].t);
        if (!v) continue;
        int bad = 0;
        for (int i = 0; i < 1000; i++) bad += v[i] != consts[c].value || signbit(v[i]);
        CHECK(bad == 0, "'%s': %d of 1000 values differ from %g", loom_tensor_name(consts[c].t), bad, consts[c].value);
        free(v);
    }
    loom_plan_destroy(p);
    loom_graph_destroy(g);
}

/* Build params a, b, c (plus filler) in a given order and read a, b, c as f32 bits. */
static void init_bits(env *e, uint64_t seed, int order, loom_dtype dt, float *out /* 3 * 4096 */) {
    loom_graph *g = new_graph(e, seed);
    if (!g) return;
    const int64_t d[2] = {64, 64};
    const loom_init in[3] = {
        {LOOM_INIT_KAIMING_UNIFORM, 0, 0}, {LOOM_INIT_NORMAL, 0, 1}, {LOOM_INIT_XAVIER_NORMAL, 0, 0}};
    const char *names[3] = {"layer1.weight", "layer2.weight", "head.weight"};
    static const int orders[3][3] = {{0, 1, 2}, {2, 0, 1}, {1, 2, 0}};
    loom_tensor *t[3] = {0};
    for (int k = 0; k < 3; k++) {
        int i = orders[order][k];
        if (order == 1) { /* unrelated tensors created in between */
            char nm[32];
            snprintf(nm, sizeof nm, "filler%d", k);
            loom_param(g, nm, dt, 2, d, &in[k]);
            loom_input(g, nm + 1, dt, 2, d);
        }
        t[i] = loom_param(g, names[i], dt, 2, d, &in[i]);
    }
    CHECK(loom_graph_status(g) == LOOM_OK, "building params: %s", loom_last_error(e->ctx));
    loom_plan *p = compile(e, g);
    for (int i = 0; p && i < 3; i++) {
        loom_status st = loom_plan_read_f32(p, t[i], out + i * 4096, 4096);
        CHECK(st == LOOM_OK, "read_f32: %s", loom_last_error(e->ctx));
    }
    loom_plan_destroy(p);
    loom_graph_destroy(g);
}

static void test_init_reproducible(env *e) {
    enum { N = 3 * 4096 };
    float *a = calloc(N, sizeof *a), *b = calloc(N, sizeof *b), *c = calloc(N, sizeof *c), *d = calloc(N, sizeof *d),
          *f = calloc(N, sizeof *f), *h = calloc(N, sizeof *h);
    if (!a || !b || !c || !d || !f || !h) {
        CHECK(0, "out of memory");
        goto done;
    }
    init_bits(e, 99, 0, LOOM_F32, a);
    init_bits(e, 99, 0, LOOM_F32, b);
    CHECK(memcmp(a, b, N * sizeof *a) == 0, "same seed, same graph: f32 weights differ");
    init_bits(e, 99, 1, LOOM_F32, c);
    CHECK(memcmp(a, c, N * sizeof *a) == 0, "same seed, other creation order (with fillers): f32 weights differ");
    init_bits(e, 99, 2, LOOM_F32, c);
    CHECK(memcmp(a, c, N * sizeof *a) == 0, "same seed, other creation order: f32 weights differ");
    init_bits(e, 100, 0, LOOM_F32, d);
    int same = 0;
    for (int i = 0; i < N; i++) same += a[i] == d[i];
    CHECK(same < 10, "seeds 99 and 100 agree on %d of %d weights", same, N);
    same = 0;
    for (int i = 0; i < 4096; i++) same += a[i] == a[4096 + i];
    CHECK(same < 10, "two differently named params agree on %d of 4096 weights", same);
    /* other dtypes hold the same values, rounded: f64 -> f32 and f64 -> f16 */
    init_bits(e, 99, 0, LOOM_F64, f);
    CHECK(memcmp(a, f, N * sizeof *a) == 0, "f64 params read as f32 differ from f32 params");
    init_bits(e, 99, 0, LOOM_F16, h);
    int bad16 = 0;
    for (int i = 0; i < N; i++) bad16 += h[i] != loom_f16_to_f32(loom_f32_to_f16(a[i]));
    CHECK(bad16 == 0, "f16 params are not the f32 values rounded to f16 (%d of %d differ)", bad16, N);
    printf("init reproducibility: 2 graphs, 3 creation orders, 2 seeds, f32/f64/f16 compared\n");
done:
    free(a), free(b), free(c), free(d), free(f), free(h);
}

int main(void) {
    test_kat();
    test_uniform();
    test_normal();
    test_determinism();

    env e = {0};
    bool ok = tu_cpu_open(1, &e.ctx, &e.be);
    CHECK(ok, "cpu backend");
    if (ok) {
        test_init(&e);
        test_init_reproducible(&e);
        tu_cpu_close(e.ctx, e.be);
    }
    return tu_summary();
}
