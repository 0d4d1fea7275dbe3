/* core/ops/conv2d.c — 2-D convolution (NCHW, torch semantics): the builder,
 * its shape checks, the backward rule and the two backward-only ops.
 *
 *   y = conv2d(x (N,C,H,W), w (O,C/groups,KH,KW), bias (O) or NULL) -> (N,O,OH,OW)
 *   OH = (H + 2*pad_h - dilation_h*(KH-1) - 1) / stride_h + 1   (same for W)
 *   y[n,o,i,j] = bias[o] + sum_{c,kh,kw} x[n, g*C/groups + c, i*sh - ph + kh*dh, j*sw - pw + kw*dw]
 *                                        * w[o, c, kh, kw]       with g = o / (O/groups)
 *
 * Parameters (node->p[], slots LOOM_P_CONV_* in core/params.h), the same on
 * all three ops:
 *   STRIDE_H, STRIDE_W  (>= 1; a 0 in the desc means 1)
 *   PAD_H, PAD_W        (zero padding, >= 0)
 *   DIL_H, DIL_W        dilation (>= 1; a 0 in the desc means 1)
 *   GROUPS              (>= 1; a 0 in the desc means 1)
 *   LIKE..LIKE+3        CONV2D_GRAD_INPUT:  x's shape (N,C,H,W)   — also the node's shape
 *                       CONV2D_GRAD_WEIGHT: w's shape (O,C/groups,KH,KW) — also the node's shape
 *
 * Ops:
 *   CONV2D(x, w[, bias])            nsrc 2 without bias, 3 with
 *   CONV2D_GRAD_INPUT(dy, w) -> dx  (N,C,H,W)
 *   CONV2D_GRAD_WEIGHT(dy, x) -> dw (O,C/groups,KH,KW)
 * The bias gradient is sum(dy) over axes N, H, W.
 */
#include "../impl.h"
#include "../params.h"

/* p[0..6] from a desc (NULL = defaults); false and a message if a field is negative */
static bool conv_params(loom_graph *g, const loom_conv2d_desc *d, int64_t *p) {
    loom_conv2d_desc z = {0};
    if (!d) d = &z;
    if (d->stride_h < 0 || d->stride_w < 0 || d->pad_h < 0 || d->pad_w < 0 || d->dilation_h < 0 ||
        d->dilation_w < 0 || d->groups < 0) {
        loom__fail(g, LOOM_ERR_INVALID_ARG,
                   "conv2d: negative parameter in desc (stride %d,%d pad %d,%d dilation %d,%d groups %d); "
                   "all must be >= 0 (0 = default)",
                   d->stride_h, d->stride_w, d->pad_h, d->pad_w, d->dilation_h, d->dilation_w, d->groups);
        return false;
    }
    p[LOOM_P_CONV_STRIDE_H] = d->stride_h ? d->stride_h : 1;
    p[LOOM_P_CONV_STRIDE_W] = d->stride_w ? d->stride_w : 1;
    p[LOOM_P_CONV_PAD_H] = d->pad_h;
    p[LOOM_P_CONV_PAD_W] = d->pad_w;
    p[LOOM_P_CONV_DIL_H] = d->dilation_h ? d->dilation_h : 1;
    p[LOOM_P_CONV_DIL_W] = d->dilation_w ? d->dilation_w : 1;
    p[LOOM_P_CONV_GROUPS] = d->groups ? d->groups : 1;
    return true;
}

/* output length along one axis; < 1 when the dilated kernel does not fit */
static int64_t out_len(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
    int64_t span = in + 2 * pad - dil * (k - 1) - 1;
    return span < 0 ? 0 : span / stride + 1;
}

loom_tensor *loom_conv2d(loom_graph *g, loom_tensor *x, loom_tensor *w, loom_tensor *bias,
                         const loom_conv2d_desc *desc) {
    if (!loom__ok(g, 2, x, w)) return NULL;
    if (bias && !loom__ok(g, 1, bias)) return NULL;
    loom_tensor *ac[3] = {x, w, bias};
    loom__autocast(g, LOOM_OP_CONV2D, 3, ac);
    x = ac[0], w = ac[1], bias = ac[2];
    char sx[96], sw[96], sb[96];
    loom_tensor_shape_str(x, sx, sizeof sx);
    loom_tensor_shape_str(w, sw, sizeof sw);
    if (!loom_dtype_is_float(x->dtype) || w->dtype != x->dtype || (bias && bias->dtype != x->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "conv2d: x '%s' (%s), w '%s' (%s)%s%s%s%s%s must share a float dtype",
                          x->name, loom_dtype_name(x->dtype), w->name, loom_dtype_name(w->dtype),
                          bias ? " and bias '" : "", bias ? bias->name : "", bias ? "' (" : "",
                          bias ? loom_dtype_name(bias->dtype) : "", bias ? ")" : "");
    if (x->ndim != 4)
        return loom__fail(g, LOOM_ERR_SHAPE, "conv2d: x '%s' has shape %s, expected 4 dimensions (N, C, H, W)",
                          x->name, sx);
    if (w->ndim != 4)
        return loom__fail(g, LOOM_ERR_SHAPE,
                          "conv2d: w '%s' has shape %s, expected 4 dimensions (O, C/groups, KH, KW)", w->name, sw);
    int64_t p[LOOM_P_CONV_NGEOM];
    if (!conv_params(g, desc, p)) return NULL;
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t O = w->dims[0], KH = w->dims[2], KW = w->dims[3], G = p[LOOM_P_CONV_GROUPS];
    if (C % G != 0)
        return loom__fail(g, LOOM_ERR_SHAPE, "conv2d: x '%s' %s has %lld channels, not divisible by groups = %lld",
                          x->name, sx, (long long)C, (long long)G);
    if (O % G != 0)
        return loom__fail(g, LOOM_ERR_SHAPE,
                          "conv2d: w '%s' %s has %lld output channels, not divisible by groups = %lld", w->name, sw,
                          (long long)O, (long long)G);
    if (w->dims[1] != C / G)
        return loom__fail(g, LOOM_ERR_SHAPE,
                          "conv2d: w '%s' has shape %s, its dimension 1 must be C/groups = %lld/%lld = %lld "
                          "(x '%s' %s)",
                          w->name, sw, (long long)C, (long long)G, (long long)(C / G), x->name, sx);
    if (bias && (bias->ndim != 1 || bias->dims[0] != O))
        return loom__fail(g, LOOM_ERR_SHAPE, "conv2d: bias '%s' has shape %s, expected [%lld] (w '%s' %s)",
                          bias->name, loom_tensor_shape_str(bias, sb, sizeof sb), (long long)O, w->name, sw);
    int64_t OH = out_len(H, KH, p[LOOM_P_CONV_STRIDE_H], p[LOOM_P_CONV_PAD_H], p[LOOM_P_CONV_DIL_H]);
    int64_t OW = out_len(W, KW, p[LOOM_P_CONV_STRIDE_W], p[LOOM_P_CONV_PAD_W], p[LOOM_P_CONV_DIL_W]);
    if (OH < 1 || OW < 1)
        return loom__fail(g, LOOM_ERR_SHAPE,
                          "conv2d: kernel of w '%s' %s (dilation %lld,%lld) does not fit x '%s' %s with padding "
                          "%lld,%lld: output would be %lldx%lld",
                          w->name, sw, (long long)p[LOOM_P_CONV_DIL_H], (long long)p[LOOM_P_CONV_DIL_W], x->name, sx,
                          (long long)p[LOOM_P_CONV_PAD_H], (long long)p[LOOM_P_CONV_PAD_W], (long long)OH,
                          (long long)OW);
    int64_t dims[4] = {N, O, OH, OW};
    loom_tensor *src[3] = {x, w, bias};
    loom_tensor *y = loom__node(g, LOOM_OP_CONV2D, x->dtype, 4, dims, bias ? 3 : 2, src);
    if (y) memcpy(y->p, p, sizeof p);
    return y;
}

/* ---- backward ---- */

/* A backward-only node of shape `like` with y's conv parameters. */
static loom_tensor *grad_node(loom_graph *g, int op, const loom_tensor *y, loom_tensor *a, loom_tensor *b,
                              const loom_tensor *like) {
    loom_tensor *src[2] = {a, b};
    loom_tensor *t = loom__node(g, op, like->dtype, 4, like->dims, 2, src);
    if (!t) return NULL;
    memcpy(t->p, y->p, LOOM_P_CONV_NGEOM * sizeof y->p[0]);
    memcpy(t->p + LOOM_P_CONV_LIKE, like->dims, 4 * sizeof like->dims[0]);
    return t;
}

loom_status loom__bw_conv2d(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    loom_tensor *x = y->src[0], *w = y->src[1], *bias = y->nsrc > 2 ? y->src[2] : NULL;
    if (loom__needs_grad(x)) dx[0] = grad_node(g, LOOM_OP_CONV2D_GRAD_INPUT, y, dy, w, x);
    if (loom__needs_grad(w)) dx[1] = grad_node(g, LOOM_OP_CONV2D_GRAD_WEIGHT, y, dy, x, w);
    if (loom__needs_grad(bias)) dx[2] = loom_sum(g, dy, (1u << 0) | (1u << 2) | (1u << 3), false);
    return g->status;
}

bool loom__conv_gi_as_forward(const loom__conv_geom *q, loom__conv_geom *f) {
    bool is_1x1 = q->KH == 1 && q->KW == 1 && q->ph == 0 && q->pw == 0;
    if (is_1x1 || q->G != 1 || q->sh != 1 || q->sw != 1 || q->dh != 1 || q->dw != 1 || q->ph > q->KH - 1 ||
        q->pw > q->KW - 1)
        return false;
    *f = *q;
    f->C = f->Cg = q->O, f->H = q->OH, f->W = q->OW, f->O = f->Og = q->C, f->OH = q->H, f->OW = q->W;
    f->ph = q->KH - 1 - q->ph, f->pw = q->KW - 1 - q->pw, f->K = q->O * q->KH * q->KW, f->P = q->H * q->W;
    return true;
}

void loom__conv_implicit_table(const loom__conv_geom *q, int64_t t[LOOM__CONV_IMPLICIT_LEN]) {
    const int64_t v[LOOM__CONV_IMPLICIT_LEN] = {q->H,  q->W,  q->KH, q->KW, q->OW, q->sh,          q->sw,
                                                q->ph, q->pw, q->dh, q->dw, q->P,  q->C * q->H * q->W, q->O * q->P};
    for (int i = 0; i < LOOM__CONV_IMPLICIT_LEN; i++) t[i] = v[i];
}

int64_t loom__conv_chunk(int64_t N, int64_t max) {
    int64_t ch = max;
    while (ch > 1 && N % ch) ch--;
    return ch;
}

int64_t loom__conv_gw_chunk(int64_t N, bool reproducible) { return loom__conv_chunk(N, reproducible ? 1 : 8); }

bool loom__conv_geom_same(const loom__conv_geom *a, const loom__conv_geom *b) {
    return a->N == b->N && a->C == b->C && a->H == b->H && a->W == b->W && a->O == b->O && a->KH == b->KH &&
           a->KW == b->KW && a->sh == b->sh && a->sw == b->sw && a->ph == b->ph && a->pw == b->pw &&
           a->dh == b->dh && a->dw == b->dw && a->G == b->G;
}

loom__conv_geom loom__conv_geom_of(const loom_tensor *t) {
    const int64_t *xd, *wd, *yd;
    switch (t->op) {
    case LOOM_OP_CONV2D: xd = t->src[0]->dims, wd = t->src[1]->dims, yd = t->dims; break;
    case LOOM_OP_CONV2D_GRAD_INPUT: yd = t->src[0]->dims, wd = t->src[1]->dims, xd = t->dims; break;
    default: yd = t->src[0]->dims, xd = t->src[1]->dims, wd = t->dims; break; /* grad_weight */
    }
    loom__conv_geom q = {xd[0],
                         xd[1],
                         xd[2],
                         xd[3],
                         wd[0],
                         wd[2],
                         wd[3],
                         yd[2],
                         yd[3],
                         t->p[LOOM_P_CONV_STRIDE_H],
                         t->p[LOOM_P_CONV_STRIDE_W],
                         t->p[LOOM_P_CONV_PAD_H],
                         t->p[LOOM_P_CONV_PAD_W],
                         t->p[LOOM_P_CONV_DIL_H],
                         t->p[LOOM_P_CONV_DIL_W],
                         t->p[LOOM_P_CONV_GROUPS],
                         0,
                         0,
                         0,
                         0};
    q.Cg = q.C / q.G, q.Og = q.O / q.G, q.K = q.Cg * q.KH * q.KW, q.P = q.OH * q.OW;
    return q;
}
