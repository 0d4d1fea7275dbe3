/* backends/opencl/ops/conv2d.c — host side of conv2d, conv2d_grad_input and
 * conv2d_grad_weight (parameters: core/ops/conv2d.c): im2col / col2im
 * (kernels/conv2d.cl) around the batched GEMM (kernels/gemm.cl, ops/gemm.h).
 * Every image and group goes in one launch (the GEMM's batch is (image,
 * group)), so a node records at most three launches.
 *
 *   conv2d:      col (G, K, N*P) = im2col(x); y[n, g] (Og, P) = w_g (Og, K) col_g[:, n*P ..] (K, P) + bias
 *                (1x1, stride 1, no padding: x is the column matrix, no im2col; on GPUs the
 *                GEMM reads the columns from x itself, implicit_fwd: no column buffer)
 *   grad_input:  col (N, G, K, P) float = w_g^T (K, Og) dy[n, g] (Og, P); dx = col2im(col), a gather
 *                (on CPU devices, ungrouped, one pass per dx plane with its columns in private
 *                memory: gi_fused, no column buffer)
 *   grad_weight: col (G, K, N*P) = im2col(x) (or the forward's, the same layout); dyp (O, N*P) = dy permuted;
 *                dw_g (Og, K) = sum over chunks of up to 8 images of dyp_g col_g^T over the chunk
 *                (on GPUs both read where they are inside the GEMM: grad_weight_implicit)
 * with K = C/groups*KH*KW, P = OH*OW. On CPU devices a "same"-padded stride-1 convolution (OH = H,
 * OW = W, ungrouped) takes none of these: its forward, its input gradient (the forward of dy with the
 * weights flipped) and its weight gradient read x and dy where they are, one shift per tap
 * (flat_conv: conv_flat, conv_flat_gw; no columns, no permuted dy).
 *
 * Workspace: per node, sized at plan_prepare (loom__cl_scratch, released with
 * the plan): N*C*KH*KW*P elements of the storage type (float for
 * grad_input; none for the implicit forms), plus N*O*P for grad_weight's
 * permuted dy and its per-chunk float products. LOOM_ERR_OOM when one
 * exceeds the device's largest allocation. */
#include <stdlib.h>
#include <string.h>

#include "../kernel_sizes.h"
#include "gemm.h"

typedef loom__conv_geom geom;

/* a node-owned workspace of n elements of es bytes */
static loom_status workspace(loom__cl_op *o, int64_t n, size_t es, const char *what, cl_mem *out) {
    size_t bytes = (size_t)n * es;
    if (bytes > o->cl->max_alloc_bytes)
        return loom__err(o->cl->ctx, LOOM_ERR_OOM,
                         "opencl: %s (node '%s'): the %s workspace needs %zu bytes, the device's largest buffer is %llu",
                         loom_op_name(o->t->op), o->t->name, what, bytes, (unsigned long long)o->cl->max_alloc_bytes);
    return loom__cl_scratch(o, bytes, out);
}

/* im2col / col2im one work-item per plane (a column plane OH x OW, a dx
 * plane H x W) rather than per element on a CPU device (PoCL runs the
 * per-element 64-bit index divisions lane by lane; once per row of 14 they
 * still cost more than the copy: the cnn's second layer's forward 5.9 ->
 * 4.1-4.5 ms); col2im adds each tap over a dx row's run of positions
 * instead of testing every tap per element (its input gradient 6.2-6.6 ->
 * 4.8-5.2 ms; rows up to 256 wide, else the per-element gather);
 * a GPU keeps the per-element kernels (neighbouring work-items write
 * neighbouring elements). LOOM_OPENCL_CONV_ROWS=0|1 forces either (tests). */
static bool by_rows(const loom__cl_op *o) {
    int e = loom__env_switch("LOOM_OPENCL_CONV_ROWS"); /* checked when the backend was made */
    if (e >= 0) return e == 1;
    return (o->cl->type & CL_DEVICE_TYPE_CPU) != 0;
}

/* conv_im2col of x into col with column strides (image, group, row) */
static loom_status im2col(loom__cl_op *o, const geom *q, const loom_tensor *x, cl_mem col, int64_t sn, int64_t sg,
                          int64_t sk) {
    int64_t g[19] = {q->N, q->C, q->H, q->W, q->KH, q->KW, q->OH, q->OW, q->sh, q->sw,
                     q->ph, q->pw, q->dh, q->dw, q->G, q->Cg, sn, sg, sk};
    cl_mem gm;
    cl_kernel k;
    loom_status st;
    if ((st = loom__cl_meta(o, g, 19, &gm)) != LOOM_OK) return st;
    if ((st = loom__cl_kernel(o, x->dtype, by_rows(o) ? "conv_im2col_rows" : "conv_im2col", &k)) != LOOM_OK) return st;
    int64_t n = by_rows(o) ? q->N * q->G * q->K : q->N * q->G * q->K * q->P; /* planes or elements */
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&ar, x), loom__cl_arg_mem(&ar, col), loom__cl_arg_u64(&ar, 0), loom__cl_arg_mem(&ar, gm);
    loom__cl_arg_i64(&ar, n);
    if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, n);
}

static bool is_1x1(const geom *q) {
    return q->KH == 1 && q->KW == 1 && q->sh == 1 && q->sw == 1 && q->ph == 0 && q->pw == 0;
}

/* The forward's columns read from x inside the GEMM (gemm.cl's
 * gemm_nn_conv: implicit GEMM; the weight gradient likewise,
 * grad_weight_implicit), without the N*C*KH*KW*OH*OW column
 * buffer: the default on GPUs, where the tiled GEMM runs anyway and the
 * buffer is the memory a large layer cannot spare; a CPU device (PoCL)
 * keeps im2col + its register GEMM, which it runs faster.
 * LOOM_OPENCL_CONV_IMPLICIT=0|1 forces either (tests). The sums are
 * im2col + gemm_nn's, the same bits (reproducible mode included). */
static bool implicit_fwd(const loom__cl_op *o) {
    int e = loom__env_switch("LOOM_OPENCL_CONV_IMPLICIT"); /* checked when the backend was made */
    if (e >= 0) return e == 1;
    return !(o->cl->type & CL_DEVICE_TYPE_CPU) && o->cl->max_wg >= 256; /* the tiled GEMM's work-groups */
}

/* On the column path of an ungrouped convolution on a CPU device, the
 * forward runs one product over the whole batch rather than one per image:
 * y (O, N*P) = w (O, K) @ col (K, N*P), stored as y (N, O, P) through the
 * GEMM's column segments (a 196-column image leaves each row a part-empty
 * last tile; 12544 columns do not). Each output is the same sum in the same
 * order: the same bits. Not in reproducible mode (its canonical path
 * stays); LOOM_OPENCL_CONV_ONE=0|1 turns it off or on (tests). PoCL, the
 * cnn's second layer: 4.6-4.8 -> 4.2-4.4 ms. The input gradient's product
 * (K = O = 64) gained nothing in one piece (with dy permuted, as the weight
 * gradient permutes it, shared): it stays per image. */
static bool one_product(const loom__cl_op *o, const geom *q) {
    if (o->cl->reproducible || q->G != 1 || is_1x1(q) || implicit_fwd(o)) return false;
    int e = loom__env_switch("LOOM_OPENCL_CONV_ONE"); /* checked when the backend was made */
    if (e >= 0) return e == 1;
    return (o->cl->type & CL_DEVICE_TYPE_CPU) != 0;
}

/* A "same"-padded convolution (stride 1, dilation 1, OH = H, OW = W,
 * ungrouped, not 1x1) on a CPU device in one kernel with no column buffer
 * (kernels/conv2d.cl's conv_flat: each output position reads every input
 * plane at one shift per tap, so a run of positions is one vector load):
 * the forward, and the input gradient as the forward convolution of dy
 * with the flipped weights (loom__conv_gi_as_forward, same padding again).
 * The forward's sums are im2col + the register GEMM's, the same bits; the
 * input gradient's are the forward-of-dy's (O*KH*KW terms per dx element,
 * in one chain, rather than the column path's KH*KW sums of O terms).
 * PoCL on an Intel Xeon (AVX-512), the cnn's second layer (64 x 32 x 14 x 14,
 * 64 3x3 filters; AVX2 hosts: kernel_sizes.h, flat_forward below): forward
 * (im2col 1.2 + GEMM 2.2-2.7) 3.4-3.6 -> 1.9-2.2 ms, input gradient (one pass
 * per plane) 4.5-4.6 -> 2.1-2.4 ms; the first layer's forward 0.42-0.46 ->
 * 0.34-0.36 ms. Not in reproducible mode;
 * LOOM_OPENCL_CONV_FLAT=0|1 turns it off or on where it applies (tests). */
static bool flat_conv(const loom__cl_op *o, const geom *q) {
    if (o->cl->reproducible || q->G != 1 || is_1x1(q) || q->sh != 1 || q->sw != 1 || q->dh != 1 || q->dw != 1 ||
        q->OH != q->H || q->OW != q->W || q->KH * q->KW > LOOM_CL_CF_TAPS || q->P >= ((int64_t)1 << 22))
        return false;
    int e = loom__env_switch("LOOM_OPENCL_CONV_FLAT"); /* checked when the backend was made */
    if (e >= 0) return e == 1;
    return (o->cl->type & CL_DEVICE_TYPE_CPU) && !implicit_fwd(o);
}

/* conv_flat as a forward (also an input gradient's forward of dy): on 8-wide
 * devices (AVX2) not for sums of 10 to 31 terms, where each work-item's tap
 * masks cost more than its sums; sums of at most 9 terms (a first layer,
 * C = 1, 3x3) take conv_flat_c1 (its input vectors loaded once for every
 * output channel). PoCL on an AMD EPYC (Zen 3), the cnn's first layer:
 * conv_flat 1.16-1.22 ms, im2col + GEMM 1.18-1.52 (median 1.44), conv_flat_c1
 * 0.92-1.15 (median 1.04), interleaved. Its weight gradient stays flat
 * (0.38 vs 0.94-1.21 ms). */
static bool flat_forward(const loom__cl_op *o, const geom *q) {
    if (!flat_conv(o, q)) return false;
    return loom__cl_vw(o->cl) == 16 || q->K >= 32 || q->K <= LOOM_CL_CF_C1_TAPS ||
           loom__env_switch("LOOM_OPENCL_CONV_FLAT") == 1;
}

/* y = conv_flat(x, w) (+ bias) of geometry q, x and y each a buffer and
 * element offset; w the forward's weights (O, C, KH, KW), or with flip the
 * input gradient's (the convolution's own (C, O, KH, KW), read flipped) */
static loom_status run_flat(loom__cl_op *o, const geom *q, loom__cl_mat x, const loom_tensor *w, bool flip,
                            const loom_tensor *bias, loom__cl_mat y, loom_dtype dt) {
    const bool w16 = loom__cl_vw(o->cl) == 16; /* conv2d.cl's CF_RB and CF_NV by GI_VW */
    const int64_t rb = w16 ? LOOM_CL_CF_RB16 : LOOM_CL_CF_RB8, khw = q->KH * q->KW, ob = (q->O + rb - 1) / rb;
    const bool c1 = !w16 && q->C * khw <= LOOM_CL_CF_C1_TAPS; /* conv_flat_c1: all channels per item */
    const int64_t vec = loom__cl_vw(o->cl) * (c1 ? 1 : w16 ? LOOM_CL_CF_NV16 : LOOM_CL_CF_NV8); /* positions per item */
    cl_mem wp;
    cl_kernel k;
    loom_status st;
    if ((st = workspace(o, ob * rb * q->C * khw, sizeof(float), "packed weights", &wp)) != LOOM_OK ||
        (st = loom__cl_kernel(o, dt, "conv_wpack", &k)) != LOOM_OK)
        return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, w), loom__cl_arg_mem(&a, wp), loom__cl_arg_i64(&a, q->O), loom__cl_arg_i64(&a, q->C);
    loom__cl_arg_i64(&a, khw), loom__cl_arg_i32(&a, flip);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK || (st = loom__cl_launch_1d(o, k, ob * q->C * khw)) != LOOM_OK ||
        (st = loom__cl_kernel(o, dt, c1 ? "conv_flat_c1" : "conv_flat", &k)) != LOOM_OK)
        return st;
    a = loom__cl_args_begin(o, k);
    loom__cl_arg_mem(&a, x.mem), loom__cl_arg_u64(&a, x.off), loom__cl_arg_mem(&a, wp);
    if (bias)
        loom__cl_arg_t(&a, bias);
    else
        loom__cl_arg_mem(&a, wp), loom__cl_arg_u64(&a, 0);
    loom__cl_arg_i32(&a, bias != NULL), loom__cl_arg_mem(&a, y.mem), loom__cl_arg_u64(&a, y.off);
    int64_t v[9] = {q->N, q->C, q->H, q->W, q->O, q->KH, q->KW, q->ph, q->pw};
    for (int i = 0; i < 9; i++) loom__cl_arg_i64(&a, v[i]);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    if (c1) return loom__cl_launch_groups(o, k, q->N * ((q->P + vec - 1) / vec), 1);
    /* conv_flat: chunks of cb blocks of vectors (vec positions each), every block for ob channel blocks */
    const int64_t vw = loom__cl_vw(o->cl), nvec = vec / vw, pv = (q->P + vw - 1) / vw;
    const int64_t nb = (q->N * pv + nvec - 1) / nvec, cb = (pv + nvec - 1) / nvec;
    return loom__cl_launch_groups(o, k, (nb + cb - 1) / cb * cb * ob, 1);
}

/* y (N,O,OH,OW) = conv2d(x (N,C,H,W), w (O,Cg,KH,KW)) + bias (O) */
loom_status loom__cl_conv2d(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0], *w = y->src[1];
    geom q = loom__conv_geom_of(y);
    loom_status st;
    if (flat_forward(o, &q) && x->dtype == y->dtype && w->dtype == y->dtype &&
        (y->nsrc < 3 || y->src[2]->dtype == y->dtype)) {
        return run_flat(o, &q, loom__cl_mat_t(o, x), w, false, y->nsrc > 2 ? y->src[2] : NULL, loom__cl_mat_t(o, y),
                        y->dtype);
    }
    /* batch (1, n, g): y[n, g] (Og, P) = w_g (Og, K) @ col[n, g] (K, P) */
    loom__cl_gemm_desc d = {.batch = {1, q.N, q.G}, .M = q.Og, .N = q.P, .K = q.K, .lda = q.K, .ldb = q.P, .ldc = q.P};
    d.a = loom__cl_mat_t(o, w), d.sa[2] = q.Og * q.K;
    d.c = loom__cl_mat_t(o, y), d.sc[1] = q.O * q.P, d.sc[2] = q.Og * q.P;
    if (y->nsrc > 2) d.bias = loom__cl_mat_t(o, y->src[2]), d.sbias[2] = q.Og, d.bias_rs = 1, d.bias_cs = 0;
    int64_t cg[LOOM__CONV_IMPLICIT_LEN];
    loom__conv_implicit_table(&q, cg);
    if (is_1x1(&q)) { /* x[n, g] (Cg, HW) is the column matrix */
        d.b = loom__cl_mat_t(o, x), d.sb[1] = q.C * q.P, d.sb[2] = q.Cg * q.P;
    } else if (implicit_fwd(o)) { /* B = x[n, g] (Cg, H, W), read as its columns */
        d.b = loom__cl_mat_t(o, x), d.sb[1] = q.C * q.H * q.W, d.sb[2] = q.Cg * q.H * q.W, d.conv = cg;
    } else { /* col (G, K, N*P): image n's columns at n*P of each row, the weight gradient's layout */
        int64_t L = q.N * q.P;
        cl_mem col;
        if ((st = workspace(o, q.N * q.G * q.K * q.P, loom_dtype_size(x->dtype), "im2col", &col)) != LOOM_OK) return st;
        if ((st = im2col(o, &q, x, col, q.P, q.K * L, L)) != LOOM_OK) return st;
        d.b = (loom__cl_mat){col, 0}, d.ldb = L, d.sb[1] = q.P, d.sb[2] = q.K * L;
        o->node->cols = col; /* for forward_columns() */
        if (one_product(o, &q)) /* y (O, N*P) in segments of P columns, O*P apart */
            d.batch[1] = 1, d.N = L, d.sb[1] = d.sc[1] = 0, d.cseg = q.P, d.csegs = q.O * q.P;
    }
    return loom__cl_gemm(o, y->dtype, &d);
}

/* A stride-1 convolution's input gradient as a forward convolution of dy
 * (loom__conv_gi_as_forward): one product of K = O*KH*KW terms per dx
 * element instead of a float K x P column buffer of O-term sums and its
 * gather. On GPUs (with the implicit forward: no column buffer at all), or
 * when LOOM_OPENCL_CONV_GI_FWD=1; off on CPU devices: PoCL (2 cores) runs
 * it slower (the cnn's second layer, bench-gemm_conv: 7.2 -> 10.2 ms; its
 * column buffer is twice the size). Never in reproducible mode (other sums
 * than the column path's). */
static bool gi_forward(const loom__cl_op *o) {
    int e = loom__env_switch("LOOM_OPENCL_CONV_GI_FWD"); /* checked when the backend was made */
    if (e >= 0) return e == 1;
    return implicit_fwd(o);
}

static loom_status grad_input_forward(loom__cl_op *o, const geom *q, const geom *f0) {
    const loom_tensor *dx = o->t, *dy = dx->src[0], *w = dx->src[1];
    const geom f = *f0; /* the forward convolution of dy */
    size_t es = loom_dtype_size(dx->dtype);
    const bool flat = flat_forward(o, &f), imp = !flat && implicit_fwd(o);
    cl_mem wt, col = NULL;
    cl_kernel k;
    loom_status st;
    if (flat) return run_flat(o, &f, loom__cl_mat_t(o, dy), w, true, NULL, loom__cl_mat_t(o, dx), dx->dtype);
    if ((st = workspace(o, q->O * q->C * q->KH * q->KW, es, "flipped weights", &wt)) != LOOM_OK ||
        (!imp && (st = workspace(o, f.N * f.K * f.P, es, "im2col", &col)) != LOOM_OK))
        return st;
    if ((st = loom__cl_kernel(o, w->dtype, "conv_wflip", &k)) != LOOM_OK) return st;
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&ar, w), loom__cl_arg_mem(&ar, wt), loom__cl_arg_u64(&ar, 0);
    loom__cl_arg_i64(&ar, q->O), loom__cl_arg_i64(&ar, q->C), loom__cl_arg_i64(&ar, q->KH * q->KW);
    if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
    if ((st = loom__cl_launch_1d(o, k, q->O * q->C * q->KH * q->KW)) != LOOM_OK) return st;
    /* batch (1, n, 1): dx[n] (C, H*W) = wt (C, K) @ col[n] (K, H*W) */
    loom__cl_gemm_desc d = {.batch = {1, f.N, 1}, .M = f.Og, .N = f.P, .K = f.K, .lda = f.K, .ldb = f.P, .ldc = f.P};
    d.a = (loom__cl_mat){wt, 0};
    int64_t cg[LOOM__CONV_IMPLICIT_LEN];
    loom__conv_implicit_table(&f, cg);
    if (imp) { /* the columns read from dy[n] (O, OH, OW) */
        d.b = loom__cl_mat_t(o, dy), d.sb[1] = f.C * f.H * f.W, d.conv = cg;
    } else {
        if ((st = im2col(o, &f, dy, col, f.K * f.P, f.K * f.P, f.P)) != LOOM_OK) return st;
        d.b = (loom__cl_mat){col, 0}, d.sb[1] = f.K * f.P;
    }
    d.c = loom__cl_mat_t(o, dx), d.sc[1] = f.O * f.P;
    return loom__cl_gemm(o, dx->dtype, &d);
}

/* An ungrouped input gradient on a CPU device in one pass per dx plane
 * (conv_gi_fused): each plane's KH*KW rows of columns computed into the
 * work-item's private memory and gathered there, instead of the product
 * writing a float column buffer of N*K*P values that col2im reads back
 * (PoCL, the cnn's second layer: 5.7-6.1 -> 4.5-4.7 ms; 8-wide vectors, as
 * on an AVX2 device, 5.3). The same fma chains and the
 * same gather order: the same bits. Where the plane's columns fit
 * (KH*KW*OH*OW <= LOOM_CL_GI_FUSED_MAX, kernel_sizes.h) and a row fits
 * COL2IM_ROW_MAX; not in reproducible mode; LOOM_OPENCL_CONV_GI_FUSED=0|1
 * turns it off or on where it applies (tests). */
static bool gi_fused(const loom__cl_op *o, const geom *q) {
    const loom_tensor *dx = o->t;
    if (o->cl->reproducible || q->G != 1 || is_1x1(q) || q->KH * q->KW * q->P > LOOM_CL_GI_FUSED_MAX ||
        q->W > LOOM_CL_COL2IM_ROW_MAX || dx->src[0]->dtype != dx->dtype || dx->src[1]->dtype != dx->dtype)
        return false;
    int e = loom__env_switch("LOOM_OPENCL_CONV_GI_FUSED"); /* checked when the backend was made */
    if (e >= 0) return e == 1;
    return (o->cl->type & CL_DEVICE_TYPE_CPU) != 0;
}

/* dx (N,C,H,W) = conv2d_grad_input(dy (N,O,OH,OW), w (O,Cg,KH,KW)) */
loom_status loom__cl_conv2d_grad_input(loom__cl_op *o) {
    const loom_tensor *dx = o->t, *dy = dx->src[0], *w = dx->src[1];
    geom q = loom__conv_geom_of(dx);
    loom_status st;
    geom f;
    if (!o->cl->reproducible && dy->dtype == dx->dtype && w->dtype == dx->dtype &&
        loom__conv_gi_as_forward(&q, &f) && (gi_forward(o) || flat_forward(o, &f)))
        return grad_input_forward(o, &q, &f);
    if (gi_fused(o, &q)) {
        int64_t g[16] = {q.N, q.C, q.H, q.W, q.KH, q.KW, q.OH, q.OW, q.sh, q.sw, q.ph, q.pw, q.dh, q.dw, q.G, q.Cg};
        cl_mem gm;
        cl_kernel k;
        if ((st = loom__cl_meta(o, g, 16, &gm)) != LOOM_OK ||
            (st = loom__cl_kernel(o, dx->dtype, "conv_gi_fused", &k)) != LOOM_OK)
            return st;
        loom__cl_args ar = loom__cl_args_begin(o, k);
        loom__cl_arg_t(&ar, dy), loom__cl_arg_t(&ar, w), loom__cl_arg_t(&ar, dx), loom__cl_arg_mem(&ar, gm);
        loom__cl_arg_i64(&ar, q.O), loom__cl_arg_i64(&ar, q.N * q.C);
        if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
        return loom__cl_launch_groups(o, k, q.N * q.C, 1);
    }
    cl_mem col;
    if ((st = workspace(o, q.N * q.G * q.K * q.P, sizeof(float), "column", &col)) != LOOM_OK) return st;
    /* batch (1, n, g): col[n, g] (K, P) = w_g^T (K, Og) @ dy[n, g] (Og, P), in float */
    loom__cl_gemm_desc d = {.ta = true, .c_float = true, .batch = {1, q.N, q.G}, .M = q.K, .N = q.P, .K = q.Og,
                            .lda = q.K, .ldb = q.P, .ldc = q.P};
    d.a = loom__cl_mat_t(o, w), d.sa[2] = q.Og * q.K;
    d.b = loom__cl_mat_t(o, dy), d.sb[1] = q.O * q.P, d.sb[2] = q.Og * q.P;
    d.c = (loom__cl_mat){col, 0}, d.sc[1] = q.G * q.K * q.P, d.sc[2] = q.K * q.P;
    if ((st = loom__cl_gemm(o, dx->dtype, &d)) != LOOM_OK) return st;
    int64_t g[19] = {q.N, q.C, q.H, q.W, q.KH, q.KW, q.OH, q.OW, q.sh, q.sw,
                     q.ph, q.pw, q.dh, q.dw, q.G, q.Cg, q.G * q.K * q.P, q.K * q.P, q.P};
    cl_mem gm;
    cl_kernel k;
    if ((st = loom__cl_meta(o, g, 19, &gm)) != LOOM_OK) return st;
    const bool rows = by_rows(o) && q.W <= LOOM_CL_COL2IM_ROW_MAX;
    if ((st = loom__cl_kernel(o, dx->dtype, rows ? "conv_col2im_rows" : "conv_col2im", &k)) != LOOM_OK) return st;
    int64_t n = rows ? q.N * q.C : loom_tensor_numel(dx); /* planes or elements */
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_mem(&ar, col), loom__cl_arg_u64(&ar, 0), loom__cl_arg_t(&ar, dx), loom__cl_arg_mem(&ar, gm);
    loom__cl_arg_i64(&ar, n);
    if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, n);
}

/* dw (O,Cg,KH,KW) = conv2d_grad_weight(dy (N,O,OH,OW), x (N,C,H,W)) */
/* An ungrouped weight gradient whose O x K is under one GEMM tile (64 x 64)
 * on a CPU device: the per-image products as dot products (conv_gw_dot)
 * rather than GEMMs that fill a few of a tile's rows and columns (PoCL, the
 * cnn's first layer, K = 9: the step's conv2d_grad_weight 12.1-12.4 ->
 * 8.5-9.8 ms); not in reproducible mode (its sums are not the canonical
 * chunks). LOOM_OPENCL_CONV_GW_DOT=0|1 forces it off or on where it
 * applies (tests). */
static bool gw_dot(const loom__cl_op *o, const geom *q) {
    if (o->cl->reproducible || q->G != 1 || q->P % 8) return false;
    int e = loom__env_switch("LOOM_OPENCL_CONV_GW_DOT"); /* checked when the backend was made */
    if (e >= 0) return e == 1;
    return (o->cl->type & CL_DEVICE_TYPE_CPU) && q->O * q->K < 64 * 64;
}

/* dw = the sum, in order, of nparts float products part[s] (each dw's size) */
static loom_status sum_parts(loom__cl_op *o, cl_mem part, int64_t nparts) {
    const loom_tensor *dw = o->t;
    int64_t n = loom_tensor_numel(dw);
    cl_kernel k;
    loom_status st;
    /* CPU devices: 8 elements per item (PoCL on an AMD EPYC, Zen 3: the cnn's second layer, 16 parts of
     * 18432, 0.21-0.28 -> 0.05-0.06 ms) */
    const bool v8 = !o->cl->reproducible && (o->cl->type & CL_DEVICE_TYPE_CPU) && n % 8 == 0;
    if ((st = loom__cl_kernel(o, dw->dtype, v8 ? "conv_sum_parts8" : "conv_sum_parts", &k)) != LOOM_OK) return st;
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_mem(&ar, part), loom__cl_arg_u64(&ar, 0), loom__cl_arg_t(&ar, dw);
    loom__cl_arg_i64(&ar, nparts), loom__cl_arg_i64(&ar, n);
    if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, v8 ? n / 8 : n);
}

/* dw = the sum over chunks of images of dy_chunk (Og, CH*P) @ cols_chunk^T
 * as implicit GEMM (gemm_nt_cf_conv: dy and the columns of x read where they
 * are, no column buffer and no permuted dy; the chunks and sums of the
 * column path below, so the same bits) */
static loom_status grad_weight_implicit(loom__cl_op *o, const geom *q) {
    const loom_tensor *dw = o->t, *dy = dw->src[0], *x = dw->src[1];
    int64_t ch = loom__conv_gw_chunk(q->N, o->cl->reproducible), nparts = q->N / ch;
    int64_t cg[LOOM__CONV_IMPLICIT_LEN];
    loom__conv_implicit_table(q, cg);
    cl_mem part;
    loom_status st;
    if ((st = workspace(o, nparts * q->O * q->K, sizeof(float), "weight gradient parts", &part)) != LOOM_OK) return st;
    /* batch (1, s, g): part[s, g] (Og, K) = dy[s*CH .., g] (Og, CH*P) @ cols_g(x[s*CH ..])^T */
    loom__cl_gemm_desc d = {.tb = true, .c_float = true, .batch = {1, nparts, q->G}, .M = q->Og, .N = q->K,
                            .K = ch * q->P, .ldc = q->K, .conv = cg};
    d.a = loom__cl_mat_t(o, dy), d.sa[1] = ch * q->O * q->P, d.sa[2] = q->Og * q->P;
    d.b = loom__cl_mat_t(o, x), d.sb[1] = ch * q->C * q->H * q->W, d.sb[2] = q->Cg * q->H * q->W;
    d.c = (loom__cl_mat){part, 0}, d.sc[1] = q->O * q->K, d.sc[2] = q->Og * q->K;
    if ((st = loom__cl_gemm(o, dw->dtype, &d)) != LOOM_OK) return st;
    return sum_parts(o, part, nparts);
}

/* The column buffer (G, K, N*P) of x that the forward of the same
 * convolution wrote earlier in this plan (its node's cols), or NULL: the
 * weight gradient then skips its own im2col into that layout (PoCL, the
 * cnn's second layer: 8.0-8.6 -> 6.0-6.1 ms when it first read them, as
 * per-image products). x is unchanged between the two (the gradient reads
 * x itself), and the buffer is that node's own. Not in reproducible mode
 * (the canonical path runs its own im2col) nor with
 * LOOM_OPENCL_CONV_SHARE_COLS=0. */
static cl_mem forward_columns(const loom__cl_op *o, const geom *q, const loom_tensor *x) {
    if (o->cl->reproducible || loom__env_switch("LOOM_OPENCL_CONV_SHARE_COLS") == 0) return NULL;
    for (const loom__cl_node *n = o->first; n < o->node; n++) {
        const loom_tensor *t = n->t;
        if (!n->cols || t->op != LOOM_OP_CONV2D || t->src[0] != x) continue;
        geom f = loom__conv_geom_of(t);
        if (loom__conv_geom_same(&f, q))
            return n->cols;
    }
    return NULL;
}

/* The weight gradient of a convolution that flat_conv runs (conv_flat_gw:
 * each work-item sums dy times x at one shift per tap over a chunk of
 * images, its positions in vector lanes, its lane masks a table made first
 * (conv_flat_masks); no column buffer, no permuted dy), then the chunks'
 * sums in order (conv_sum_parts).
 * PoCL, the cnn's second layer: 3.5-3.6 ms, as its own im2col and product
 * (2.3 ms when it shared the forward's columns, which the forward no longer
 * writes); the first layer: 0.53-0.58 -> 0.33 ms. */
static loom_status run_flat_grad_weight(loom__cl_op *o, const geom *q) {
    const loom_tensor *dw = o->t, *dy = dw->src[0], *x = dw->src[1];
    /* images per part: the largest divisor of N up to 4 (a part's dy stays in L1; 8: 4% slower) */
    int64_t ch = loom__conv_chunk(q->N, 4), nparts = q->N / ch;
    const bool w16 = loom__cl_vw(o->cl) == 16; /* conv2d.cl's CF_GO and CF_GK by GI_VW */
    const int64_t go = w16 ? LOOM_CL_CF_GO16 : LOOM_CL_CF_GO8, gk = w16 ? LOOM_CL_CF_GK16 : LOOM_CL_CF_GK8;
    int64_t items = nparts * ((q->O + go - 1) / go) * q->C * q->KH * ((q->KW + gk - 1) / gk);
    int64_t vw = loom__cl_vw(o->cl), nm = q->KH * q->KW * ((q->P + vw - 1) / vw * vw);
    cl_mem part, masks;
    cl_kernel k;
    loom_status st;
    if ((st = workspace(o, nparts * q->O * q->K, sizeof(float), "weight gradient parts", &part)) != LOOM_OK ||
        (st = workspace(o, nm, sizeof(int32_t), "tap masks", &masks)) != LOOM_OK ||
        (st = loom__cl_kernel(o, dw->dtype, "conv_flat_masks", &k)) != LOOM_OK)
        return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_mem(&a, masks), loom__cl_arg_i64(&a, q->H), loom__cl_arg_i64(&a, q->W), loom__cl_arg_i64(&a, q->KW);
    loom__cl_arg_i64(&a, q->ph), loom__cl_arg_i64(&a, q->pw), loom__cl_arg_i64(&a, nm);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK || (st = loom__cl_launch_1d(o, k, nm)) != LOOM_OK ||
        (st = loom__cl_kernel(o, dw->dtype, "conv_flat_gw", &k)) != LOOM_OK)
        return st;
    a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, dy), loom__cl_arg_t(&a, x), loom__cl_arg_mem(&a, masks), loom__cl_arg_mem(&a, part);
    int64_t v[10] = {q->N, q->C, q->H, q->W, q->O, q->KH, q->KW, q->ph, q->pw, ch};
    for (int i = 0; i < 10; i++) loom__cl_arg_i64(&a, v[i]);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK || (st = loom__cl_launch_groups(o, k, items, 1)) != LOOM_OK) return st;
    return sum_parts(o, part, nparts);
}

loom_status loom__cl_conv2d_grad_weight(loom__cl_op *o) {
    const loom_tensor *dw = o->t, *dy = dw->src[0], *x = dw->src[1];
    geom q = loom__conv_geom_of(dw);
    size_t es = loom_dtype_size(dw->dtype);
    int64_t L = q.N * q.P;
    loom_status st;
    cl_mem col, dyp;
    cl_kernel k;
    if (!gw_dot(o, &q) && implicit_fwd(o)) return grad_weight_implicit(o, &q);
    if (dy->dtype == dw->dtype && x->dtype == dw->dtype && flat_conv(o, &q)) return run_flat_grad_weight(o, &q);
    /* col (G, K, N*P): image n's columns at n*P of each row; the forward's when it wrote them */
    if (!(col = forward_columns(o, &q, x))) {
        if ((st = workspace(o, q.G * q.K * L, es, "im2col", &col)) != LOOM_OK) return st;
        if ((st = im2col(o, &q, x, col, q.P, q.K * L, L)) != LOOM_OK) return st;
    }
    if (gw_dot(o, &q)) { /* part (N, O, K) per image, then the sum over the images */
        cl_mem part;
        if ((st = workspace(o, q.N * q.O * q.K, sizeof(float), "weight gradient parts", &part)) != LOOM_OK ||
            (st = loom__cl_kernel(o, dw->dtype, "conv_gw_dot", &k)) != LOOM_OK)
            return st;
        loom__cl_args ar = loom__cl_args_begin(o, k);
        loom__cl_arg_t(&ar, dy), loom__cl_arg_mem(&ar, col), loom__cl_arg_mem(&ar, part);
        loom__cl_arg_i64(&ar, q.N), loom__cl_arg_i64(&ar, q.O), loom__cl_arg_i64(&ar, q.K), loom__cl_arg_i64(&ar, q.P);
        if ((st = loom__cl_args_end(&ar)) != LOOM_OK || (st = loom__cl_launch_2d(o, k, q.O * q.K, q.N)) != LOOM_OK)
            return st;
        return sum_parts(o, part, q.N);
    }
    /* dyp (O, N*P) = dy (N, O, P) permuted */
    if ((st = workspace(o, q.O * L, es, "permuted dy", &dyp)) != LOOM_OK) return st;
    if ((st = loom__cl_kernel(o, dw->dtype, by_rows(o) ? "conv_dy_perm_rows" : "conv_dy_perm", &k)) != LOOM_OK)
        return st;
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&ar, dy), loom__cl_arg_mem(&ar, dyp), loom__cl_arg_u64(&ar, 0);
    loom__cl_arg_i64(&ar, q.N), loom__cl_arg_i64(&ar, q.O), loom__cl_arg_i64(&ar, q.P);
    if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
    if ((st = loom__cl_launch_1d(o, k, by_rows(o) ? q.O * q.N : q.O * L)) != LOOM_OK) return st;
    /* One product per chunk of CH images (loom__conv_gw_chunk: the largest
     * divisor of N up to 8, 1 in reproducible mode), then a sum over the
     * chunks: summing N*P terms in one f32 accumulator loses ~1e-4 relative
     * for N*P ~ 5e4 (and its rounding differs from the CPU's blocked GEMM);
     * CH*P-term products added over N/CH stay within ~1e-6.
     * batch (1, s, g): part[s, g] (Og, K) = dyp_g[:, s*CH*P ..] (Og, CH*P) @ col_g[:, s*CH*P ..]^T */
    int64_t ch = loom__conv_gw_chunk(q.N, o->cl->reproducible), nparts = q.N / ch;
    cl_mem part;
    if ((st = workspace(o, nparts * q.O * q.K, sizeof(float), "weight gradient parts", &part)) != LOOM_OK) return st;
    loom__cl_gemm_desc d = {.tb = true, .c_float = true, .batch = {1, nparts, q.G}, .M = q.Og, .N = q.K, .K = ch * q.P,
                            .lda = L, .ldb = L, .ldc = q.K};
    d.a = (loom__cl_mat){dyp, 0}, d.sa[1] = ch * q.P, d.sa[2] = q.Og * L;
    d.b = (loom__cl_mat){col, 0}, d.sb[1] = ch * q.P, d.sb[2] = q.K * L;
    d.c = (loom__cl_mat){part, 0}, d.sc[1] = q.O * q.K, d.sc[2] = q.Og * q.K;
    if ((st = loom__cl_gemm(o, dw->dtype, &d)) != LOOM_OK) return st;
    return sum_parts(o, part, nparts); /* dw = sum over s of part[s] */
}
