/* backends/vulkan/ops/conv2d.c — host side of conv2d, conv2d_grad_input and
 * conv2d_grad_weight (parameters: core/ops/conv2d.c): im2col / col2im
 * (shaders/conv2d.comp) around the batched GEMM (shaders/gemm.comp,
 * ops/gemm.h). Every image and group goes in one GEMM dispatch (its batch is
 * (image, group)); a node records at most three dispatches.
 *
 *   conv2d:      col (N, G, K, P) = im2col(x); y[n, g] (Og, P) = w_g (Og, K) col[n, g] (K, P) + bias
 *                (on GPUs the GEMM reads the columns from x itself: implicit(), no buffer)
 *   grad_input:  col (N, G, K, P) float = w_g^T (K, Og) dy[n, g] (Og, P); dx = col2im(col), a gather;
 *                stride 1, ungrouped: wt = flip(w) transposed; dx = wt @ im2col(dy)
 *   grad_weight: col (N, G, K, P) = im2col(x);
 *                part[n, g] (Og, K) float = dy[n, g] (Og, P) col[n, g]^T (P, K); dw = sum over n of part[n]
 * with K = C/groups*KH*KW, P = OH*OW. Ungrouped convolutions (not 1x1) run
 * the flat form instead (flat(), flat_grad_weight(): one GEMM over the
 * batch, col (K, N*P)). 1x1 stride-1 unpadded convolutions
 * skip im2col / col2im: x[n, g] (Cg, P) is the column matrix, and
 * grad_input's product writes dx directly.
 *
 * The weight gradient's long sums: one product per image (P terms in one
 * float accumulator), then the N per-image products summed in image order —
 * not N*P terms in one accumulator (as backends/opencl; the CPU's blocked
 * GEMM rounds alike to ~1e-6).
 *
 * Workspace: node-owned scratch buffers sized at plan_prepare: N*G*K*P
 * elements of the storage type (float for grad_input), plus N*O*K floats for
 * grad_weight's per-image products. LOOM_ERR_UNSUPPORTED when one reaches
 * 2^31 elements (the shaders index in 32 bits).
 *
 * Small K (K <= LOOM__VK_CONV_DIRECT_K, e.g. a first layer on 1-3 channels):
 * the GEMM's tiles are mostly empty and im2col / col2im move K*P values per
 * image for K*P multiply-adds, so direct kernels run instead
 * (shaders/conv2d_direct.comp, one dispatch per node, no workspace):
 * forward one invocation per 4 output positions and block of up to 32
 * output channels (the K-value windows loaded once, bias added at the end),
 * grad_input a gather (no atomics) of 4 dx elements of a row per invocation,
 * grad_weight one work-group per (4 output channels, c, block of 9 kernel taps) reducing
 * each dw element's N*OH*OW products (per invocation f32 block sums of 32
 * positions added into an f32 total, then a tree over the group). The
 * environment variable LOOM_VULKAN_CONV_DIRECT_K lowers the bound (0: always
 * GEMM; a test knob, read at plan_prepare). The direct kernels serve small
 * reductions (the first layer of an image model, K = 9), where the GEMM path
 * spends its time on the column buffer (LOOM_VULKAN_CONV_DIRECT_K=0 and
 * bench-gemm_conv compare the two). On CPU devices the direct kernels and
 * the row im2col read their inputs through texel views (the *_t variants,
 * loom__vk_texel_variant; lavapipe, the cnn's first layer: grad_weight 22.0
 * -> 14.9 ms, grad_input 13.8 -> 9.1, forward unchanged). */
#include <stdlib.h>
#include <string.h>

#include "gemm.h"

#define LOOM__VK_CONV_DIRECT_K 32

/* the direct kernels serve this convolution (its K is small); never for the
 * reproducible variants (their sums are not the canonical order of core/repro.h) */
static bool use_direct(bool repro, const loom__conv_geom *q) {
    if (repro) return false;
    int64_t lim = LOOM__VK_CONV_DIRECT_K;
    const char *e = getenv("LOOM_VULKAN_CONV_DIRECT_K");
    if (e && *e && strtoll(e, NULL, 10) < lim) lim = strtoll(e, NULL, 10); /* never above: MAXK in the shader */
    return q->K <= lim;
}

/* the geometry push constants of conv2d_direct.comp (GEOM) */
static void push_geom(loom__vk_call *c, const loom__conv_geom *q) {
    int64_t v[17] = {q->N, q->C, q->H, q->W, q->O, q->KH, q->KW, q->OH, q->OW,
                     q->sh, q->sw, q->ph, q->pw, q->dh, q->dw, q->Cg, q->Og};
    for (int i = 0; i < 17; i++) loom__vk_i32(c, (int32_t)v[i]);
}

/* LOOM_ERR_UNSUPPORTED when a size does not fit the shaders' 32-bit indices */
static loom_status direct_fits(loom__vk_op *o, const loom__conv_geom *q) {
    int64_t big = q->N * q->O * q->OH * q->OW, nx = q->N * q->C * q->H * q->W, nw = q->O * q->K;
    if (nx > big) big = nx;
    if (nw > big) big = nw;
    if (big >= ((int64_t)1 << 31))
        return loom__err(o->vk->ctx, LOOM_ERR_UNSUPPORTED,
                         "vulkan: %s (node '%s'): %lld elements; the shaders index below 2^31",
                         loom_op_name(o->t->op), o->t->name, (long long)big);
    return LOOM_OK;
}

typedef loom__conv_geom geom;

/* a node-owned workspace of n elements of es bytes */
static loom_status workspace(loom__vk_op *o, int64_t n, size_t es, const char *what, loom__buffer **out) {
    if (n >= ((int64_t)1 << 31))
        return loom__err(o->vk->ctx, LOOM_ERR_UNSUPPORTED,
                         "vulkan: %s (node '%s'): the %s workspace needs %lld elements; the shaders index below 2^31",
                         loom_op_name(o->t->op), o->t->name, what, (long long)n);
    return loom__vk_scratch(o, (size_t)(n > 0 ? n : 1) * es, out);
}

static loom_status geom_table(loom__vk_op *o, const geom *q, loom__buffer **out) {
    int64_t g[16] = {q->N, q->C, q->H, q->W, q->KH, q->KW, q->OH, q->OW,
                     q->sh, q->sw, q->ph, q->pw, q->dh, q->dw, q->G, q->Cg};
    return loom__vk_meta(o, g, 16, out);
}

/* im2col / col2im one invocation per row rather than per element: on a CPU
 * device (lavapipe runs invocations as SIMD lanes and integer divisions lane
 * by lane, so per-element index arithmetic cost more than the copy); a GPU
 * keeps the per-element kernels, whose neighbouring invocations write
 * neighbouring elements. LOOM_VULKAN_CONV_ROWS=0|1 forces either (tests). */
static bool by_rows(const loom__vk_op *o) {
    int e = loom__env_switch("LOOM_VULKAN_CONV_ROWS"); /* checked when the device was made */
    if (e >= 0) return e == 1;
    return o->vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
}

/* col (N, G, K, P) = im2col(x) in x's storage type; ld > 0 (one group):
 * col (K, N*P) with row stride ld, every image side by side (flat()) */
static loom_status im2col(loom__vk_op *o, const geom *q, const loom_tensor *x, loom__buffer *col, int64_t ld) {
    loom__buffer *gm;
    loom_status st = geom_table(o, q, &gm);
    if (st != LOOM_OK) return st;
    /* one invocation per element, or per column row on a CPU device (by_rows),
     * there reading x through a texel view where the device allows one */
    bool rows = by_rows(o);
    int64_t n = rows ? q->N * q->G * q->K * q->OH : q->N * q->G * q->K * q->P;
    loom__vk_call c;
    if (rows && ld && q->P % 4 == 0 && ld % 4 == 0 && loom__env_switch("LOOM_VULKAN_CONV_PLANES") != 0) {
        /* the flat columns, one invocation per (image, row), 4 elements per store (texel view of x only) */
        loom__vk_begin(o, &c, "conv_im2col_planes", x->dtype);
        loom__vk_buf(&c, gm, LOOM__VK_R);
        loom__vk_in(&c, x);
        loom__vk_buf(&c, col, LOOM__VK_W);
        loom__vk_u32(&c, (uint32_t)(q->N * q->K)), loom__vk_u32(&c, (uint32_t)ld);
        if (loom__vk_texel(&c, 0, 1, x->dtype, 1)) return loom__vk_run_1d(&c, q->N * q->K);
    }
    /* bindings g, x, col (texel: x's view at texel slot 0): push {xo, n, ld} */
    loom__vk_begin(o, &c, rows ? "conv_im2col_rows" : "conv_im2col", x->dtype);
    loom__vk_buf(&c, gm, LOOM__VK_R);
    loom__vk_in(&c, x);
    loom__vk_buf(&c, col, LOOM__VK_W);
    loom__vk_u32(&c, (uint32_t)n), loom__vk_u32(&c, (uint32_t)ld);
    if (rows) loom__vk_texel_variant(&c, "conv_im2col_rows_t", x->dtype, (const int[]){1}, 1, 1);
    return loom__vk_run_1d(&c, n);
}

/* The flat form of an ungrouped convolution's product: one GEMM over the
 * whole batch, y (O, N*P) = w (O, K) @ col (K, N*P), stored as (N, O, P)
 * (the GEMM's segmented columns, ops/gemm.h), where the per-image form runs
 * N GEMMs of P columns each: a small layer's P (14x14 = 196) leaves the last
 * of a row's 64-wide tiles mostly empty and, not a multiple of 8, halves the
 * wide GEMM's load width (lavapipe, the cnn's second layer: 43 -> 25 ms for
 * the product). col's rows are padded to a multiple of 8 elements. Not in
 * reproducible mode; LOOM_VULKAN_CONV_FLAT=0 turns it off (tests,
 * comparisons). */
static bool use_flat(bool repro, const geom *q) {
    return !repro && q->G == 1 && loom__env_switch("LOOM_VULKAN_CONV_FLAT") != 0;
}

/* y (N, O, P) = a (O, K) @ im2col(x) (K, N*P) [+ bias (O)], q the geometry of that forward convolution */
static loom_status flat(loom__vk_op *o, const geom *q, const loom_tensor *x, loom__vk_mat a, const loom_tensor *y,
                        const loom_tensor *bias) {
    int64_t np = q->N * q->P, ld = (np + 7) / 8 * 8;
    loom__buffer *col;
    loom_status st;
    if ((st = workspace(o, q->K * ld, loom_dtype_size(x->dtype), "im2col", &col)) != LOOM_OK ||
        (st = im2col(o, q, x, col, ld)) != LOOM_OK)
        return st;
    if (o->t->op == LOOM_OP_CONV2D && x == o->t->src[0]) o->node->user = col; /* for forward_columns() */
    loom__vk_gemm_desc d = {.batch = {1, 1, 1}, .M = q->O, .N = np, .K = q->K, .lda = q->K, .ldb = ld, .ldc = q->P};
    d.cseg = q->P, d.csegs = q->O * q->P;
    d.a = a, d.b = loom__vk_mat_b(col), d.c = loom__vk_mat_t(y);
    if (bias) d.bias = loom__vk_mat_t(bias), d.bias_rs = 1, d.bias_cs = 0;
    return loom__vk_gemm(o, y->dtype, &d);
}

static bool is_1x1(const geom *q) {
    return q->KH == 1 && q->KW == 1 && q->sh == 1 && q->sw == 1 && q->ph == 0 && q->pw == 0;
}

/* The forward's and the weight gradient's products reading the columns of
 * x inside the GEMM (shaders/gemm.comp's gemm*_nc / gemm*_yx: implicit GEMM;
 * the weight gradient over chunks of images, grad_weight_implicit), without the
 * column buffer (N*C*KH*KW*OH*OW elements per node, for the plan's life): the default on
 * GPUs, where the tiled GEMM runs anyway; a CPU device (lavapipe) keeps
 * im2col + its texel GEMM, faster there. LOOM_VULKAN_CONV_IMPLICIT=0|1
 * forces either (tests). The same sums as im2col + the GEMM: the same bits,
 * reproducible mode included. */
static bool implicit_fwd(const loom__vk_op *o) {
    int e = loom__env_switch("LOOM_VULKAN_CONV_IMPLICIT"); /* checked when the device was made */
    if (e >= 0) return e == 1;
    return o->vk->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
}

/* y (N, O, P) = a (O, K) @ columns of x [+ bias (O)] as implicit GEMM, q the
 * geometry of that forward convolution: one product over the batch (its
 * columns segmented per image, as flat()) when ungrouped and not
 * reproducible, else per (image, group) */
static loom_status implicit(loom__vk_op *o, const geom *q, const loom_tensor *x, loom__vk_mat a, const loom_tensor *y,
                            const loom_tensor *bias, bool repro) {
    bool one = use_flat(repro, q);
    int64_t cg[LOOM__CONV_IMPLICIT_LEN];
    loom__conv_implicit_table(q, cg);
    loom__vk_gemm_desc d = {.repro = repro, .M = q->Og, .K = q->K, .lda = q->K, .ldc = q->P, .conv = cg};
    d.a = a, d.b = loom__vk_mat_t(x), d.c = loom__vk_mat_t(y);
    if (bias) d.bias = loom__vk_mat_t(bias), d.bias_rs = 1, d.bias_cs = 0;
    if (one) {
        d.batch[0] = d.batch[1] = d.batch[2] = 1, d.N = q->N * q->P;
        d.cseg = q->P, d.csegs = q->O * q->P;
    } else { /* batch (1, n, g) */
        d.batch[0] = 1, d.batch[1] = q->N, d.batch[2] = q->G, d.N = q->P;
        d.sa[2] = q->Og * q->K;
        d.sb[1] = q->C * q->H * q->W, d.sb[2] = q->Cg * q->H * q->W;
        d.sc[1] = q->O * q->P, d.sc[2] = q->Og * q->P;
        if (bias) d.sbias[2] = q->Og;
    }
    return loom__vk_gemm(o, y->dtype, &d);
}

/* The direct forward and weight gradient with the window's shape fixed at
 * compile time (conv2d_direct.comp's KFIX variants <kernel>_<shape>, texel
 * views only: CPU devices), for the first layers of image models: the
 * shape, or NULL for any other window or with LOOM_VULKAN_CONV_FIXED=0.
 * Unrolled, the windows and sums stay in registers (lavapipe keeps a
 * run-time-indexed array in memory; the cnn's first layer, batch 64:
 * forward 7.6 -> 2.2 ms). */
typedef struct fixed_shape {
    int64_t Cg, KH, KW;
    const char *name;
    int64_t gw_ob; /* output channels per invocation of its K_GWF variant (OBG in variants.txt) */
} fixed_shape;

static const fixed_shape *fixed_window(const geom *q) {
    static const fixed_shape v[] = {{1, 3, 3, "c1k3", 8}, {3, 3, 3, "c3k3", 4}, {1, 5, 5, "c1k5", 4}};
    if (loom__env_switch("LOOM_VULKAN_CONV_FIXED") == 0) return NULL; /* checked when the device was made */
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (q->Cg == v[i].Cg && q->KH == v[i].KH && q->KW == v[i].KW) return &v[i];
    return NULL;
}

/* y (N,O,OH,OW) = conv2d(x (N,C,H,W), w (O,Cg,KH,KW)) + bias (O) */
static loom_status conv2d(loom__vk_op *o, bool repro) {
    const loom_tensor *y = o->t, *x = y->src[0], *w = y->src[1];
    geom q = loom__conv_geom_of(y);
    loom_status st;
    if (use_direct(repro, &q)) {
        if ((st = direct_fits(o, &q)) != LOOM_OK) return st;
        loom__vk_call c;
        int64_t ob = q.Og < 32 ? q.Og : 32; /* output channels per invocation */
        int64_t n = q.N * q.G * ((q.Og + ob - 1) / ob) * ((q.P + 3) / 4); /* 4 positions per invocation (RP) */
        /* bindings x, w, bias (w again when none), y: push {xo, wo, bo, yo, geometry, hb, OB, n} */
        loom__vk_begin(o, &c, "conv_direct_fwd", y->dtype);
        loom__vk_in(&c, x);
        loom__vk_in(&c, w);
        loom__vk_in(&c, y->nsrc > 2 ? y->src[2] : w);
        loom__vk_out(&c, y);
        push_geom(&c, &q);
        loom__vk_i32(&c, y->nsrc > 2), loom__vk_i32(&c, (int32_t)ob), loom__vk_u32(&c, (uint32_t)n);
        /* one vec4 store per channel: f32, P and y's element offset (push word 3) multiples of 4 */
        bool v4 = y->dtype == LOOM_F32 && q.P % 4 == 0 && loom__vk_pushed_aligned(&c, (const int[]){3}, 1, 4);
        const fixed_shape *fixed = v4 ? fixed_window(&q) : NULL;
        char name[64];
        if (fixed) snprintf(name, sizeof name, "conv_direct_fwd_%s", fixed->name);
        if (!fixed || !loom__vk_texel_variant(&c, name, y->dtype, (const int[]){0, 1}, 2, 1))
            loom__vk_texel_variant(&c, v4 ? "conv_direct_fwd_t4" : "conv_direct_fwd_t", y->dtype, (const int[]){0, 1}, 2, 1);
        return loom__vk_run_1d(&c, n);
    }
    if (!is_1x1(&q) && implicit_fwd(o)) return implicit(o, &q, x, loom__vk_mat_t(w), y, y->nsrc > 2 ? y->src[2] : NULL, repro);
    if (!is_1x1(&q) && use_flat(repro, &q)) return flat(o, &q, x, loom__vk_mat_t(w), y, y->nsrc > 2 ? y->src[2] : NULL);
    /* batch (1, n, g): y[n, g] (Og, P) = w_g (Og, K) @ col[n, g] (K, P) */
    loom__vk_gemm_desc d = {.batch = {1, q.N, q.G}, .M = q.Og, .N = q.P, .K = q.K, .lda = q.K, .ldb = q.P, .ldc = q.P};
    d.repro = repro;
    d.a = loom__vk_mat_t(w), d.sa[2] = q.Og * q.K;
    d.c = loom__vk_mat_t(y), d.sc[1] = q.O * q.P, d.sc[2] = q.Og * q.P;
    if (y->nsrc > 2) d.bias = loom__vk_mat_t(y->src[2]), d.sbias[2] = q.Og, d.bias_rs = 1, d.bias_cs = 0;
    if (is_1x1(&q)) { /* x[n, g] (Cg, HW) is the column matrix */
        d.b = loom__vk_mat_t(x), d.sb[1] = q.C * q.P, d.sb[2] = q.Cg * q.P;
    } else {
        loom__buffer *col;
        if ((st = workspace(o, q.N * q.G * q.K * q.P, loom_dtype_size(x->dtype), "im2col", &col)) != LOOM_OK) return st;
        if ((st = im2col(o, &q, x, col, 0)) != LOOM_OK) return st;
        d.b = loom__vk_mat_b(col), d.sb[1] = q.G * q.K * q.P, d.sb[2] = q.K * q.P;
    }
    return loom__vk_gemm(o, y->dtype, &d);
}

/* A stride-1 convolution's input gradient as a forward convolution of dy
 * (loom__conv_gi_as_forward): its product sums K = O*KH*KW terms per dx
 * element into C x H*W outputs, where the col2im form sums O terms into a
 * float K x P column buffer and gathers it (lavapipe, the cnn's second
 * layer, bench-gemm_conv: 98.5 -> 67.4 ms, 4.7 -> 6.9 GFLOP/s; the cnn
 * step's conv2d_grad_input 99-104 -> 69-70 ms); with the implicit forward
 * (GPUs) it reads dy's columns inside the GEMM, no buffer at all. Not in
 * reproducible mode (the canonical order stays); LOOM_VULKAN_CONV_GI_FWD=0
 * turns it off (a test and comparison knob). */
static loom_status grad_input_forward(loom__vk_op *o, const geom *q, const geom *f0) {
    const loom_tensor *dx = o->t, *dy = dx->src[0], *w = dx->src[1];
    const geom f = *f0; /* the forward convolution of dy */
    loom__buffer *wt, *col;
    loom_status st;
    size_t es = loom_dtype_size(dx->dtype);
    if ((st = workspace(o, q->O * q->C * q->KH * q->KW, es, "flipped weights", &wt)) != LOOM_OK) return st;
    int64_t n = q->O * q->C * q->KH * q->KW;
    loom__vk_call c;
    /* bindings w, wt: push {wo, O, C, KHW, n} */
    loom__vk_begin(o, &c, "conv_wflip", w->dtype);
    loom__vk_in(&c, w);
    loom__vk_buf(&c, wt, LOOM__VK_W);
    loom__vk_u32(&c, (uint32_t)q->O), loom__vk_u32(&c, (uint32_t)q->C), loom__vk_u32(&c, (uint32_t)(q->KH * q->KW));
    loom__vk_u32(&c, (uint32_t)n);
    if ((st = loom__vk_run_1d(&c, n)) != LOOM_OK) return st;
    if (implicit_fwd(o)) return implicit(o, &f, dy, loom__vk_mat_b(wt), dx, NULL, false); /* no column buffer */
    if (use_flat(false, &f)) return flat(o, &f, dy, loom__vk_mat_b(wt), dx, NULL);
    if ((st = workspace(o, f.N * f.K * f.P, es, "im2col", &col)) != LOOM_OK || (st = im2col(o, &f, dy, col, 0)) != LOOM_OK)
        return st;
    /* batch (1, n, 1): dx[n] (C, H*W) = wt (C, K) @ col[n] (K, H*W) */
    loom__vk_gemm_desc d = {.batch = {1, f.N, 1}, .M = f.Og, .N = f.P, .K = f.K, .lda = f.K, .ldb = f.P, .ldc = f.P};
    d.a = loom__vk_mat_b(wt);
    d.b = loom__vk_mat_b(col), d.sb[1] = f.K * f.P;
    d.c = loom__vk_mat_t(dx), d.sc[1] = f.O * f.P;
    return loom__vk_gemm(o, dx->dtype, &d);
}

/* dx (N,C,H,W) = conv2d_grad_input(dy (N,O,OH,OW), w (O,Cg,KH,KW)) */
static loom_status conv2d_grad_input(loom__vk_op *o, bool repro) {
    const loom_tensor *dx = o->t, *dy = dx->src[0], *w = dx->src[1];
    geom q = loom__conv_geom_of(dx);
    loom_status st;
    if (use_direct(repro, &q)) {
        if ((st = direct_fits(o, &q)) != LOOM_OK) return st;
        int64_t n = q.N * q.C * q.H * ((q.W + 3) / 4); /* 4 elements of a row per invocation (RQ) */
        loom__vk_call c;
        /* bindings dy, w, dx: push {dyo, wo, dxo, geometry, n} */
        loom__vk_begin(o, &c, "conv_direct_gi", dx->dtype);
        loom__vk_in(&c, dy);
        loom__vk_in(&c, w);
        loom__vk_out(&c, dx);
        push_geom(&c, &q);
        loom__vk_u32(&c, (uint32_t)n);
        loom__vk_texel_variant(&c, "conv_direct_gi_t", dx->dtype, (const int[]){0, 1}, 2, 1);
        return loom__vk_run_1d(&c, n);
    }
    geom f;
    if (!repro && w->dtype == dx->dtype && dy->dtype == dx->dtype && loom__conv_gi_as_forward(&q, &f) &&
        loom__env_switch("LOOM_VULKAN_CONV_GI_FWD") != 0)
        return grad_input_forward(o, &q, &f);
    /* batch (1, n, g): col[n, g] (K, P) = w_g^T (K, Og) @ dy[n, g] (Og, P) */
    loom__vk_gemm_desc d = {.ta = true, .batch = {1, q.N, q.G}, .M = q.K, .N = q.P, .K = q.Og,
                            .lda = q.K, .ldb = q.P, .ldc = q.P};
    d.repro = repro;
    d.a = loom__vk_mat_t(w), d.sa[2] = q.Og * q.K;
    d.b = loom__vk_mat_t(dy), d.sb[1] = q.O * q.P, d.sb[2] = q.Og * q.P;
    if (is_1x1(&q)) { /* col2im is the identity: the product is dx[n, g] (Cg, HW) */
        d.c = loom__vk_mat_t(dx), d.sc[1] = q.C * q.P, d.sc[2] = q.Cg * q.P;
        return loom__vk_gemm(o, dx->dtype, &d);
    }
    loom__buffer *col, *gm;
    if ((st = workspace(o, q.N * q.G * q.K * q.P, sizeof(float), "column", &col)) != LOOM_OK) return st;
    d.c_float = true;
    d.c = loom__vk_mat_b(col), d.sc[1] = q.G * q.K * q.P, d.sc[2] = q.K * q.P;
    if ((st = loom__vk_gemm(o, dx->dtype, &d)) != LOOM_OK) return st;
    if ((st = geom_table(o, &q, &gm)) != LOOM_OK) return st;
    bool rows = by_rows(o); /* one invocation per dx element, or per dx row on a CPU device */
    int64_t n = rows ? q.N * q.C * q.H : loom_tensor_numel(dx);
    loom__vk_call c;
    /* bindings g, col, dx: push {dxo, n} */
    loom__vk_begin(o, &c, rows ? "conv_col2im_rows" : "conv_col2im", dx->dtype);
    loom__vk_buf(&c, gm, LOOM__VK_R);
    loom__vk_buf(&c, col, LOOM__VK_R);
    loom__vk_out(&c, dx);
    loom__vk_u32(&c, (uint32_t)n);
    return loom__vk_run_1d(&c, n);
}

/* dw = sum over n of part[n] (float, nparts of them, in order) */
static loom_status sum_parts(loom__vk_op *o, loom__buffer *part, int64_t nparts) {
    const loom_tensor *dw = o->t;
    int64_t n = loom_tensor_numel(dw);
    loom__vk_call c;
    /* bindings part, dw: push {dwo, nparts, n} */
    loom__vk_begin(o, &c, "conv_sum_parts", dw->dtype);
    loom__vk_buf(&c, part, LOOM__VK_R);
    loom__vk_out(&c, dw);
    loom__vk_u32(&c, (uint32_t)nparts), loom__vk_u32(&c, (uint32_t)n);
    return loom__vk_run_1d(&c, n);
}

/* The flat form of an ungrouped convolution's weight gradient: dyf (O, N*P)
 * = dy with its image and channel axes swapped (im2col of dy as a 1x1
 * convolution), col (K, N*P) = im2col(x), and dw (O, K) = sum over chunks of
 * CH images of dyf_chunk (O, CH*P) @ col_chunk^T: a few long products
 * rather than N short ones, where one product over all N*P terms would
 * round worse (CH: loom__conv_gw_chunk, shared with backends/opencl). Not in
 * reproducible mode (use_flat). */
/* The column buffer (K, ld) of x that the flat forward of the same
 * convolution wrote earlier in this plan (node->user of that conv2d node),
 * or NULL: the weight gradient reads it instead of running im2col again
 * (x is unchanged between the two, as the gradient reads x itself; the
 * buffer is that node's own, written by nothing else). Not with
 * LOOM_VULKAN_CONV_SHARE_COLS=0. */
static loom__buffer *forward_columns(const loom__vk_op *o, const geom *q, const loom_tensor *x) {
    if (loom__env_switch("LOOM_VULKAN_CONV_SHARE_COLS") == 0) return NULL;
    int n;
    const loom__vk_node *nodes = loom__vk_nodes_before(o, &n);
    for (int i = 0; i < n; i++) {
        const loom_tensor *t = nodes[i].t;
        if (!nodes[i].user || !t || t->op != LOOM_OP_CONV2D || t->src[0] != x) continue;
        geom f = loom__conv_geom_of(t);
        if (loom__conv_geom_same(&f, q))
            return nodes[i].user;
    }
    return NULL;
}

static loom_status flat_grad_weight(loom__vk_op *o, const geom *q) {
    const loom_tensor *dw = o->t, *dy = dw->src[0], *x = dw->src[1];
    int64_t np = q->N * q->P, ld = (np + 7) / 8 * 8, ch = loom__conv_gw_chunk(q->N, false), nparts = q->N / ch;
    geom f = {.N = q->N, .C = q->O, .H = q->OH, .W = q->OW, .O = q->O, .KH = 1, .KW = 1, .OH = q->OH, .OW = q->OW,
              .sh = 1, .sw = 1, .dh = 1, .dw = 1, .G = 1, .Cg = q->O, .Og = q->O, .K = q->O, .P = q->P};
    loom__buffer *dyf, *col = forward_columns(o, q, x), *part = NULL;
    bool own = !col;
    loom_status st;
    if ((st = workspace(o, q->O * ld, loom_dtype_size(dy->dtype), "output gradient columns", &dyf)) != LOOM_OK ||
        (own && (st = workspace(o, q->K * ld, loom_dtype_size(x->dtype), "im2col", &col)) != LOOM_OK) ||
        (nparts > 1 && (st = workspace(o, nparts * q->O * q->K, sizeof(float), "weight gradient parts", &part)) != LOOM_OK) ||
        (st = im2col(o, &f, dy, dyf, ld)) != LOOM_OK || (own && (st = im2col(o, q, x, col, ld)) != LOOM_OK))
        return st;
    /* batch (1, nparts, 1): part[s] (O, K) = dyf[:, s*CH*P ..] (O, CH*P) @ col[:, s*CH*P ..]^T */
    loom__vk_gemm_desc d = {.tb = true, .c_float = nparts > 1, .batch = {1, nparts, 1}, .M = q->O, .N = q->K,
                            .K = ch * q->P, .lda = ld, .ldb = ld, .ldc = q->K};
    d.a = loom__vk_mat_b(dyf), d.sa[1] = ch * q->P;
    d.b = loom__vk_mat_b(col), d.sb[1] = ch * q->P;
    if (nparts == 1) {
        d.c = loom__vk_mat_t(dw);
        return loom__vk_gemm(o, dw->dtype, &d);
    }
    d.c = loom__vk_mat_b(part), d.sc[1] = q->O * q->K;
    if ((st = loom__vk_gemm(o, dw->dtype, &d)) != LOOM_OK) return st;
    return sum_parts(o, part, nparts);
}

/* On a CPU device with texel views, the flat weight gradient (planes im2col,
 * texel GEMM) beats the direct reduction even for a small K: lavapipe, the
 * cnn's first layer (K = 9, 64 x 28 x 28 positions), 14.7-16.4 -> 5.7-6.0 ms */
static bool flat_gw_first(const loom__vk_op *o, bool repro, const geom *q) {
    return o->vk->texel && !is_1x1(q) && use_flat(repro, q) && q->P % 4 == 0;
}

/* The weight gradient as implicit GEMM (gemm*_yx: dy and the columns of x
 * read inside the GEMM, no column buffers): part[s, g] (Og, K) = dy over
 * the chunk's images (Og, CH*P) @ their columns^T, then the parts summed in
 * order; CH as the flat form (loom__conv_gw_chunk: 1 in reproducible mode,
 * where the sums are the per-image column path's, the same bits) */
static loom_status grad_weight_implicit(loom__vk_op *o, const geom *q, bool repro) {
    const loom_tensor *dw = o->t, *dy = dw->src[0], *x = dw->src[1];
    int64_t ch = loom__conv_gw_chunk(q->N, repro), nparts = q->N / ch;
    int64_t cg[LOOM__CONV_IMPLICIT_LEN];
    loom__conv_implicit_table(q, cg);
    loom__buffer *part;
    loom_status st;
    if ((st = workspace(o, nparts * q->O * q->K, sizeof(float), "weight gradient parts", &part)) != LOOM_OK) return st;
    loom__vk_gemm_desc d = {.tb = true, .c_float = true, .repro = repro, .batch = {1, nparts, q->G}, .M = q->Og,
                            .N = q->K, .K = ch * q->P, .ldc = q->K, .conv = cg};
    d.a = loom__vk_mat_t(dy), d.sa[1] = ch * q->O * q->P, d.sa[2] = q->Og * q->P;
    d.b = loom__vk_mat_t(x), d.sb[1] = ch * q->C * q->H * q->W, d.sb[2] = q->Cg * q->H * q->W;
    d.c = loom__vk_mat_b(part), d.sc[1] = q->O * q->K, d.sc[2] = q->Og * q->K;
    if ((st = loom__vk_gemm(o, dw->dtype, &d)) != LOOM_OK) return st;
    return sum_parts(o, part, nparts);
}

/* The weight gradient with the window's shape compiled in (K_GWF, f32,
 * texel views): per-(image, chunk of positions) sums in registers into
 * float parts, then conv_sum_parts; *done false when the texel views are
 * not to be had (nothing recorded) */
static loom_status grad_weight_fixed(loom__vk_op *o, const geom *q, const fixed_shape *fixed, bool *done) {
    const loom_tensor *dw = o->t, *dy = dw->src[0], *x = dw->src[1];
    int64_t nch = (q->P + 127) / 128, cp = ((q->P + nch - 1) / nch + 3) / 4 * 4; /* chunks of <= 128 positions */
    nch = (q->P + cp - 1) / cp;
    int64_t n = q->N * q->G * ((q->Og + fixed->gw_ob - 1) / fixed->gw_ob) * nch;
    char name[64];
    snprintf(name, sizeof name, "conv_direct_gwf_%s", fixed->name);
    loom__buffer *part;
    loom_status st;
    *done = false;
    if ((st = workspace(o, q->N * nch * q->O * q->K, sizeof(float), "weight gradient parts", &part)) != LOOM_OK)
        return st;
    loom__vk_call c;
    /* bindings dy, x, part: push {dyo, xo, geometry, CP, nch, n} */
    loom__vk_begin(o, &c, "conv_direct_gw", LOOM_F32); /* replaced by the texel variant */
    loom__vk_in(&c, dy), loom__vk_in(&c, x), loom__vk_buf(&c, part, LOOM__VK_W);
    push_geom(&c, q);
    loom__vk_i32(&c, (int32_t)cp), loom__vk_i32(&c, (int32_t)nch), loom__vk_u32(&c, (uint32_t)n);
    if (!loom__vk_texel_variant(&c, name, LOOM_F32, (const int[]){0, 1}, 2, 1)) return LOOM_OK;
    *done = true;
    if ((st = loom__vk_run_1d(&c, n)) != LOOM_OK) return st;
    return sum_parts(o, part, q->N * nch);
}

/* dw (O,Cg,KH,KW) = conv2d_grad_weight(dy (N,O,OH,OW), x (N,C,H,W)) */
static loom_status conv2d_grad_weight(loom__vk_op *o, bool repro) {
    const loom_tensor *dw = o->t, *dy = dw->src[0], *x = dw->src[1];
    geom q = loom__conv_geom_of(dw);
    loom_status st;
    const fixed_shape *fixed = use_direct(repro, &q) && dw->dtype == LOOM_F32 && dy->dtype == LOOM_F32 &&
                                x->dtype == LOOM_F32 && o->vk->texel
                            ? fixed_window(&q)
                            : NULL;
    if (fixed) {
        bool done;
        if ((st = direct_fits(o, &q)) != LOOM_OK || (st = grad_weight_fixed(o, &q, fixed, &done)) != LOOM_OK || done)
            return st;
    }
    if (use_direct(repro, &q) && !flat_gw_first(o, repro, &q)) {
        if ((st = direct_fits(o, &q)) != LOOM_OK) return st;
        int64_t n = q.G * ((q.Og + 3) / 4) * q.Cg * ((q.KH * q.KW + 8) / 9);
        loom__vk_call c;
        /* bindings dy, x, dw: push {dyo, xo, dwo, geometry, n}; one group per (block of 4 (OBW) output channels
         * of a group, c, block of 9 (EB) kernel taps) */
        loom__vk_begin(o, &c, "conv_direct_gw", dw->dtype);
        loom__vk_in(&c, dy);
        loom__vk_in(&c, x);
        loom__vk_out(&c, dw);
        push_geom(&c, &q);
        loom__vk_u32(&c, (uint32_t)n);
        loom__vk_texel_variant(&c, "conv_direct_gw_t", dw->dtype, (const int[]){0, 1}, 2, 1);
        return loom__vk_run_groups(&c, n, loom__vk_reduce_local(o->vk, q.N * q.P));
    }
    if (!is_1x1(&q) && implicit_fwd(o)) return grad_weight_implicit(o, &q, repro);
    if (!is_1x1(&q) && use_flat(repro, &q)) return flat_grad_weight(o, &q);
    /* batch (1, n, g): part[n, g] (Og, K) = dy[n, g] (Og, P) @ col[n, g]^T (P, K), in float */
    loom__vk_gemm_desc d = {.tb = true, .c_float = true, .batch = {1, q.N, q.G}, .M = q.Og, .N = q.K, .K = q.P,
                            .lda = q.P, .ldb = q.P, .ldc = q.K};
    d.repro = repro;
    d.a = loom__vk_mat_t(dy), d.sa[1] = q.O * q.P, d.sa[2] = q.Og * q.P;
    if (is_1x1(&q)) { /* x[n, g] (Cg, HW) is the column matrix */
        d.b = loom__vk_mat_t(x), d.sb[1] = q.C * q.P, d.sb[2] = q.Cg * q.P;
    } else {
        loom__buffer *col;
        if ((st = workspace(o, q.N * q.G * q.K * q.P, loom_dtype_size(x->dtype), "im2col", &col)) != LOOM_OK) return st;
        if ((st = im2col(o, &q, x, col, 0)) != LOOM_OK) return st;
        d.b = loom__vk_mat_b(col), d.sb[1] = q.G * q.K * q.P, d.sb[2] = q.K * q.P;
    }
    loom__buffer *part;
    if ((st = workspace(o, q.N * q.O * q.K, sizeof(float), "per-image weight gradients", &part)) != LOOM_OK) return st;
    d.c = loom__vk_mat_b(part), d.sc[1] = q.O * q.K, d.sc[2] = q.Og * q.K;
    if ((st = loom__vk_gemm(o, dw->dtype, &d)) != LOOM_OK) return st;
    return sum_parts(o, part, q.N); /* dw = sum over n of part[n] */
}

loom_status loom__vk_conv2d(loom__vk_op *o) { return conv2d(o, false); }
loom_status loom__vk_conv2d_grad_input(loom__vk_op *o) { return conv2d_grad_input(o, false); }
loom_status loom__vk_conv2d_grad_weight(loom__vk_op *o) { return conv2d_grad_weight(o, false); }
/* reproducible mode: im2col + the canonical GEMM, never the direct kernels */
loom_status loom__vk_conv2d_repro(loom__vk_op *o) { return conv2d(o, true); }
loom_status loom__vk_conv2d_grad_input_repro(loom__vk_op *o) { return conv2d_grad_input(o, true); }
loom_status loom__vk_conv2d_grad_weight_repro(loom__vk_op *o) { return conv2d_grad_weight(o, true); }
