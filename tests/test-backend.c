/* tests/test-backend.c — the backend interface contract: an op or dtype a
 * backend lacks is a compile-time LOOM_ERR_UNSUPPORTED naming op, dtype and
 * backend (never a silent fallback); the backend registry; thread-count
 * independence of CPU results; host memory (loom_backend_host_alloc). */
#include <math.h>
#include <string.h>

#include "backend_impl.h"
#include "testutil.h"

extern const loom__kernel loom__cpu_kernels[LOOM_OP_COUNT];
extern const loom__backend_vtbl loom__cpu_backend;

/* A backend that is the CPU backend except for its op table. */
static loom__kernel fake_kernels[LOOM_OP_COUNT];
static loom__backend_vtbl fake_vt;

static void test_unsupported(void) {
    loom_ctx *ctx;
    loom_ctx_create(NULL, &ctx);
    memcpy(fake_kernels, loom__cpu_kernels, sizeof fake_kernels);
    fake_kernels[LOOM_OP_RELU].dtypes = LOOM__DT(F32); /* relu: f32 only */
    fake_kernels[LOOM_OP_SOFTMAX].fn = NULL;          /* softmax: nothing */
    fake_vt = loom__cpu_backend;
    fake_vt.name = "fake";
    fake_vt.kernels = fake_kernels;
    loom_backend be = {.ctx = ctx, .vt = &fake_vt, .impl = NULL, .reproducible = false};
    CHECK_OK(ctx, fake_vt.create(&be, NULL));

    CHECK(loom_backend_supports(&be, LOOM_OP_RELU, LOOM_F32), "fake supports relu f32");
    CHECK(!loom_backend_supports(&be, LOOM_OP_RELU, LOOM_F16), "fake lacks relu f16");
    CHECK(!loom_backend_supports(&be, LOOM_OP_SOFTMAX, LOOM_F32), "fake lacks softmax");

    for (int k = 0; k < 2; k++) {
        loom_graph *g;
        loom_graph_create(ctx, NULL, &g);
        loom_dtype dt = k == 0 ? LOOM_F16 : LOOM_F32;
        loom_tensor *x = loom_input(g, "x", dt, 2, (int64_t[]){2, 3});
        loom_tensor *y = k == 0 ? loom_relu(g, x) : loom_softmax(g, x);
        loom_keep(y);
        loom_plan *p = NULL;
        loom_status st = loom_plan_compile(g, &be, NULL, &p);
        const char *msg = loom_last_error(ctx);
        CHECK(st == LOOM_ERR_UNSUPPORTED && !p, "compile on fake must fail unsupported, got %s", loom_status_str(st));
        CHECK(strstr(msg, "fake") && strstr(msg, k == 0 ? "relu" : "softmax") && strstr(msg, k == 0 ? "f16" : "f32"),
              "message names backend, op and dtype: '%s'", msg);
        loom_graph_destroy(g);
    }
    fake_vt.destroy(&be);
    loom_ctx_destroy(ctx);
}

static void test_registry(void) {
    loom_ctx *ctx;
    loom_ctx_create(NULL, &ctx);
    const char *names[8];
    int n = loom_backend_list(names, 8);
    bool cpu = false;
    for (int i = 0; i < n; i++) cpu |= !strcmp(names[i], "cpu");
    CHECK(cpu, "cpu is always built");
    const char *why = NULL;
    CHECK(loom_backend_available(ctx, "cpu", &why), "cpu is always available");
    CHECK(!loom_backend_available(ctx, "nosuch", &why) && why && *why, "unknown backend unavailable with a reason");
    loom_backend *be = NULL;
    CHECK(loom_backend_create(ctx, "nosuch", NULL, &be) == LOOM_ERR_UNSUPPORTED && !be, "unknown backend");
    CHECK(strstr(loom_last_error(ctx), "nosuch") && strstr(loom_last_error(ctx), "cpu"),
          "message names the request and the backends built: '%s'", loom_last_error(ctx));
    loom_ctx_destroy(ctx);
}

/* The same graph on 1 and 2 threads: elementwise and reduction kernels split
 * work by output element, so results are bitwise equal. */
static void test_threads(void) {
    float out[2][64];
    for (int t = 0; t < 2; t++) {
        loom_ctx *ctx;
        loom_backend *be;
        if (!tu_cpu_open(t + 1, &ctx, &be)) return;
        loom_graph *g;
        loom_graph_create(ctx, &(loom_graph_desc){.seed = 5}, &g);
        loom_init u = {LOOM_INIT_UNIFORM, -1, 1};
        loom_tensor *x = loom_param(g, "x", LOOM_F32, 2, (int64_t[]){64, 4096}, &u);
        loom_tensor *b = loom_param(g, "b", LOOM_F32, 1, (int64_t[]){4096}, &u);
        loom_tensor *y = loom_sum(g, loom_mul(g, loom_add(g, x, b), x), 2u, false);
        loom_keep(y);
        loom_plan *p;
        CHECK_OK(ctx, loom_plan_compile(g, be, NULL, &p));
        CHECK_OK(ctx, loom_plan_run(p));
        CHECK_OK(ctx, loom_plan_read(p, y, out[t], sizeof out[t]));
        loom_plan_destroy(p);
        loom_graph_destroy(g);
        tu_cpu_close(ctx, be);
    }
    CHECK(!memcmp(out[0], out[1], sizeof out[0]), "1 and 2 threads give bitwise equal results");
}

/* Leading axes summed, trailing ones kept (a bias gradient: x (R, K) -> K):
 * the CPU backend splits the columns into blocks, more of them as threads
 * are added, at every vector width; each column is still the double sum of
 * its rows in row order, rounded once, whatever the split. */
static void test_column_sums(void) {
    static const int64_t shapes[][2] = {{8192, 130}, {8192, 512}, {600, 40}, {3, 7}, {4096, 17}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t R = shapes[s][0], K = shapes[s][1];
        float *xv = malloc((size_t)(R * K) * sizeof *xv), *got = malloc((size_t)K * sizeof *got);
        for (int t = 1; t <= 3 && xv && got; t++) {
            loom_ctx *ctx;
            loom_backend *be;
            if (!tu_cpu_open(t, &ctx, &be)) break;
            loom_graph *g;
            loom_graph_create(ctx, &(loom_graph_desc){.seed = 11}, &g);
            loom_init u = {LOOM_INIT_UNIFORM, -3, 1};
            loom_tensor *x = loom_param(g, "x", LOOM_F32, 2, (int64_t[]){R, K}, &u);
            loom_tensor *y = loom_sum(g, x, 1u, false);
            loom_keep(x), loom_keep(y);
            loom_plan *p;
            CHECK_OK(ctx, loom_plan_compile(g, be, NULL, &p));
            CHECK_OK(ctx, loom_plan_run(p));
            CHECK_OK(ctx, loom_plan_read(p, x, xv, (size_t)(R * K) * sizeof *xv));
            CHECK_OK(ctx, loom_plan_read(p, y, got, (size_t)K * sizeof *got));
            int bad = 0;
            for (int64_t k = 0; k < K; k++) {
                double acc = 0;
                for (int64_t r = 0; r < R; r++) acc += (double)xv[r * K + k];
                bad += memcmp(&got[k], &(float){(float)acc}, sizeof(float)) != 0;
            }
            CHECK(!bad, "sum over rows of (%lld, %lld), %d thread(s): %d of %lld columns differ from the double sum "
                        "in row order", (long long)R, (long long)K, t, bad, (long long)K);
            loom_plan_destroy(p);
            loom_graph_destroy(g);
            tu_cpu_close(ctx, be);
        }
        free(xv), free(got);
    }
}

/* The CPU's 2x2 max-pool fast path (f32, branch-free) against the generic
 * f64 loops on ties, signed zeros and NaNs: the first maximum in row-major
 * window order gets the gradient; a NaN is the maximum. */
static void test_maxpool_fast_path(void) {
    static const double xs[2 * 4 * 6] = {
        1, 1, 2, 3, -0.0, 0.0,     /* ties, signed zeros */
        1, 1, 3, 2, 0.0, -0.0,
        5, NAN, 7, 7, -1, -2,      /* NaN in a window, ties on the bottom row */
        4, 2, 7, 7, -3, -1,
        0, 0, 0, 0, 9, 8,
        0, 0, 0, NAN, 8, 9,
        -5, -4, 2, 1, 6, 6,
        -4, -5, 1, 2, 6, 6,
    };
    double y[2][12], dx[2][48];
    for (int k = 0; k < 2; k++) {
        loom_ctx *ctx;
        loom_backend *be;
        if (!tu_cpu_open(1, &ctx, &be)) return;
        loom_dtype dt = k ? LOOM_F64 : LOOM_F32;
        loom_graph *g;
        loom_graph_create(ctx, &(loom_graph_desc){.seed = 3}, &g);
        loom_tensor *x = loom_param(g, "x", dt, 4, (int64_t[]){1, 2, 4, 6}, NULL);
        loom_tensor *yy = loom_max_pool2d(g, x, &(loom_pool2d_desc){.kernel_h = 2, .kernel_w = 2});
        loom_tensor *w = loom_input(g, "w", dt, 4, (int64_t[]){1, 2, 2, 3});
        loom_keep(yy);
        CHECK_OK(ctx, loom_backward(g, loom_sum(g, loom_mul(g, yy, w), 0xfu, false)));
        loom_tensor *gx = loom_grad(x);
        loom_keep(gx);
        loom_plan *p;
        CHECK_OK(ctx, loom_plan_compile(g, be, NULL, &p));
        double ws[12];
        for (int i = 0; i < 12; i++) ws[i] = i + 1;
        CHECK_OK(ctx, loom_plan_write_f64(p, x, xs, 48));
        CHECK_OK(ctx, loom_plan_write_f64(p, w, ws, 12));
        CHECK_OK(ctx, loom_plan_run(p));
        CHECK_OK(ctx, loom_plan_read_f64(p, yy, y[k], 12));
        CHECK_OK(ctx, loom_plan_read_f64(p, gx, dx[k], 48));
        loom_plan_destroy(p);
        loom_graph_destroy(g);
        tu_cpu_close(ctx, be);
    }
    int bad = 0;
    for (int i = 0; i < 12; i++) bad += !(y[0][i] == y[1][i] || (isnan(y[0][i]) && isnan(y[1][i])));
    for (int i = 0; i < 48; i++) bad += dx[0][i] != dx[1][i] || signbit(dx[0][i]) != signbit(dx[1][i]);
    CHECK(!bad, "2x2 max pool f32 fast path = generic f64 loops on ties, zeros and NaNs (%d differences)", bad);
    CHECK(isnan(y[0][3]) && dx[0][13] == 4 && dx[0][0] == 1 && dx[0][2] == 0 && dx[0][3] == 2 && dx[0][4] == 3 &&
              dx[0][14] == 5 && dx[0][16] == 6,
          "NaN wins its window and the first maximum gets the gradient");
}

/* loom_backend_host_alloc / _free: the CPU backend has no pinned memory,
 * so blocks are plain host memory (as with no backend), 64-byte aligned
 * (the loader's streaming stores need it); they are the caller's to write
 * and are handed back whole. */
static void test_host_memory(void) {
    loom_ctx *ctx;
    loom_ctx_create(NULL, &ctx);
    loom_backend *be = NULL;
    CHECK_OK(ctx, loom_backend_create(ctx, "cpu", NULL, &be));
    void *p[3] = {NULL, NULL, NULL};
    size_t sizes[3] = {1000, 1, 0};
    for (int k = 0; k < 3; k++) {
        CHECK_OK(ctx, loom_backend_host_alloc(be, sizes[k], &p[k]));
        CHECK(p[k] != NULL, "host_alloc(%zu bytes) gives a pointer", sizes[k]);
        CHECK(((uintptr_t)p[k] & 63) == 0, "host_alloc(%zu bytes) is 64-byte aligned", sizes[k]);
        if (p[k]) memset(p[k], 0x5a + k, sizes[k]);
    }
    CHECK(p[0] != p[1] && p[1] != p[2] && p[0] != p[2], "distinct blocks (also for 0 bytes)");
    int bad = 0;
    for (size_t i = 0; p[0] && i < sizes[0]; i++) bad += ((unsigned char *)p[0])[i] != 0x5a;
    CHECK(!bad, "a block keeps what was written (%d bytes differ)", bad);
    for (int k = 0; k < 3; k++) loom_backend_host_free(be, p[k]);
    loom_backend_host_free(be, NULL); /* nothing */
    void *q = NULL;
    CHECK_OK(ctx, loom_backend_host_alloc(NULL, 1 << 20, &q)); /* no backend: plain host memory */
    CHECK(q != NULL, "host_alloc without a backend gives a pointer");
    CHECK(((uintptr_t)q & 63) == 0, "host_alloc without a backend is 64-byte aligned (a 1 MiB block)");
    loom_backend_host_free(NULL, q);
    loom_backend_destroy(be);
    loom_ctx_destroy(ctx);
}

/* A backend's on/off environment switches take 0 or 1 (or unset); anything
 * else fails the backend's creation with a message naming the variable. */
static void test_env_switches(void) {
    static const struct {
        const char *backend, *var;
    } sw[] = {{"cpu", "LOOM_CPU_FUSE"},           {"cpu", "LOOM_CPU_POOL_AVX512"}, {"cpu", "LOOM_CPU_GEMM512"},
              {"vulkan", "LOOM_VULKAN_STAGING"}, {"vulkan", "LOOM_VULKAN_CONV_ROWS"},
              {"vulkan", "LOOM_VULKAN_CONV_GI_FWD"}, {"vulkan", "LOOM_VULKAN_CONV_FLAT"},
              {"vulkan", "LOOM_VULKAN_CONV_PLANES"}, {"vulkan", "LOOM_VULKAN_GEMM_VSTORE"},
              {"vulkan", "LOOM_VULKAN_CONV_IMPLICIT"}, {"vulkan", "LOOM_VULKAN_CONV_FIXED"},
              {"vulkan", "LOOM_VULKAN_BN_SPLIT"}, {"vulkan", "LOOM_VULKAN_CONV_SHARE_COLS"},
              {"vulkan", "LOOM_VULKAN_FUSE"},          {"vulkan", "LOOM_VULKAN_ATTN_GEMM"},
              {"vulkan", "LOOM_VULKAN_ROWS"},          {"vulkan", "LOOM_VULKAN_REDUCE_FLAT"},
              {"opencl", "LOOM_OPENCL_CONV_ROWS"},   {"opencl", "LOOM_OPENCL_CONV_IMPLICIT"},
              {"opencl", "LOOM_OPENCL_CONV_GI_FWD"}, {"opencl", "LOOM_OPENCL_BN_SPLIT"},
              {"opencl", "LOOM_OPENCL_CONV_GW_DOT"}, {"opencl", "LOOM_OPENCL_CONV_SHARE_COLS"},
              {"opencl", "LOOM_OPENCL_CONV_ONE"},    {"opencl", "LOOM_OPENCL_CONV_GI_FUSED"},
              {"opencl", "LOOM_OPENCL_REDUCE_FLAT"}, {"opencl", "LOOM_OPENCL_CONV_FLAT"},
              {"opencl", "LOOM_OPENCL_POOL_2D"},     {"opencl", "LOOM_OPENCL_FUSE"},
              {"opencl", "LOOM_OPENCL_ATTN_GEMM"}, {"opencl", "LOOM_OPENCL_ROWS"},
              {"opencl", "LOOM_OPENCL_DROPOUT_V8"}, {"opencl", "LOOM_OPENCL_BN_PLANES"}};
    loom_ctx *ctx = NULL;
    loom_ctx_create(NULL, &ctx);
    for (size_t i = 0; i < sizeof sw / sizeof *sw; i++) {
        const char *why = NULL;
        if (!loom_backend_available(ctx, sw[i].backend, &why)) {
            printf("env switch %s: skipped (%s unavailable: %s)\n", sw[i].var, sw[i].backend, why ? why : "?");
            continue;
        }
        const char *had = getenv(sw[i].var);
        char keep[64];
        snprintf(keep, sizeof keep, "%s", had ? had : "");
        setenv(sw[i].var, "yes", 1);
        loom_backend *be = NULL;
        loom_status st = loom_backend_create(ctx, sw[i].backend, NULL, &be);
        CHECK(st == LOOM_ERR_INVALID_ARG && !be && strstr(loom_last_error(ctx), sw[i].var) &&
                  strstr(loom_last_error(ctx), "yes"),
              "%s=yes: %s refuses it naming it (%s: '%s')", sw[i].var, sw[i].backend, loom_status_str(st),
              loom_last_error(ctx));
        if (be) loom_backend_destroy(be);
        for (int v = 0; v < 2; v++) {
            setenv(sw[i].var, v ? "1" : "0", 1);
            be = NULL;
            CHECK(loom_backend_create(ctx, sw[i].backend, NULL, &be) == LOOM_OK && be, "%s=%d: %s starts", sw[i].var, v,
                  sw[i].backend);
            if (be) loom_backend_destroy(be);
        }
        if (had) setenv(sw[i].var, keep, 1);
        else unsetenv(sw[i].var);
    }
    loom_ctx_destroy(ctx);
}

int main(void) {
    test_env_switches();
    test_unsupported();
    test_registry();
    test_threads();
    test_column_sums();
    test_maxpool_fast_path();
    test_host_memory();
    return tu_summary();
}
