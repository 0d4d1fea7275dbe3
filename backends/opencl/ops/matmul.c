/* backends/opencl/ops/matmul.c — host side of matmul (batched, broadcast,
 * transposes) and linear (x w^T with the bias added in the GEMM's epilogue),
 * and the GEMM launcher (ops/gemm.h) the conv2d family shares: it runs the
 * device's variant (ops/gemm_select.c). Its speed
 * beside the other backends' is measured by bench/gemm_conv.c (bench/results/). */
#include "gemm.h"

loom__cl_mat loom__cl_mat_t(const loom__cl_op *o, const loom_tensor *t) {
    return (loom__cl_mat){loom__cl_mem(o->plan, t), loom__cl_elem_off(o->plan, t)};
}

loom_status loom__cl_gemm(loom__cl_op *o, loom_dtype dt, const loom__cl_gemm_desc *d) {
    int64_t nb = d->batch[0] * d->batch[1] * d->batch[2];
    if (d->M <= 0 || d->N <= 0 || nb <= 0) return LOOM_OK;
    int v;
    loom_status st = loom__cl_gemm_choose(o->cl, &v);
    if (st != LOOM_OK) return st;
    LOOM__ASSERT(!d->conv || (!d->ta && d->tb == d->c_float)); /* nn: the forward; nt_cf: the weight gradient */
    LOOM__ASSERT(!d->cseg || (!d->tb && !d->conv));             /* segments: the outer forms' stores */
    const loom__cl_gemm_variant *var = loom__cl_gemm_variant_of(d->conv ? LOOM__CL_GEMM_TILED : v);
    if (o->cl->max_wg < (size_t)(var->wg * var->wg))
        return loom__err(o->cl->ctx, LOOM_ERR_BACKEND,
                         "opencl: %s (node '%s'): the GEMM needs work-groups of %d items, the device allows %zu",
                         loom_op_name(o->t->op), o->t->name, var->wg * var->wg, o->cl->max_wg);
    static const char *names[4] = {"gemm_nn", "gemm_nt", "gemm_tn", "gemm_tt"};
    /* float-output variants exist for conv2d's gradients: tn (grad_input), nt (grad_weight) */
    LOOM__ASSERT(!d->c_float || d->ta != d->tb);
    char name[32];
    const char *base = d->conv      ? (d->tb ? "gemm_nt_cf_conv" : "gemm_nn_conv")
                       : d->c_float ? (d->ta ? "gemm_tn_cf" : "gemm_nt_cf")
                                    : names[d->ta * 2 + d->tb];
    snprintf(name, sizeof name, "%s%s", base, var->suffix);
    int64_t g[LOOM__CL_GEMM_TABLE];
    for (int i = 0; i < 3; i++)
        g[i] = d->batch[i], g[3 + i] = d->sa[i], g[6 + i] = d->sb[i], g[9 + i] = d->sc[i], g[12 + i] = d->sbias[i];
    g[15] = d->bias_rs, g[16] = d->bias_cs, g[17] = d->cseg, g[18] = d->csegs;
    cl_mem gm, cm = NULL;
    cl_kernel k;
    if ((st = loom__cl_meta(o, g, LOOM__CL_GEMM_TABLE, &gm)) != LOOM_OK) return st;
    if (d->conv && (st = loom__cl_meta(o, d->conv, LOOM__CONV_IMPLICIT_LEN, &cm)) != LOOM_OK) return st;
    if ((st = loom__cl_kernel(o, dt, name, &k)) != LOOM_OK) return st;
    bool has_bias = d->bias.mem != NULL;
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_mem(&ar, d->a.mem), loom__cl_arg_u64(&ar, d->a.off);
    loom__cl_arg_mem(&ar, d->b.mem), loom__cl_arg_u64(&ar, d->b.off);
    loom__cl_arg_mem(&ar, d->c.mem), loom__cl_arg_u64(&ar, d->c.off);
    loom__cl_arg_mem(&ar, has_bias ? d->bias.mem : d->a.mem), loom__cl_arg_u64(&ar, has_bias ? d->bias.off : 0);
    loom__cl_arg_mem(&ar, gm);
    loom__cl_arg_i64(&ar, d->M), loom__cl_arg_i64(&ar, d->N), loom__cl_arg_i64(&ar, d->K);
    loom__cl_arg_i64(&ar, d->lda), loom__cl_arg_i64(&ar, d->ldb), loom__cl_arg_i64(&ar, d->ldc);
    loom__cl_arg_i32(&ar, has_bias);
    if (cm) loom__cl_arg_mem(&ar, cm);
    if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
    loom__cl_node *n = o->node;
    LOOM__ASSERT(n->n_launch < LOOM__CL_MAX_LAUNCH);
    loom__cl_gemm_geom geo = loom__cl_gemm_geometry(var, d->ta, d->tb, d->M, d->N, nb);
    n->l[n->n_launch++] = (loom__cl_launch){k, 2, {geo.global[0], geo.global[1]}, {geo.local[0], geo.local[1]}};
    return LOOM_OK;
}

/* y (batch..., M, N) = op(a) (batch_a..., M, K) x op(b) (batch_b..., K, N);
 * up to 3 batch dims (LOOM_MAX_DIMS = 5), broadcast strides as the CPU backend */
loom_status loom__cl_matmul(loom__cl_op *o) {
    const loom_tensor *y = o->t, *A = y->src[0], *B = y->src[1];
    loom__mm_geom q = loom__matmul_geom_of(y);
    loom__cl_gemm_desc d = {0};
    d.ta = y->p[LOOM_P_MATMUL_TRANS_A], d.tb = y->p[LOOM_P_MATMUL_TRANS_B];
    d.M = q.M, d.N = q.N, d.K = q.K, d.lda = q.lda, d.ldb = q.ldb, d.ldc = q.ldc;
    for (int i = 0; i < 3; i++) d.batch[i] = q.batch[i], d.sa[i] = q.sa[i], d.sb[i] = q.sb[i], d.sc[i] = q.sc[i];
    d.a = loom__cl_mat_t(o, A), d.b = loom__cl_mat_t(o, B), d.c = loom__cl_mat_t(o, y);
    return loom__cl_gemm(o, y->dtype, &d);
}

/* y (R, OUT) = x (R, IN) w^T (IN, OUT) + bias (OUT) per column */
loom_status loom__cl_linear(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0], *w = y->src[1];
    int64_t out = w->dims[0], in = w->dims[1];
    loom__cl_gemm_desc d = {.ta = false, .tb = true, .batch = {1, 1, 1}};
    d.M = loom_tensor_numel(y) / (out ? out : 1), d.N = out, d.K = in;
    d.lda = in, d.ldb = in, d.ldc = out;
    d.a = loom__cl_mat_t(o, x), d.b = loom__cl_mat_t(o, w), d.c = loom__cl_mat_t(o, y);
    if (y->p[LOOM_P_LINEAR_BIAS]) d.bias = loom__cl_mat_t(o, y->src[2]), d.bias_rs = 0, d.bias_cs = 1;
    return loom__cl_gemm(o, y->dtype, &d);
}
