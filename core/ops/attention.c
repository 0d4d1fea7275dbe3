/* core/ops/attention.c — scaled dot-product attention, the causal mask, and
 * the backward-only attention gradient op: builders and backward rules.
 *
 * attention(q, k, v, lse) -> y; q (B, H, Tq, D), k and v (B, H, Tk, D),
 * y (B, H, Tq, D):
 *     y[i] = sum_j softmax_j(s[i, j]) v[j],  s[i, j] = scale q[i] . k[j]
 * with, when causal, key j > query i left out (torch's is_causal: the
 * lower triangle aligned at the top-left corner, so row i sees keys 0..i
 * whatever Tk is; every row sees at least key 0). Kernels never hold the
 * whole (Tq, Tk) score matrix: they run an online softmax (running max and
 * sum) over blocks of keys.
 *   p[LOOM_P_ATTN_CAUSAL] causal, f[LOOM_F_ATTN_SCALE] scale
 *   src[3] lse (B, H, Tq): f32 (f64 for f64 inputs), made by a fill node the
 *       builder adds. The forward kernel WRITES it: the log-sum-exp of every
 *       score row, which the gradient op reads instead of recomputing the
 *       softmax statistics. A node's kernel writing one of its sources is
 *       otherwise the effect ops' privilege; here the source is a private
 *       intermediate that only this node and its gradient ops read, so the
 *       planner's liveness (the lse lives until the last gradient op) and the
 *       order of nodes (the gradient ops come after this node) make it safe.
 *       Backends declare the write (Vulkan: loom__vk_inout).
 *
 * attention_grad(q, k, v, y, dy, lse) -> dq, dk or dv (p[LOOM_P_ATTN_WHICH]
 * = LOOM_K_ATTN_DQ / DK / DV; the input's shape and dtype), the backward of
 * FlashAttention: the scores are recomputed per block, p = exp(s - lse),
 * with delta[i] = dy[i] . y[i]:
 *     dv[j] = sum_i p[i,j] dy[i]
 *     ds[i,j] = p[i,j] (dy[i] . v[j] - delta[i])
 *     dq[i] = scale sum_j ds[i,j] k[j],  dk[j] = scale sum_i ds[i,j] q[i]
 *
 * causal_mask(x) -> x's shape; x (..., Tq, Tk): element (i, j) is
 * f[LOOM_F_CAUSAL_VALUE] where j > i (the same triangle as attention), x
 * elsewhere. The builder sets the value to -inf; the backward rule builds
 * the same op with value 0 on dy. */
#include <math.h>

#include "../impl.h"
#include "../params.h"

static loom_tensor *attn_fail_shape(loom_graph *g, loom_tensor *q, loom_tensor *k, loom_tensor *v, const char *why) {
    char sq[96], sk[96], sv[96];
    return loom__fail(g, LOOM_ERR_SHAPE,
                      "attention: q '%s' %s, k '%s' %s, v '%s' %s: %s (expected q (B, H, Tq, D), k and v (B, H, Tk, D))",
                      q->name, loom_tensor_shape_str(q, sq, sizeof sq), k->name, loom_tensor_shape_str(k, sk, sizeof sk),
                      v->name, loom_tensor_shape_str(v, sv, sizeof sv), why);
}

loom_tensor *loom_attention(loom_graph *g, loom_tensor *q, loom_tensor *k, loom_tensor *v, bool causal, double scale) {
    if (!loom__ok(g, 3, q, k, v)) return NULL;
    loom_tensor *ac[3] = {q, k, v};
    loom__autocast(g, LOOM_OP_ATTENTION, 3, ac);
    q = ac[0], k = ac[1], v = ac[2];
    if (q->dtype != k->dtype || q->dtype != v->dtype || !loom_dtype_is_float(q->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "attention: q '%s' (%s), k '%s' (%s) and v '%s' (%s) must share a float dtype",
                          q->name, loom_dtype_name(q->dtype), k->name, loom_dtype_name(k->dtype), v->name,
                          loom_dtype_name(v->dtype));
    if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4) return attn_fail_shape(g, q, k, v, "all three must have 4 dims");
    if (k->dims[0] != q->dims[0] || k->dims[1] != q->dims[1] || v->dims[0] != q->dims[0] || v->dims[1] != q->dims[1])
        return attn_fail_shape(g, q, k, v, "B and H differ");
    if (k->dims[3] != q->dims[3] || v->dims[3] != q->dims[3]) return attn_fail_shape(g, q, k, v, "D differs");
    if (k->dims[2] != v->dims[2]) return attn_fail_shape(g, q, k, v, "k and v have different Tk");
    if (k->dims[2] < 1 || q->dims[3] < 1) return attn_fail_shape(g, q, k, v, "Tk and D must be at least 1");
    if (!isfinite(scale))
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "attention: scale must be finite (0 = 1/sqrt(D)), got %g", scale);
    if (scale == 0) scale = 1.0 / sqrt((double)q->dims[3]);
    loom_tensor *lse = loom_fill(g, q->dtype == LOOM_F64 ? LOOM_F64 : LOOM_F32, 3, q->dims, 0.0);
    if (!lse) return NULL;
    loom_tensor *src[4] = {q, k, v, lse};
    loom_tensor *y = loom__node(g, LOOM_OP_ATTENTION, q->dtype, 4, q->dims, 4, src);
    if (!y) return NULL;
    y->p[LOOM_P_ATTN_CAUSAL] = causal;
    y->p[LOOM_P_ATTN_WHICH] = -1;
    y->f[LOOM_F_ATTN_SCALE] = scale;
    return y;
}

static loom_tensor *mask_node(loom_graph *g, loom_tensor *x, double value) {
    loom_tensor *y = loom__node(g, LOOM_OP_CAUSAL_MASK, x->dtype, x->ndim, x->dims, 1, &x);
    if (y) y->f[LOOM_F_CAUSAL_VALUE] = value;
    return y;
}

loom_tensor *loom_causal_mask(loom_graph *g, loom_tensor *x) {
    if (!loom__ok(g, 1, x)) return NULL;
    char sx[96];
    if (!loom_dtype_is_float(x->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "causal_mask: '%s' has dtype %s, a float dtype is required", x->name,
                          loom_dtype_name(x->dtype));
    if (x->ndim < 2)
        return loom__fail(g, LOOM_ERR_SHAPE, "causal_mask: '%s' has shape %s; expected (..., Tq, Tk)", x->name,
                          loom_tensor_shape_str(x, sx, sizeof sx));
    return mask_node(g, x, -INFINITY);
}

/* ---- backward rules ---- */
loom_status loom__bw_attention(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    static const int which[3] = {LOOM_K_ATTN_DQ, LOOM_K_ATTN_DK, LOOM_K_ATTN_DV};
    loom_tensor *src[6] = {y->src[0], y->src[1], y->src[2], y, dy, y->src[3]};
    for (int i = 0; i < 3; i++) {
        loom_tensor *x = y->src[i];
        if (!loom__needs_grad(x)) continue;
        loom_tensor *t = loom__node(g, LOOM_OP_ATTENTION_GRAD, x->dtype, x->ndim, x->dims, 6, src);
        if (!t) return g->status;
        t->p[LOOM_P_ATTN_CAUSAL] = y->p[LOOM_P_ATTN_CAUSAL];
        t->p[LOOM_P_ATTN_WHICH] = which[i];
        t->f[LOOM_F_ATTN_SCALE] = y->f[LOOM_F_ATTN_SCALE];
        dx[i] = t;
    }
    return g->status;
}

loom_status loom__bw_causal_mask(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    (void)y;
    dx[0] = mask_node(g, dy, 0.0);
    return g->status;
}
