/* core/ops/norm.c — batch norm and layer norm (torch semantics) and their
 * backward-only gradient ops: builders and backward rules.
 *
 * Optional inputs are packed: src[0] is always x, the optional inputs that
 * are present follow in a fixed order, and p[] records the src index of each
 * one (-1 = absent). Kernels find their inputs through these indices only.
 *
 * batch_norm and its gradient ops; x (N, C, ...), statistics per channel C
 * over M = N * prod(dims[2:]) elements:
 * (slots in core/params.h, p[LOOM_P_BN_*], f[LOOM_F_BN_*]):
 *   TRAIN train (1) or eval (0)
 *   GAMMA src index of gamma (C)          or -1
 *   BETA  src index of beta (C)           or -1
 *   RMEAN src index of running_mean (C)   or -1
 *   RVAR  src index of running_var (C)    or -1
 *   DY    src index of dy (x's shape)     or -1 (gradient ops only)
 *   f: EPS, MOMENTUM
 *   batch_norm(x, gamma?, beta?, running_mean?, running_var?) -> x's shape.
 *       train: normalise with the batch mean and biased variance; if running
 *       stats are given, update them in place (an effect op): running =
 *       (1 - momentum) * running + momentum * batch stat, with the unbiased
 *       variance (M / (M - 1)) for running_var. eval: normalise with the
 *       running stats. Running stats are states of dtype f32 (x f32/f16/bf16)
 *       or f64 (x f64), so a 16-bit x never rounds them.
 *   STATS src index of the (4, C) statistics (batch_norm_grad only)
 *   batch_norm_grad_params(x, running_mean?, running_var? (eval only), dy)
 *       -> (4, C), dtype f32 (f64 for f64 x), in one pass over x and dy:
 *       row 0 = dgamma = sum(dy xhat), row 1 = dbeta = sum(dy), row 2 = the
 *       mean and row 3 = the invstd used (batch statistics in train mode,
 *       running ones in eval mode).
 *   batch_norm_grad(x, gamma?, dy, stats) -> dx (x's shape), stats the
 *       (4, C) above: train: dx = gamma invstd / M (M dy - sum(dy) - xhat
 *       sum(dy xhat)); eval: dx = dy gamma invstd_running. The backward rule
 *       always builds the statistics op first and feeds it to this one, so
 *       the sums over the batch are computed once.

 * layer_norm and its gradient ops; the last norm_dims axes (D elements) are
 * normalised, the leading ones (R rows) are independent:
 * (slots p[LOOM_P_LN_*], f[LOOM_F_LN_*]):
 *   DIMS  norm_dims
 *   GAMMA src index of gamma (x's last norm_dims dims) or -1
 *   BETA  src index of beta (same shape)               or -1
 *   DY    src index of dy                              or -1 (gradient ops only)
 *   f: EPS
 *   layer_norm(x, gamma?, beta?) -> x's shape (biased variance).
 *   layer_norm_grad(x, gamma?, dy) -> dx:
 *       dx = invstd / D (D g dy - sum(g dy) - xhat sum(g dy xhat)), g = gamma.
 *   layer_norm_grad_params(x, dy) -> (2, D): dgamma (row 0), dbeta (row 1).
 *
 * Gradients reach x, gamma and beta; running statistics get none. */
#include <math.h>

#include "../impl.h"
#include "../params.h"

/* Append t to the packed src list, returning its index (-1 for NULL). */
static int64_t pack(loom_tensor **src, int *n, loom_tensor *t) {
    if (!t) return -1;
    src[*n] = t;
    return (*n)++;
}

static bool vec_of(const loom_tensor *t, int64_t c) { return t->ndim == 1 && t->dims[0] == c; }

/* ---- batch norm ---- */

static void bn_check_affine(loom_graph *g, const loom_tensor *x, const loom_tensor *t, const char *what) {
    char sx[96], st[96];
    if (!t || g->status != LOOM_OK) return;
    if (t->dtype != x->dtype)
        loom__fail(g, LOOM_ERR_DTYPE, "batch_norm: %s '%s' has dtype %s, expected x's dtype %s", what, t->name,
                   loom_dtype_name(t->dtype), loom_dtype_name(x->dtype));
    else if (!vec_of(t, x->dims[1]))
        loom__fail(g, LOOM_ERR_SHAPE, "batch_norm: %s '%s' has shape %s, expected [%lld] for x '%s' of shape %s", what,
                   t->name, loom_tensor_shape_str(t, st, sizeof st), (long long)x->dims[1], x->name,
                   loom_tensor_shape_str(x, sx, sizeof sx));
}

static void bn_check_running(loom_graph *g, const loom_tensor *x, const loom_tensor *t, const char *what) {
    char sx[96], st[96];
    if (g->status != LOOM_OK) return;
    loom_dtype want = x->dtype == LOOM_F64 ? LOOM_F64 : LOOM_F32;
    if (t->leaf != LOOM__STATE)
        loom__fail(g, LOOM_ERR_INVALID_ARG, "batch_norm: %s '%s' must be a state (loom_state), since it is updated in "
                   "place and gets no gradient", what, t->name);
    else if (t->dtype != want)
        loom__fail(g, LOOM_ERR_DTYPE, "batch_norm: %s '%s' has dtype %s, expected %s for x '%s' of dtype %s", what,
                   t->name, loom_dtype_name(t->dtype), loom_dtype_name(want), x->name, loom_dtype_name(x->dtype));
    else if (!vec_of(t, x->dims[1]))
        loom__fail(g, LOOM_ERR_SHAPE, "batch_norm: %s '%s' has shape %s, expected [%lld] for x '%s' of shape %s", what,
                   t->name, loom_tensor_shape_str(t, st, sizeof st), (long long)x->dims[1], x->name,
                   loom_tensor_shape_str(x, sx, sizeof sx));
}

loom_tensor *loom_batch_norm(loom_graph *g, loom_tensor *x, const loom_batch_norm_desc *desc) {
    loom_batch_norm_desc d = {0};
    if (desc) d = *desc;
    loom_tensor *gamma = d.gamma, *beta = d.beta, *running_mean = d.running_mean, *running_var = d.running_var;
    bool train = !d.eval;
    double momentum = d.momentum == 0 ? 0.1 : d.momentum, eps = d.eps == 0 ? 1e-5 : d.eps;
    if (!loom__ok(g, 1, x)) return NULL;
    loom_tensor *ac[3] = {x, gamma, beta}; /* running stats stay f32 */
    loom__autocast(g, LOOM_OP_BATCH_NORM, 3, ac);
    gamma = ac[1], beta = ac[2];
    loom_tensor *opt[4] = {gamma, beta, running_mean, running_var};
    for (int i = 0; i < 4; i++)
        if (opt[i] && !loom__ok(g, 1, opt[i])) return NULL;
    char sx[96];
    if (!loom_dtype_is_float(x->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "batch_norm: x '%s' has dtype %s, a float dtype is required", x->name,
                          loom_dtype_name(x->dtype));
    if (x->ndim < 2)
        return loom__fail(g, LOOM_ERR_SHAPE, "batch_norm: x '%s' has shape %s, expected (N, C, ...) with 2 to %d dims",
                          x->name, loom_tensor_shape_str(x, sx, sizeof sx), LOOM_MAX_DIMS);
    if (!(eps >= 0) || !isfinite(eps))
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "batch_norm: eps must be finite and >= 0, got %g", eps);
    if (!(momentum >= 0 && momentum <= 1))
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "batch_norm: momentum must be in [0, 1], got %g", momentum);
    bn_check_affine(g, x, gamma, "gamma");
    bn_check_affine(g, x, beta, "beta");
    if (g->status != LOOM_OK) return NULL;
    if (!running_mean != !running_var)
        return loom__fail(g, LOOM_ERR_INVALID_ARG,
                          "batch_norm: running_mean and running_var must be given together (got only %s '%s')",
                          running_mean ? "running_mean" : "running_var",
                          running_mean ? running_mean->name : running_var->name);
    if (running_mean) {
        bn_check_running(g, x, running_mean, "running_mean");
        bn_check_running(g, x, running_var, "running_var");
        if (g->status != LOOM_OK) return NULL;
    }
    if (!train && !running_mean)
        return loom__fail(g, LOOM_ERR_INVALID_ARG,
                          "batch_norm: eval mode (train = false) on x '%s' needs running_mean and running_var",
                          x->name);
    int64_t m = loom_tensor_numel(x) / x->dims[1];
    if (train && m < 2)
        return loom__fail(g, LOOM_ERR_SHAPE,
                          "batch_norm: x '%s' of shape %s has %lld value per channel; training needs more than 1",
                          x->name, loom_tensor_shape_str(x, sx, sizeof sx), (long long)m);

    loom_tensor *src[5] = {x};
    int n = 1;
    int64_t ig = pack(src, &n, gamma), ib = pack(src, &n, beta);
    int64_t im = pack(src, &n, running_mean), iv = pack(src, &n, running_var);
    loom_tensor *y = loom__node(g, LOOM_OP_BATCH_NORM, x->dtype, x->ndim, x->dims, n, src);
    if (!y) return NULL;
    y->p[LOOM_P_BN_TRAIN] = train;
    y->effect = train && im >= 0; /* only a training BN with running stats writes anything */
    y->p[LOOM_P_BN_GAMMA] = ig, y->p[LOOM_P_BN_BETA] = ib, y->p[LOOM_P_BN_RMEAN] = im, y->p[LOOM_P_BN_RVAR] = iv,
    y->p[LOOM_P_BN_DY] = -1;
    y->p[LOOM_P_BN_STATS] = -1;
    y->f[LOOM_F_BN_EPS] = eps, y->f[LOOM_F_BN_MOMENTUM] = momentum;
    return y;
}

/* The (4, C) statistics op of forward node y: srcs x, [running stats (eval)], dy. */
static loom_tensor *bn_stats_node(loom_graph *g, loom_tensor *y, loom_tensor *dy) {
    loom_tensor *x = y->src[0];
    bool train = y->p[LOOM_P_BN_TRAIN] != 0;
    loom_tensor *src[4] = {x};
    int n = 1;
    int64_t im = -1, iv = -1;
    if (!train) im = pack(src, &n, y->src[y->p[LOOM_P_BN_RMEAN]]), iv = pack(src, &n, y->src[y->p[LOOM_P_BN_RVAR]]);
    int64_t idy = pack(src, &n, dy);
    int64_t dims[2] = {4, x->dims[1]};
    loom_tensor *t = loom__node(g, LOOM_OP_BATCH_NORM_GRAD_PARAMS, x->dtype == LOOM_F64 ? LOOM_F64 : LOOM_F32, 2, dims,
                                n, src);
    if (!t) return NULL;
    t->p[LOOM_P_BN_TRAIN] = train;
    t->p[LOOM_P_BN_GAMMA] = -1, t->p[LOOM_P_BN_BETA] = -1, t->p[LOOM_P_BN_RMEAN] = im, t->p[LOOM_P_BN_RVAR] = iv,
    t->p[LOOM_P_BN_DY] = idy;
    t->p[LOOM_P_BN_STATS] = -1;
    t->f[LOOM_F_BN_EPS] = y->f[LOOM_F_BN_EPS], t->f[LOOM_F_BN_MOMENTUM] = y->f[LOOM_F_BN_MOMENTUM];
    return t;
}

/* dx of forward node y from the statistics: srcs x, [gamma], dy, stats. */
static loom_tensor *bn_dx_node(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor *stats) {
    loom_tensor *x = y->src[0];
    loom_tensor *src[4] = {x};
    int n = 1;
    int64_t ig = y->p[LOOM_P_BN_GAMMA] >= 0 ? pack(src, &n, y->src[y->p[LOOM_P_BN_GAMMA]]) : -1;
    int64_t idy = pack(src, &n, dy), ist = pack(src, &n, stats);
    loom_tensor *t = loom__node(g, LOOM_OP_BATCH_NORM_GRAD, x->dtype, x->ndim, x->dims, n, src);
    if (!t) return NULL;
    t->p[LOOM_P_BN_TRAIN] = y->p[LOOM_P_BN_TRAIN];
    t->p[LOOM_P_BN_GAMMA] = ig, t->p[LOOM_P_BN_BETA] = -1, t->p[LOOM_P_BN_RMEAN] = -1, t->p[LOOM_P_BN_RVAR] = -1,
    t->p[LOOM_P_BN_DY] = idy;
    t->p[LOOM_P_BN_STATS] = ist;
    t->f[LOOM_F_BN_EPS] = y->f[LOOM_F_BN_EPS], t->f[LOOM_F_BN_MOMENTUM] = y->f[LOOM_F_BN_MOMENTUM];
    return t;
}

/* Row r of a (K, n) gradient-params tensor, reshaped to like's shape and dtype. */
static loom_tensor *params_row(loom_graph *g, loom_tensor *gp, int r, const loom_tensor *like) {
    return loom_cast(g, loom_reshape(g, loom_slice(g, gp, 0, r, r + 1), like->ndim, like->dims), like->dtype);
}

loom_status loom__bw_batch_norm(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    int64_t ig = y->p[LOOM_P_BN_GAMMA], ib = y->p[LOOM_P_BN_BETA];
    loom_tensor *gamma = ig >= 0 ? y->src[ig] : NULL, *beta = ib >= 0 ? y->src[ib] : NULL;
    loom_tensor *stats = bn_stats_node(g, y, dy);
    if (loom__needs_grad(gamma)) dx[ig] = params_row(g, stats, 0, gamma);
    if (loom__needs_grad(beta)) dx[ib] = params_row(g, stats, 1, beta);
    if (loom__needs_grad(y->src[0])) dx[0] = bn_dx_node(g, y, dy, stats);
    return g->status;
}

/* ---- layer norm ---- */

loom_tensor *loom_layer_norm(loom_graph *g, loom_tensor *x, int norm_dims, loom_tensor *gamma, loom_tensor *beta,
                             double eps) {
    if (!loom__ok(g, 1, x)) return NULL;
    if ((gamma && !loom__ok(g, 1, gamma)) || (beta && !loom__ok(g, 1, beta))) return NULL;
    loom_tensor *ac[3] = {x, gamma, beta};
    loom__autocast(g, LOOM_OP_LAYER_NORM, 3, ac);
    x = ac[0], gamma = ac[1], beta = ac[2];
    char sx[96], st[96], sw[96];
    if (!loom_dtype_is_float(x->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "layer_norm: x '%s' has dtype %s, a float dtype is required", x->name,
                          loom_dtype_name(x->dtype));
    if (norm_dims < 1 || norm_dims > x->ndim)
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "layer_norm: norm_dims = %d for x '%s' of shape %s (1..%d allowed)",
                          norm_dims, x->name, loom_tensor_shape_str(x, sx, sizeof sx), x->ndim);
    if (!(eps >= 0) || !isfinite(eps))
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "layer_norm: eps must be finite and >= 0, got %g", eps);
    const int64_t *nd = x->dims + x->ndim - norm_dims;
    loom_tensor *aff[2] = {gamma, beta};
    const char *what[2] = {"gamma", "beta"};
    for (int i = 0; i < 2; i++) {
        loom_tensor *t = aff[i];
        if (!t) continue;
        if (t->dtype != x->dtype)
            return loom__fail(g, LOOM_ERR_DTYPE, "layer_norm: %s '%s' has dtype %s, expected x's dtype %s", what[i],
                              t->name, loom_dtype_name(t->dtype), loom_dtype_name(x->dtype));
        if (t->ndim != norm_dims || memcmp(t->dims, nd, (size_t)norm_dims * sizeof *nd) != 0)
            return loom__fail(g, LOOM_ERR_SHAPE,
                              "layer_norm: %s '%s' has shape %s, expected %s (the last %d dims of x '%s' of shape %s)",
                              what[i], t->name, loom_tensor_shape_str(t, st, sizeof st),
                              loom__shape_str(norm_dims, nd, sw, sizeof sw), norm_dims, x->name,
                              loom_tensor_shape_str(x, sx, sizeof sx));
    }
    loom_tensor *src[3] = {x};
    int n = 1;
    int64_t ig = pack(src, &n, gamma), ib = pack(src, &n, beta);
    loom_tensor *y = loom__node(g, LOOM_OP_LAYER_NORM, x->dtype, x->ndim, x->dims, n, src);
    if (!y) return NULL;
    y->p[LOOM_P_LN_DIMS] = norm_dims, y->p[LOOM_P_LN_GAMMA] = ig, y->p[LOOM_P_LN_BETA] = ib, y->p[LOOM_P_LN_DY] = -1;
    y->f[LOOM_F_LN_EPS] = eps;
    return y;
}

/* layer_norm_grad(x, gamma?, dy) or layer_norm_grad_params(x, dy) of forward node y */
static loom_tensor *ln_grad_node(loom_graph *g, int op, loom_tensor *y, loom_tensor *dy) {
    loom_tensor *x = y->src[0];
    bool params = op == LOOM_OP_LAYER_NORM_GRAD_PARAMS;
    loom_tensor *src[3] = {x};
    int n = 1;
    int64_t ig = !params && y->p[LOOM_P_LN_GAMMA] >= 0 ? pack(src, &n, y->src[y->p[LOOM_P_LN_GAMMA]]) : -1;
    int64_t idy = pack(src, &n, dy);
    int nd = (int)y->p[LOOM_P_LN_DIMS];
    int64_t dims[2] = {2, loom__numel(nd, x->dims + x->ndim - nd)};
    loom_tensor *t = params ? loom__node(g, op, x->dtype, 2, dims, n, src)
                            : loom__node(g, op, x->dtype, x->ndim, x->dims, n, src);
    if (!t) return NULL;
    t->p[LOOM_P_LN_DIMS] = nd, t->p[LOOM_P_LN_GAMMA] = ig, t->p[LOOM_P_LN_BETA] = -1, t->p[LOOM_P_LN_DY] = idy;
    t->f[LOOM_F_LN_EPS] = y->f[LOOM_F_LN_EPS];
    return t;
}

loom_status loom__bw_layer_norm(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    int64_t ig = y->p[LOOM_P_LN_GAMMA], ib = y->p[LOOM_P_LN_BETA];
    loom_tensor *gamma = ig >= 0 ? y->src[ig] : NULL, *beta = ib >= 0 ? y->src[ib] : NULL;
    if (loom__needs_grad(y->src[0])) dx[0] = ln_grad_node(g, LOOM_OP_LAYER_NORM_GRAD, y, dy);
    if (loom__needs_grad(gamma) || loom__needs_grad(beta)) {
        loom_tensor *gp = ln_grad_node(g, LOOM_OP_LAYER_NORM_GRAD_PARAMS, y, dy);
        if (loom__needs_grad(gamma)) dx[ig] = params_row(g, gp, 0, gamma);
        if (loom__needs_grad(beta)) dx[ib] = params_row(g, gp, 1, beta);
    }
    return g->status;
}
