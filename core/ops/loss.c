/* core/ops/loss.c — cross-entropy (fused log-softmax, label smoothing,
 * ignore_index) and mean squared error: builders and backward rules.
 *
 * cross_entropy(logits (N, C) float, targets (N) i32) -> scalar (ndim 0),
 *   p[LOOM_P_CE_IGNORE] = ignore_index, f[LOOM_F_CE_EPS] = label smoothing eps in [0, 1).
 *   loss_i = -(1 - eps) logp[i, t_i] - eps/C sum_c logp[i, c]  (torch semantics)
 *   loss   = mean of loss_i over rows with t_i != ignore_index.
 *   If every row is ignored the loss (and its gradient) is 0; torch returns
 *   NaN there. A target outside [0, C) that is not ignore_index makes the run
 *   fail with LOOM_ERR_INVALID_ARG naming the value and the row.
 * cross_entropy_grad(logits, targets, dloss (scalar)) -> (N, C), same p/f:
 *   dlogits[i, c] = (softmax[i, c] - q[i, c]) dloss / count, q = the smoothed
 *   one-hot (1 - eps + eps/C at t_i, eps/C elsewhere); 0 on ignored rows.
 *   Created only by the cross_entropy backward rule.
 * mse(a, b) -> scalar mean((a - b)^2); a and b share shape and dtype. Its
 *   backward rule is composed from sub, mul and scale. */
#include <math.h>

#include "../impl.h"
#include "../params.h"

static const int64_t scalar_dims[1] = {1}; /* unused: ndim 0 */

loom_tensor *loom_cross_entropy(loom_graph *g, loom_tensor *logits, loom_tensor *targets, double label_smoothing,
                                int ignore_index) {
    if (!loom__ok(g, 2, logits, targets)) return NULL;
    loom_tensor *ac[2] = {logits, targets};
    loom__autocast(g, LOOM_OP_CROSS_ENTROPY, 2, ac);
    logits = ac[0], targets = ac[1];
    char sl[96], st[96];
    loom_tensor_shape_str(logits, sl, sizeof sl);
    loom_tensor_shape_str(targets, st, sizeof st);
    if (!loom_dtype_is_float(logits->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "cross_entropy: logits '%s' have dtype %s, a float dtype is required",
                          logits->name, loom_dtype_name(logits->dtype));
    if (targets->dtype != LOOM_I32)
        return loom__fail(g, LOOM_ERR_DTYPE, "cross_entropy: targets '%s' have dtype %s, i32 class indices are required",
                          targets->name, loom_dtype_name(targets->dtype));
    if (logits->ndim != 2)
        return loom__fail(g, LOOM_ERR_SHAPE, "cross_entropy: logits '%s' have shape %s, expected (N, C)", logits->name,
                          sl);
    if (targets->ndim != 1 || targets->dims[0] != logits->dims[0])
        return loom__fail(g, LOOM_ERR_SHAPE,
                          "cross_entropy: targets '%s' have shape %s, expected [%lld] (one class index per row of "
                          "logits '%s' %s)",
                          targets->name, st, (long long)logits->dims[0], logits->name, sl);
    if (!(label_smoothing >= 0.0 && label_smoothing < 1.0))
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "cross_entropy: label_smoothing %g is outside [0, 1)",
                          label_smoothing);
    loom_tensor *src[2] = {logits, targets};
    loom_tensor *y = loom__node(g, LOOM_OP_CROSS_ENTROPY, logits->dtype, 0, scalar_dims, 2, src);
    if (y) {
        y->p[LOOM_P_CE_IGNORE] = ignore_index;
        y->f[LOOM_F_CE_EPS] = label_smoothing;
    }
    return y;
}

loom_tensor *loom_mse(loom_graph *g, loom_tensor *a, loom_tensor *b) {
    if (!loom__ok(g, 2, a, b)) return NULL;
    loom_tensor *ac[2] = {a, b};
    loom__autocast(g, LOOM_OP_MSE, 2, ac);
    a = ac[0], b = ac[1];
    char sa[96], sb[96];
    if (a->dtype != b->dtype || !loom_dtype_is_float(a->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "mse: operands must share a float dtype, got %s '%s' and %s '%s'",
                          loom_dtype_name(a->dtype), a->name, loom_dtype_name(b->dtype), b->name);
    if (!loom__same_shape(a, b))
        return loom__fail(g, LOOM_ERR_SHAPE, "mse: '%s' has shape %s and '%s' has shape %s; they must be equal",
                          a->name, loom_tensor_shape_str(a, sa, sizeof sa), b->name,
                          loom_tensor_shape_str(b, sb, sizeof sb));
    loom_tensor *src[2] = {a, b};
    return loom__node(g, LOOM_OP_MSE, a->dtype, 0, scalar_dims, 2, src);
}

/* ---- backward rules ---- */
/* targets (src[1]) are integers and never need a gradient */
loom_status loom__bw_cross_entropy(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    loom_tensor *logits = y->src[0];
    if (!loom__ok(g, 1, dy)) return g->status;
    loom_tensor *src[3] = {logits, y->src[1], dy};
    loom_tensor *d = loom__node(g, LOOM_OP_CROSS_ENTROPY_GRAD, logits->dtype, logits->ndim, logits->dims, 3, src);
    if (d) {
        d->p[LOOM_P_CE_IGNORE] = y->p[LOOM_P_CE_IGNORE];
        d->f[LOOM_F_CE_EPS] = y->f[LOOM_F_CE_EPS];
    }
    dx[0] = d;
    return g->status;
}

/* y = sum((a - b)^2) / n: da = dy 2 (a - b) / n, db = -da (dy is a scalar
 * and broadcasts in mul). */
loom_status loom__bw_mse(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    loom_tensor *a = y->src[0], *b = y->src[1];
    double k = 2.0 / (double)loom_tensor_numel(a);
    loom_tensor *d = loom_mul(g, loom_sub(g, a, b), dy);
    if (loom__needs_grad(a)) dx[0] = loom_scale(g, d, k);
    if (loom__needs_grad(b)) dx[1] = loom_scale(g, d, -k);
    return g->status;
}
