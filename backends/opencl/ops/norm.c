/* backends/opencl/ops/norm.c — host side of batch norm, layer norm and their
 * gradient ops (kernels/norm.cl). Optional inputs are found by the src
 * indices in node->p[] (core/ops/norm.c); an absent one is bound to x and
 * flagged off. Batch norm: one work-group per channel (forward, statistics),
 * one item per element (dx); layer norm: one work-group per row (forward,
 * dx, row statistics), one per column (parameter gradients). Every kernel
 * runs from the program of x's dtype; running statistics and the (4, C)
 * batch-norm statistics are f32. */
#include <stdio.h>

#include "../kernel_sizes.h"
#include "../opencl.h"

/* src[idx], or x when absent (idx < 0) */
static const loom_tensor *opt(const loom_tensor *t, int64_t idx) { return idx >= 0 ? t->src[idx] : t->src[0]; }

/* x (N, C, S): N, C and S = prod(dims[2:]) */
static void bn_dims(const loom_tensor *x, int64_t *N, int64_t *C, int64_t *S) {
    *N = x->dims[0], *C = x->dims[1], *S = 1;
    for (int d = 2; d < x->ndim; d++) *S *= x->dims[d];
}

/* Batch norm in training as the split kernels (kernels/norm.cl: bn_colsum,
 * bn_finish, bn_apply; no barriers, no per-element division) rather than one
 * group per channel: on CPU devices (PoCL, the cnn's step at batch 64:
 * batch_norm 7.3 -> 4.2-4.6 ms, batch_norm_grad_params 7.1 -> 4.1-4.6;
 * with four elements per item where S allows, the *4 kernels, 1.2-1.9 and
 * 1.2-1.3: PoCL does not vectorize a loop inside an item across items).
 * LOOM_OPENCL_BN_SPLIT=0|1 forces either (tests). */
static bool bn_split(const loom__cl_op *o) {
    const loom_tensor *y = o->t;
    int64_t N, C, S;
    bn_dims(y->src[0], &N, &C, &S);
    if (!y->p[LOOM_P_BN_TRAIN] || N * S <= 0) return false;
    int e = loom__env_switch("LOOM_OPENCL_BN_SPLIT"); /* checked when the backend was made */
    if (e >= 0) return e == 1;
    return (o->cl->type & CL_DEVICE_TYPE_CPU) != 0;
}

/* elements per item of the split and gradient kernels: 8 where S allows it on an 8-wide device
 * (PoCL on AVX2: one ymm vector per load), else 4 or 1 */
static int64_t bn_width(const loom__cl_op *o, int64_t S) {
    return loom__cl_vw(o->cl) == 8 && S % 8 == 0 ? 8 : S % 4 ? 1 : 4;
}

/* `stem` (one element per item), or its form for `width` elements per item (stem4, stem8, stem16) */
static loom_status bn_kernel(loom__cl_op *o, loom_dtype dt, const char *stem, int64_t width, cl_kernel *k) {
    char name[40];
    if (width > 1) snprintf(name, sizeof name, "%s%lld", stem, (long long)width);
    else snprintf(name, sizeof name, "%s", stem);
    return loom__cl_kernel(o, dt, name, k);
}

/* The split kernels' sums by planes (bn_planesum8: one item per plane (n, c), its S elements one
 * contiguous run) rather than by columns (bn_colsum: one item per position, over the N images, each
 * read a plane apart, which the CPU's prefetchers do not follow): on CPU devices. PoCL on an AMD EPYC
 * (Zen 3), the cnn's four batch-norm sums with bn_finish, per step, 5 interleaved runs: 1.72-2.44
 * (median 2.24) -> 0.92-1.33 (1.08) ms; the first layer's gradient sums 1.15 -> 0.45 ms. Likewise
 * batch_norm_grad's dx (the same arithmetic per element, one item per plane rather than per 4 or 8
 * elements): the cnn's two, 9 interleaved runs, 1.26-1.57 (median 1.38) -> 1.08-1.34 (1.10) ms.
 * Not in reproducible mode.
 * LOOM_OPENCL_BN_PLANES=0|1 forces either (tests). */
static bool bn_planes(const loom__cl_op *o) {
    if (o->cl->reproducible) return false;
    int e = loom__env_switch("LOOM_OPENCL_BN_PLANES"); /* checked when the backend was made */
    if (e >= 0) return e == 1;
    return (o->cl->type & CL_DEVICE_TYPE_CPU) != 0;
}

/* the column sums of x (and dy) into a node-owned cs, then bn_finish into
 * out (mode 0: st (2, C) for bn_apply; 1: the (4, C) gradient statistics) */
static loom_status bn_sums(loom__cl_op *o, const loom_tensor *x, const loom_tensor *dy, int mode, cl_mem out,
                           const loom_tensor *out_t) {
    const loom_tensor *y = o->t;
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    /* positions per item: 16 where the device's float vector is 16 wide (PoCL on AVX-512: the cnn's
     * first layer, the bn harness: the gradient statistics 0.95 -> 0.72-0.76 ms) */
    /* 8 on an 8-wide device where S is a multiple of 4 and C S of 8: items may reach into the next
     * channel (norm.cl's BN_SHIFT8) */
    const int vw = loom__cl_vw(o->cl);
    int64_t cw = vw == 16 && S % 16 == 0 ? 16 : vw == 8 && S % 4 == 0 && (C * S) % 8 == 0 ? 8 : bn_width(o, S);
    const bool planes = bn_planes(o); /* bn_planesum8: cs's columns are the N images */
    const int64_t cols = planes ? N : S;
    cl_mem cs;
    cl_kernel k;
    loom_status st;
    if ((st = loom__cl_scratch(o, (size_t)(dy ? 4 : 2) * (size_t)(C * cols) * sizeof(float), &cs)) != LOOM_OK ||
        (st = planes ? loom__cl_kernel(o, x->dtype, "bn_planesum8", &k) : bn_kernel(o, x->dtype, "bn_colsum", cw, &k)) !=
            LOOM_OK)
        return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, dy ? dy : x), loom__cl_arg_mem(&a, cs);
    loom__cl_arg_i64(&a, N), loom__cl_arg_i64(&a, C), loom__cl_arg_i64(&a, S), loom__cl_arg_i32(&a, dy != NULL);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK ||
        (st = loom__cl_launch_1d(o, k, planes ? N * C : C * S / cw)) != LOOM_OK ||
        (st = loom__cl_kernel(o, x->dtype, "bn_finish", &k)) != LOOM_OK)
        return st;
    bool run = mode == 0 && y->p[LOOM_P_BN_RMEAN] >= 0;
    a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, x), loom__cl_arg_mem(&a, cs);
    loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_RMEAN])), loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_RVAR]));
    if (out_t) loom__cl_arg_t(&a, out_t);
    else loom__cl_arg_mem(&a, out), loom__cl_arg_u64(&a, 0);
    loom__cl_arg_i64(&a, N), loom__cl_arg_i64(&a, C), loom__cl_arg_i64(&a, S), loom__cl_arg_i64(&a, cols);
    loom__cl_arg_i32(&a, mode), loom__cl_arg_i32(&a, run);
    loom__cl_arg_f32(&a, (float)y->f[LOOM_F_BN_EPS]), loom__cl_arg_f32(&a, mode == 0 ? (float)y->f[LOOM_F_BN_MOMENTUM] : 0.0f);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, C);
}

/* the split forward; its apply that of fused group g when g is not NULL (the add and/or
 * relu after it: bn_apply_<add|relu|add_relu>[4]; the 2x2 max pooling and relu: pool2d.cl's
 * bn_apply_pool[_relu] over (window, window row), or on CPU devices its _v8 form, 8 windows at
 * a time in explicit vectors (PoCL, the cnn's layers: 1.01-1.09 -> 0.79-0.82 ms and 0.73 ->
 * 0.65-0.76 ms with the statistics)) */
static loom_status bn_split_forward(loom__cl_op *o, const loom__fuse_group *g) {
    const loom_tensor *y = o->t, *x = y->src[0];
    const loom_tensor *add = g && g->m[LOOM__FU_ADD] >= 0 ? o->plan->exec[g->m[LOOM__FU_ADD]] : NULL;
    const loom_tensor *pool = g && g->m[LOOM__FU_POOL] >= 0 ? o->plan->exec[g->m[LOOM__FU_POOL]] : NULL;
    const loom_tensor *relu = g && g->m[LOOM__FU_RELU] >= 0 ? o->plan->exec[g->m[LOOM__FU_RELU]] : NULL;
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    cl_mem stat;
    cl_kernel k;
    loom_status st;
    const bool v8 = pool && loom__cl_pool_v8(o); /* CPU devices: 8 windows at a time (pool2d.cl) */
    const char *stem = pool ? (v8 ? (relu ? "bn_apply_pool_relu_v8" : "bn_apply_pool_v8")
                                  : (relu ? "bn_apply_pool_relu" : "bn_apply_pool"))
                       : add ? (relu ? "bn_apply_add_relu" : "bn_apply_add")
                       : relu ? "bn_apply_relu" : "bn_apply";
    if ((st = loom__cl_scratch(o, (size_t)(2 * C) * sizeof(float), &stat)) != LOOM_OK ||
        (st = bn_sums(o, x, NULL, 0, stat, NULL)) != LOOM_OK ||
        (st = pool ? loom__cl_kernel(o, x->dtype, stem, &k) : bn_kernel(o, x->dtype, stem, bn_width(o, S), &k)) != LOOM_OK)
        return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_GAMMA])),
        loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_BETA]));
    loom__cl_arg_mem(&a, stat), loom__cl_arg_t(&a, y);
    if (pool) {
        int64_t OH = pool->dims[2], OW = pool->dims[3], rows = N * C * OH;
        loom__cl_arg_t(&a, pool), loom__cl_arg_t(&a, relu ? relu : pool);
        loom__cl_arg_i64(&a, rows), loom__cl_arg_i64(&a, C), loom__cl_arg_i64(&a, OH);
        loom__cl_arg_i64(&a, x->dims[3]), loom__cl_arg_i64(&a, OW);
        loom__cl_arg_i32(&a, y->p[LOOM_P_BN_GAMMA] >= 0), loom__cl_arg_i32(&a, y->p[LOOM_P_BN_BETA] >= 0);
        if (v8) loom__cl_arg_i32(&a, !loom__cl_overlap(o->plan, y, x)); /* whole: y not over x (pool2d.cl) */
        if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
        return v8 ? loom__cl_launch_groups(o, k, (rows + LOOM_CL_MAX2_V8_ROWS - 1) / LOOM_CL_MAX2_V8_ROWS, 1)
                  : loom__cl_launch_window_rows(o, k, OW, rows);
    }
    if (g) { /* other, the add's output, relu's output (y again where absent: not written) */
        loom__cl_arg_t(&a, add ? add->src[add->src[0] == y ? 1 : 0] : y);
        loom__cl_arg_t(&a, add ? add : y), loom__cl_arg_t(&a, relu ? relu : y);
    }
    loom__cl_arg_i64(&a, N), loom__cl_arg_i64(&a, C), loom__cl_arg_i64(&a, S);
    loom__cl_arg_i32(&a, y->p[LOOM_P_BN_GAMMA] >= 0), loom__cl_arg_i32(&a, y->p[LOOM_P_BN_BETA] >= 0);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_2d(o, k, S / bn_width(o, S), N * C);
}

loom_status loom__cl_bn_fused(loom__cl_op *o, const loom__fuse_group *g, bool *done) {
    *done = false;
    const loom_tensor *x = o->t->src[0];
    if (!bn_split(o)) return LOOM_OK;
    if (g->m[LOOM__FU_POOL] >= 0) {
        int64_t nw;
        if (!loom__pool_max2(o->plan->exec[g->m[LOOM__FU_POOL]], x->dims, &nw)) return LOOM_OK;
    }
    loom_status st = bn_split_forward(o, g);
    if (st != LOOM_OK) return st;
    for (int r = LOOM__FU_ADD; r <= LOOM__FU_RELU; r++)
        if (g->m[r] >= 0) loom__cl_fuse_member(o, g->m[r]);
    *done = true;
    return LOOM_OK;
}

loom_status loom__cl_batch_norm(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    if (bn_split(o)) return bn_split_forward(o, NULL);
    size_t local = loom__cl_reduce_local(o->cl, N * S);
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, x->dtype, "batch_norm", &k);
    if (st != LOOM_OK) return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_GAMMA])),
        loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_BETA]));
    loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_RMEAN])), loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_RVAR])),
        loom__cl_arg_t(&a, y);
    loom__cl_arg_i64(&a, N), loom__cl_arg_i64(&a, C), loom__cl_arg_i64(&a, S);
    loom__cl_arg_i32(&a, y->p[LOOM_P_BN_TRAIN] != 0), loom__cl_arg_i32(&a, y->p[LOOM_P_BN_GAMMA] >= 0);
    loom__cl_arg_i32(&a, y->p[LOOM_P_BN_BETA] >= 0), loom__cl_arg_i32(&a, y->p[LOOM_P_BN_RMEAN] >= 0);
    loom__cl_arg_f32(&a, (float)y->f[LOOM_F_BN_EPS]), loom__cl_arg_f32(&a, (float)y->f[LOOM_F_BN_MOMENTUM]);
    loom__cl_arg_local(&a, local * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_groups(o, k, C, local);
}

/* (4, C) per-channel sums for the gradient: `kernel` is batch_norm_grad_params,
 * or repro_batch_norm_grad_params with chunk-sized groups in reproducible mode */
static loom_status bn_grad_params(loom__cl_op *o, const char *kernel, bool repro) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    size_t local = repro ? loom__cl_chunk_local(o->cl, N * S) : loom__cl_reduce_local(o->cl, N * S);
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, x->dtype, kernel, &k);
    if (st != LOOM_OK) return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_DY]));
    loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_RMEAN])), loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_RVAR])),
        loom__cl_arg_t(&a, y);
    loom__cl_arg_i64(&a, N), loom__cl_arg_i64(&a, C), loom__cl_arg_i64(&a, S);
    loom__cl_arg_i32(&a, y->p[LOOM_P_BN_TRAIN] != 0), loom__cl_arg_f32(&a, (float)y->f[LOOM_F_BN_EPS]);
    loom__cl_arg_local(&a, local * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_groups(o, k, C, local);
}

loom_status loom__cl_batch_norm_grad_params(loom__cl_op *o) {
    const loom_tensor *y = o->t;
    if (bn_split(o)) return bn_sums(o, y->src[0], opt(y, y->p[LOOM_P_BN_DY]), 1, NULL, y);
    return bn_grad_params(o, "batch_norm_grad_params", false);
}

loom_status loom__cl_batch_norm_grad(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    cl_kernel k;
    const bool planes = bn_planes(o); /* batch_norm_grad_planes8: one item per plane */
    loom_status st = planes ? loom__cl_kernel(o, x->dtype, "batch_norm_grad_planes8", &k)
                            : bn_kernel(o, x->dtype, "batch_norm_grad", bn_width(o, S), &k);
    if (st != LOOM_OK) return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_GAMMA])),
        loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_DY]));
    loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_STATS])), loom__cl_arg_t(&a, y);
    loom__cl_arg_i64(&a, N), loom__cl_arg_i64(&a, C), loom__cl_arg_i64(&a, S);
    loom__cl_arg_i32(&a, y->p[LOOM_P_BN_TRAIN] != 0), loom__cl_arg_i32(&a, y->p[LOOM_P_BN_GAMMA] >= 0);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return planes ? loom__cl_launch_1d(o, k, N * C) : loom__cl_launch_2d(o, k, S / bn_width(o, S), N * C);
}

/* x viewed as (R, D), D = the last norm_dims dims */
static void ln_dims(const loom_tensor *t, int64_t *R, int64_t *D) {
    const loom_tensor *x = t->src[0];
    int nd = (int)t->p[LOOM_P_LN_DIMS];
    *D = 1;
    for (int d = x->ndim - nd; d < x->ndim; d++) *D *= x->dims[d];
    *R = *D ? loom_tensor_numel(x) / *D : 0;
}

loom_status loom__cl_layer_norm(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t R, D;
    ln_dims(y, &R, &D);
    size_t local = loom__cl_row_local(o->cl, D);
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, x->dtype, "layer_norm", &k);
    if (st != LOOM_OK) return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_LN_GAMMA])),
        loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_LN_BETA]));
    loom__cl_arg_t(&a, y), loom__cl_arg_i64(&a, D), loom__cl_arg_i32(&a, y->p[LOOM_P_LN_GAMMA] >= 0);
    loom__cl_arg_i32(&a, y->p[LOOM_P_LN_BETA] >= 0), loom__cl_arg_f32(&a, (float)y->f[LOOM_F_LN_EPS]);
    loom__cl_arg_local(&a, local * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_groups(o, k, R, local);
}

loom_status loom__cl_layer_norm_grad(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t R, D;
    ln_dims(y, &R, &D);
    size_t local = loom__cl_row_local(o->cl, D);
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, x->dtype, "layer_norm_grad", &k);
    if (st != LOOM_OK) return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_LN_GAMMA])),
        loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_LN_DY]));
    loom__cl_arg_t(&a, y), loom__cl_arg_i64(&a, D), loom__cl_arg_i32(&a, y->p[LOOM_P_LN_GAMMA] >= 0);
    loom__cl_arg_f32(&a, (float)y->f[LOOM_F_LN_EPS]), loom__cl_arg_local(&a, local * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_groups(o, k, R, local);
}

/* row statistics (2, R) into scratch, then one group per column */
loom_status loom__cl_layer_norm_grad_params(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t R, D;
    ln_dims(y, &R, &D);
    size_t lrow = loom__cl_row_local(o->cl, D), lcol = loom__cl_row_local(o->cl, R);
    cl_mem stats;
    cl_kernel k1, k2;
    loom_status st;
    if ((st = loom__cl_scratch(o, (size_t)(2 * R) * sizeof(float), &stats)) != LOOM_OK ||
        (st = loom__cl_kernel(o, x->dtype, "ln_rowstats", &k1)) != LOOM_OK ||
        (st = loom__cl_kernel(o, x->dtype, "layer_norm_grad_params", &k2)) != LOOM_OK)
        return st;
    loom__cl_args a = loom__cl_args_begin(o, k1);
    loom__cl_arg_t(&a, x), loom__cl_arg_mem(&a, stats), loom__cl_arg_i64(&a, R), loom__cl_arg_i64(&a, D);
    loom__cl_arg_f32(&a, (float)y->f[LOOM_F_LN_EPS]), loom__cl_arg_local(&a, lrow * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    a = loom__cl_args_begin(o, k2);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_LN_DY])), loom__cl_arg_mem(&a, stats);
    loom__cl_arg_t(&a, y), loom__cl_arg_i64(&a, R), loom__cl_arg_i64(&a, D);
    loom__cl_arg_local(&a, lcol * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    if ((st = loom__cl_launch_groups(o, k1, R, lrow)) != LOOM_OK) return st;
    return loom__cl_launch_groups(o, k2, D, lcol);
}

/* ---- reproducible mode (core/repro.h; kernels/repro.cl, built only into
 * -DLOOM_REPRO programs): the canonical chunked sums ---- */

loom_status loom__cl_batch_norm_repro(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    double M = (double)(N * S);
    size_t local = loom__cl_chunk_local(o->cl, N * S);
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, x->dtype, "repro_batch_norm", &k);
    if (st != LOOM_OK) return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_GAMMA])),
        loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_BETA]));
    loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_RMEAN])), loom__cl_arg_t(&a, opt(y, y->p[LOOM_P_BN_RVAR])),
        loom__cl_arg_t(&a, y);
    loom__cl_arg_i64(&a, N), loom__cl_arg_i64(&a, C), loom__cl_arg_i64(&a, S);
    loom__cl_arg_i32(&a, y->p[LOOM_P_BN_TRAIN] != 0), loom__cl_arg_i32(&a, y->p[LOOM_P_BN_GAMMA] >= 0);
    loom__cl_arg_i32(&a, y->p[LOOM_P_BN_BETA] >= 0), loom__cl_arg_i32(&a, y->p[LOOM_P_BN_RMEAN] >= 0);
    loom__cl_arg_f32(&a, (float)y->f[LOOM_F_BN_EPS]), loom__cl_arg_f32(&a, (float)(1.0 - y->f[LOOM_F_BN_MOMENTUM]));
    loom__cl_arg_f32(&a, (float)y->f[LOOM_F_BN_MOMENTUM]), loom__cl_arg_f32(&a, M > 1 ? (float)(M / (M - 1)) : 1.0f);
    loom__cl_arg_local(&a, local * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_groups(o, k, C, local);
}

loom_status loom__cl_batch_norm_grad_params_repro(loom__cl_op *o) {
    return bn_grad_params(o, "repro_batch_norm_grad_params", true);
}
