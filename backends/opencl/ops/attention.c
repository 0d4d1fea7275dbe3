/* backends/opencl/ops/attention.c — host side of attention, attention_grad
 * and causal_mask (kernels/attention.cl): one work-group per query row
 * (attention, dq) or key row (dk, dv), keys or query rows in chunks of the
 * group's size; the rows the group accumulates live in local memory. */
#include "../opencl.h"

#define ATTN_MAX_D 2048 /* three local rows of D floats must fit the 32 KiB every device has */

/* Kernel `name` of node t with its leading arguments: the first nsrc
 * sources, the output, Tq, Tk, D, causal. */
static loom_status attn_begin(loom__cl_op *o, const char *name, int nsrc, cl_kernel *k, loom__cl_args *ar) {
    const loom_tensor *t = o->t, *q = t->src[0];
    if (q->dims[3] > ATTN_MAX_D)
        return loom__err(o->cl->ctx, LOOM_ERR_UNSUPPORTED,
                         "opencl: %s (node '%s'): head dim D = %lld; this backend supports D <= %d",
                         loom_op_name(t->op), t->name, (long long)q->dims[3], ATTN_MAX_D);
    loom_status st = loom__cl_kernel(o, t->dtype, name, k);
    if (st != LOOM_OK) return st;
    *ar = loom__cl_args_begin(o, *k);
    for (int i = 0; i < nsrc; i++) loom__cl_arg_t(ar, t->src[i]);
    loom__cl_arg_t(ar, t);
    loom__cl_arg_i64(ar, q->dims[2]), loom__cl_arg_i64(ar, t->src[1]->dims[2]), loom__cl_arg_i64(ar, q->dims[3]);
    loom__cl_arg_i32(ar, (int32_t)t->p[LOOM_P_ATTN_CAUSAL]);
    return LOOM_OK;
}

/* the local arrays: nrows rows of D floats, then coef and red (local floats each) */
static void attn_locals(loom__cl_args *ar, int64_t D, int nrows, size_t local) {
    for (int i = 0; i < nrows; i++) loom__cl_arg_local(ar, (size_t)D * sizeof(float));
    loom__cl_arg_local(ar, local * sizeof(float)), loom__cl_arg_local(ar, local * sizeof(float));
}

loom_status loom__cl_attention(loom__cl_op *o) {
    const loom_tensor *t = o->t, *q = t->src[0];
    int64_t BH = q->dims[0] * q->dims[1], Tk = t->src[1]->dims[2];
    size_t local = loom__cl_reduce_local(o->cl, Tk);
    cl_kernel k;
    loom__cl_args ar;
    /* args: q, k, v, lse (written), y, Tq, Tk, D, causal, scale, acc, row, coef, red */
    loom_status st = attn_begin(o, "attention", 4, &k, &ar);
    if (st != LOOM_OK) return st;
    loom__cl_arg_f32(&ar, (float)t->f[LOOM_F_ATTN_SCALE]);
    attn_locals(&ar, q->dims[3], 2, local);
    if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
    return loom__cl_launch_groups(o, k, BH * q->dims[2], local);
}

loom_status loom__cl_attention_grad(loom__cl_op *o) {
    const loom_tensor *t = o->t, *q = t->src[0];
    int64_t BH = q->dims[0] * q->dims[1], Tq = q->dims[2], Tk = t->src[1]->dims[2];
    int which = (int)t->p[LOOM_P_ATTN_WHICH];
    bool dq = which == LOOM_K_ATTN_DQ;
    size_t local = loom__cl_reduce_local(o->cl, dq ? Tk : Tq);
    cl_kernel k;
    loom__cl_args ar;
    /* args: q, k, v, y, dy, lse, dx, Tq, Tk, D, causal, [dk,] scale, acc, row, row2, coef, red */
    loom_status st = attn_begin(o, dq ? "attention_grad_q" : "attention_grad_kv", 6, &k, &ar);
    if (st != LOOM_OK) return st;
    if (!dq) loom__cl_arg_i32(&ar, which == LOOM_K_ATTN_DK);
    loom__cl_arg_f32(&ar, (float)t->f[LOOM_F_ATTN_SCALE]);
    attn_locals(&ar, q->dims[3], 3, local);
    if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
    return loom__cl_launch_groups(o, k, BH * (dq ? Tq : Tk), local);
}

loom_status loom__cl_causal_mask(loom__cl_op *o) {
    const loom_tensor *y = o->t;
    int64_t n = loom_tensor_numel(y);
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, y->dtype, "causal_mask", &k);
    if (st != LOOM_OK) return st;
    /* args: x, y, n, Tq, Tk, value */
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&ar, y->src[0]), loom__cl_arg_t(&ar, y);
    loom__cl_arg_i64(&ar, n), loom__cl_arg_i64(&ar, y->dims[y->ndim - 2]), loom__cl_arg_i64(&ar, y->dims[y->ndim - 1]);
    loom__cl_arg_f32(&ar, (float)y->f[LOOM_F_CAUSAL_VALUE]);
    if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, n);
}
