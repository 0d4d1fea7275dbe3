/* tests/test-vulkan.c — what the op-check cannot see on the Vulkan backend:
 * conversions bit for bit against core/dtype.c (f32 -> f16 / bf16 on ~1M f32
 * patterns around every rounding boundary, f16 / bf16 -> f32 on every 16-bit
 * pattern, i32 / u8 casts with saturation), the same through the staging
 * path (LOOM_VULKAN_STAGING=1), repeated runs, op profiling, and f64 reported
 * unsupported at compile. Skipped (77) without a Vulkan device. Run with
 * LOOM_VULKAN_VALIDATION=1 (ctest does): any validation message fails. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "impl.h"
#include "testutil.h"

/* y = cast(x, to) on be; x given as raw bytes; y read back raw */
static loom_status run_cast(loom_ctx *ctx, loom_backend *be, loom_dtype from, loom_dtype to, int64_t n,
                            const void *x, void *y, int runs) {
    loom_graph *g;
    loom_graph_create(ctx, NULL, &g);
    loom_tensor *xt = loom_input(g, "x", from, 1, &n);
    loom_tensor *yt = loom_cast(g, xt, to);
    loom_keep(yt);
    loom_plan *p = NULL;
    loom_status st = loom_plan_compile(g, be, NULL, &p);
    if (st == LOOM_OK) st = loom_plan_write(p, xt, x, (size_t)n * loom_dtype_size(from));
    for (int r = 0; r < runs && st == LOOM_OK; r++) st = loom_plan_run(p);
    if (st == LOOM_OK) st = loom_plan_read(p, yt, y, (size_t)n * loom_dtype_size(to));
    loom_plan_destroy(p);
    loom_graph_destroy(g);
    return st;
}

static uint32_t rng_state = 12345;
static uint32_t rnd(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state ^ (rng_state >> 13);
}

/* f32 -> f16 and f32 -> bf16: every high half with low halves at and around
 * the rounding points of both formats */
static void test_round(loom_ctx *ctx, loom_backend *be, const char *tag) {
    static const uint32_t lows[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x2fff, 0x3000, 0x3001,
                                    0x5000, 0x7000, 0x7fff, 0x8000, 0x8001, 0xb000, 0xf000, 0xffff};
    int nl = (int)(sizeof lows / sizeof lows[0]) + 1;
    int64_t n = (int64_t)65536 * nl;
    uint32_t *x = malloc((size_t)n * 4);
    uint16_t *y = malloc((size_t)n * 2);
    for (int64_t h = 0; h < 65536; h++)
        for (int k = 0; k < nl; k++) x[h * nl + k] = (uint32_t)h << 16 | (k < nl - 1 ? lows[k] : (rnd() & 0xffff));
    for (int d = 0; d < 2; d++) {
        loom_dtype to = d ? LOOM_BF16 : LOOM_F16;
        CHECK_OK(ctx, run_cast(ctx, be, LOOM_F32, to, n, x, y, 1));
        int64_t bad = 0, first = 0;
        uint16_t first_want = 0;
        for (int64_t i = 0; i < n; i++) {
            float f;
            memcpy(&f, &x[i], 4);
            uint16_t want = d ? loom_f32_to_bf16(f) : loom_f32_to_f16(f);
            if (y[i] != want && bad++ == 0) first = i, first_want = want;
        }
        CHECK(bad == 0, "[%s] f32 -> %s: %lld of %lld differ from core/dtype.c; first: 0x%08x -> 0x%04x, want 0x%04x", tag,
              loom_dtype_name(to), (long long)bad, (long long)n, x[first], y[first], first_want);
    }
    free(x), free(y);
}

/* f16 / bf16 -> f32: every pattern */
static void test_widen(loom_ctx *ctx, loom_backend *be, const char *tag) {
    uint16_t *x = malloc(65536 * 2);
    uint32_t *y = malloc(65536 * 4);
    for (int i = 0; i < 65536; i++) x[i] = (uint16_t)i;
    for (int d = 0; d < 2; d++) {
        loom_dtype from = d ? LOOM_BF16 : LOOM_F16;
        CHECK_OK(ctx, run_cast(ctx, be, from, LOOM_F32, 65536, x, y, 1));
        int bad = 0, first = 0;
        for (int i = 0; i < 65536; i++) {
            float f = d ? loom_bf16_to_f32(x[i]) : loom_f16_to_f32(x[i]);
            uint32_t want;
            memcpy(&want, &f, 4);
            if (y[i] != want && bad++ == 0) first = i;
        }
        CHECK(bad == 0, "[%s] %s -> f32: %d of 65536 patterns differ; first 0x%04x -> 0x%08x", tag,
              loom_dtype_name(from), bad, first, y[first]);
    }
    free(x), free(y);
}

/* integer casts against loom_convert (saturation, truncation, NaN -> 0) */
static void test_int(loom_ctx *ctx, loom_backend *be, const char *tag) {
    static const float fv[] = {0.0f, -0.0f, 0.4f, 0.6f, -0.6f, 1.5f, -1.5f, 254.9f, 255.0f, 255.5f, 256.0f, 1e10f,
                               -1e10f, 2147483520.0f, -2147483648.0f, 3e9f, INFINITY, -INFINITY, NAN, 77.7f};
    static const int32_t iv[] = {0, 1, -1, 127, 128, 255, 256, -256, 1000, 16777217, 2147483647, -2147483647 - 1,
                                 33554435, -33554435, 70000, 65519, 65520, 300, -300, 42};
    static const uint8_t uv[] = {0, 1, 2, 100, 127, 128, 200, 254, 255, 17, 0, 9, 33, 66, 99, 250, 251, 252, 253, 5};
    enum { N = 20 };
    const loom_dtype all[] = {LOOM_F32, LOOM_F16, LOOM_BF16, LOOM_I32, LOOM_U8};
    for (int s = 0; s < 5; s++)
        for (int d = 0; d < 5; d++) {
            loom_dtype from = all[s], to = all[d];
            if (from == to || (loom_dtype_is_float(from) && loom_dtype_is_float(to))) continue;
            unsigned char x[N * 4], y[N * 4], want[N * 4];
            float tmp[N];
            if (from == LOOM_I32) memcpy(x, iv, sizeof iv);
            else if (from == LOOM_U8) memcpy(x, uv, sizeof uv);
            else loom_convert(fv, LOOM_F32, x, from, N);
            /* the CPU: a 16-bit side goes through f32 */
            if (loom_dtype_size(from) == 2) {
                loom_convert(x, from, tmp, LOOM_F32, N);
                loom_convert(tmp, LOOM_F32, want, to, N);
            } else if (loom_dtype_size(to) == 2) {
                loom_convert(x, from, tmp, LOOM_F32, N);
                loom_convert(tmp, LOOM_F32, want, to, N);
            } else {
                loom_convert(x, from, want, to, N);
            }
            CHECK_OK(ctx, run_cast(ctx, be, from, to, N, x, y, 1));
            CHECK(!memcmp(y, want, (size_t)N * loom_dtype_size(to)), "[%s] cast %s -> %s differs from loom_convert", tag,
                  loom_dtype_name(from), loom_dtype_name(to));
        }
}

/* runs repeat, profiling times every node, f64 is unsupported at compile */
static void test_plan(loom_ctx *ctx, loom_backend *be) {
    loom_graph *g;
    loom_graph_create(ctx, NULL, &g);
    int64_t dims[2] = {300, 700};
    loom_tensor *a = loom_input(g, "a", LOOM_F32, 2, dims);
    loom_tensor *b = loom_input(g, "b", LOOM_F32, 1, dims + 1);
    /* a chain through the arena (in place and not) with a broadcast operand */
    loom_tensor *y = loom_scale(g, loom_mul(g, loom_add(g, a, b), loom_sub(g, a, b)), 0.5);
    loom_keep(y);
    loom_plan *p = NULL;
    CHECK_OK(ctx, loom_plan_compile(g, be, NULL, &p));
    if (p) {
        int64_t n = dims[0] * dims[1];
        double *av = malloc((size_t)n * 8), *bv = malloc((size_t)dims[1] * 8), *yv = malloc((size_t)n * 8);
        for (int64_t i = 0; i < n; i++) av[i] = (double)(i % 1000) / 250.0 - 2.0;
        for (int64_t i = 0; i < dims[1]; i++) bv[i] = (double)(i % 37) / 10.0 - 1.7;
        CHECK_OK(ctx, loom_plan_write_f64(p, a, av, (size_t)n));
        CHECK_OK(ctx, loom_plan_write_f64(p, b, bv, (size_t)dims[1]));
        CHECK_OK(ctx, loom_plan_set_profiling(p, true));
        for (int r = 0; r < 3; r++) CHECK_OK(ctx, loom_plan_run(p));
        CHECK_OK(ctx, loom_plan_read_f64(p, y, yv, (size_t)n));
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++) {
            float A = (float)av[i], B = (float)bv[i % dims[1]];
            float want = 0.5f * ((A + B) * (A - B));
            if ((float)yv[i] != want) bad++;
        }
        CHECK(bad == 0, "chain: %lld of %lld elements wrong", (long long)bad, (long long)n);
        loom_op_time t[8];
        int nt = loom_plan_profile(p, t, 8);
        CHECK(nt == 4, "profile: 4 ops timed, got %d", nt);
        for (int i = 0; i < nt; i++)
            CHECK(t[i].runs == 3 && t[i].seconds >= 0, "profile of %s: %lld runs, %g s", t[i].op, (long long)t[i].runs,
                  t[i].seconds);
        free(av), free(bv), free(yv);
    }
    loom_plan_destroy(p);
    loom_graph_destroy(g);

    loom_graph_create(ctx, NULL, &g);
    loom_tensor *x = loom_input(g, "x", LOOM_F64, 1, (int64_t[]){5});
    loom_keep(loom_add(g, x, x));
    p = NULL;
    loom_status st = loom_plan_compile(g, be, NULL, &p);
    CHECK(st == LOOM_ERR_UNSUPPORTED && !p && strstr(loom_last_error(ctx), "vulkan") &&
              strstr(loom_last_error(ctx), "add") && strstr(loom_last_error(ctx), "f64"),
          "f64 add: want unsupported naming backend, op, dtype; got %s: %s", loom_status_str(st), loom_last_error(ctx));
    loom_graph_destroy(g);
}

int main(void) {
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    const char *why = NULL;
    if (!loom_backend_available(ctx, "vulkan", &why)) {
        printf("vulkan: %s\n", why ? why : "not available");
        loom_ctx_destroy(ctx);
        return tu_skip("no Vulkan device");
    }
    for (int staged = 0; staged < 2; staged++) {
        const char *tag = staged ? "staging" : "default";
        if (staged) setenv("LOOM_VULKAN_STAGING", "1", 1);
        loom_backend *be;
        loom_status st = loom_backend_create(ctx, "vulkan", NULL, &be);
        CHECK(st == LOOM_OK, "[%s] create: %s", tag, loom_last_error(ctx));
        if (st != LOOM_OK) break;
        if (!staged) loom_backend_describe(be, stdout);
        test_round(ctx, be, tag);
        test_widen(ctx, be, tag);
        test_int(ctx, be, tag);
        test_plan(ctx, be);
        loom_backend_destroy(be);
    }
    unsetenv("LOOM_VULKAN_STAGING");
    loom_ctx_destroy(ctx);
    return tu_summary();
}
