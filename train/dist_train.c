/* train/dist_train.c — the trainer's side of data-parallel training
 * (loom_train_run.dist; the process group is train/dist.c): the training
 * graph compiled in segments (core/plan.c), one per gradient bucket and one
 * for the optimizer's updates; the bucket exchanges between them; the
 * broadcast of rank 0's weights.
 *
 * The gradients are grouped into buckets in the order the backward pass
 * finishes them (the last layers first); the pass is cut after the node that
 * completes each bucket. After a segment runs, its bucket is read into host
 * staging (one flat f32 buffer) and its sum over the ranks started
 * (MPI_Iallreduce), so the exchange proceeds while the next segments
 * compute; before the updates every bucket is waited for, scaled by 1 /
 * world and written back. In reproducible mode a bucket is gathered and
 * summed in rank order on every rank instead (see fold). */
#include <math.h>

#include "train_impl.h"

enum { FIRST_BUCKET_MAX = 1 << 20 };

/* A bucket: tensors t[first, first + n) of the exchange list, elements
 * [off, off + count) of buf; started after segment `after` (-1: before the
 * first one: the accumulators, which the step does not change before the
 * updates). */
typedef struct bucket {
    int first, n;
    size_t off, count;
    int after;
    loom_dist_request *req;
} bucket;

/* The exchange list (the same on every rank): each updated parameter's
 * gradient in the order the backward pass completes them, then, with
 * gradient accumulation, the accumulators. */
struct loom__dist_sync {
    int n;
    loom_tensor **t;
    size_t *off;       /* element offset of t[i] in buf */
    size_t total;      /* elements in buf */
    float *buf;
    void *tmp;         /* one tensor's bytes in its own dtype */
    float *all;        /* reproducible mode: every rank's bucket, in rank order */
    bucket *b;
    int nb;
    loom_plan **seg;   /* nseg plans run in order; seg[0] is tr.plan (freed with it); the last: the updates */
    int nseg;
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

static void sync_free(struct loom__dist_sync *s) {
    if (!s) return;
    for (int i = s->nseg - 1; i > 0; i--) loom_plan_destroy(s->seg[i]);
    for (int i = 0; s->b && i < s->nb; i++) free(s->b[i].req); /* never waited: an error ended the step */
    free(s->t), free(s->off), free(s->buf), free(s->tmp), free(s->all), free(s->b), free(s->seg);
    free(s);
}

static int by_id(const void *a, const void *b) {
    int x = (*(loom_tensor *const *)a)->id, y = (*(loom_tensor *const *)b)->id;
    return (x > y) - (x < y);
}

/* The exchange list, its buckets and the segment bounds (bounds: at most
 * n + 1 entries; the last is split). */
static loom_status plan_buckets(loom_trainer *t, struct loom__dist_sync *s, int split, int *bounds, int *nbounds) {
    loom_graph *g = t->tr.g;
    size_t cap = t->d.run.dist_bucket_bytes ? t->d.run.dist_bucket_bytes : (size_t)25 << 20;
    int ng = 0;
    for (int i = 0; i < g->n; i++) {
        loom_tensor *p = g->nodes[i];
        if (p->leaf == LOOM__PARAM && p->requires_grad && p->grad) s->t[ng++] = p->grad;
    }
    qsort(s->t, (size_t)ng, sizeof *s->t, by_id); /* the order the backward pass completes them */
    size_t bytes = 0, limit = cap < FIRST_BUCKET_MAX ? cap : FIRST_BUCKET_MAX;
    *nbounds = 0;
    for (int i = 0; i < ng; i++) {
        loom_tensor *x = s->t[i];
        s->off[i] = s->total;
        s->total += (size_t)loom_tensor_numel(x);
        if (s->nb == 0 || bytes >= limit) { /* open a bucket */
            if (s->nb) limit = cap;
            s->b[s->nb++] = (bucket){.first = i, .off = s->off[i]};
            bytes = 0;
        }
        bucket *bk = &s->b[s->nb - 1];
        bk->n++, bk->count += (size_t)loom_tensor_numel(x);
        bytes += (size_t)loom_tensor_numel(x) * sizeof(float);
        bool last = i + 1 == ng || bytes >= limit;
        if (!last) continue;
        int end = x->id + 1 < split ? x->id + 1 : split; /* the segment ends after the bucket's last gradient */
        if (!*nbounds || bounds[*nbounds - 1] < end) bounds[(*nbounds)++] = end;
        bk->after = *nbounds - 1;
    }
    if (!*nbounds || bounds[*nbounds - 1] < split) bounds[(*nbounds)++] = split;
    /* gradient accumulation: the accumulators, one bucket started before the step's first segment */
    int na = 0;
    for (int i = 0; t->d.optim.opt.grad_accum > 1 && i < g->n; i++) {
        loom_tensor *p = g->nodes[i], *acc;
        if (p->leaf != LOOM__PARAM || !p->requires_grad || !p->grad || !(acc = find_state(g, p->name, "grad_accum")))
            continue;
        if (!na++) s->b[s->nb++] = (bucket){.first = ng + na - 1, .off = s->total, .after = -1};
        s->t[ng + na - 1] = acc;
        s->off[ng + na - 1] = s->total;
        s->total += (size_t)loom_tensor_numel(acc);
        s->b[s->nb - 1].n++, s->b[s->nb - 1].count += (size_t)loom_tensor_numel(acc);
    }
    s->n = ng + na;
    return LOOM_OK;
}

loom_status loom__dist_compile(loom_trainer *t, int split) {
    if (!loom__dist_active(t)) return loom_plan_compile(t->tr.g, t->be, NULL, &t->tr.plan);
    loom_graph *g = t->tr.g;
    size_t cap = (size_t)g->n * 2 + 2;
    struct loom__dist_sync *s = calloc(1, sizeof *s);
    int *bounds = malloc(cap * sizeof *bounds), nbounds = 0;
    if (!s || !bounds || !(s->t = calloc(cap, sizeof *s->t)) || !(s->off = calloc(cap, sizeof *s->off)) ||
        !(s->b = calloc(cap, sizeof *s->b)) || !(s->seg = calloc(cap, sizeof *s->seg))) {
        sync_free(s), free(bounds);
        return loom__err(t->ctx, LOOM_ERR_OOM, "dist: out of memory");
    }
    t->dist_sync = s;
    loom_status st = plan_buckets(t, s, split, bounds, &nbounds);
    if (st == LOOM_OK && (st = loom__plan_compile_segments(g, t->be, bounds, nbounds, s->seg)) == LOOM_OK) {
        s->nseg = nbounds + 1;
        t->tr.plan = s->seg[0];
    }
    free(bounds);
    size_t biggest = 1;
    for (int i = 0; i < s->n; i++)
        if (loom__nbytes(s->t[i]) > biggest) biggest = loom__nbytes(s->t[i]);
    size_t all = t->d.run.backend_desc.reproducible ? s->total * (size_t)loom_dist_world(t->d.run.dist) : 0;
    if (st == LOOM_OK && (!(s->buf = malloc((s->total ? s->total : 1) * sizeof *s->buf)) || !(s->tmp = malloc(biggest)) ||
                          (all && !(s->all = malloc(all * sizeof *s->all)))))
        st = loom__err(t->ctx, LOOM_ERR_OOM, "dist: out of memory for %zu gradient values", s->total);
    if (st == LOOM_OK)
        loom__log(t->ctx, LOOM_LOG_DEBUG, "dist: %d gradient tensors (%zu values) in %d buckets, %d segments", s->n,
                  s->total, s->nb, s->nseg);
    return st;
}

void loom__dist_free(loom_trainer *t) {
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

/* Read bucket k into buf and start its sum over the ranks (reproducible
 * mode: the gather waits for finish). */
static loom_status start(loom_trainer *t, struct loom__dist_sync *s, bucket *k) {
    loom_status st = LOOM_OK;
    for (int i = k->first; i < k->first + k->n && st == LOOM_OK; i++) {
        loom_tensor *x = s->t[i];
        if ((st = loom__plan_io(t->tr.plan, x, s->tmp, loom__nbytes(x), false)) == LOOM_OK)
            loom_convert(s->tmp, x->dtype, s->buf + s->off[i], LOOM_F32, (size_t)loom_tensor_numel(x));
    }
    if (st == LOOM_OK && !s->all) st = loom_dist_iallreduce_sum(t->d.run.dist, s->buf + k->off, k->count, LOOM_F32, &k->req);
    return st;
}

/* Reproducible mode: the sum over the ranks in one fixed order on every
 * rank, whatever MPI's reduction algorithm: every rank's values gathered,
 * then v0 + v1 + ... added in rank order, one f32 rounding each (as
 * core/repro.h folds its chunk sums). */
static loom_status fold(loom_dist *d, struct loom__dist_sync *s, bucket *k) {
    const int world = loom_dist_world(d);
    float *v = s->buf + k->off;
    loom_status st = loom_dist_allgather(d, v, k->count * sizeof *v, s->all);
    if (st != LOOM_OK) return st;
    for (size_t e = 0; e < k->count; e++) {
        float acc = s->all[e];
        for (int r = 1; r < world; r++) acc = acc + s->all[(size_t)r * k->count + e];
        v[e] = acc;
    }
    return LOOM_OK;
}

/* Wait for bucket k's sum, scale it by 1 / world and write it back. */
static loom_status finish(loom_trainer *t, struct loom__dist_sync *s, bucket *k) {
    loom_dist *d = t->d.run.dist;
    loom_status st = s->all ? fold(d, s, k) : loom_dist_wait(d, k->req);
    k->req = NULL;
    if (st != LOOM_OK) return st;
    const float scale = 1.0f / (float)loom_dist_world(d);
    float *v = s->buf + k->off;
    for (size_t e = 0; e < k->count; e++) v[e] *= scale;
    for (int i = k->first; i < k->first + k->n && st == LOOM_OK; i++) {
        loom_tensor *x = s->t[i];
        loom_convert(s->buf + s->off[i], LOOM_F32, s->tmp, x->dtype, (size_t)loom_tensor_numel(x));
        st = loom__plan_io(t->tr.plan, x, s->tmp, loom__nbytes(x), true);
    }
    return st;
}

/* Start the buckets that become ready after segment seg (-1: before the
 * first), and let MPI move the ones in flight (it progresses them only
 * inside MPI calls). */
static loom_status start_ready(loom_trainer *t, struct loom__dist_sync *s, int seg) {
    loom_status st = LOOM_OK;
    for (int k = 0; k < s->nb && st == LOOM_OK; k++) {
        bool done;
        if (s->b[k].after == seg) st = start(t, s, &s->b[k]);
        else if (s->b[k].req) st = loom_dist_test(t->d.run.dist, s->b[k].req, &done);
    }
    return st;
}

loom_status loom__train_run(loom_trainer *t) {
    struct loom__dist_sync *s = t->dist_sync;
    if (!s) return loom_plan_run(t->tr.plan);
    int accum = t->d.optim.opt.grad_accum > 1 ? t->d.optim.opt.grad_accum : 1;
    /* loom_optimizer_begin_step has counted this micro-step: it updates when
     * the count is a multiple of accum; earlier micro-steps only accumulate,
     * locally (the sum of averages is the average of the sums) */
    bool exchange = loom_optimizer_micro_steps(t->opt) % accum == 0;
    loom_status st = exchange ? start_ready(t, s, -1) : LOOM_OK;
    for (int i = 0; i + 1 < s->nseg && st == LOOM_OK; i++) {
        if ((st = loom_plan_run(s->seg[i])) == LOOM_OK && exchange) st = start_ready(t, s, i);
    }
    for (int k = 0; exchange && k < s->nb; k++) {
        if (st == LOOM_OK) {
            st = finish(t, s, &s->b[k]);
        } else { /* a started bucket is waited for even after an error (MPI owns its buffer until then) */
            loom_dist_wait(t->d.run.dist, s->b[k].req);
            s->b[k].req = NULL;
        }
    }
    return st == LOOM_OK ? loom_plan_run(s->seg[s->nseg - 1]) : st;
}
