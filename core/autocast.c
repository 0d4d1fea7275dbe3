/* core/autocast.c — automatic mixed precision: the one policy table and the
 * casts it inserts while a graph is built with autocast on
 * (loom_graph_set_autocast(g, LOOM_F16 or LOOM_BF16)).
 *
 * Policy, per op (the autocast column of core/ops.def; the rest keep their
 * inputs' dtype):
 *   LOWP  matmul, linear, conv2d: float inputs are cast to the 16-bit dtype;
 *         every backend accumulates them in f32.
 *   F32   softmax, log_softmax, cross_entropy, mse, sum, mean, layer_norm:
 *         float inputs are cast to f32 (their outputs are f32).
 *   PROMOTE add, sub, mul, div: mixed float inputs meet at the wider dtype.
 *   FOLLOW batch_norm: gamma and beta take x's dtype (its statistics and
 *         running stats are f32 whatever x is).
 * Activations between these ops (ReLU, pooling, dropout, reshapes) stay in
 * the 16-bit dtype, which is what halves activation memory.
 *
 * A cast is made once per (tensor, dtype) and reused by every later use, so a
 * parameter used by three matmuls has one 16-bit working copy per step. The
 * parameter itself stays f32 (the master copy): the backward pass of the cast
 * returns an f32 gradient, which the optimizer applies to the master.
 * loom_backward builds with autocast off: gradients follow their tensors'
 * dtypes exactly. */
#include "impl.h"

typedef enum { AC_NONE, AC_LOWP, AC_F32, AC_PROMOTE, AC_FOLLOW } ac_class;

/* the autocast column of core/ops.def */
static const unsigned char POLICY[LOOM_OP_COUNT] = {
#define LOOM_OP(e, stem, bw, fl, ac) AC_##ac,
#include "ops.def"
#undef LOOM_OP
};

loom_status loom_graph_set_autocast(loom_graph *g, loom_dtype dt) {
    if (dt != LOOM_F32 && dt != LOOM_F16 && dt != LOOM_BF16)
        return loom__err(g->ctx, LOOM_ERR_INVALID_ARG, "autocast: dtype %s; expected f16, bf16 or f32 (off)",
                         loom_dtype_name(dt));
    g->autocast = dt;
    return LOOM_OK;
}

loom_dtype loom_graph_autocast(const loom_graph *g) { return g->autocast; }

/* t as dtype dt, through the cached cast */
static loom_tensor *cast_to(loom_graph *g, loom_tensor *t, loom_dtype dt) {
    if (!t || t->dtype == dt || !loom_dtype_is_float(t->dtype)) return t;
    int k = dt == LOOM_F32 ? 0 : dt == LOOM_F16 ? 1 : 2;
    if (!t->amp_cast[k]) {
        loom_dtype keep = g->autocast;
        g->autocast = LOOM_F32; /* the cast itself is not subject to the policy */
        t->amp_cast[k] = loom_cast(g, t, dt);
        g->autocast = keep;
    }
    return t->amp_cast[k];
}

static int width(loom_dtype dt) { return dt == LOOM_F64 ? 3 : dt == LOOM_F32 ? 2 : 1; }

void loom__autocast(loom_graph *g, int op, int n, loom_tensor **srcs) {
    if (!g || g->autocast == LOOM_F32 || g->status != LOOM_OK) return;
    ac_class c = (ac_class)POLICY[op];
    if (c == AC_NONE) return;
    if (c == AC_LOWP || c == AC_F32) {
        loom_dtype to = c == AC_LOWP ? g->autocast : LOOM_F32;
        for (int i = 0; i < n; i++)
            if (srcs[i] && srcs[i]->dtype != LOOM_F64) srcs[i] = cast_to(g, srcs[i], to);
    } else if (c == AC_PROMOTE) {
        loom_tensor *wide = NULL;
        for (int i = 0; i < n; i++)
            if (srcs[i] && loom_dtype_is_float(srcs[i]->dtype) && (!wide || width(srcs[i]->dtype) > width(wide->dtype)))
                wide = srcs[i];
        for (int i = 0; wide && i < n; i++)
            if (srcs[i] && loom_dtype_is_float(srcs[i]->dtype)) srcs[i] = cast_to(g, srcs[i], wide->dtype);
    } else { /* AC_FOLLOW: srcs[0] is x; the others take its dtype */
        for (int i = 1; srcs[0] && i < n; i++)
            if (srcs[i] && loom_dtype_is_float(srcs[0]->dtype)) srcs[i] = cast_to(g, srcs[i], srcs[0]->dtype);
    }
}

/* Frozen parameters in 16 bits only (loom_trainer_desc.transfer.frozen_16bit): a frozen
 * f32 parameter whose every use is autocast's cast to the 16-bit dtype keeps
 * only that copy. The parameter itself becomes 16-bit (initialised, loaded
 * and saved as such), its users read it directly, and the cast nodes are left
 * without users (the planner drops them): the f32 master copy and the cast's
 * output are gone. Parameters with any other use (an f32 consumer, a
 * gradient) stay as they are. With like (the eval graph following the
 * training graph), exactly the parameters stored in 16 bits there are
 * converted, frozen or not here, so that plans sharing them agree. Returns
 * how many were converted and adds their bytes saved to *saved_bytes. Call
 * after freezing and before loom_backward. */
int loom__autocast_frozen_lowp(loom_graph *g, const loom_graph *like, int64_t *saved_bytes) {
    loom_dtype d = g->autocast;
    if (d == LOOM_F32 || g->status != LOOM_OK) return 0;
    int k16 = d == LOOM_F16 ? 1 : 2, count = 0;
    for (int i = 0; i < g->n; i++) {
        loom_tensor *p = g->nodes[i];
        if (p->leaf != LOOM__PARAM || p->dtype != LOOM_F32) continue;
        if (like) {
            bool lowp = false;
            for (int j = 0; j < like->n && !lowp; j++)
                lowp = like->nodes[j]->leaf == LOOM__PARAM && like->nodes[j]->dtype == d &&
                       !strcmp(like->nodes[j]->name, p->name);
            if (!lowp) continue;
        } else if (p->requires_grad) {
            continue;
        }
        loom_tensor *c = p->amp_cast[k16];
        bool only_cast = c != NULL;
        for (int j = 0; j < g->n && only_cast; j++)
            for (int s = 0; s < g->nodes[j]->nsrc; s++)
                if (g->nodes[j]->src[s] == p && g->nodes[j] != c) only_cast = false;
        if (!only_cast) continue;
        for (int j = 0; j < g->n; j++)
            for (int s = 0; s < g->nodes[j]->nsrc; s++)
                if (g->nodes[j]->src[s] == c) g->nodes[j]->src[s] = p;
        p->dtype = d;
        p->amp_cast[k16] = NULL;
        p->requires_grad = false;
        c->requires_grad = false;
        count++;
        *saved_bytes += loom_tensor_numel(p) * (int64_t)(sizeof(float) - loom_dtype_size(d));
    }
    return count;
}
