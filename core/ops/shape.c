/* core/ops/shape.c — reshape (a view), flatten, permute/transpose, concat,
 * slice: builders and backward rules.
 *
 * Parameters: permute p[LOOM_P_PERMUTE_PERM + i] = perm[i] (out.dims[i] = x.dims[perm[i]]);
 * concat p[LOOM_P_CONCAT_AXIS]; slice p[LOOM_P_SLICE_AXIS, _START, _END];
 * slice_grad (dy -> zeros of x's shape with dy placed at [start, end) along
 * axis): the slice's AXIS and START, its own dims are x's. */
#include "../impl.h"
#include "../params.h"

loom_tensor *loom_reshape(loom_graph *g, loom_tensor *x, int ndim, const int64_t *dims) {
    if (!loom__ok(g, 1, x)) return NULL;
    char sx[96], sd[96];
    if (ndim < 0 || ndim > LOOM_MAX_DIMS || (ndim && !dims))
        return loom__fail(g, LOOM_ERR_SHAPE, "reshape: %d dimensions requested for '%s' (0..%d allowed)", ndim,
                          x->name, LOOM_MAX_DIMS);
    int64_t d[LOOM_MAX_DIMS], known = 1;
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        d[i] = dims[i];
        if (dims[i] == -1 && infer < 0) {
            infer = i;
        } else if (dims[i] <= 0) {
            return loom__fail(g, LOOM_ERR_SHAPE, "reshape: bad target shape %s for '%s' (one -1 allowed, others > 0)",
                              loom__shape_str(ndim, dims, sd, sizeof sd), x->name);
        } else {
            known *= dims[i];
        }
    }
    int64_t n = loom_tensor_numel(x);
    if (infer >= 0) {
        if (n % known)
            return loom__fail(g, LOOM_ERR_SHAPE, "reshape: '%s' %s (%lld elements) does not divide into %s", x->name,
                              loom_tensor_shape_str(x, sx, sizeof sx), (long long)n,
                              loom__shape_str(ndim, dims, sd, sizeof sd));
        d[infer] = n / known;
        known = n;
    }
    if (known != n)
        return loom__fail(g, LOOM_ERR_SHAPE, "reshape: '%s' %s has %lld elements, target %s has %lld", x->name,
                          loom_tensor_shape_str(x, sx, sizeof sx), (long long)n, loom__shape_str(ndim, d, sd, sizeof sd),
                          (long long)known);
    if (ndim == x->ndim && !memcmp(d, x->dims, (size_t)ndim * sizeof *d)) return x;
    return loom__node(g, LOOM_OP_RESHAPE, x->dtype, ndim, d, 1, &x);
}

loom_tensor *loom_flatten(loom_graph *g, loom_tensor *x, int start, int end) {
    if (!loom__ok(g, 1, x)) return NULL;
    int s = loom__axis(start, x->ndim), e = loom__axis(end, x->ndim);
    if (x->ndim == 0) return loom_reshape(g, x, 1, (int64_t[]){1});
    if (s < 0 || e < 0 || s > e)
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "flatten: axes [%d, %d] are not a valid range for '%s' (%d dims)",
                          start, end, x->name, x->ndim);
    int64_t d[LOOM_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < s; i++) d[nd++] = x->dims[i];
    d[nd] = 1;
    for (int i = s; i <= e; i++) d[nd] *= x->dims[i];
    nd++;
    for (int i = e + 1; i < x->ndim; i++) d[nd++] = x->dims[i];
    return loom_reshape(g, x, nd, d);
}

loom_tensor *loom_permute(loom_graph *g, loom_tensor *x, const int *perm) {
    if (!loom__ok(g, 1, x)) return NULL;
    if (!perm) return loom__fail(g, LOOM_ERR_INVALID_ARG, "permute: perm is NULL for '%s'", x->name);
    unsigned seen = 0;
    bool identity = true;
    int64_t d[LOOM_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) {
        if (perm[i] < 0 || perm[i] >= x->ndim || (seen & (1u << perm[i])))
            return loom__fail(g, LOOM_ERR_INVALID_ARG,
                              "permute: perm is not a permutation of 0..%d for '%s' (entry %d is %d)", x->ndim - 1,
                              x->name, i, perm[i]);
        seen |= 1u << perm[i];
        d[i] = x->dims[perm[i]];
        if (perm[i] != i) identity = false;
    }
    if (identity) return x;
    loom_tensor *y = loom__node(g, LOOM_OP_PERMUTE, x->dtype, x->ndim, d, 1, &x);
    if (y)
        for (int i = 0; i < x->ndim; i++) y->p[LOOM_P_PERMUTE_PERM + i] = perm[i];
    return y;
}

loom_tensor *loom_transpose(loom_graph *g, loom_tensor *x, int axis0, int axis1) {
    if (!loom__ok(g, 1, x)) return NULL;
    int a = loom__axis(axis0, x->ndim), b = loom__axis(axis1, x->ndim);
    if (a < 0 || b < 0)
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "transpose: axes %d, %d out of range for '%s' (%d dims)", axis0,
                          axis1, x->name, x->ndim);
    int perm[LOOM_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) perm[i] = i;
    perm[a] = b, perm[b] = a;
    return loom_permute(g, x, perm);
}

loom_tensor *loom_concat(loom_graph *g, loom_tensor *const *xs, int n, int axis) {
    if (!g || g->status != LOOM_OK) return NULL;
    if (!xs || n < 1 || n > LOOM_MAX_CONCAT)
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "concat: %d inputs (1..%d allowed)", n, LOOM_MAX_CONCAT);
    for (int i = 0; i < n; i++)
        if (!loom__ok(g, 1, xs[i])) return NULL;
    const loom_tensor *x0 = xs[0];
    int ax = loom__axis(axis, x0->ndim);
    if (ax < 0)
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "concat: axis %d out of range for '%s' (%d dims)", axis, x0->name,
                          x0->ndim);
    int64_t d[LOOM_MAX_DIMS];
    memcpy(d, x0->dims, sizeof d);
    d[ax] = 0;
    for (int i = 0; i < n; i++) {
        const loom_tensor *t = xs[i];
        char s0[96], si[96];
        bool ok = t->ndim == x0->ndim && t->dtype == x0->dtype;
        for (int k = 0; ok && k < t->ndim; k++)
            if (k != ax && t->dims[k] != x0->dims[k]) ok = false;
        if (!ok)
            return loom__fail(g, LOOM_ERR_SHAPE,
                              "concat: input %d '%s' %s %s does not match '%s' %s %s outside axis %d", i, t->name,
                              loom_tensor_shape_str(t, si, sizeof si), loom_dtype_name(t->dtype), x0->name,
                              loom_tensor_shape_str(x0, s0, sizeof s0), loom_dtype_name(x0->dtype), ax);
        d[ax] += t->dims[ax];
    }
    if (n == 1) return xs[0];
    loom_tensor *y = loom__node(g, LOOM_OP_CONCAT, x0->dtype, x0->ndim, d, n, xs);
    if (y) y->p[LOOM_P_CONCAT_AXIS] = ax;
    return y;
}

loom_tensor *loom_slice(loom_graph *g, loom_tensor *x, int axis, int64_t start, int64_t end) {
    if (!loom__ok(g, 1, x)) return NULL;
    int ax = loom__axis(axis, x->ndim);
    if (ax < 0)
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "slice: axis %d out of range for '%s' (%d dims)", axis, x->name,
                          x->ndim);
    int64_t len = x->dims[ax], s = start < 0 ? start + len : start, e = end < 0 ? end + len : end;
    if (s < 0 || e > len || s >= e) {
        char sx[96];
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "slice: [%lld, %lld) along axis %d is empty or outside '%s' %s",
                          (long long)start, (long long)end, ax, x->name, loom_tensor_shape_str(x, sx, sizeof sx));
    }
    if (s == 0 && e == len) return x;
    int64_t d[LOOM_MAX_DIMS];
    memcpy(d, x->dims, sizeof d);
    d[ax] = e - s;
    loom_tensor *y = loom__node(g, LOOM_OP_SLICE, x->dtype, x->ndim, d, 1, &x);
    if (y) y->p[LOOM_P_SLICE_AXIS] = ax, y->p[LOOM_P_SLICE_START] = s, y->p[LOOM_P_SLICE_END] = e;
    return y;
}

/* ---- backward rules ---- */
loom_status loom__bw_reshape(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    dx[0] = loom_reshape(g, dy, y->src[0]->ndim, y->src[0]->dims);
    return g->status;
}

loom_status loom__bw_permute(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    int inv[LOOM_MAX_DIMS];
    for (int i = 0; i < y->ndim; i++) inv[y->p[LOOM_P_PERMUTE_PERM + i]] = i;
    dx[0] = loom_permute(g, dy, inv);
    return g->status;
}

loom_status loom__bw_concat(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    int ax = (int)y->p[LOOM_P_CONCAT_AXIS];
    int64_t at = 0;
    for (int i = 0; i < y->nsrc; i++) {
        int64_t len = y->src[i]->dims[ax];
        if (loom__needs_grad(y->src[i])) dx[i] = loom_slice(g, dy, ax, at, at + len);
        at += len;
    }
    return g->status;
}

loom_status loom__bw_slice(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    const loom_tensor *x = y->src[0];
    loom_tensor *t = loom__node(g, LOOM_OP_SLICE_GRAD, x->dtype, x->ndim, x->dims, 1, &dy);
    if (t) t->p[LOOM_P_SLICE_AXIS] = y->p[LOOM_P_SLICE_AXIS], t->p[LOOM_P_SLICE_START] = y->p[LOOM_P_SLICE_START];
    dx[0] = t;
    return g->status;
}
