/* core/ops/matmul.c — batched matrix products and the linear layer:
 * builders and backward rules.
 *
 * matmul: a (..., M, K) [(..., K, M) if trans_a], b (..., K, N) [(..., N, K)
 * if trans_b] -> (..., M, N); batch dims broadcast. p[LOOM_P_MATMUL_TRANS_A],
 * p[LOOM_P_MATMUL_TRANS_B].
 * linear: x (..., IN), w (OUT, IN), optional bias (OUT) -> (..., OUT);
 * y = x w^T + bias. p[LOOM_P_LINEAR_BIAS] = has bias. */
#include "../impl.h"
#include "../params.h"

loom_tensor *loom_matmul(loom_graph *g, loom_tensor *a, loom_tensor *b, bool trans_a, bool trans_b) {
    if (!loom__ok(g, 2, a, b)) return NULL;
    loom_tensor *ac[2] = {a, b};
    loom__autocast(g, LOOM_OP_MATMUL, 2, ac);
    a = ac[0], b = ac[1];
    char sa[96], sb[96];
    if (a->dtype != b->dtype || !loom_dtype_is_float(a->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "matmul: operands must share a float dtype, got %s '%s' and %s '%s'",
                          loom_dtype_name(a->dtype), a->name, loom_dtype_name(b->dtype), b->name);
    if (a->ndim < 2 || b->ndim < 2)
        return loom__fail(g, LOOM_ERR_SHAPE, "matmul: operands need at least 2 dims, got '%s' %s and '%s' %s", a->name,
                          loom_tensor_shape_str(a, sa, sizeof sa), b->name, loom_tensor_shape_str(b, sb, sizeof sb));
    int64_t M = a->dims[a->ndim - (trans_a ? 1 : 2)], Ka = a->dims[a->ndim - (trans_a ? 2 : 1)];
    int64_t Kb = b->dims[b->ndim - (trans_b ? 1 : 2)], N = b->dims[b->ndim - (trans_b ? 2 : 1)];
    /* batch dims: broadcast of everything but the last two */
    loom_tensor ba = *a, bb = *b;
    ba.ndim -= 2, bb.ndim -= 2;
    int nd;
    int64_t d[LOOM_MAX_DIMS];
    if (Ka != Kb || !loom__broadcast_shape(&ba, &bb, &nd, d) || nd + 2 > LOOM_MAX_DIMS)
        return loom__fail(g, LOOM_ERR_SHAPE, "matmul: '%s' %s%s and '%s' %s%s do not multiply (inner %lld vs %lld)",
                          a->name, loom_tensor_shape_str(a, sa, sizeof sa), trans_a ? "^T" : "", b->name,
                          loom_tensor_shape_str(b, sb, sizeof sb), trans_b ? "^T" : "", (long long)Ka, (long long)Kb);
    d[nd] = M, d[nd + 1] = N;
    loom_tensor *src[2] = {a, b};
    loom_tensor *y = loom__node(g, LOOM_OP_MATMUL, a->dtype, nd + 2, d, 2, src);
    if (y) y->p[LOOM_P_MATMUL_TRANS_A] = trans_a, y->p[LOOM_P_MATMUL_TRANS_B] = trans_b;
    return y;
}

loom_tensor *loom_linear(loom_graph *g, loom_tensor *x, loom_tensor *w, loom_tensor *bias) {
    if (!loom__ok(g, 2, x, w) || (bias && !loom__ok(g, 1, bias))) return NULL;
    loom_tensor *ac[3] = {x, w, bias};
    loom__autocast(g, LOOM_OP_LINEAR, 3, ac);
    x = ac[0], w = ac[1], bias = ac[2];
    char sx[96], sw[96], sbias[96];
    if (x->dtype != w->dtype || (bias && bias->dtype != x->dtype) || !loom_dtype_is_float(x->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "linear: x '%s' (%s), w '%s' (%s)%s%s must share a float dtype", x->name,
                          loom_dtype_name(x->dtype), w->name, loom_dtype_name(w->dtype), bias ? " and bias " : "",
                          bias ? loom_dtype_name(bias->dtype) : "");
    if (x->ndim < 1 || w->ndim != 2 || x->dims[x->ndim - 1] != w->dims[1])
        return loom__fail(g, LOOM_ERR_SHAPE, "linear: x '%s' %s needs last dim == w '%s' %s dim 1 (w is (OUT, IN))",
                          x->name, loom_tensor_shape_str(x, sx, sizeof sx), w->name,
                          loom_tensor_shape_str(w, sw, sizeof sw));
    if (bias && (bias->ndim != 1 || bias->dims[0] != w->dims[0]))
        return loom__fail(g, LOOM_ERR_SHAPE, "linear: bias '%s' %s must be (%lld) to match w '%s' %s", bias->name,
                          loom_tensor_shape_str(bias, sbias, sizeof sbias), (long long)w->dims[0], w->name,
                          loom_tensor_shape_str(w, sw, sizeof sw));
    int64_t d[LOOM_MAX_DIMS];
    memcpy(d, x->dims, sizeof d);
    d[x->ndim - 1] = w->dims[0];
    loom_tensor *src[3] = {x, w, bias};
    loom_tensor *y = loom__node(g, LOOM_OP_LINEAR, x->dtype, x->ndim, d, bias ? 3 : 2, src);
    if (y) y->p[LOOM_P_LINEAR_BIAS] = bias != NULL;
    return y;
}

/* With A' = op(A), B' = op(B): dA' = dY B'^T, dB' = A'^T dY; transposed
 * operands take the transposed gradient. Broadcast batch dims are summed. */
loom_status loom__bw_matmul(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    loom_tensor *a = y->src[0], *b = y->src[1];
    bool ta = y->p[LOOM_P_MATMUL_TRANS_A], tb = y->p[LOOM_P_MATMUL_TRANS_B];
    if (loom__needs_grad(a)) {
        loom_tensor *da = ta ? loom_matmul(g, b, dy, tb, true) : loom_matmul(g, dy, b, false, !tb);
        dx[0] = loom__sum_to(g, da, a);
    }
    if (loom__needs_grad(b)) {
        loom_tensor *db = tb ? loom_matmul(g, dy, a, true, ta) : loom_matmul(g, a, dy, !ta, false);
        dx[1] = loom__sum_to(g, db, b);
    }
    return g->status;
}

/* dx = dy w; dw = dy2^T x2 over the flattened rows; dbias = sum of dy rows */
loom_status loom__bw_linear(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    loom_tensor *x = y->src[0], *w = y->src[1];
    int64_t out = w->dims[0], in = w->dims[1];
    loom_tensor *dy2 = loom_reshape(g, dy, 2, (int64_t[]){-1, out});
    if (loom__needs_grad(x)) dx[0] = loom_reshape(g, loom_matmul(g, dy2, w, false, false), x->ndim, x->dims);
    if (loom__needs_grad(w)) dx[1] = loom_matmul(g, dy2, loom_reshape(g, x, 2, (int64_t[]){-1, in}), true, false);
    if (y->nsrc > 2 && loom__needs_grad(y->src[2])) dx[2] = loom_sum(g, dy2, 1u, false);
    return g->status;
}

loom__mm_geom loom__matmul_geom_of(const loom_tensor *y) {
    const loom_tensor *A = y->src[0], *B = y->src[1];
    bool ta = y->p[LOOM_P_MATMUL_TRANS_A];
    int nd = y->ndim, nbd = nd - 2;
    LOOM__ASSERT(nbd <= 3);
    loom__mm_geom q = {.batch = {1, 1, 1}};
    q.M = y->dims[nd - 2], q.N = y->dims[nd - 1], q.K = A->dims[A->ndim - (ta ? 2 : 1)];
    q.lda = A->dims[A->ndim - 1], q.ldb = B->dims[B->ndim - 1], q.ldc = q.N;
    if (B->ndim == 2 && !ta) { /* b shared by every batch item, a not transposed: fold the batch into M */
        q.M *= loom__numel(nbd, y->dims);
        return q;
    }
    int64_t sta = A->dims[A->ndim - 1] * A->dims[A->ndim - 2], stb = B->dims[B->ndim - 1] * B->dims[B->ndim - 2];
    int64_t stc = q.M * q.N;
    for (int i = nbd - 1, s = 2; i >= 0; i--, s--) {
        int ja = A->ndim - 3 - (nbd - 1 - i), jb = B->ndim - 3 - (nbd - 1 - i);
        q.batch[s] = y->dims[i];
        if (ja >= 0 && A->dims[ja] != 1) q.sa[s] = sta, sta *= A->dims[ja];
        if (jb >= 0 && B->dims[jb] != 1) q.sb[s] = stb, stb *= B->dims[jb];
        q.sc[s] = stc, stc *= y->dims[i];
    }
    return q;
}
