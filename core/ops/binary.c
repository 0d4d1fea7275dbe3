/* core/ops/binary.c — elementwise arithmetic with numpy broadcasting (add,
 * sub, mul, div), scale, fill, expand and cast: builders and backward rules.
 *
 * Parameters: scale f[LOOM_F_SCALE_S] = s; fill f[LOOM_F_FILL_VALUE]; cast: the node's dtype is
 * the target. Shapes broadcast from the right; inputs must share a dtype. */
#include "../impl.h"
#include "../params.h"

/* the kernels' dtype codes (core/params.h) are enum loom_dtype's values */
_Static_assert(LOOM_K_DT_F32 == LOOM_F32 && LOOM_K_DT_F16 == LOOM_F16 && LOOM_K_DT_BF16 == LOOM_BF16 &&
                   LOOM_K_DT_F64 == LOOM_F64 && LOOM_K_DT_I32 == LOOM_I32 && LOOM_K_DT_U8 == LOOM_U8,
               "core/params.h: LOOM_K_DT_* must equal enum loom_dtype");

static loom_tensor *binary(loom_graph *g, int op, loom_tensor *a, loom_tensor *b) {
    if (!loom__ok(g, 2, a, b)) return NULL;
    loom_tensor *ac[2] = {a, b};
    loom__autocast(g, op, 2, ac);
    a = ac[0], b = ac[1];
    char sa[96], sb[96];
    if (a->dtype != b->dtype || !loom_dtype_is_float(a->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "%s: operands must share a float dtype, got %s '%s' and %s '%s'",
                          loom_op_name(op), loom_dtype_name(a->dtype), a->name, loom_dtype_name(b->dtype), b->name);
    int nd;
    int64_t dims[LOOM_MAX_DIMS];
    if (!loom__broadcast_shape(a, b, &nd, dims))
        return loom__fail(g, LOOM_ERR_SHAPE, "%s: shapes %s ('%s') and %s ('%s') do not broadcast", loom_op_name(op),
                          loom_tensor_shape_str(a, sa, sizeof sa), a->name, loom_tensor_shape_str(b, sb, sizeof sb),
                          b->name);
    loom_tensor *src[2] = {a, b};
    return loom__node(g, op, a->dtype, nd, dims, 2, src);
}

loom_tensor *loom_add(loom_graph *g, loom_tensor *a, loom_tensor *b) { return binary(g, LOOM_OP_ADD, a, b); }
loom_tensor *loom_sub(loom_graph *g, loom_tensor *a, loom_tensor *b) { return binary(g, LOOM_OP_SUB, a, b); }
loom_tensor *loom_mul(loom_graph *g, loom_tensor *a, loom_tensor *b) { return binary(g, LOOM_OP_MUL, a, b); }
loom_tensor *loom_div(loom_graph *g, loom_tensor *a, loom_tensor *b) { return binary(g, LOOM_OP_DIV, a, b); }

loom_tensor *loom_scale(loom_graph *g, loom_tensor *x, double s) {
    if (!loom__ok(g, 1, x)) return NULL;
    if (!loom_dtype_is_float(x->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "scale: '%s' has dtype %s, a float dtype is required", x->name,
                          loom_dtype_name(x->dtype));
    loom_tensor *y = loom__node(g, LOOM_OP_SCALE, x->dtype, x->ndim, x->dims, 1, &x);
    if (y) y->f[LOOM_F_SCALE_S] = s;
    return y;
}

loom_tensor *loom_fill(loom_graph *g, loom_dtype dt, int ndim, const int64_t *dims, double value) {
    if (!g || g->status != LOOM_OK) return NULL;
    if (!loom_dtype_is_float(dt)) return loom__fail(g, LOOM_ERR_DTYPE, "fill: dtype %s is not a float dtype", loom_dtype_name(dt));
    if (ndim < 0 || ndim > LOOM_MAX_DIMS || (ndim && !dims))
        return loom__fail(g, LOOM_ERR_SHAPE, "fill: %d dimensions (0..%d allowed)", ndim, LOOM_MAX_DIMS);
    loom_tensor *y = loom__node(g, LOOM_OP_FILL, dt, ndim, dims, 0, NULL);
    if (y) y->f[LOOM_F_FILL_VALUE] = value;
    return y;
}

loom_tensor *loom_expand(loom_graph *g, loom_tensor *x, int ndim, const int64_t *dims) {
    if (!loom__ok(g, 1, x)) return NULL;
    char sx[96], sd[96];
    bool ok = ndim >= x->ndim && ndim <= LOOM_MAX_DIMS && (ndim == 0 || dims);
    for (int i = 0; ok && i < x->ndim; i++) {
        int64_t dx = x->dims[x->ndim - 1 - i], dd = dims[ndim - 1 - i];
        if (dx != dd && dx != 1) ok = false;
    }
    if (!ok)
        return loom__fail(g, LOOM_ERR_SHAPE, "expand: '%s' of shape %s cannot broadcast to %s", x->name,
                          loom_tensor_shape_str(x, sx, sizeof sx),
                          ndim >= 0 && ndim <= LOOM_MAX_DIMS && (ndim == 0 || dims) ? loom__shape_str(ndim, dims, sd, sizeof sd) : "(invalid)");
    if (!loom_dtype_is_float(x->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "expand: '%s' has dtype %s, a float dtype is required", x->name,
                          loom_dtype_name(x->dtype));
    return loom__node(g, LOOM_OP_EXPAND, x->dtype, ndim, dims, 1, &x);
}

loom_tensor *loom_cast(loom_graph *g, loom_tensor *x, loom_dtype to) {
    if (!loom__ok(g, 1, x)) return NULL;
    if ((unsigned)to >= LOOM_DTYPE_COUNT) return loom__fail(g, LOOM_ERR_DTYPE, "cast: bad target dtype %d", (int)to);
    if (x->dtype == to) return x;
    loom_tensor *y = loom__node(g, LOOM_OP_CAST, to, x->ndim, x->dims, 1, &x);
    /* gradients flow only between float dtypes */
    if (y && !(loom_dtype_is_float(to) && loom_dtype_is_float(x->dtype))) y->requires_grad = false;
    return y;
}

/* ---- backward rules ---- */
loom_status loom__bw_add(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    if (loom__needs_grad(y->src[0])) dx[0] = loom__sum_to(g, dy, y->src[0]);
    if (loom__needs_grad(y->src[1])) dx[1] = loom__sum_to(g, dy, y->src[1]);
    return g->status;
}

loom_status loom__bw_sub(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    if (loom__needs_grad(y->src[0])) dx[0] = loom__sum_to(g, dy, y->src[0]);
    if (loom__needs_grad(y->src[1])) dx[1] = loom__sum_to(g, loom_scale(g, dy, -1.0), y->src[1]);
    return g->status;
}

loom_status loom__bw_mul(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    loom_tensor *a = y->src[0], *b = y->src[1];
    if (loom__needs_grad(a)) dx[0] = loom__sum_to(g, loom_mul(g, dy, b), a);
    if (loom__needs_grad(b)) dx[1] = loom__sum_to(g, loom_mul(g, dy, a), b);
    return g->status;
}

/* y = a / b: da = dy / b, db = -dy * y / b */
loom_status loom__bw_div(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    loom_tensor *a = y->src[0], *b = y->src[1];
    if (loom__needs_grad(a)) dx[0] = loom__sum_to(g, loom_div(g, dy, b), a);
    if (loom__needs_grad(b)) dx[1] = loom__sum_to(g, loom_scale(g, loom_div(g, loom_mul(g, dy, y), b), -1.0), b);
    return g->status;
}

loom_status loom__bw_scale(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    dx[0] = loom_scale(g, dy, y->f[LOOM_F_SCALE_S]);
    return g->status;
}

loom_status loom__bw_expand(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    dx[0] = loom__sum_to(g, dy, y->src[0]);
    return g->status;
}

loom_status loom__bw_cast(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    dx[0] = loom_cast(g, dy, y->src[0]->dtype);
    return g->status;
}
