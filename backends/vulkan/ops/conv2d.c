/* backends/vulkan/ops/conv2d.c — host side of conv2d, conv2d_grad_input and
 * conv2d_grad_weight (parameters: core/ops/conv2d.c): im2col / col2im
 * (shaders/conv2d.comp) around the batched GEMM (shaders/gemm.comp,
 * ops/gemm.h). Every image and group goes in one GEMM dispatch (its batch is
 * (image, group)); a node records at most three dispatches.
 *
 *   conv2d:      col (N, G, K, P) = im2col(x); y[n, g] (Og, P) = w_g (Og, K) col[n, g] (K, P) + bias
 *   grad_input:  col (N, G, K, P) float = w_g^T (K, Og) dy[n, g] (Og, P); dx = col2im(col), a gather
 *   grad_weight: col (N, G, K, P) = im2col(x);
 *                part[n, g] (Og, K) float = dy[n, g] (Og, P) col[n, g]^T (P, K); dw = sum over n of part[n]
 * with K = C/groups*KH*KW, P = OH*OW. 1x1 stride-1 unpadded convolutions
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
 * 2^31 elements (the shaders index in 32 bits). */
#include "gemm.h"

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

/* col (N, G, K, P) = im2col(x) in x's storage type */
static loom_status im2col(loom__vk_op *o, const geom *q, const loom_tensor *x, loom__buffer *col) {
    loom__buffer *gm;
    loom_status st = geom_table(o, q, &gm);
    if (st != LOOM_OK) return st;
    int64_t total = q->N * q->G * q->K * q->P;
    loom__vk_call c;
    /* bindings g, x, col: push {xo, n} */
    loom__vk_begin(o, &c, "conv_im2col", x->dtype);
    loom__vk_buf(&c, gm, LOOM__VK_R);
    loom__vk_in(&c, x);
    loom__vk_buf(&c, col, LOOM__VK_W);
    loom__vk_u32(&c, (uint32_t)total);
    return loom__vk_run_1d(&c, total);
}

static bool is_1x1(const geom *q) {
    return q->KH == 1 && q->KW == 1 && q->sh == 1 && q->sw == 1 && q->ph == 0 && q->pw == 0;
}

/* y (N,O,OH,OW) = conv2d(x (N,C,H,W), w (O,Cg,KH,KW)) + bias (O) */
loom_status loom__vk_conv2d(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0], *w = y->src[1];
    geom q = loom__conv_geom_of(y);
    loom_status st;
    /* batch (1, n, g): y[n, g] (Og, P) = w_g (Og, K) @ col[n, g] (K, P) */
    loom__vk_gemm_desc d = {.batch = {1, q.N, q.G}, .M = q.Og, .N = q.P, .K = q.K, .lda = q.K, .ldb = q.P, .ldc = q.P};
    d.a = loom__vk_mat_t(w), d.sa[2] = q.Og * q.K;
    d.c = loom__vk_mat_t(y), d.sc[1] = q.O * q.P, d.sc[2] = q.Og * q.P;
    if (y->nsrc > 2) d.bias = loom__vk_mat_t(y->src[2]), d.sbias[2] = q.Og, d.bias_rs = 1, d.bias_cs = 0;
    if (is_1x1(&q)) { /* x[n, g] (Cg, HW) is the column matrix */
        d.b = loom__vk_mat_t(x), d.sb[1] = q.C * q.P, d.sb[2] = q.Cg * q.P;
    } else {
        loom__buffer *col;
        if ((st = workspace(o, q.N * q.G * q.K * q.P, loom_dtype_size(x->dtype), "im2col", &col)) != LOOM_OK) return st;
        if ((st = im2col(o, &q, x, col)) != LOOM_OK) return st;
        d.b = loom__vk_mat_b(col), d.sb[1] = q.G * q.K * q.P, d.sb[2] = q.K * q.P;
    }
    return loom__vk_gemm(o, y->dtype, &d);
}

/* dx (N,C,H,W) = conv2d_grad_input(dy (N,O,OH,OW), w (O,Cg,KH,KW)) */
loom_status loom__vk_conv2d_grad_input(loom__vk_op *o) {
    const loom_tensor *dx = o->t, *dy = dx->src[0], *w = dx->src[1];
    geom q = loom__conv_geom_of(dx);
    loom_status st;
    /* batch (1, n, g): col[n, g] (K, P) = w_g^T (K, Og) @ dy[n, g] (Og, P) */
    loom__vk_gemm_desc d = {.ta = true, .batch = {1, q.N, q.G}, .M = q.K, .N = q.P, .K = q.Og,
                            .lda = q.K, .ldb = q.P, .ldc = q.P};
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
    int64_t total = loom_tensor_numel(dx);
    loom__vk_call c;
    /* bindings g, col, dx: push {dxo, n} */
    loom__vk_begin(o, &c, "conv_col2im", dx->dtype);
    loom__vk_buf(&c, gm, LOOM__VK_R);
    loom__vk_buf(&c, col, LOOM__VK_R);
    loom__vk_out(&c, dx);
    loom__vk_u32(&c, (uint32_t)total);
    return loom__vk_run_1d(&c, total);
}

/* dw (O,Cg,KH,KW) = conv2d_grad_weight(dy (N,O,OH,OW), x (N,C,H,W)) */
loom_status loom__vk_conv2d_grad_weight(loom__vk_op *o) {
    const loom_tensor *dw = o->t, *dy = dw->src[0], *x = dw->src[1];
    geom q = loom__conv_geom_of(dw);
    loom_status st;
    /* batch (1, n, g): part[n, g] (Og, K) = dy[n, g] (Og, P) @ col[n, g]^T (P, K), in float */
    loom__vk_gemm_desc d = {.tb = true, .c_float = true, .batch = {1, q.N, q.G}, .M = q.Og, .N = q.K, .K = q.P,
                            .lda = q.P, .ldb = q.P, .ldc = q.K};
    d.a = loom__vk_mat_t(dy), d.sa[1] = q.O * q.P, d.sa[2] = q.Og * q.P;
    if (is_1x1(&q)) { /* x[n, g] (Cg, HW) is the column matrix */
        d.b = loom__vk_mat_t(x), d.sb[1] = q.C * q.P, d.sb[2] = q.Cg * q.P;
    } else {
        loom__buffer *col;
        if ((st = workspace(o, q.N * q.G * q.K * q.P, loom_dtype_size(x->dtype), "im2col", &col)) != LOOM_OK) return st;
        if ((st = im2col(o, &q, x, col)) != LOOM_OK) return st;
        d.b = loom__vk_mat_b(col), d.sb[1] = q.G * q.K * q.P, d.sb[2] = q.K * q.P;
    }
    loom__buffer *part;
    if ((st = workspace(o, q.N * q.O * q.K, sizeof(float), "per-image weight gradients", &part)) != LOOM_OK) return st;
    d.c = loom__vk_mat_b(part), d.sc[1] = q.O * q.K, d.sc[2] = q.Og * q.K;
    if ((st = loom__vk_gemm(o, dw->dtype, &d)) != LOOM_OK) return st;
    /* dw = sum over n of part[n] */
    int64_t n = q.O * q.K;
    loom__vk_call c;
    /* bindings part, dw: push {dwo, nparts, n} */
    loom__vk_begin(o, &c, "conv_sum_parts", dw->dtype);
    loom__vk_buf(&c, part, LOOM__VK_R);
    loom__vk_out(&c, dw);
    loom__vk_u32(&c, (uint32_t)q.N), loom__vk_u32(&c, (uint32_t)n);
    return loom__vk_run_1d(&c, n);
}
