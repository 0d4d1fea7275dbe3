/* core/graph.c — graphs, nodes, leaves and the shape helpers builders share. */
#include <math.h>

#include "impl.h"

const loom__op_info loom__ops[LOOM_OP_COUNT] = {
#define LOOM_OP(e, stem, bw, fl, ac) {#stem, bw, fl},
#include "ops.def"
#undef LOOM_OP
};

int loom_op_count(void) { return LOOM_OP_COUNT; }
const char *loom_op_name(int op) { return (unsigned)op < LOOM_OP_COUNT ? loom__ops[op].name : "leaf"; }

loom_status loom__bw_none(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx) {
    (void)dy, (void)dx;
    return loom__err(g->ctx, LOOM_ERR_UNSUPPORTED, "op '%s' (node %d) has no gradient", loom_op_name(y->op), y->id);
}

loom_status loom_graph_create(loom_ctx *ctx, const loom_graph_desc *desc, loom_graph **out) {
    *out = NULL;
    loom_graph *g = calloc(1, sizeof *g);
    if (!g) return loom__err(ctx, LOOM_ERR_OOM, "graph: out of memory");
    g->ctx = ctx;
    g->seed = desc ? desc->seed : 0;
    g->next_stream = 1;
    *out = g;
    return LOOM_OK;
}

void loom_graph_destroy(loom_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n; i++) {
        free(g->nodes[i]->data);
        free(g->nodes[i]);
    }
    free(g->nodes);
    free(g);
}

loom_status loom_graph_status(const loom_graph *g) { return g->status; }
loom_ctx *loom_graph_ctx(const loom_graph *g) { return g->ctx; }
int loom_graph_node_count(const loom_graph *g) { return g->n; }

loom_tensor *loom__fail(loom_graph *g, loom_status st, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (g->status == LOOM_OK) {
        g->status = st;
        snprintf(g->error, sizeof g->error, "%s", msg);
    }
    loom__err(g->ctx, st, "%s", msg);
    return NULL;
}

bool loom__ok(loom_graph *g, int n, ...) {
    if (!g || g->status != LOOM_OK) return false;
    va_list ap;
    va_start(ap, n);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        loom_tensor *t = va_arg(ap, loom_tensor *);
        if (!t) {
            ok = false;
        } else if (t->g != g) {
            loom__fail(g, LOOM_ERR_INVALID_ARG, "tensor '%s' belongs to another graph", t->name);
            ok = false;
        }
    }
    va_end(ap);
    if (!ok && g->status == LOOM_OK) loom__fail(g, LOOM_ERR_INVALID_ARG, "NULL tensor passed to a builder");
    return ok;
}

int64_t loom__numel(int ndim, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= dims[i];
    return n;
}

size_t loom__nbytes(const loom_tensor *t) {
    return (size_t)loom__numel(t->ndim, t->dims) * loom_dtype_size(t->dtype);
}

char *loom__shape_str(int ndim, const int64_t *dims, char *buf, size_t n) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n > k ? n - k : 0, "[");
    for (int i = 0; i < ndim; i++)
        k += (size_t)snprintf(buf + k, n > k ? n - k : 0, i ? ", %lld" : "%lld", (long long)dims[i]);
    snprintf(buf + k, n > k ? n - k : 0, "]");
    return buf;
}

bool loom__same_shape(const loom_tensor *a, const loom_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

bool loom__broadcast_shape(const loom_tensor *a, const loom_tensor *b, int *ndim, int64_t *dims) {
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int i = 0; i < n; i++) {
        int ia = a->ndim - n + i, ib = b->ndim - n + i;
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) return false;
        dims[i] = da == 1 ? db : da;
    }
    *ndim = n;
    return true;
}

void loom__broadcast_strides(const loom_tensor *x, const loom_tensor *y, int64_t *s) {
    int off = y->ndim - x->ndim;
    int64_t st = 1;
    for (int i = y->ndim - 1; i >= 0; i--) {
        int j = i - off;
        if (j < 0 || x->dims[j] == 1) {
            s[i] = 0;
        } else {
            s[i] = st;
            st *= x->dims[j];
        }
    }
}

int loom__axis(int axis, int ndim) {
    if (axis < 0) axis += ndim;
    return axis >= 0 && axis < ndim ? axis : -1;
}

loom_tensor *loom__node(loom_graph *g, int op, loom_dtype dt, int ndim, const int64_t *dims, int nsrc,
                        loom_tensor *const *src) {
    LOOM__ASSERT(ndim >= 0 && ndim <= LOOM_MAX_DIMS && nsrc >= 0 && nsrc <= LOOM_MAX_SRC);
    for (int i = 0; i < ndim; i++)
        if (dims[i] <= 0) {
            char s[96];
            return loom__fail(g, LOOM_ERR_SHAPE, "%s: dimension %d of shape %s must be positive",
                              op >= 0 ? loom_op_name(op) : "leaf", i, loom__shape_str(ndim, dims, s, sizeof s));
        }
    if (g->n == g->cap) {
        int cap = g->cap ? g->cap * 2 : 64;
        loom_tensor **nn = realloc(g->nodes, (size_t)cap * sizeof *nn);
        if (!nn) return loom__fail(g, LOOM_ERR_OOM, "graph: out of memory");
        g->nodes = nn;
        g->cap = cap;
    }
    loom_tensor *t = calloc(1, sizeof *t);
    if (!t) return loom__fail(g, LOOM_ERR_OOM, "graph: out of memory");
    t->g = g;
    t->id = g->n;
    t->op = op;
    t->effect = op >= 0 && (loom__ops[op].flags & LOOM__OPF_EFFECT);
    t->dtype = dt;
    t->ndim = ndim;
    if (ndim) memcpy(t->dims, dims, (size_t)ndim * sizeof *dims);
    t->nsrc = nsrc;
    for (int i = 0; i < nsrc; i++) {
        t->src[i] = src[i];
        if (src[i] && src[i]->requires_grad) t->requires_grad = true;
    }
    if (op >= 0)
        snprintf(t->name, sizeof t->name, "%s#%d", loom_op_name(op), t->id);
    g->nodes[g->n++] = t;
    return t;
}

/* ---- queries ---- */
int loom_tensor_ndim(const loom_tensor *t) { return t->ndim; }
int64_t loom_tensor_dim(const loom_tensor *t, int axis) {
    int a = loom__axis(axis, t->ndim);
    return a < 0 ? 0 : t->dims[a];
}
int64_t loom_tensor_numel(const loom_tensor *t) { return loom__numel(t->ndim, t->dims); }
loom_dtype loom_tensor_dtype(const loom_tensor *t) { return t->dtype; }
const char *loom_tensor_name(const loom_tensor *t) { return t->name; }
char *loom_tensor_shape_str(const loom_tensor *t, char *buf, size_t n) {
    return loom__shape_str(t->ndim, t->dims, buf, n);
}
void loom_keep(loom_tensor *t) {
    if (t) t->keep = true;
}
loom_tensor *loom_grad(const loom_tensor *t) { return t ? t->grad : NULL; }
bool loom_requires_grad(const loom_tensor *t) { return t && t->requires_grad; }

loom_status loom_set_requires_grad(loom_tensor *t, bool on) {
    if (!t) return LOOM_ERR_INVALID_ARG;
    if (t->leaf != LOOM__PARAM)
        return loom__err(t->g->ctx, LOOM_ERR_INVALID_ARG, "requires_grad: '%s' is not a parameter", t->name);
    if (t->g->has_backward)
        return loom__err(t->g->ctx, LOOM_ERR_STATE, "requires_grad: '%s': the graph already has its backward pass",
                         t->name);
    t->requires_grad = on;
    return LOOM_OK;
}

/* ---- leaves ---- */
static loom_tensor *leaf(loom_graph *g, loom__leaf_kind kind, const char *what, const char *name, loom_dtype dt,
                         int ndim, const int64_t *dims) {
    if (!g || g->status != LOOM_OK) return NULL;
    if (!name || !*name) return loom__fail(g, LOOM_ERR_INVALID_ARG, "%s: a name is required", what);
    if (strlen(name) >= sizeof(((loom_tensor *)0)->name))
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "%s '%s': name longer than 63 bytes", what, name);
    if ((unsigned)dt >= LOOM_DTYPE_COUNT) return loom__fail(g, LOOM_ERR_DTYPE, "%s '%s': bad dtype %d", what, name, dt);
    if (ndim < 0 || ndim > LOOM_MAX_DIMS || (ndim > 0 && !dims))
        return loom__fail(g, LOOM_ERR_SHAPE, "%s '%s': %d dimensions (0..%d allowed)", what, name, ndim,
                          LOOM_MAX_DIMS);
    if (kind == LOOM__PARAM || kind == LOOM__STATE || kind == LOOM__INPUT)
        for (int i = 0; i < g->n; i++)
            if (g->nodes[i]->leaf != LOOM__NOT_LEAF && g->nodes[i]->leaf != LOOM__CONST &&
                strcmp(g->nodes[i]->name, name) == 0)
                return loom__fail(g, LOOM_ERR_INVALID_ARG, "%s '%s': the name is already used in this graph", what,
                                  name);
    loom_tensor *t = loom__node(g, LOOM__OP_LEAF, dt, ndim, dims, 0, NULL);
    if (!t) return NULL;
    t->leaf = kind;
    snprintf(t->name, sizeof t->name, "%s", name);
    return t;
}

loom_tensor *loom_input(loom_graph *g, const char *name, loom_dtype dt, int ndim, const int64_t *dims) {
    return leaf(g, LOOM__INPUT, "input", name, dt, ndim, dims);
}

loom_tensor *loom_param(loom_graph *g, const char *name, loom_dtype dt, int ndim, const int64_t *dims,
                        const loom_init *init) {
    if (g && g->status == LOOM_OK && !loom_dtype_is_float(dt))
        return loom__fail(g, LOOM_ERR_DTYPE, "param '%s': parameters must have a float dtype, not %s",
                          name ? name : "?", loom_dtype_name(dt));
    loom_tensor *t = leaf(g, LOOM__PARAM, "param", name, dt, ndim, dims);
    if (!t) return NULL;
    if (init) t->init = *init;
    t->requires_grad = true;
    return t;
}

loom_tensor *loom_state(loom_graph *g, const char *name, loom_dtype dt, int ndim, const int64_t *dims,
                        const loom_init *init) {
    loom_tensor *t = leaf(g, LOOM__STATE, "state", name, dt, ndim, dims);
    if (t && init) t->init = *init;
    return t;
}

loom_tensor *loom_constant(loom_graph *g, const char *name, loom_dtype dt, int ndim, const int64_t *dims,
                           const void *data) {
    loom_tensor *t = leaf(g, LOOM__CONST, "constant", name, dt, ndim, dims);
    if (!t) return NULL;
    if (!data) return loom__fail(g, LOOM_ERR_INVALID_ARG, "constant '%s': data is NULL", name);
    size_t n = loom__nbytes(t);
    t->data = malloc(n);
    if (!t->data) return loom__fail(g, LOOM_ERR_OOM, "constant '%s': out of memory", name);
    memcpy(t->data, data, n);
    return t;
}

/* ---- gradient helper ---- */
loom_tensor *loom__sum_to(loom_graph *g, loom_tensor *grad, const loom_tensor *like) {
    if (!grad) return NULL;
    if (loom__same_shape(grad, like)) return grad;
    /* axes of grad that are broadcast in `like` (missing leading axes, or size 1) */
    unsigned mask = 0;
    int off = grad->ndim - like->ndim;
    LOOM__ASSERT(off >= 0);
    for (int i = 0; i < grad->ndim; i++) {
        int j = i - off;
        if (j < 0 || (like->dims[j] == 1 && grad->dims[i] != 1)) mask |= 1u << i;
    }
    loom_tensor *s = mask ? loom_sum(g, grad, mask, true) : grad;
    return loom_reshape(g, s, like->ndim, like->dims);
}
