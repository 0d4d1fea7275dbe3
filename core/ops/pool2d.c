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
 * Parameters (node->p[]):
 *   MAX_POOL2D, AVG_POOL2D and their grads:
 *     p[0], p[1] kernel_h, kernel_w   p[2], p[3] stride_h, stride_w (>= 1)
 *     p[4], p[5] pad_h, pad_w         p[6] count_include_pad (0 or 1; avg only)
 *   ADAPTIVE_AVG_POOL2D and its grad: p[0], p[1] out_h, out_w
 *   AVG_POOL2D_GRAD, ADAPTIVE_AVG_POOL2D_GRAD: p[7..10] x's shape (N,C,H,W),
 *     also the node's shape.
 *
 * Ops:
 *   MAX_POOL2D(x), AVG_POOL2D(x), ADAPTIVE_AVG_POOL2D(x)
 *   MAX_POOL2D_GRAD(x, dy) -> dx   recomputes each window's argmax from x;
 *                                  the first maximum wins on ties (like torch)
 *   AVG_POOL2D_GRAD(dy) -> dx, ADAPTIVE_AVG_POOL2D_GRAD(dy) -> dx
 */
#include "../impl.h"

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
    int64_t p[7] = {d->kernel_h, d->kernel_w, d->stride_h ? d->stride_h : d->kernel_h,
                    d->stride_w ? d->stride_w : d->kernel_w, d->pad_h, d->pad_w, d->exclude_pad == 0};
    int64_t sh = x->dims[2] + 2 * p[4] - p[0], sw = x->dims[3] + 2 * p[5] - p[1];
    if (sh < 0 || sw < 0)
        return loom__fail(g, LOOM_ERR_SHAPE, "%s: kernel %lldx%lld does not fit x '%s' %s with padding %lld,%lld",
                          name, (long long)p[0], (long long)p[1], x->name, sx, (long long)p[4], (long long)p[5]);
    int64_t dims[4] = {x->dims[0], x->dims[1], sh / p[2] + 1, sw / p[3] + 1};
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
    if (y) y->p[0] = out_h, y->p[1] = out_w;
    return y;
}

loom_tensor *loom_global_avg_pool2d(loom_graph *g, loom_tensor *x) { return loom_adaptive_avg_pool2d(g, x, 1, 1); }

/* ---- backward ---- */

/* A gradient node of x's shape with y's parameters and x's shape in p[7..10]. */
static loom_tensor *grad_node(loom_graph *g, int op, const loom_tensor *y, int nsrc, loom_tensor *const *src) {
    const loom_tensor *x = y->src[0];
    loom_tensor *t = loom__node(g, op, x->dtype, 4, x->dims, nsrc, src);
    if (!t) return NULL;
    memcpy(t->p, y->p, 7 * sizeof y->p[0]);
    memcpy(t->p + 7, x->dims, 4 * sizeof x->dims[0]);
    return t;
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
