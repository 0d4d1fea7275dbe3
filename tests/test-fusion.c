/* tests/test-fusion.c — the fused batch-norm groups (core/fuse.h) on every
 * backend that has them (the CPU's fused passes, backends/cpu/fuse.h; the
 * Vulkan and OpenCL kernels of their ops/norm.c and ops/pool2d.c): a plan whose batch-norm
 * chains run fused must give the same bits as the same graph run node by
 * node (LOOM_<BACKEND>_FUSE=0), and a reproducible backend fuses nothing.
 * On Vulkan and OpenCL the forward groups follow the split batch norm, which
 * the test forces on (LOOM_<BACKEND>_BN_SPLIT=1: the default on CPU devices
 * only), and the backward fuses relu_grad with the pool gradient only.
 *
 * Each graph is compiled three times: fused, fused with desc.no_reuse (other
 * buffer overlaps, so the fusion planner's overlap rules meet other cases), and
 * unfused; two training-mode runs each (the running statistics move), then
 * the loss, the gradients of the input and of gamma and beta, the running
 * statistics and any kept intermediate are compared bitwise. The fused plan
 * must actually fuse (the group count is checked), the unfused one must not.
 * On a CPU with AVX2 the CPU's fused passes run their AVX2 variant, so this
 * also checks that variant against the baseline-vector single-op kernels.
 * Graphs:
 * - batch_norm -> 2x2 max_pool2d -> relu (the cnn's blocks), even and odd
 *   planes (rows of 4 to 20 windows), with and without its intermediates kept;
 * - a residual block: relu(batch_norm), relu(batch_norm + shortcut), the
 *   batch norm on either side of the add;
 * - batch_norm in eval mode -> relu, and batch_norm without affine
 *   parameters -> relu;
 * - attention (the group of its three gradients: the CPU, and the GEMM form
 *   of Vulkan and OpenCL, which lavapipe and PoCL run by default), causal and with
 *   twice as many keys as queries, over more than one 128-row block, and
 *   with too few (batch, head) units to share (run node by node);
 * - a matmul and the add of its bias (the CPU), the bias on either side, the
 *   product kept or not, with a gelu or a residual add after, or the
 *   product added to a residual alone, sizes loom's AVX-512 GEMM takes and
 *   others;
 * - CPU: 1 and 3 threads. */
#include <stdlib.h>
#include <string.h>

#include "loom/loom.h"
#include "testutil.h"

int loom__plan_fused_groups(const loom_plan *p); /* core/plan.c */

static loom_ctx *ctx;
static loom_backend *be;
static const char *be_name, *fuse_var; /* the backend's switch (NULL: it fuses nothing) */
static bool be_repro;

#define D(...) (sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), ((const int64_t[]){__VA_ARGS__})

enum { CASE_POOL, CASE_POOL_KEEP, CASE_RESIDUAL, CASE_RESIDUAL_SWAP, CASE_EVAL, CASE_PLAIN, CASE_ATTN, CASE_ATTN_CROSS,
       CASE_BIAS, CASE_BIAS_KEEP, CASE_BIAS_SWAP, CASE_BIAS_GELU, CASE_BIAS_RES, CASE_MM_RES, NCASES };
static const char *case_name[NCASES] = {"bn-pool-relu", "bn-pool-relu kept", "residual", "residual (shortcut first)",
                                        "eval bn-relu", "bn-relu no affine", "causal attention (b, h, t, d)",
                                        "attention, 2t keys (b, h, t, d)", "x w + bias (n c h, w)",
                                        "x w + bias, product kept", "bias + x w^T", "gelu(x w + bias)",
                                        "r + (x w + bias)", "x w + r (no bias)"};

typedef struct built {
    loom_graph *g;
    loom_tensor *x, *r, *loss, *check[16];
    loom_tensor *gamma, *beta; /* of the last batch norm built */
    loom_tensor *res;          /* CASE_BIAS_RES: the residual */
    int ncheck;
} built;

static void add_check(built *b, loom_tensor *t) {
    if (!t || b->ncheck == 16) return;
    loom_keep(t);
    b->check[b->ncheck++] = t;
}

static loom_tensor *bn(built *b, const char *name, loom_tensor *x, bool affine, bool eval) {
    char s[64];
    int64_t c = loom_tensor_dim(x, 1);
    loom_batch_norm_desc d = {.eval = eval};
    if (affine) {
        snprintf(s, sizeof s, "%s.gamma", name);
        d.gamma = loom_param(b->g, s, LOOM_F32, D(c), &(loom_init){LOOM_INIT_UNIFORM, 0.5, 1.5});
        snprintf(s, sizeof s, "%s.beta", name);
        d.beta = loom_param(b->g, s, LOOM_F32, D(c), &(loom_init){LOOM_INIT_UNIFORM, -0.5, 0.5});
    }
    snprintf(s, sizeof s, "%s.mean", name);
    d.running_mean = loom_state(b->g, s, LOOM_F32, D(c), &(loom_init){LOOM_INIT_UNIFORM, -0.2, 0.2});
    snprintf(s, sizeof s, "%s.var", name);
    d.running_var = loom_state(b->g, s, LOOM_F32, D(c), &(loom_init){LOOM_INIT_UNIFORM, 0.5, 2});
    loom_tensor *y = loom_batch_norm(b->g, x, &d);
    add_check(b, d.running_mean), add_check(b, d.running_var);
    b->gamma = d.gamma, b->beta = d.beta; /* their gradients are checked after loom_backward */
    return y;
}

/* attention over q = x (n, c, h, w) and keys and values k, v with h (causal)
 * or 2h rows: the three attention_grad nodes of its backward form a group
 * on the CPU */
static loom_tensor *attn(built *b, bool causal) {
    const int64_t *d = (const int64_t[]){loom_tensor_dim(b->x, 0), loom_tensor_dim(b->x, 1),
                                         loom_tensor_dim(b->x, 2) * (causal ? 1 : 2), loom_tensor_dim(b->x, 3)};
    loom_tensor *k = loom_param(b->g, "k", LOOM_F32, 4, d, &(loom_init){LOOM_INIT_NORMAL, 0, 1.0});
    loom_tensor *v = loom_param(b->g, "v", LOOM_F32, 4, d, &(loom_init){LOOM_INIT_NORMAL, 0, 1.0});
    loom_tensor *y = loom_attention(b->g, b->x, k, v, causal, 0);
    b->gamma = k, b->beta = v; /* their gradients are checked after loom_backward */
    return y;
}

/* y (n, c, h, w + 8) = x (n c h, w) W (w, w + 8) + bias (w + 8) (W stored
 * transposed when the bias comes first; a gelu of it for CASE_BIAS_GELU, a
 * residual added for CASE_BIAS_RES; x W + r, no bias, for CASE_MM_RES): on the CPU
 * a group whose GEMM writes the sums (gemm.c), with loom's AVX-512 kernel
 * or OpenBLAS and an add per panel, one k block or more (w > 256) */
static loom_tensor *affine(built *b, int kind) {
    int64_t n = loom_tensor_dim(b->x, 0), c = loom_tensor_dim(b->x, 1), h = loom_tensor_dim(b->x, 2),
            w = loom_tensor_dim(b->x, 3);
    bool tb = kind == CASE_BIAS_SWAP; /* W stored (w + 8, w) */
    loom_tensor *wt = loom_param(b->g, "w", LOOM_F32, 2, tb ? (int64_t[]){w + 8, w} : (int64_t[]){w, w + 8},
                                 &(loom_init){LOOM_INIT_NORMAL, 0, 0.2});
    loom_tensor *mm = loom_matmul(b->g, loom_reshape(b->g, b->x, 2, (int64_t[]){n * c * h, w}), wt, false, tb);
    b->gamma = wt;
    if (kind == CASE_MM_RES) { /* the product added to another tensor, as a gradient is accumulated */
        b->res = loom_param(b->g, "res", LOOM_F32, D(n * c * h, w + 8), &(loom_init){LOOM_INIT_NORMAL, 0, 1});
        return loom_reshape(b->g, loom_add(b->g, mm, b->res), 4, (int64_t[]){n, c, h, w + 8});
    }
    loom_tensor *bias = loom_param(b->g, "bias", LOOM_F32, D(w + 8), &(loom_init){LOOM_INIT_UNIFORM, -1, 1});
    loom_tensor *y = kind == CASE_BIAS_SWAP ? loom_add(b->g, bias, mm) : loom_add(b->g, mm, bias);
    if (kind == CASE_BIAS_GELU) y = loom_gelu(b->g, y);
    if (kind == CASE_BIAS_RES) /* a residual, its own gradient checked too */
        y = loom_add(b->g, b->res = loom_param(b->g, "res", LOOM_F32, D(n * c * h, w + 8), &(loom_init){LOOM_INIT_NORMAL, 0, 1}), y);
    if (kind == CASE_BIAS_KEEP) add_check(b, mm);
    b->beta = bias; /* their gradients (and W's) are checked after loom_backward */
    y = loom_reshape(b->g, y, 4, (int64_t[]){n, c, h, w + 8});
    return kind == CASE_BIAS ? loom_relu(b->g, y) : y; /* relu: the sums may go over the product in place */
}

static bool build(built *b, int kind, int64_t n, int64_t c, int64_t h, int64_t w) {
    memset(b, 0, sizeof *b);
    loom_graph_desc gd = {.seed = 5};
    if (loom_graph_create(ctx, &gd, &b->g) != LOOM_OK) return false;
    loom_graph *g = b->g;
    b->x = loom_param(g, "x", LOOM_F32, D(n, c, h, w), &(loom_init){LOOM_INIT_NORMAL, 0.3, 2.0});
    loom_tensor *y = NULL, *gm = NULL, *bt = NULL;
    if (kind == CASE_ATTN || kind == CASE_ATTN_CROSS) {
        y = attn(b, kind == CASE_ATTN);
        gm = b->gamma, bt = b->beta;
    } else if (kind >= CASE_BIAS) {
        y = affine(b, kind);
        gm = b->gamma, bt = b->beta;
    } else if (kind == CASE_POOL || kind == CASE_POOL_KEEP) {
        loom_tensor *z = bn(b, "bn", b->x, true, false);
        gm = b->gamma, bt = b->beta;
        loom_tensor *pz = loom_max_pool2d(g, z, &(loom_pool2d_desc){.kernel_h = 2, .kernel_w = 2});
        y = loom_relu(g, pz);
        if (kind == CASE_POOL_KEEP) add_check(b, z), add_check(b, pz);
    } else if (kind == CASE_RESIDUAL || kind == CASE_RESIDUAL_SWAP) {
        loom_tensor *h1 = loom_relu(g, bn(b, "bn1", b->x, true, false));
        loom_tensor *z = bn(b, "bn2", h1, true, false);
        gm = b->gamma, bt = b->beta;
        y = loom_relu(g, kind == CASE_RESIDUAL ? loom_add(g, z, b->x) : loom_add(g, b->x, z));
    } else {
        y = loom_relu(g, bn(b, "bn", b->x, kind == CASE_EVAL, kind == CASE_EVAL));
        if (kind == CASE_EVAL) gm = b->gamma, bt = b->beta;
    }
    b->r = loom_input(g, "r", LOOM_F32, 4, (int64_t[]){loom_tensor_dim(y, 0), loom_tensor_dim(y, 1),
                                                       loom_tensor_dim(y, 2), loom_tensor_dim(y, 3)});
    b->loss = loom_sum(g, loom_mul(g, y, b->r), 0xF, false);
    add_check(b, b->loss);
    add_check(b, y);
    if (loom_backward(g, b->loss) != LOOM_OK) return false;
    add_check(b, loom_grad(b->x));
    if (gm) add_check(b, loom_grad(gm));
    if (bt) add_check(b, loom_grad(bt));
    if (b->res) add_check(b, loom_grad(b->res));
    return loom_graph_status(g) == LOOM_OK;
}

static loom_plan *compile(loom_graph *g, bool fuse, bool no_reuse) {
    loom_plan *p = NULL;
    if (fuse_var && !fuse) setenv(fuse_var, "0", 1);
    CHECK_OK(ctx, loom_plan_compile(g, be, &(loom_plan_desc){.no_reuse = no_reuse}, &p));
    if (fuse_var) unsetenv(fuse_var);
    return p;
}

static void run2(loom_plan *p, const built *b) {
    size_t n = (size_t)loom_tensor_numel(b->r);
    double *v = malloc(n * sizeof *v);
    if (!v) return;
    for (size_t i = 0; i < n; i++) v[i] = loom_philox_uniform(3, 1, i) * 2 - 1;
    CHECK_OK(ctx, loom_plan_write_f64(p, b->r, v, n));
    free(v);
    CHECK_OK(ctx, loom_plan_run(p));
    CHECK_OK(ctx, loom_plan_run(p));
}

static void same_bits(loom_plan *a, loom_plan *b, const loom_tensor *t, const char *what) {
    size_t bytes = (size_t)loom_tensor_numel(t) * 4;
    void *x = malloc(bytes), *y = malloc(bytes);
    if (x && y) {
        CHECK_OK(ctx, loom_plan_read(a, t, x, bytes));
        CHECK_OK(ctx, loom_plan_read(b, t, y, bytes));
        CHECK(memcmp(x, y, bytes) == 0, "%s: '%s' differs between the fused and the unfused plan", what,
              loom_tensor_name(t));
    }
    free(x), free(y);
}

static void test_case(int kind, int64_t n, int64_t c, int64_t h, int64_t w, int want_groups) {
    built b;
    char what[160];
    snprintf(what, sizeof what, "%s%s: %s (%lld, %lld, %lld, %lld)", be_name, be_repro ? " (reproducible)" : "",
             case_name[kind], (long long)n, (long long)c, (long long)h, (long long)w);
    if (be_repro || !fuse_var) want_groups = 0;
    bool ok = build(&b, kind, n, c, h, w);
    CHECK(ok, "%s: building the graph: %s", what, loom_last_error(ctx));
    loom_plan *pf = ok ? compile(b.g, true, false) : NULL, *pn = ok ? compile(b.g, true, true) : NULL;
    loom_plan *pu = ok ? compile(b.g, false, false) : NULL;
    if (pf && pn && pu) {
        int gf = loom__plan_fused_groups(pf), gn = loom__plan_fused_groups(pn);
        int gu = loom__plan_fused_groups(pu);
        printf("%-64s fused groups %d (no_reuse %d, unfused %d), %d tensors compared\n", what, gf, gn, gu, b.ncheck);
        CHECK(gf == want_groups && gn == want_groups, "%s: %d and %d fused groups, expected %d", what, gf, gn,
              want_groups);
        CHECK(gu == 0, "%s: %s=0 still fused %d groups", what, fuse_var ? fuse_var : "(none)", gu);
        run2(pf, &b), run2(pn, &b), run2(pu, &b);
        for (int i = 0; i < b.ncheck; i++) same_bits(pf, pu, b.check[i], what), same_bits(pn, pu, b.check[i], what);
    }
    loom_plan_destroy(pf), loom_plan_destroy(pn), loom_plan_destroy(pu);
    loom_graph_destroy(b.g);
}

/* the cases, each with the groups each backend fuses: the CPU any plane;
 * Vulkan and OpenCL the split batch norm (training; Vulkan: planes of a
 * multiple of 4 elements) with 2x2 pooling of even planes, and relu_grad +
 * the pool gradient */
enum { B_CPU, B_VULKAN, B_OPENCL };
static void cases(int b) {
    test_case(CASE_POOL, 4, 3, 8, 8, 2);
    test_case(CASE_POOL, 3, 5, 7, 9, b == B_CPU ? 2 : 0);
    test_case(CASE_POOL_KEEP, 4, 3, 6, 10, 2);
    /* rows of 14 and 20 windows (OpenCL on a CPU device: the pool gradient 8 windows at a time, then
     * the row's last ones) */
    test_case(CASE_POOL, 2, 3, 6, 28, 2);
    test_case(CASE_POOL_KEEP, 2, 2, 4, 40, 2);
    /* rows of 7 windows and of 3 (OpenCL on a CPU device: whole vectors running into the next rows of
     * the work-group's 16, over more than one row with 3; lane by lane in its last rows) */
    test_case(CASE_POOL, 2, 3, 14, 14, 2);
    test_case(CASE_POOL, 2, 3, 12, 6, 2);
    test_case(CASE_RESIDUAL, 3, 4, 6, 5, b == B_CPU ? 4 : b == B_OPENCL ? 2 : 0);
    test_case(CASE_RESIDUAL, 3, 4, 6, 8, b == B_CPU ? 4 : 2);
    test_case(CASE_RESIDUAL_SWAP, 3, 4, 6, 8, b == B_CPU ? 4 : 2);
    test_case(CASE_EVAL, 2, 3, 5, 5, b == B_CPU ? 2 : 0);
    test_case(CASE_PLAIN, 5, 2, 4, 4, b == B_CPU ? 2 : 1);
    /* attention (no reproducible kernel): 8 (batch, head) units; 150 and 300 rows: more than one 128-row block */
    if (be_repro) return;
    test_case(CASE_ATTN, 2, 4, 150, 16, 1);
    test_case(CASE_ATTN_CROSS, 2, 4, 150, 8, 1);
    test_case(CASE_ATTN, 1, 1, 20, 8, 1); /* CPU: one unit, node by node inside the group */
    /* matmul + bias (the CPU only): 320 rows (one thread: the AVX-512 kernel where the CPU has it;
     * three: panels too short for it, OpenBLAS and an add), 300 rows with two k blocks, odd sizes */
    static const int64_t sz[3][4] = {{2, 2, 80, 40}, {1, 1, 300, 264}, {1, 3, 7, 5}};
    static const int kinds[] = {CASE_BIAS, CASE_BIAS_GELU, CASE_BIAS_RES, CASE_MM_RES};
    int bias = b == B_CPU ? 1 : 0;
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (int i = 0; i < (kinds[k] == CASE_MM_RES ? 2 : 3); i++)
            test_case(kinds[k], sz[i][0], sz[i][1], sz[i][2], sz[i][3], bias);
    test_case(CASE_BIAS_KEEP, 2, 2, 80, 40, bias);
    test_case(CASE_BIAS_SWAP, 1, 1, 300, 264, bias);
}

static void check_backend(loom_ctx *c, loom_backend *b, const char *name, bool reproducible) {
    ctx = c, be = b, be_name = name, be_repro = reproducible;
    if (!strcmp(name, "cpu")) { /* its threads ran first; reproducible: nothing fuses */
        fuse_var = "LOOM_CPU_FUSE";
        if (reproducible) cases(B_CPU);
        return;
    }
    bool vk = !strcmp(name, "vulkan"), cl = !strcmp(name, "opencl");
    fuse_var = vk ? "LOOM_VULKAN_FUSE" : cl ? "LOOM_OPENCL_FUSE" : NULL;
    const char *split = vk ? "LOOM_VULKAN_BN_SPLIT" : "LOOM_OPENCL_BN_SPLIT";
    if (vk || cl) setenv(split, "1", 1);
    cases(vk ? B_VULKAN : B_OPENCL);
    if (vk || cl) unsetenv(split);
}

int main(void) {
    int threads[2] = {1, 3};
    be_name = "cpu", fuse_var = "LOOM_CPU_FUSE";
    for (int k = 0; k < 2; k++) {
        if (!tu_cpu_open(threads[k], &ctx, &be)) return 1;
        printf("-- %d thread(s)\n", threads[k]);
        cases(B_CPU);
        tu_cpu_close(ctx, be);
    }
    /* the other backends, each ordinary and reproducible (the CPU: reproducible only) */
    return tu_every_backend(check_backend);
}
