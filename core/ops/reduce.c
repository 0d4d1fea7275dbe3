/* core/ops/reduce.c — sum and mean over a set of axes: builders and backward
 * rules.
 *
 * Parameters: p[LOOM_P_REDUCE_MASK] = axes mask (bit i = input axis i; never 0 in a node: the
 * builder turns 0 into "all axes"), p[LOOM_P_REDUCE_KEEPDIM]. */
#include "../impl.h"
#include "../params.h"

static loom_tensor *reduce(loom_graph *g, int op, loom_tensor *x, unsigned mask, bool keepdim) {
    if (!loom__ok(g, 1, x)) return NULL;
    loom__autocast(g, op, 1, &x);
    if (!loom_dtype_is_float(x->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "%s: '%s' has dtype %s, a float dtype is required", loom_op_name(op),
                          x->name, loom_dtype_name(x->dtype));
    unsigned all = x->ndim ? (1u << x->ndim) - 1 : 0;
    if (mask == 0) mask = all;
    if (mask & ~all) {
        char s[96];
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "%s: axes mask 0x%x names axes beyond the %d of '%s' %s",
                          loom_op_name(op), mask, x->ndim, x->name, loom_tensor_shape_str(x, s, sizeof s));
    }
    int nd = 0;
    int64_t dims[LOOM_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) {
        if (!(mask & (1u << i)))
            dims[nd++] = x->dims[i];
        else if (keepdim)
            dims[nd++] = 1;
    }
    loom_tensor *y = loom__node(g, op, x->dtype, nd, dims, 1, &x);
    if (y) y->p[LOOM_P_REDUCE_MASK] = mask, y->p[LOOM_P_REDUCE_KEEPDIM] = keepdim;
    return y;
}

loom_tensor *loom_sum(loom_graph *g, loom_tensor *x, unsigned axes_mask, bool keepdim) {
    return reduce(g, LOOM_OP_SUM, x, axes_mask, keepdim);
}

loom_tensor *loom_mean(loom_graph *g, loom_tensor *x, unsigned axes_mask, bool keepdim) {
    return reduce(g, LOOM_OP_MEAN, x, axes_mask, keepdim);
}

/* dy reshaped to the keepdim shape, then broadcast back to x's shape */
static loom_tensor *spread(loom_graph *g, loom_tensor *y, loom_tensor *dy) {
    const loom_tensor *x = y->src[0];
    int64_t kd[LOOM_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) kd[i] = (y->p[LOOM_P_REDUCE_MASK] & (1u << i)) ? 1 : x->dims[i];
    return loom_expand(g, loom_reshape(g, dy, x->ndim, kd), x->ndim, x->dims);
}

loom_status loom__bw_sum(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    dx[0] = spread(g, y, dy);
    return g->status;
}

loom_status loom__bw_mean(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    double count = (double)loom_tensor_numel(y->src[0]) / (double)loom_tensor_numel(y);
    dx[0] = loom_scale(g, spread(g, y, dy), 1.0 / count);
    return g->status;
}

int64_t loom__reduce_table(const loom_tensor *y, int64_t g[23]) {
    const loom_tensor *x = y->src[0];
    int64_t strides[LOOM_MAX_DIMS], st = 1, rcount = 1;
    for (int i = 0; i < 23; i++) g[i] = 0;
    for (int i = x->ndim - 1; i >= 0; i--) strides[i] = st, st *= x->dims[i];
    int nk = 0, nr = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (y->p[LOOM_P_REDUCE_MASK] & (1u << i)) {
            g[12 + nr] = x->dims[i], g[17 + nr] = strides[i], nr++;
            rcount *= x->dims[i];
        } else {
            g[1 + nk] = x->dims[i], g[6 + nk] = strides[i], nk++;
        }
    }
    g[0] = nk, g[11] = nr, g[22] = rcount;
    return rcount;
}

int64_t loom__reduce_chunks(const int64_t g[23], int64_t *chunk) {
    int64_t st = 1, rcount = g[22];
    for (int i = (int)g[11] - 1; i >= 0; i--) {
        if (g[17 + i] != st) return 0;
        st *= g[12 + i];
    }
    int64_t S = (rcount + 16383) / 16384;
    S = S < 1 ? 1 : S > 64 ? 64 : S;
    *chunk = (rcount + S - 1) / S;
    return S;
}
