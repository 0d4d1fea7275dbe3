/* backends/cpu/ops/embedding.c — CPU kernels for embedding lookup and its
 * scatter-add gradient. Reference loops, also the fast path: the lookup is
 * split over positions; the gradient is split over column ranges of D, each
 * summing the positions in order, so there are no races and the result does
 * not depend on the thread count. Both kernels check every index first. */
#include "../cpu_impl.h"

/* LOOM_OK, or LOOM_ERR_INVALID_ARG naming the first index outside [0, V). */
static loom_status check_idx(const loom__cpu_args *a, const loom_tensor *idx_t, const int32_t *idx, int64_t V) {
    int64_t n = loom_tensor_numel(idx_t);
    for (int64_t k = 0; k < n; k++) {
        if (idx[k] >= 0 && idx[k] < V) continue;
        /* position k as a multi-index of idx */
        int64_t c[LOOM_MAX_DIMS], r = k;
        for (int d = idx_t->ndim - 1; d >= 0; d--) c[d] = r % idx_t->dims[d], r /= idx_t->dims[d];
        char pos[96];
        loom__shape_str(idx_t->ndim, c, pos, sizeof pos);
        return loom__err(a->node->g->ctx, LOOM_ERR_INVALID_ARG,
                         "%s: index %d at position %s of '%s' is out of range [0, %lld) (node '%s')",
                         loom_op_name(a->node->op), idx[k], pos, idx_t->name, (long long)V, a->node->name);
    }
    return LOOM_OK;
}

typedef struct emb_job {
    const void *w, *dy;
    const int32_t *idx;
    void *y;
    int64_t n, D; /* positions, row width */
    size_t esize; /* bytes per element */
} emb_job;

/* y (n, D) = w (V, D) rows idx (n) */
static void lookup(void *v, int64_t k0, int64_t k1) {
    const emb_job *j = v;
    size_t row = (size_t)j->D * j->esize;
    for (int64_t k = k0; k < k1; k++)
        memcpy((char *)j->y + (size_t)k * row, (const char *)j->w + (size_t)j->idx[k] * row, row);
}

loom_status loom__cpu_embedding(const loom__cpu_args *a) {
    const loom_tensor *w = a->node->src[0], *it = a->node->src[1];
    loom_status st = check_idx(a, it, a->x[1], w->dims[0]);
    if (st != LOOM_OK) return st;
    emb_job j = {.w = a->x[0], .idx = a->x[1], .y = a->y, .n = loom_tensor_numel(it), .D = w->dims[1],
                 .esize = a->dt == LOOM_F64 ? sizeof(double) : sizeof(float)};
    loom__cpu_parallel(a->cpu, j.n, j.D >= 4096 ? 1 : 4096 / j.D, lookup, &j);
    return LOOM_OK;
}

/* y (V, D) columns [d0, d1): y[idx[k], d] += dy[k, d] for k in order */
#define SCATTER(T)                                                                \
    static void scatter_##T(void *v, int64_t d0, int64_t d1) {                    \
        const emb_job *j = v;                                                     \
        const T *dy = j->dy;                                                      \
        T *y = j->y;                                                              \
        for (int64_t k = 0; k < j->n; k++) {                                      \
            T *yr = y + (int64_t)j->idx[k] * j->D;                                \
            const T *dr = dy + k * j->D;                                          \
            for (int64_t d = d0; d < d1; d++) yr[d] += dr[d];                     \
        }                                                                         \
    }
SCATTER(float)
SCATTER(double)

loom_status loom__cpu_embedding_grad(const loom__cpu_args *a) {
    const loom_tensor *t = a->node, *it = t->src[1];
    int64_t V = t->p[LOOM_P_EMB_V], D = t->dims[1];
    loom_status st = check_idx(a, it, a->x[1], V);
    if (st != LOOM_OK) return st;
    bool f64 = a->dt == LOOM_F64;
    emb_job j = {.dy = a->x[0], .idx = a->x[1], .y = a->y, .n = loom_tensor_numel(it), .D = D,
                 .esize = f64 ? sizeof(double) : sizeof(float)};
    memset(a->y, 0, (size_t)(V * D) * j.esize);
    int64_t grain = j.n >= 4096 ? 16 : 4096 / j.n;
    loom__cpu_parallel(a->cpu, D, grain < 16 ? 16 : grain, f64 ? scatter_double : scatter_float, &j);
    return LOOM_OK;
}
