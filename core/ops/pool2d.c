/* core/ops/pool2d.c — 2-D pooling (NCHW, torch semantics, floor mode): max,
 * average and adaptive average pooling, their builders, shape checks,
 * backward rules and backward-only ops.
 *
 *   max/avg:  x (N,C,H,W) -> (N,C,OH,OW), OH = (H + 2*pad_h - kernel_h) / stride_h + 1
 *             windows start at i*stride_h - pad_h; max pool pads with -inf,
 *             avg pool with zeros; pad <= kernel/2 (as torch requires).
 *             avg divisor: the window's size (desc exclude_pad == 0, torch's
 *             default count_include_pad=True) or the number of its elements
 *             inside x (exclude_pad != 0).
 *   adaptive: x (N,C,H,W) -> (N,C,OH,OW), output i averages rows
 *             [floor(i*H/OH), ceil((i+1)*H/OH)) (same for columns).
 *
 * Parameters (node->p[], slots in core/params.h):
 *   MAX_POOL2D, AVG_POOL2D and their grads (LOOM_P_POOL_*):
 *     KH, KW kernel    SH, SW stride (>= 1)    PH, PW padding
 *     INCL count_include_pad (0 or 1; avg only)
 *   ADAPTIVE_AVG_POOL2D and its grad: LOOM_P_ADAPTIVE_OH, _OW out_h, out_w
 *   the gradient ops: LOOM_P_POOL_XDIMS..+3 x's shape (N,C,H,W), also the
 *     node's shape.
 *
 * Ops:
 *   MAX_POOL2D(x), AVG_POOL2D(x), ADAPTIVE_AVG_POOL2D(x)
 *   MAX_POOL2D_GRAD(x, dy) -> dx   recomputes each window's argmax from x;
 *                                  the first maximum wins on ties (like torch)
 *   AVG_POOL2D_GRAD(dy) -> dx, ADAPTIVE_AVG_POOL2D_GRAD(dy) -> dx
 */
#include "../backend_impl.h"

static bool check_x(loom_graph *g, const char *op, const loom_tensor *x) {
    char s[96];
    if (!loom_dtype_is_float(x->dtype)) {
        loom__fail(g, LOOM_ERR_DTYPE, "%s: x '%s' has dtype %s, a float dtype is required", op, x->name,
                   loom_dtype_name(x->dtype));
        return false;
    }
    if (x->ndim != 4) {
        loom__fail(g, LOOM_ERR_SHAPE, "%s: x '%s' has shape %s, expected 4 dimensions (N, C, H, W)", op, x->name,
                   loom_tensor_shape_str(x, s, sizeof s));
        return false;
    }
    return true;
}

static loom_tensor *pool(loom_graph *g, int op, loom_tensor *x, const loom_pool2d_desc *d) {
    const char *name = loom_op_name(op);
    if (!loom__ok(g, 1, x)) return NULL;
    if (!check_x(g, name, x)) return NULL;
    if (!d) return loom__fail(g, LOOM_ERR_INVALID_ARG, "%s: desc is NULL (the kernel size is required)", name);
    char sx[96];
    loom_tensor_shape_str(x, sx, sizeof sx);
    if (d->kernel_h < 1 || d->kernel_w < 1 || d->stride_h < 0 || d->stride_w < 0 || d->pad_h < 0 || d->pad_w < 0)
        return loom__fail(g, LOOM_ERR_INVALID_ARG,
                          "%s: kernel %dx%d, stride %d,%d, pad %d,%d: the kernel must be >= 1, stride and pad >= 0 "
                          "(x '%s' %s)",
                          name, d->kernel_h, d->kernel_w, d->stride_h, d->stride_w, d->pad_h, d->pad_w, x->name, sx);
    if (d->pad_h > d->kernel_h / 2 || d->pad_w > d->kernel_w / 2)
        return loom__fail(g, LOOM_ERR_INVALID_ARG,
                          "%s: pad %d,%d must be at most half the kernel %dx%d (x '%s' %s)", name, d->pad_h,
                          d->pad_w, d->kernel_h, d->kernel_w, x->name, sx);
    int64_t p[LOOM_P_POOL_NGEOM];
    p[LOOM_P_POOL_KH] = d->kernel_h, p[LOOM_P_POOL_KW] = d->kernel_w;
    p[LOOM_P_POOL_SH] = d->stride_h ? d->stride_h : d->kernel_h;
    p[LOOM_P_POOL_SW] = d->stride_w ? d->stride_w : d->kernel_w;
    p[LOOM_P_POOL_PH] = d->pad_h, p[LOOM_P_POOL_PW] = d->pad_w, p[LOOM_P_POOL_INCL] = d->exclude_pad == 0;
    int64_t sh = x->dims[2] + 2 * p[LOOM_P_POOL_PH] - p[LOOM_P_POOL_KH];
    int64_t sw = x->dims[3] + 2 * p[LOOM_P_POOL_PW] - p[LOOM_P_POOL_KW];
    if (sh < 0 || sw < 0)
        return loom__fail(g, LOOM_ERR_SHAPE, "%s: kernel %lldx%lld does not fit x '%s' %s with padding %lld,%lld", name,
                          (long long)p[LOOM_P_POOL_KH], (long long)p[LOOM_P_POOL_KW], x->name, sx,
                          (long long)p[LOOM_P_POOL_PH], (long long)p[LOOM_P_POOL_PW]);
    int64_t dims[4] = {x->dims[0], x->dims[1], sh / p[LOOM_P_POOL_SH] + 1, sw / p[LOOM_P_POOL_SW] + 1};
    loom_tensor *y = loom__node(g, op, x->dtype, 4, dims, 1, &x);
    if (y) memcpy(y->p, p, sizeof p);
    return y;
}

loom_tensor *loom_max_pool2d(loom_graph *g, loom_tensor *x, const loom_pool2d_desc *desc) {
    return pool(g, LOOM_OP_MAX_POOL2D, x, desc);
}

loom_tensor *loom_avg_pool2d(loom_graph *g, loom_tensor *x, const loom_pool2d_desc *desc) {
    return pool(g, LOOM_OP_AVG_POOL2D, x, desc);
}

loom_tensor *loom_adaptive_avg_pool2d(loom_graph *g, loom_tensor *x, int out_h, int out_w) {
    if (!loom__ok(g, 1, x)) return NULL;
    if (!check_x(g, "adaptive_avg_pool2d", x)) return NULL;
    if (out_h < 1 || out_w < 1) {
        char sx[96];
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "adaptive_avg_pool2d: output size %dx%d must be >= 1 (x '%s' %s)",
                          out_h, out_w, x->name, loom_tensor_shape_str(x, sx, sizeof sx));
    }
    int64_t dims[4] = {x->dims[0], x->dims[1], out_h, out_w};
    loom_tensor *y = loom__node(g, LOOM_OP_ADAPTIVE_AVG_POOL2D, x->dtype, 4, dims, 1, &x);
    if (y) y->p[LOOM_P_ADAPTIVE_OH] = out_h, y->p[LOOM_P_ADAPTIVE_OW] = out_w;
    return y;
}

loom_tensor *loom_global_avg_pool2d(loom_graph *g, loom_tensor *x) { return loom_adaptive_avg_pool2d(g, x, 1, 1); }

/* ---- backward ---- */

/* A gradient node of x's shape with y's parameters and x's shape in
 * p[LOOM_P_POOL_XDIMS..+3]. */
static loom_tensor *grad_node(loom_graph *g, int op, const loom_tensor *y, int nsrc, loom_tensor *const *src) {
    const loom_tensor *x = y->src[0];
    loom_tensor *t = loom__node(g, op, x->dtype, 4, x->dims, nsrc, src);
    if (!t) return NULL;
    memcpy(t->p, y->p, LOOM_P_POOL_NGEOM * sizeof y->p[0]);
    memcpy(t->p + LOOM_P_POOL_XDIMS, x->dims, 4 * sizeof x->dims[0]);
    return t;
}

void loom__pool_geom(const loom_tensor *t, const int64_t *xd, const int64_t *yd, int64_t *g) {
    const int64_t *p = t->p;
    g[LOOM_G_POOL_PLANES] = xd[0] * xd[1], g[LOOM_G_POOL_H] = xd[2], g[LOOM_G_POOL_W] = xd[3];
    g[LOOM_G_POOL_OH] = yd[2], g[LOOM_G_POOL_OW] = yd[3];
    g[LOOM_G_POOL_KH] = p[LOOM_P_POOL_KH], g[LOOM_G_POOL_KW] = p[LOOM_P_POOL_KW];
    g[LOOM_G_POOL_SH] = p[LOOM_P_POOL_SH], g[LOOM_G_POOL_SW] = p[LOOM_P_POOL_SW];
    g[LOOM_G_POOL_PH] = p[LOOM_P_POOL_PH], g[LOOM_G_POOL_PW] = p[LOOM_P_POOL_PW];
    g[LOOM_G_POOL_INCL] = p[LOOM_P_POOL_INCL];
}

bool loom__pool_max2(const loom_tensor *t, const int64_t *xd, int64_t *windows) {
    const int64_t *p = t->p;
    *windows = xd[0] * xd[1] * (xd[2] / 2) * (xd[3] / 2);
    return p[LOOM_P_POOL_KH] == 2 && p[LOOM_P_POOL_KW] == 2 && p[LOOM_P_POOL_SH] == 2 && p[LOOM_P_POOL_SW] == 2 &&
           p[LOOM_P_POOL_PH] == 0 && p[LOOM_P_POOL_PW] == 0 && xd[2] % 2 == 0 && xd[3] % 2 == 0 &&
           *windows < ((int64_t)1 << 31);
}

loom_status loom__bw_max_pool2d(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    loom_tensor *src[2] = {y->src[0], dy};
    dx[0] = grad_node(g, LOOM_OP_MAX_POOL2D_GRAD, y, 2, src);
    return g->status;
}

loom_status loom__bw_avg_pool2d(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    dx[0] = grad_node(g, LOOM_OP_AVG_POOL2D_GRAD, y, 1, &dy);
    return g->status;
}

loom_status loom__bw_adaptive_avg_pool2d(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    dx[0] = grad_node(g, LOOM_OP_ADAPTIVE_AVG_POOL2D_GRAD, y, 1, &dy);
    return g->status;
}
