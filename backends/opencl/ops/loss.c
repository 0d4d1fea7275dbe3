/* backends/opencl/ops/loss.c — host side of cross_entropy (per-row losses
 * into scratch, then one work-group sums them), cross_entropy_grad (the
 * dloss / count factor, then one work-group per row) and mse (one
 * work-group). Parameters in core/ops/loss.c. Bad targets are run-time
 * errors through the plan's error slots, with the CPU's message. */
#include "../opencl.h"

/* the first bad row: read its target back and say what is wrong */
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

loom_status loom__cl_cross_entropy(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0], *tg = y->src[1];
    int64_t N = x->dims[0], C = x->dims[1];
    int slot;
    loom__cl_err_slot(o, &slot);
    o->node->check = ce_check;
    cl_mem part;
    cl_kernel k1, k2;
    loom_status st;
    if ((st = loom__cl_scratch(o, (size_t)N * sizeof(float), &part)) != LOOM_OK ||
        (st = loom__cl_kernel(o, y->dtype, "ce_rows", &k1)) != LOOM_OK ||
        (st = loom__cl_kernel(o, y->dtype, "ce_final", &k2)) != LOOM_OK)
        return st;
    size_t lr = loom__cl_row_local(o->cl, C), lf = loom__cl_reduce_local(o->cl, N);
    loom__cl_args a = loom__cl_args_begin(o, k1);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, tg), loom__cl_arg_mem(&a, part), loom__cl_arg_i64(&a, C);
    loom__cl_arg_i32(&a, (int32_t)y->p[LOOM_P_CE_IGNORE]), loom__cl_arg_f32(&a, (float)y->f[LOOM_F_CE_EPS]);
    loom__cl_arg_mem(&a, o->err_buf), loom__cl_arg_i32(&a, slot), loom__cl_arg_local(&a, lr * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    a = loom__cl_args_begin(o, k2);
    loom__cl_arg_mem(&a, part), loom__cl_arg_t(&a, tg), loom__cl_arg_t(&a, y), loom__cl_arg_i64(&a, N);
    loom__cl_arg_i64(&a, C), loom__cl_arg_i32(&a, (int32_t)y->p[LOOM_P_CE_IGNORE]),
        loom__cl_arg_local(&a, lf * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    if ((st = loom__cl_launch_groups(o, k1, N, lr)) != LOOM_OK) return st;
    if (N == 0) return loom__cl_launch_groups(o, k2, 1, 1); /* writes 0 */
    return loom__cl_launch_groups(o, k2, 1, lf);
}

/* the dloss / count factor (ce_scale), then one group of `lr` items per row
 * (`rows`: ce_grad_rows, or repro_ce_grad_rows in reproducible mode) */
static loom_status ce_grad(loom__cl_op *o, const char *rows, size_t lr) {
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
        (st = loom__cl_kernel(o, y->dtype, rows, &k2)) != LOOM_OK)
        return st;
    size_t lf = loom__cl_reduce_local(o->cl, N);
    loom__cl_args a = loom__cl_args_begin(o, k1);
    loom__cl_arg_t(&a, tg), loom__cl_arg_t(&a, dl), loom__cl_arg_mem(&a, scale), loom__cl_arg_i64(&a, N);
    loom__cl_arg_i64(&a, C), loom__cl_arg_i32(&a, (int32_t)y->p[LOOM_P_CE_IGNORE]),
        loom__cl_arg_local(&a, lf * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    /* the smoothed one-hot, formed in double and rounded once, as the CPU does */
    a = loom__cl_args_begin(o, k2);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, tg), loom__cl_arg_mem(&a, scale), loom__cl_arg_t(&a, y);
    loom__cl_arg_i64(&a, C), loom__cl_arg_i32(&a, (int32_t)y->p[LOOM_P_CE_IGNORE]);
    loom__cl_arg_f32(&a, (float)(1.0 - eps + eps / (double)C)), loom__cl_arg_f32(&a, (float)(eps / (double)C));
    loom__cl_arg_mem(&a, o->err_buf), loom__cl_arg_i32(&a, slot), loom__cl_arg_local(&a, lr * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    if ((st = loom__cl_launch_groups(o, k1, 1, lf)) != LOOM_OK) return st;
    return loom__cl_launch_groups(o, k2, N, lr);
}

loom_status loom__cl_cross_entropy_grad(loom__cl_op *o) {
    return ce_grad(o, "ce_grad_rows", loom__cl_row_local(o->cl, o->t->src[0]->dims[1]));
}

loom_status loom__cl_mse(loom__cl_op *o) {
    const loom_tensor *y = o->t;
    int64_t n = loom_tensor_numel(y->src[0]);
    size_t local = loom__cl_reduce_local(o->cl, n);
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, y->dtype, "mse", &k);
    if (st != LOOM_OK) return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, y->src[0]), loom__cl_arg_t(&a, y->src[1]), loom__cl_arg_t(&a, y);
    loom__cl_arg_i64(&a, n), loom__cl_arg_local(&a, local * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_groups(o, k, 1, local);
}

/* ---- reproducible mode (core/repro.h; kernels/repro.cl, built only into
 * -DLOOM_REPRO programs): the canonical chunked sums ---- */

/* per-row losses into scratch (one group per row), then one item sums them in row order */
loom_status loom__cl_cross_entropy_repro(loom__cl_op *o) {
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
    size_t lr = loom__cl_chunk_local(o->cl, C);
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

/* the canonical row kernel, one group per row of chunk-sized items */
loom_status loom__cl_cross_entropy_grad_repro(loom__cl_op *o) {
    return ce_grad(o, "repro_ce_grad_rows", loom__cl_chunk_local(o->cl, o->t->src[0]->dims[1]));
}
