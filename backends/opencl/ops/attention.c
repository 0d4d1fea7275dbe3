/* backends/opencl/ops/attention.c — host side of attention, attention_grad
 * and causal_mask (kernels/attention.cl): one work-group per query row
 * (attention, dq) or key row (dk, dv), keys or query rows in chunks of the
 * group's size; the rows the group accumulates live in local memory. Or, in
 * f32 on CPU devices, the GEMM form: the score matrices of every batch *
 * head in a node-owned buffer, made and used by the batched GEMM (ops/gemm.h)
 * with row kernels between (PoCL: the gpt's attention and its gradients at
 * batch 8, T 128, 62 ms per step with the row-per-group kernels). */
#include "gemm.h"

#define ATTN_MAX_D 2048 /* three local rows of D floats must fit the 32 KiB every device has */
#define ATTN_GEMM_MAX_BYTES ((uint64_t)32 << 20) /* the GEMM form's largest score buffer */

/* The GEMM form: f32, not in reproducible mode, a score buffer (BH, Tq, Tk) of at most
 * ATTN_GEMM_MAX_BYTES; by default on CPU devices; LOOM_OPENCL_ATTN_GEMM=0|1 forces it
 * (checked when the backend was made). */
static bool gemm_form(const loom__cl_op *o, int64_t BH, int64_t Tq, int64_t Tk) {
    uint64_t bytes = (uint64_t)BH * (uint64_t)Tq * (uint64_t)Tk * sizeof(float);
    if (o->t->dtype != LOOM_F32 || o->cl->reproducible || bytes > ATTN_GEMM_MAX_BYTES || bytes > o->cl->max_alloc_bytes)
        return false;
    int e = loom__env_switch("LOOM_OPENCL_ATTN_GEMM");
    if (e >= 0) return e == 1;
    return (o->cl->type & CL_DEVICE_TYPE_CPU) != 0;
}

/* C[b] (M, N) = op(A[b]) op(B[b]) over the BH batches, f32; C's batches M * N apart */
static loom_status bgemm(loom__cl_op *o, bool ta, bool tb, int64_t BH, int64_t M, int64_t N, int64_t K, loom__cl_mat a,
                         int64_t lda, int64_t sa, loom__cl_mat b, int64_t ldb, int64_t sb, loom__cl_mat c) {
    loom__cl_gemm_desc d = {.ta = ta, .tb = tb, .batch = {BH, 1, 1}}; /* f32: C is float */
    d.M = M, d.N = N, d.K = K, d.lda = lda, d.ldb = ldb, d.ldc = N;
    d.sa[0] = sa, d.sb[0] = sb, d.sc[0] = M * N;
    d.a = a, d.b = b, d.c = c;
    return loom__cl_gemm(o, LOOM_F32, &d);
}

static loom__cl_mat mat_b(cl_mem m) { return (loom__cl_mat){m, 0}; }

/* attn_rows (the forward's softmax, lse written) or attn_p (P from lse) over s (BH * Tq, Tk) */
static loom_status softmax_rows(loom__cl_op *o, bool forward, cl_mem s, int64_t rows, int64_t Tq, int64_t Tk) {
    const loom_tensor *t = o->t;
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, LOOM_F32, forward ? "attn_rows" : "attn_p", &k);
    if (st != LOOM_OK) return st;
    /* args: s, lse, rows, Tq, Tk, causal, scale */
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_mem(&a, s), loom__cl_arg_t(&a, t->src[forward ? 3 : 5]);
    loom__cl_arg_i64(&a, rows), loom__cl_arg_i64(&a, Tq), loom__cl_arg_i64(&a, Tk);
    loom__cl_arg_i32(&a, (int32_t)t->p[LOOM_P_ATTN_CAUSAL]), loom__cl_arg_f32(&a, (float)t->f[LOOM_F_ATTN_SCALE]);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, rows);
}

/* y = softmax(scale Q K^T) V: S = Q K^T, attn_rows, y = P V */
static loom_status forward_gemm(loom__cl_op *o, int64_t BH, int64_t Tq, int64_t Tk, int64_t D) {
    const loom_tensor *t = o->t;
    cl_mem s;
    loom_status st;
    if ((st = loom__cl_scratch(o, (size_t)(BH * Tq * Tk) * sizeof(float), &s)) != LOOM_OK ||
        (st = bgemm(o, false, true, BH, Tq, Tk, D, loom__cl_mat_t(o, t->src[0]), D, Tq * D, loom__cl_mat_t(o, t->src[1]),
                    D, Tk * D, mat_b(s))) != LOOM_OK ||
        (st = softmax_rows(o, true, s, BH * Tq, Tq, Tk)) != LOOM_OK)
        return st;
    return bgemm(o, false, false, BH, Tq, D, Tk, mat_b(s), Tk, Tq * Tk, loom__cl_mat_t(o, t->src[2]), D, Tk * D,
                 loom__cl_mat_t(o, t));
}

/* dv = P^T dy; dq = ds K, dk = ds^T Q with ds = scale P (dy V^T - delta) (attn_ds). out[] the
 * tensors to write, by LOOM_K_ATTN_* (NULL: not wanted): one node's, or the three of a fused group
 * (core/fuse.h), which then share P and ds (5 GEMMs and 2 row passes instead of 8 and 5) with
 * the same kernels and operands, so the same bits. */
static loom_status grad_gemm(loom__cl_op *o, int64_t BH, int64_t Tq, int64_t Tk, int64_t D,
                             const loom_tensor *const out[3]) {
    const loom_tensor *t = o->t, *q = t->src[0], *k = t->src[1], *v = t->src[2], *dy = t->src[4];
    size_t bytes = (size_t)(BH * Tq * Tk) * sizeof(float);
    cl_mem s, ds;
    cl_kernel kn;
    loom_status st;
    if ((st = loom__cl_scratch(o, bytes, &s)) != LOOM_OK ||
        (st = bgemm(o, false, true, BH, Tq, Tk, D, loom__cl_mat_t(o, q), D, Tq * D, loom__cl_mat_t(o, k), D, Tk * D,
                    mat_b(s))) != LOOM_OK ||
        (st = softmax_rows(o, false, s, BH * Tq, Tq, Tk)) != LOOM_OK)
        return st;
    if (out[LOOM_K_ATTN_DV] &&
        (st = bgemm(o, true, false, BH, Tk, D, Tq, mat_b(s), Tk, Tq * Tk, loom__cl_mat_t(o, dy), D, Tq * D,
                    loom__cl_mat_t(o, out[LOOM_K_ATTN_DV]))) != LOOM_OK)
        return st;
    if (!out[LOOM_K_ATTN_DQ] && !out[LOOM_K_ATTN_DK]) return LOOM_OK;
    if ((st = loom__cl_scratch(o, bytes, &ds)) != LOOM_OK ||
        (st = bgemm(o, false, true, BH, Tq, Tk, D, loom__cl_mat_t(o, dy), D, Tq * D, loom__cl_mat_t(o, v), D, Tk * D,
                    mat_b(ds))) != LOOM_OK ||
        (st = loom__cl_kernel(o, LOOM_F32, "attn_ds", &kn)) != LOOM_OK)
        return st;
    /* args: P, dP -> ds, y, dy, rows, Tq, Tk, D, causal, scale */
    loom__cl_args a = loom__cl_args_begin(o, kn);
    loom__cl_arg_mem(&a, s), loom__cl_arg_mem(&a, ds), loom__cl_arg_t(&a, t->src[3]), loom__cl_arg_t(&a, dy);
    loom__cl_arg_i64(&a, BH * Tq), loom__cl_arg_i64(&a, Tq), loom__cl_arg_i64(&a, Tk), loom__cl_arg_i64(&a, D);
    loom__cl_arg_i32(&a, (int32_t)t->p[LOOM_P_ATTN_CAUSAL]), loom__cl_arg_f32(&a, (float)t->f[LOOM_F_ATTN_SCALE]);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK || (st = loom__cl_launch_1d(o, kn, BH * Tq)) != LOOM_OK) return st;
    if (out[LOOM_K_ATTN_DQ] &&
        (st = bgemm(o, false, false, BH, Tq, D, Tk, mat_b(ds), Tk, Tq * Tk, loom__cl_mat_t(o, k), D, Tk * D,
                    loom__cl_mat_t(o, out[LOOM_K_ATTN_DQ]))) != LOOM_OK)
        return st;
    if (!out[LOOM_K_ATTN_DK]) return LOOM_OK;
    return bgemm(o, true, false, BH, Tk, D, Tq, mat_b(ds), Tk, Tq * Tk, loom__cl_mat_t(o, q), D, Tq * D,
                 loom__cl_mat_t(o, out[LOOM_K_ATTN_DK]));
}

/* the fused group of an attention's three gradients, launched at its first node (ops/fuse.c):
 * the GEMM form only (elsewhere *done stays false and the nodes run one by one) */
loom_status loom__cl_attention_grad_fused(loom__cl_op *o, const loom__fuse_group *g, bool *done) {
    const loom_tensor *q = o->t->src[0];
    int64_t BH = q->dims[0] * q->dims[1], Tq = q->dims[2], Tk = o->t->src[1]->dims[2];
    *done = false;
    if (!gemm_form(o, BH, Tq, Tk) || q->dims[3] > ATTN_MAX_D) return LOOM_OK;
    const loom_tensor *out[3];
    for (int r = 0; r < 3; r++) out[r] = o->plan->exec[g->m[LOOM__FU_ATTN_DQ + r]];
    loom_status st = grad_gemm(o, BH, Tq, Tk, q->dims[3], out);
    if (st != LOOM_OK) return st;
    for (int r = 0; r < 3; r++)
        if (out[r] != o->t) loom__cl_fuse_member(o, g->m[LOOM__FU_ATTN_DQ + r]);
    *done = true;
    return LOOM_OK;
}

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
    if (gemm_form(o, BH, q->dims[2], Tk) && q->dims[3] <= ATTN_MAX_D) return forward_gemm(o, BH, q->dims[2], Tk, q->dims[3]);
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
    if (gemm_form(o, BH, Tq, Tk) && q->dims[3] <= ATTN_MAX_D) {
        const loom_tensor *out[3] = {NULL, NULL, NULL};
        out[t->p[LOOM_P_ATTN_WHICH]] = t;
        return grad_gemm(o, BH, Tq, Tk, q->dims[3], out);
    }
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
