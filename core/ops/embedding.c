/* core/ops/embedding.c — embedding lookup: builder and backward rule.
 *
 * embedding(weight (V, D) float, idx i32 (...)) -> (..., D): row idx[k] of
 *     weight for every position k. Indices are checked when the plan runs: one
 *     outside [0, V) fails the run with LOOM_ERR_INVALID_ARG.
 * embedding_grad(dy (..., D), idx) -> (V, D): scatter-add of the rows of dy
 *     into the rows named by idx (repeated indices accumulate); p[LOOM_P_EMB_V] = V.
 * idx gets no gradient. */
#include "../impl.h"
#include "../params.h"

loom_tensor *loom_embedding(loom_graph *g, loom_tensor *weight, loom_tensor *idx) {
    if (!loom__ok(g, 2, weight, idx)) return NULL;
    char sw[96], si[96];
    if (!loom_dtype_is_float(weight->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "embedding: weight '%s' has dtype %s, a float dtype is required",
                          weight->name, loom_dtype_name(weight->dtype));
    if (weight->ndim != 2)
        return loom__fail(g, LOOM_ERR_SHAPE, "embedding: weight '%s' has shape %s, expected (V, D)", weight->name,
                          loom_tensor_shape_str(weight, sw, sizeof sw));
    if (idx->dtype != LOOM_I32)
        return loom__fail(g, LOOM_ERR_DTYPE, "embedding: idx '%s' has dtype %s, expected i32", idx->name,
                          loom_dtype_name(idx->dtype));
    if (idx->ndim >= LOOM_MAX_DIMS)
        return loom__fail(g, LOOM_ERR_SHAPE, "embedding: idx '%s' of shape %s has %d dims; at most %d allowed (the "
                          "output adds one)", idx->name, loom_tensor_shape_str(idx, si, sizeof si), idx->ndim,
                          LOOM_MAX_DIMS - 1);
    int64_t dims[LOOM_MAX_DIMS];
    memcpy(dims, idx->dims, (size_t)idx->ndim * sizeof *dims);
    dims[idx->ndim] = weight->dims[1];
    loom_tensor *src[2] = {weight, idx};
    return loom__node(g, LOOM_OP_EMBEDDING, weight->dtype, idx->ndim + 1, dims, 2, src);
}

loom_status loom__bw_embedding(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    loom_tensor *w = y->src[0], *src[2] = {dy, y->src[1]};
    if (!loom__needs_grad(w)) return g->status;
    loom_tensor *t = loom__node(g, LOOM_OP_EMBEDDING_GRAD, w->dtype, 2, w->dims, 2, src);
    if (t) t->p[LOOM_P_EMB_V] = w->dims[0];
    dx[0] = t;
    return g->status;
}
