/* backends/vulkan/ops/attention.c — host side of attention, attention_grad
 * and causal_mask (shaders/attention.comp): one work-group per query row
 * (attention, dq) or key row (dk, dv), keys or query rows in chunks of the
 * group's size; or, in f32 on CPU devices, the GEMM form: the score
 * matrices of every batch * head in a node-owned buffer, made and used by
 * the batched GEMM (ops/gemm.h) with row kernels between (lavapipe runs the
 * row-per-work-group kernels' shared memory, barriers and per-lane loads
 * slowly: the gpt's attention and its gradients 0.72 s per step at batch 8,
 * T 128). */
#include "gemm.h"

#define ATTN_MAX_D 512 /* shaders/attention.comp's shared rows */
#define ATTN_GEMM_MAX_BYTES ((uint64_t)32 << 20) /* the GEMM form's largest score buffer */

/* q (B, H, Tq, D) and k of node t: the sizes every dispatch pushes */
static loom_status attn_sizes(loom__vk_op *o, int64_t *BH, int64_t *Tq, int64_t *Tk, int64_t *D) {
    const loom_tensor *q = o->t->src[0], *k = o->t->src[1];
    *BH = q->dims[0] * q->dims[1], *Tq = q->dims[2], *Tk = k->dims[2], *D = q->dims[3];
    if (*D > ATTN_MAX_D)
        return loom__err(o->vk->ctx, LOOM_ERR_UNSUPPORTED,
                         "vulkan: %s (node '%s'): head dim D = %lld; this backend supports D <= %d",
                         loom_op_name(o->t->op), o->t->name, (long long)*D, ATTN_MAX_D);
    return LOOM_OK;
}

/* The GEMM form: f32, not in reproducible mode, a score buffer (BH, Tq, Tk) of at most
 * ATTN_GEMM_MAX_BYTES; by default on CPU devices; LOOM_VULKAN_ATTN_GEMM=0|1 forces it
 * (checked when the device was made). */
static bool gemm_form(const loom__vk_op *o, int64_t BH, int64_t Tq, int64_t Tk) {
    uint64_t bytes = (uint64_t)BH * (uint64_t)Tq * (uint64_t)Tk * sizeof(float);
    if (o->t->dtype != LOOM_F32 || o->vk->reproducible || bytes > ATTN_GEMM_MAX_BYTES ||
        bytes > o->vk->props.limits.maxStorageBufferRange)
        return false;
    int e = loom__env_switch("LOOM_VULKAN_ATTN_GEMM");
    if (e >= 0) return e == 1;
    return o->vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
}

/* C[b] (M, N) = op(A[b]) op(B[b]) over the BH batches, f32; C's batches M * N apart */
static loom_status bgemm(loom__vk_op *o, bool ta, bool tb, int64_t BH, int64_t M, int64_t N, int64_t K, loom__vk_mat a,
                         int64_t lda, int64_t sa, loom__vk_mat b, int64_t ldb, int64_t sb, loom__vk_mat c) {
    loom__vk_gemm_desc d = {.ta = ta, .tb = tb, .batch = {BH, 1, 1}}; /* f32: C is float */
    d.M = M, d.N = N, d.K = K, d.lda = lda, d.ldb = ldb, d.ldc = N;
    d.sa[0] = sa, d.sb[0] = sb, d.sc[0] = M * N;
    d.a = a, d.b = b, d.c = c;
    return loom__vk_gemm(o, LOOM_F32, &d);
}

/* attn_rows (the forward's softmax, lse written) or attn_p (P from lse) over s (BH * Tq, Tk) */
static loom_status softmax_rows(loom__vk_op *o, bool forward, loom__buffer *s, int64_t rows, int64_t Tq, int64_t Tk) {
    const loom_tensor *t = o->t, *lse = t->src[forward ? 3 : 5];
    loom__vk_call c;
    /* binding 0 s, 1 lse; push {lo, rows, Tq, Tk, causal, scale} */
    loom__vk_begin(o, &c, forward ? "attn_rows" : "attn_p", LOOM__VK_NODT);
    loom__vk_buf(&c, s, LOOM__VK_RW);
    if (forward)
        loom__vk_out(&c, lse);
    else
        loom__vk_in(&c, lse);
    loom__vk_u32(&c, (uint32_t)rows), loom__vk_u32(&c, (uint32_t)Tq), loom__vk_u32(&c, (uint32_t)Tk);
    loom__vk_u32(&c, (uint32_t)t->p[LOOM_P_ATTN_CAUSAL]), loom__vk_f32(&c, (float)t->f[LOOM_F_ATTN_SCALE]);
    return loom__vk_run_1d(&c, rows);
}

/* y = softmax(scale Q K^T) V: S = Q K^T, attn_rows, y = P V */
static loom_status forward_gemm(loom__vk_op *o, int64_t BH, int64_t Tq, int64_t Tk, int64_t D) {
    const loom_tensor *t = o->t;
    loom__buffer *s;
    loom_status st;
    if ((st = loom__vk_scratch(o, (size_t)(BH * Tq * Tk) * sizeof(float), &s)) != LOOM_OK ||
        (st = bgemm(o, false, true, BH, Tq, Tk, D, loom__vk_mat_t(t->src[0]), D, Tq * D, loom__vk_mat_t(t->src[1]), D,
                    Tk * D, loom__vk_mat_b(s))) != LOOM_OK ||
        (st = softmax_rows(o, true, s, BH * Tq, Tq, Tk)) != LOOM_OK)
        return st;
    return bgemm(o, false, false, BH, Tq, D, Tk, loom__vk_mat_b(s), Tk, Tq * Tk, loom__vk_mat_t(t->src[2]), D, Tk * D,
                 loom__vk_mat_t(t));
}

/* dv = P^T dy; dq = ds K, dk = ds^T Q with ds = scale P (dy V^T - delta) (attn_ds). out[] the
 * tensors to write, by LOOM_K_ATTN_* (NULL: not wanted): one node's, or the three of a fused group
 * (core/fuse.h), which then share P and ds (5 GEMMs and 2 row passes instead of 8 and 5) with
 * the same kernels and operands, so the same bits. */
static loom_status grad_gemm(loom__vk_op *o, int64_t BH, int64_t Tq, int64_t Tk, int64_t D,
                             const loom_tensor *const out[3]) {
    const loom_tensor *t = o->t, *q = t->src[0], *k = t->src[1], *v = t->src[2], *dy = t->src[4];
    size_t bytes = (size_t)(BH * Tq * Tk) * sizeof(float);
    loom__buffer *s, *ds;
    loom_status st;
    if ((st = loom__vk_scratch(o, bytes, &s)) != LOOM_OK ||
        (st = bgemm(o, false, true, BH, Tq, Tk, D, loom__vk_mat_t(q), D, Tq * D, loom__vk_mat_t(k), D, Tk * D,
                    loom__vk_mat_b(s))) != LOOM_OK ||
        (st = softmax_rows(o, false, s, BH * Tq, Tq, Tk)) != LOOM_OK)
        return st;
    if (out[LOOM_K_ATTN_DV] &&
        (st = bgemm(o, true, false, BH, Tk, D, Tq, loom__vk_mat_b(s), Tk, Tq * Tk, loom__vk_mat_t(dy), D, Tq * D,
                    loom__vk_mat_t(out[LOOM_K_ATTN_DV]))) != LOOM_OK)
        return st;
    if (!out[LOOM_K_ATTN_DQ] && !out[LOOM_K_ATTN_DK]) return LOOM_OK;
    if ((st = loom__vk_scratch(o, bytes, &ds)) != LOOM_OK ||
        (st = bgemm(o, false, true, BH, Tq, Tk, D, loom__vk_mat_t(dy), D, Tq * D, loom__vk_mat_t(v), D, Tk * D,
                    loom__vk_mat_b(ds))) != LOOM_OK)
        return st;
    loom__vk_call c;
    /* binding 0 P, 1 dP -> ds, 2 y, 3 dy; push {yo, dyo, rows, Tq, Tk, D, causal, scale} */
    loom__vk_begin(o, &c, "attn_ds", LOOM_F32);
    loom__vk_buf(&c, s, LOOM__VK_R), loom__vk_buf(&c, ds, LOOM__VK_RW), loom__vk_in(&c, t->src[3]), loom__vk_in(&c, dy);
    loom__vk_u32(&c, (uint32_t)(BH * Tq)), loom__vk_u32(&c, (uint32_t)Tq), loom__vk_u32(&c, (uint32_t)Tk);
    loom__vk_u32(&c, (uint32_t)D), loom__vk_u32(&c, (uint32_t)t->p[LOOM_P_ATTN_CAUSAL]);
    loom__vk_f32(&c, (float)t->f[LOOM_F_ATTN_SCALE]);
    if ((st = loom__vk_run_1d(&c, BH * Tq)) != LOOM_OK) return st;
    if (out[LOOM_K_ATTN_DQ] &&
        (st = bgemm(o, false, false, BH, Tq, D, Tk, loom__vk_mat_b(ds), Tk, Tq * Tk, loom__vk_mat_t(k), D, Tk * D,
                    loom__vk_mat_t(out[LOOM_K_ATTN_DQ]))) != LOOM_OK)
        return st;
    if (!out[LOOM_K_ATTN_DK]) return LOOM_OK;
    return bgemm(o, true, false, BH, Tk, D, Tq, loom__vk_mat_b(ds), Tk, Tq * Tk, loom__vk_mat_t(q), D, Tq * D,
                 loom__vk_mat_t(out[LOOM_K_ATTN_DK]));
}

/* the fused group of an attention's three gradients, recorded at its first node (ops/fuse.c):
 * the GEMM form only (elsewhere *done stays false and the nodes run one by one) */
loom_status loom__vk_attention_grad_fused(loom__vk_op *o, const loom__fuse_group *g, bool *done) {
    int64_t BH, Tq, Tk, D;
    *done = false;
    loom_status st = attn_sizes(o, &BH, &Tq, &Tk, &D);
    if (st != LOOM_OK || !gemm_form(o, BH, Tq, Tk)) return st;
    const loom_tensor *out[3];
    for (int r = 0; r < 3; r++) out[r] = o->plan->exec[g->m[LOOM__FU_ATTN_DQ + r]];
    if ((st = grad_gemm(o, BH, Tq, Tk, D, out)) != LOOM_OK) return st;
    for (int r = 0; r < 3; r++)
        if (out[r] != o->t) loom__vk_fuse_member(o, g->m[LOOM__FU_ATTN_DQ + r]);
    *done = true;
    return LOOM_OK;
}

loom_status loom__vk_attention(loom__vk_op *o) {
    const loom_tensor *t = o->t;
    int64_t BH, Tq, Tk, D;
    loom_status st = attn_sizes(o, &BH, &Tq, &Tk, &D);
    if (st != LOOM_OK) return st;
    if (gemm_form(o, BH, Tq, Tk)) return forward_gemm(o, BH, Tq, Tk, D);
    loom__vk_call c;
    /* binding 0 q, 1 k, 2 v, 3 lse (written), 4 y;
     * push {qo, ko, vo, lo, yo, BH, Tq, Tk, D, causal, scale} */
    loom__vk_begin(o, &c, "attention", t->dtype);
    loom__vk_in(&c, t->src[0]), loom__vk_in(&c, t->src[1]), loom__vk_in(&c, t->src[2]);
    loom__vk_out(&c, t->src[3]);
    loom__vk_out(&c, t);
    loom__vk_u32(&c, (uint32_t)BH), loom__vk_u32(&c, (uint32_t)Tq), loom__vk_u32(&c, (uint32_t)Tk);
    loom__vk_u32(&c, (uint32_t)D), loom__vk_u32(&c, (uint32_t)t->p[LOOM_P_ATTN_CAUSAL]);
    loom__vk_f32(&c, (float)t->f[LOOM_F_ATTN_SCALE]);
    return loom__vk_run_groups(&c, BH * Tq, loom__vk_reduce_local(o->vk, Tk));
}

loom_status loom__vk_attention_grad(loom__vk_op *o) {
    const loom_tensor *t = o->t;
    int64_t BH, Tq, Tk, D;
    loom_status st = attn_sizes(o, &BH, &Tq, &Tk, &D);
    if (st != LOOM_OK) return st;
    if (gemm_form(o, BH, Tq, Tk)) {
        const loom_tensor *out[3] = {NULL, NULL, NULL};
        out[t->p[LOOM_P_ATTN_WHICH]] = t;
        return grad_gemm(o, BH, Tq, Tk, D, out);
    }
    int which = (int)t->p[LOOM_P_ATTN_WHICH];
    loom__vk_call c;
    /* binding 0 q, 1 k, 2 v, 3 y, 4 dy, 5 lse, 6 dx;
     * push {qo, ko, vo, oo, dyo, lo, xo, BH, Tq, Tk, D, causal, which, scale} */
    loom__vk_begin(o, &c, "attention_grad", t->dtype);
    for (int i = 0; i < 6; i++) loom__vk_in(&c, t->src[i]);
    loom__vk_out(&c, t);
    loom__vk_u32(&c, (uint32_t)BH), loom__vk_u32(&c, (uint32_t)Tq), loom__vk_u32(&c, (uint32_t)Tk);
    loom__vk_u32(&c, (uint32_t)D), loom__vk_u32(&c, (uint32_t)t->p[LOOM_P_ATTN_CAUSAL]);
    loom__vk_i32(&c, which), loom__vk_f32(&c, (float)t->f[LOOM_F_ATTN_SCALE]);
    int64_t rows = which == LOOM_K_ATTN_DQ ? Tq : Tk, other = which == LOOM_K_ATTN_DQ ? Tk : Tq;
    return loom__vk_run_groups(&c, BH * rows, loom__vk_reduce_local(o->vk, other));
}

loom_status loom__vk_causal_mask(loom__vk_op *o) {
    const loom_tensor *y = o->t;
    int64_t n = loom_tensor_numel(y);
    loom__vk_call c;
    /* binding 0 x, 1 y; push {xo, yo, n, Tq, Tk, value} */
    loom__vk_begin(o, &c, "causal_mask", y->dtype);
    loom__vk_in(&c, y->src[0]), loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)n), loom__vk_u32(&c, (uint32_t)y->dims[y->ndim - 2]);
    loom__vk_u32(&c, (uint32_t)y->dims[y->ndim - 1]), loom__vk_f32(&c, (float)y->f[LOOM_F_CAUSAL_VALUE]);
    return loom__vk_run_1d(&c, n);
}
