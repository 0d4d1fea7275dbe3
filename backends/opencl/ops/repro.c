/* backends/opencl/ops/repro.c — host side of reproducible mode (core/repro.h;
 * the kernels are kernels/repro.cl, built only into -DLOOM_REPRO programs):
 * sum, mean, batch_norm, batch_norm_grad_params, cross_entropy and
 * cross_entropy_grad. dispatch.c runs loom__cl_repro_kernels[op] instead of
 * the ordinary host function when the backend is reproducible and the entry
 * is set. The other canonical ops keep their ordinary host functions: the
 * GEMM family (matmul, linear, conv2d and its gradients) gets its canonical
 * kernels from the same -DLOOM_REPRO program (gemm.cl, conv2d.cl), and
 * batch_norm_grad's kernel already is the canonical formula. Factors the
 * CPU forms in double (momentum, M / (M - 1), label smoothing) are formed
 * here the same way and passed as floats. */
#include "../../../core/repro.h"
#include "../opencl.h"

/* a work-group for a csum over n values: one item per chunk, up to the limit */
static size_t chunk_local(const loom__cl *cl, int64_t n) {
    return loom__cl_reduce_local(cl, (n + LOOM__REPRO_CHUNK - 1) / LOOM__REPRO_CHUNK);
}

static loom_status repro_reduce(loom__cl_op *o, bool mean) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t g[23];
    int64_t count = loom__reduce_table(y, g);
    cl_mem gm;
    cl_kernel k;
    loom_status st;
    if ((st = loom__cl_meta(o, g, 23, &gm)) != LOOM_OK) return st;
    if ((st = loom__cl_kernel(o, y->dtype, "repro_reduce", &k)) != LOOM_OK) return st;
    size_t local = chunk_local(o->cl, count);
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_mem(&a, gm), loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, y), loom__cl_arg_i32(&a, mean);
    loom__cl_arg_local(&a, local * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_groups(o, k, loom_tensor_numel(y), local);
}
static loom_status repro_sum(loom__cl_op *o) { return repro_reduce(o, false); }
static loom_status repro_mean(loom__cl_op *o) { return repro_reduce(o, true); }

/* ---- batch norm (indices into node->p: core/ops/norm.c) ---- */

static const loom_tensor *opt(const loom_tensor *t, int64_t idx) { return idx >= 0 ? t->src[idx] : t->src[0]; }

static void bn_dims(const loom_tensor *x, int64_t *N, int64_t *C, int64_t *S) {
    *N = x->dims[0], *C = x->dims[1], *S = loom__numel(x->ndim - 2, x->dims + 2);
}

static loom_status repro_batch_norm(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    double M = (double)(N * S);
    size_t local = chunk_local(o->cl, N * S);
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

static loom_status repro_batch_norm_grad_params(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    size_t local = chunk_local(o->cl, N * S);
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, x->dtype, "repro_batch_norm_grad_params", &k);
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

/* ---- cross-entropy ---- */

/* the first bad row: read its target back and say what is wrong (as loss.c) */
static loom_status ce_check(loom__cl *cl, const loom_plan *p, const loom_tensor *t, int32_t row) {
    const loom_tensor *tg = t->src[1];
    int32_t v = 0;
    cl_int e = clEnqueueReadBuffer(cl->queue, loom__cl_mem(p, tg), CL_TRUE,
                                   (loom__cl_elem_off(p, tg) + (size_t)row) * sizeof v, sizeof v, &v, 0, NULL, NULL);
    if (e != CL_SUCCESS) return loom__cl_fail(cl->ctx, e, "clEnqueueReadBuffer(bad target)", __FILE__, __LINE__);
    return loom__err(cl->ctx, LOOM_ERR_INVALID_ARG,
                     "%s (node '%s'): target %d at row %lld is outside [0, %lld) and is not ignore_index %d",
                     loom_op_name(t->op), t->name, (int)v, (long long)row, (long long)t->src[0]->dims[1],
                     (int)t->p[LOOM_P_CE_IGNORE]);
}

/* per-row losses into scratch (one group per row), then one item sums them in row order */
static loom_status repro_cross_entropy(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0], *tg = y->src[1];
    int64_t N = x->dims[0], C = x->dims[1];
    double eps = y->f[LOOM_F_CE_EPS];
    int slot;
    loom__cl_err_slot(o, &slot);
    o->node->check = ce_check;
    cl_mem part;
    cl_kernel k1, k2;
    loom_status st;
    if ((st = loom__cl_scratch(o, (size_t)(N ? N : 1) * sizeof(float), &part)) != LOOM_OK ||
        (st = loom__cl_kernel(o, y->dtype, "repro_ce_rows", &k1)) != LOOM_OK ||
        (st = loom__cl_kernel(o, y->dtype, "repro_ce_final", &k2)) != LOOM_OK)
        return st;
    size_t lr = chunk_local(o->cl, C);
    loom__cl_args a = loom__cl_args_begin(o, k1);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, tg), loom__cl_arg_mem(&a, part), loom__cl_arg_i64(&a, C);
    loom__cl_arg_i32(&a, (int32_t)y->p[LOOM_P_CE_IGNORE]), loom__cl_arg_f32(&a, (float)(1.0 - eps)),
        loom__cl_arg_f32(&a, (float)eps);
    loom__cl_arg_mem(&a, o->err_buf), loom__cl_arg_i32(&a, slot), loom__cl_arg_local(&a, lr * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    a = loom__cl_args_begin(o, k2);
    loom__cl_arg_mem(&a, part), loom__cl_arg_t(&a, tg), loom__cl_arg_t(&a, y), loom__cl_arg_i64(&a, N);
    loom__cl_arg_i64(&a, C), loom__cl_arg_i32(&a, (int32_t)y->p[LOOM_P_CE_IGNORE]);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    if ((st = loom__cl_launch_groups(o, k1, N, lr)) != LOOM_OK) return st;
    return loom__cl_launch_groups(o, k2, 1, 1);
}

/* the dloss / count factor (loss.cl's ce_scale), then one group per row */
static loom_status repro_cross_entropy_grad(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0], *tg = y->src[1], *dl = y->src[2];
    int64_t N = x->dims[0], C = x->dims[1];
    double eps = y->f[LOOM_F_CE_EPS];
    int slot;
    loom__cl_err_slot(o, &slot);
    o->node->check = ce_check;
    cl_mem scale;
    cl_kernel k1, k2;
    loom_status st;
    if ((st = loom__cl_scratch(o, sizeof(float), &scale)) != LOOM_OK ||
        (st = loom__cl_kernel(o, y->dtype, "ce_scale", &k1)) != LOOM_OK ||
        (st = loom__cl_kernel(o, y->dtype, "repro_ce_grad_rows", &k2)) != LOOM_OK)
        return st;
    size_t lr = chunk_local(o->cl, C), lf = loom__cl_reduce_local(o->cl, N);
    loom__cl_args a = loom__cl_args_begin(o, k1);
    loom__cl_arg_t(&a, tg), loom__cl_arg_t(&a, dl), loom__cl_arg_mem(&a, scale), loom__cl_arg_i64(&a, N);
    loom__cl_arg_i64(&a, C), loom__cl_arg_i32(&a, (int32_t)y->p[LOOM_P_CE_IGNORE]),
        loom__cl_arg_local(&a, lf * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    a = loom__cl_args_begin(o, k2);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, tg), loom__cl_arg_mem(&a, scale), loom__cl_arg_t(&a, y);
    loom__cl_arg_i64(&a, C), loom__cl_arg_i32(&a, (int32_t)y->p[LOOM_P_CE_IGNORE]);
    loom__cl_arg_f32(&a, (float)(1.0 - eps + eps / (double)C)), loom__cl_arg_f32(&a, (float)(eps / (double)C));
    loom__cl_arg_mem(&a, o->err_buf), loom__cl_arg_i32(&a, slot), loom__cl_arg_local(&a, lr * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    if ((st = loom__cl_launch_groups(o, k1, 1, lf)) != LOOM_OK) return st;
    return loom__cl_launch_groups(o, k2, N, lr);
}

const loom__cl_fn loom__cl_repro_kernels[LOOM_OP_COUNT] = {
    [LOOM_OP_SUM] = repro_sum,
    [LOOM_OP_MEAN] = repro_mean,
    [LOOM_OP_BATCH_NORM] = repro_batch_norm,
    [LOOM_OP_BATCH_NORM_GRAD_PARAMS] = repro_batch_norm_grad_params,
    [LOOM_OP_CROSS_ENTROPY] = repro_cross_entropy,
    [LOOM_OP_CROSS_ENTROPY_GRAD] = repro_cross_entropy_grad,
};
