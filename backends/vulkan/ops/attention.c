/* backends/vulkan/ops/attention.c — host side of attention, attention_grad
 * and causal_mask (shaders/attention.comp): one work-group per query row
 * (attention, dq) or key row (dk, dv), keys or query rows in chunks of the
 * group's size. */
#include "../vulkan.h"

#define ATTN_MAX_D 512 /* shaders/attention.comp's shared rows */

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

loom_status loom__vk_attention(loom__vk_op *o) {
    const loom_tensor *t = o->t;
    int64_t BH, Tq, Tk, D;
    loom_status st = attn_sizes(o, &BH, &Tq, &Tk, &D);
    if (st != LOOM_OK) return st;
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
