/* train/dist_train.c — the trainer's side of data-parallel training
 * (loom_train_run.dist; the process group is train/dist.c): the training
 * graph compiled in two segments (forward + backward, then the optimizer's
 * updates; core/plan.c), the gradient exchange between them, and the
 * broadcast of rank 0's weights. Every transfer goes through host staging:
 * the gradients are read into one flat f32 buffer, summed over the ranks,
 * scaled by 1 / world and written back. */
#include <math.h>

#include "train_impl.h"

/* The tensors exchanged after the backward pass, in graph order (the same
 * on every rank): each updated parameter's gradient and, with gradient
 * accumulation, its accumulator. */
struct loom__dist_sync {
    int n;
    loom_tensor **t;
    size_t *off;       /* element offset of t[i] in buf */
    size_t total;      /* elements in buf */
    int n_grads;       /* t[0..n_grads): gradients (every step); the rest: accumulators */
    size_t grad_total; /* elements of the gradients */
    float *buf;
    void *tmp;         /* one tensor's bytes in its own dtype */
    float *all;        /* reproducible mode: every rank's buf, in rank order (world * total) */
};

bool loom__dist_active(const loom_trainer *t) { return loom_dist_world(t->d.run.dist) > 1; }

uint64_t loom__dist_seed(uint64_t seed, const loom_dist *d) {
    int r = loom_dist_rank(d);
    if (r == 0) return seed; /* rank 0 (and one process) keep the run's seed */
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (uint64_t)r; /* splitmix64 of (seed, rank) */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static loom_tensor *find_state(loom_graph *g, const char *param, const char *suffix) {
    char name[256];
    snprintf(name, sizeof name, "%s.%s", param, suffix);
    for (int i = 0; i < g->n; i++)
        if (g->nodes[i]->leaf == LOOM__STATE && !strcmp(g->nodes[i]->name, name)) return g->nodes[i];
    return NULL;
}

static loom_status sync_create(loom_trainer *t, struct loom__dist_sync **out) {
    loom_graph *g = t->tr.g;
    struct loom__dist_sync *s = calloc(1, sizeof *s);
    if (!s || !(s->t = calloc((size_t)g->n * 2, sizeof *s->t)) || !(s->off = calloc((size_t)g->n * 2, sizeof *s->off))) {
        if (s) free(s->t), free(s->off);
        free(s);
        return loom__err(t->ctx, LOOM_ERR_OOM, "dist: out of memory");
    }
    *out = s;
    size_t biggest = 1;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < g->n; i++) {
            loom_tensor *p = g->nodes[i];
            if (p->leaf != LOOM__PARAM || !p->requires_grad || !p->grad) continue;
            loom_tensor *x = pass == 0 ? p->grad : find_state(g, p->name, "grad_accum");
            if (!x) continue;
            s->t[s->n] = x;
            s->off[s->n++] = s->total;
            s->total += (size_t)loom_tensor_numel(x);
            if (loom__nbytes(x) > biggest) biggest = loom__nbytes(x);
        }
        if (pass == 0) s->n_grads = s->n, s->grad_total = s->total;
    }
    size_t all = t->d.run.backend_desc.reproducible ? s->total * (size_t)loom_dist_world(t->d.run.dist) : 0;
    if (!(s->buf = malloc((s->total ? s->total : 1) * sizeof *s->buf)) || !(s->tmp = malloc(biggest)) ||
        (all && !(s->all = malloc(all * sizeof *s->all))))
        return loom__err(t->ctx, LOOM_ERR_OOM, "dist: out of memory for %zu gradient values", s->total);
    return LOOM_OK;
}

static void sync_free(struct loom__dist_sync *s) {
    if (!s) return;
    free(s->t), free(s->off), free(s->buf), free(s->tmp), free(s->all);
    free(s);
}

loom_status loom__dist_compile(loom_trainer *t, int split) {
    if (!loom__dist_active(t)) return loom_plan_compile(t->tr.g, t->be, NULL, &t->tr.plan);
    loom_status st = loom__plan_compile_split(t->tr.g, t->be, split, &t->tr.plan, &t->dist_tail);
    if (st == LOOM_OK) st = sync_create(t, &t->dist_sync);
    return st;
}

void loom__dist_free(loom_trainer *t) {
    loom_plan_destroy(t->dist_tail);
    t->dist_tail = NULL;
    sync_free(t->dist_sync);
    t->dist_sync = NULL;
}

/* Every parameter and state (weights, batch-norm statistics, optimizer
 * state, the loss scaler) from rank 0, and the counters a resumed run
 * carries, so that every rank starts identical. */
loom_status loom__dist_broadcast_weights(loom_trainer *t) {
    if (!loom__dist_active(t)) return LOOM_OK;
    loom_dist *d = t->d.run.dist;
    loom__snapshot s = {0};
    loom_status st = loom__snapshot_take(&s, t->tr.plan, t->tr.g, false);
    for (int i = 0; i < s.n && st == LOOM_OK; i++) st = loom_dist_broadcast(d, s.data[i], loom__nbytes(s.t[i]), 0);
    if (st == LOOM_OK) st = loom__snapshot_restore(&s, t->tr.plan);
    loom__snapshot_free(&s);
    int64_t c[4] = {t->start_epoch, (int64_t)loom_plan_step(t->tr.plan), loom_optimizer_steps(t->opt),
                    loom_optimizer_micro_steps(t->opt)};
    if (st == LOOM_OK) st = loom_dist_broadcast(d, c, sizeof c, 0);
    if (st == LOOM_OK) {
        t->start_epoch = (int)c[0];
        loom_plan_set_step(t->tr.plan, (uint64_t)c[1]);
        loom_optimizer_set_counters(t->opt, c[2], c[3]);
    }
    return st;
}

/* Reproducible mode: the sum over the ranks in one fixed order on every
 * rank, whatever MPI's reduction algorithm: every rank's values gathered,
 * then t = v0; t = t + v1; ... in rank order (single f32 roundings, as
 * core/repro.h folds its chunk sums). */
static loom_status fold(loom_dist *d, struct loom__dist_sync *s, size_t total) {
    const int world = loom_dist_world(d);
    loom_status st = loom_dist_allgather(d, s->buf, total * sizeof *s->buf, s->all);
    if (st != LOOM_OK) return st;
    for (size_t k = 0; k < total; k++) {
        float acc = s->all[k];
        for (int r = 1; r < world; r++) acc = acc + s->all[(size_t)r * total + k];
        s->buf[k] = acc;
    }
    return LOOM_OK;
}

/* Sum over the ranks and scale by 1 / world the first n tensors of the
 * exchange list, through the flat host buffer. */
static loom_status exchange(loom_trainer *t, struct loom__dist_sync *s, int n, size_t total) {
    loom_dist *d = t->d.run.dist;
    loom_status st = LOOM_OK;
    for (int i = 0; i < n && st == LOOM_OK; i++) {
        loom_tensor *x = s->t[i];
        if ((st = loom__plan_io(t->tr.plan, x, s->tmp, loom__nbytes(x), false)) == LOOM_OK)
            loom_convert(s->tmp, x->dtype, s->buf + s->off[i], LOOM_F32, (size_t)loom_tensor_numel(x));
    }
    if (st == LOOM_OK) st = s->all ? fold(d, s, total) : loom_dist_allreduce_sum(d, s->buf, total, LOOM_F32);
    if (st != LOOM_OK) return st;
    const float scale = 1.0f / (float)loom_dist_world(d);
    for (size_t k = 0; k < total; k++) s->buf[k] *= scale;
    for (int i = 0; i < n && st == LOOM_OK; i++) {
        loom_tensor *x = s->t[i];
        loom_convert(s->buf + s->off[i], LOOM_F32, s->tmp, x->dtype, (size_t)loom_tensor_numel(x));
        st = loom__plan_io(t->tr.plan, x, s->tmp, loom__nbytes(x), true);
    }
    return st;
}

loom_status loom__train_run(loom_trainer *t) {
    loom_status st = loom_plan_run(t->tr.plan);
    if (st != LOOM_OK || !t->dist_tail) return st;
    struct loom__dist_sync *s = t->dist_sync;
    int accum = t->d.optim.opt.grad_accum > 1 ? t->d.optim.opt.grad_accum : 1;
    /* loom_optimizer_begin_step has counted this micro-step: it updates when
     * the count is a multiple of accum; earlier micro-steps only accumulate,
     * locally (the sum of averages is the average of the sums) */
    if (loom_optimizer_micro_steps(t->opt) % accum == 0) {
        bool with_acc = accum > 1;
        st = exchange(t, s, with_acc ? s->n : s->n_grads, with_acc ? s->total : s->grad_total);
        if (st != LOOM_OK) return st;
    }
    return loom_plan_run(t->dist_tail);
}
