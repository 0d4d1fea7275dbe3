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
 * world and written back.
 *
 * Reproducible mode (shards): the global batch is cut into K shards
 * (loom_train_run.repro_shards), each run as a micro-batch of its own; a
 * rank runs its K / world shards one after the other, keeping each shard's
 * gradients (and its batch-norm running-statistic updates) on the host;
 * then every rank gathers all K and adds them in shard order (see
 * shard_step). The result depends on K only, not on how many ranks share
 * the shards. */
#include <math.h>

#include "params.h"
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
    bucket *b;
    int nb;
    loom_plan **seg;   /* nseg plans run in order; seg[0] is tr.plan (freed with it); the last: the updates */
    int nseg;
    /* reproducible shards (K > 0): this rank's `local` shards' gradients, per
     * bucket b at loc[local * b.off + j * b.count + e]; every shard's bucket in
     * shard order (all); the batch-norm running statistics (bn: nbn tensors,
     * bn_off into the flat values, bn_a (float)(1 - momentum) per tensor) as
     * saved before the step, each local shard's updates from zero, and all
     * K shards' updates */
    int K, local;
    float *loc, *all;
    int nbn;
    loom_tensor **bn;
    size_t *bn_off, bn_total;
    float *bn_a, *bn_saved, *bn_loc, *bn_all;
};

bool loom__dist_active(const loom_trainer *t) { return loom_dist_world(t->d.run.dist) > 1; }

loom_status loom__dist_resolve(loom_trainer *t) {
    const loom_train_run *r = &t->d.run;
    const int world = loom_dist_world(r->dist), batch = t->d.data.batch;
    t->shards = 0, t->graph_batch = batch;
    if (r->repro_shards < 0 || (r->repro_shards > 0 && !r->backend_desc.reproducible))
        return loom__err(t->ctx, LOOM_ERR_INVALID_ARG, "train: repro_shards %d (--repro-shards) must be >= 0 and needs "
                         "reproducible mode (--reproducible)", r->repro_shards);
    if (!r->backend_desc.reproducible) return LOOM_OK;
    int k = r->repro_shards ? r->repro_shards : world;
    if (k % world)
        return loom__err(t->ctx, LOOM_ERR_INVALID_ARG, "train: %d reproducible shards (--repro-shards) cannot be shared "
                         "by %d processes: give a multiple of the world size", k, world);
    if (batch % (k / world))
        return loom__err(t->ctx, LOOM_ERR_INVALID_ARG, "train: the batch of each process (%d) does not split into %d "
                         "equal shards (--repro-shards %d over %d processes)", batch, k / world, k, world);
    if (k > 1) t->shards = k, t->graph_batch = batch / (k / world);
    return LOOM_OK;
}

int64_t loom__dist_rank_block(const loom_trainer *t) {
    return t->shards && loom__dist_active(t) ? t->d.data.batch : 0;
}

uint64_t loom__dist_seed(const loom_trainer *t) {
    uint64_t seed = t->d.run.seed;
    int r = loom_dist_rank(t->d.run.dist);
    if (r == 0 || t->shards) return seed; /* rank 0 (and one process) keep the run's seed; shards: see shard_step */
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
    free(s->t), free(s->off), free(s->buf), free(s->tmp), free(s->b), free(s->seg);
    free(s->loc), free(s->all), free(s->bn), free(s->bn_off), free(s->bn_a), free(s->bn_saved), free(s->bn_loc),
        free(s->bn_all);
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
    for (int i = 0; t->d.optim.opt.grad_accum > 1 && !t->shards && i < g->n; i++) { /* shards: exchanged every micro-step */
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

/* Reproducible shards: the host buffers, and the batch-norm running
 * statistics (every running mean and variance a training batch norm
 * updates, with its (float)(1 - momentum)). */
static loom_status shards_init(loom_trainer *t, struct loom__dist_sync *s) {
    loom_graph *g = t->tr.g;
    s->K = t->shards, s->local = t->shards / loom_dist_world(t->d.run.dist);
    size_t most = 1;
    for (int k = 0; k < s->nb; k++)
        if (s->b[k].count > most) most = s->b[k].count;
    int cap = 0;
    for (int i = 0; i < g->n; i++) cap += g->nodes[i]->op == LOOM_OP_BATCH_NORM ? 2 : 0;
    if (!(s->loc = malloc((s->total ? s->total : 1) * (size_t)s->local * sizeof *s->loc)) ||
        !(s->all = malloc(most * (size_t)s->K * sizeof *s->all)) || !(s->bn = calloc((size_t)cap + 1, sizeof *s->bn)) ||
        !(s->bn_off = calloc((size_t)cap + 1, sizeof *s->bn_off)) || !(s->bn_a = calloc((size_t)cap + 1, sizeof *s->bn_a)))
        return loom__err(t->ctx, LOOM_ERR_OOM, "dist: out of memory for %d shards of %zu gradient values", s->local,
                         s->total);
    for (int i = 0; i < g->n; i++) {
        loom_tensor *y = g->nodes[i];
        if (y->op != LOOM_OP_BATCH_NORM || !y->p[LOOM_P_BN_TRAIN] || y->p[LOOM_P_BN_RMEAN] < 0) continue;
        loom_tensor *run[2] = {y->src[y->p[LOOM_P_BN_RMEAN]], y->src[y->p[LOOM_P_BN_RVAR]]};
        for (int k = 0; k < 2; k++) {
            bool seen = false;
            for (int j = 0; j < s->nbn; j++) seen = seen || s->bn[j] == run[k];
            if (seen) continue;
            if (run[k]->dtype != LOOM_F32)
                return loom__err(t->ctx, LOOM_ERR_UNSUPPORTED, "dist: running statistic '%s' is %s (f32 expected)",
                                 run[k]->name, loom_dtype_name(run[k]->dtype));
            s->bn[s->nbn] = run[k];
            s->bn_a[s->nbn] = (float)(1.0 - y->f[LOOM_F_BN_MOMENTUM]);
            s->bn_off[s->nbn++] = s->bn_total;
            s->bn_total += (size_t)loom_tensor_numel(run[k]);
        }
    }
    size_t nb = s->bn_total ? s->bn_total : 1;
    if (!(s->bn_saved = malloc(nb * sizeof *s->bn_saved)) || !(s->bn_loc = malloc(nb * (size_t)s->local * sizeof *s->bn_loc)) ||
        !(s->bn_all = malloc(nb * (size_t)s->K * sizeof *s->bn_all)))
        return loom__err(t->ctx, LOOM_ERR_OOM, "dist: out of memory for the running statistics of %d shards", s->local);
    loom__log(t->ctx, LOOM_LOG_DEBUG, "dist: %d reproducible shards of %d samples, %d on this rank; %d running statistics",
              s->K, t->graph_batch, s->local, s->nbn);
    return LOOM_OK;
}

loom_status loom__dist_compile(loom_trainer *t, int split) {
    if (!loom__dist_active(t) && !t->shards) return loom_plan_compile(t->tr.g, t->be, NULL, &t->tr.plan);
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
    if (st == LOOM_OK && (!(s->buf = malloc((s->total ? s->total : 1) * sizeof *s->buf)) || !(s->tmp = malloc(biggest))))
        st = loom__err(t->ctx, LOOM_ERR_OOM, "dist: out of memory for %zu gradient values", s->total);
    if (st == LOOM_OK && t->shards) st = shards_init(t, s);
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
    if (st == LOOM_OK) st = loom_dist_iallreduce_sum(t->d.run.dist, s->buf + k->off, k->count, LOOM_F32, &k->req);
    return st;
}

/* Wait for bucket k's sum, scale it by 1 / world and write it back. */
static loom_status finish(loom_trainer *t, struct loom__dist_sync *s, bucket *k) {
    loom_dist *d = t->d.run.dist;
    loom_status st = loom_dist_wait(d, k->req);
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

/* One step's plan runs with the bucket exchanges between the segments. */
static loom_status train_run(loom_trainer *t) {
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

/* Every running statistic from (write) or into (read) vals (flat, bn_off). */
static loom_status bn_io(loom_trainer *t, struct loom__dist_sync *s, float *vals, bool write) {
    loom_status st = LOOM_OK;
    for (int i = 0; i < s->nbn && st == LOOM_OK; i++)
        st = loom__plan_io(t->tr.plan, s->bn[i], vals + s->bn_off[i], loom__nbytes(s->bn[i]), write);
    return st;
}

/* Local shard j of the step: its samples in, the segments run with every
 * running statistic from zero (what comes out is then the shard's own
 * update term, (float)momentum * its batch statistic), its loss and correct
 * count added to stats, its gradients and running-statistic terms kept. */
static loom_status run_shard(loom_trainer *t, struct loom__dist_sync *s, int j, const float *x, const int32_t *y,
                             double stats[2]) {
    const size_t mb = (size_t)t->graph_batch;
    loom_plan *plan = t->tr.plan;
    float sv[2];
    memset(s->bn_loc + (size_t)j * s->bn_total, 0, s->bn_total * sizeof *s->bn_loc);
    loom_status st;
    if ((st = loom_plan_write(plan, t->tr.x, x + (size_t)j * mb * t->per, mb * t->per * sizeof *x)) != LOOM_OK ||
        (st = loom_plan_write(plan, t->tr.y, y + (size_t)j * mb, mb * sizeof *y)) != LOOM_OK ||
        (st = bn_io(t, s, s->bn_loc + (size_t)j * s->bn_total, true)) != LOOM_OK)
        return st;
    for (int i = 0; i + 1 < s->nseg && st == LOOM_OK; i++) st = loom_plan_run(s->seg[i]);
    if (st != LOOM_OK || (st = loom_plan_read(plan, t->tr.stats, sv, sizeof sv)) != LOOM_OK ||
        (st = bn_io(t, s, s->bn_loc + (size_t)j * s->bn_total, false)) != LOOM_OK)
        return st;
    stats[0] += sv[0], stats[1] += sv[1];
    for (int k = 0; k < s->nb && st == LOOM_OK; k++) {
        const bucket *bk = &s->b[k];
        float *dst = s->loc + (size_t)s->local * bk->off + (size_t)j * bk->count;
        for (int i = bk->first; i < bk->first + bk->n && st == LOOM_OK; i++) {
            loom_tensor *g = s->t[i];
            if ((st = loom__plan_io(plan, g, s->tmp, loom__nbytes(g), false)) == LOOM_OK)
                loom_convert(s->tmp, g->dtype, dst + (s->off[i] - bk->off), LOOM_F32, (size_t)loom_tensor_numel(g));
        }
    }
    return st;
}

/* Every shard's values gathered (shard order: rank r's local ones are
 * shards r * local ...), then, per bucket, g = ((g0 + g1) + g2) + ... in
 * shard order, one f32 rounding each, times 1 / K (the mean over the
 * global batch: each shard's loss is its own mean), written back; each
 * running statistic r = a * r + u0, then a * r + u1, ..., as K runs of the
 * kernel one after the other would have updated it. */
static loom_status combine(loom_trainer *t, struct loom__dist_sync *s) {
    loom_dist *d = t->d.run.dist;
    const float scale = 1.0f / (float)s->K;
    loom_status st = LOOM_OK;
    for (int k = 0; k < s->nb && st == LOOM_OK; k++) {
        const bucket *bk = &s->b[k];
        const size_t c = bk->count;
        if ((st = loom_dist_allgather(d, s->loc + (size_t)s->local * bk->off, (size_t)s->local * c * sizeof *s->all,
                                      s->all)) != LOOM_OK)
            return st;
        float *v = s->buf + bk->off;
        for (size_t e = 0; e < c; e++) {
            float acc = s->all[e];
            for (int r = 1; r < s->K; r++) acc = acc + s->all[(size_t)r * c + e];
            v[e] = acc * scale;
        }
        for (int i = bk->first; i < bk->first + bk->n && st == LOOM_OK; i++) {
            loom_tensor *g = s->t[i];
            loom_convert(s->buf + s->off[i], LOOM_F32, s->tmp, g->dtype, (size_t)loom_tensor_numel(g));
            st = loom__plan_io(t->tr.plan, g, s->tmp, loom__nbytes(g), true);
        }
    }
    if (st != LOOM_OK || !s->nbn) return st;
    if ((st = loom_dist_allgather(d, s->bn_loc, (size_t)s->local * s->bn_total * sizeof *s->bn_loc, s->bn_all)) != LOOM_OK)
        return st;
    for (int i = 0; i < s->nbn; i++) {
        const float a = s->bn_a[i];
        for (size_t e = s->bn_off[i]; e < s->bn_off[i] + (size_t)loom_tensor_numel(s->bn[i]); e++) {
            float r = s->bn_saved[e];
            for (int k = 0; k < s->K; k++) {
                float ar = a * r;
                r = ar + s->bn_all[(size_t)k * s->bn_total + e];
            }
            s->bn_saved[e] = r;
        }
    }
    return bn_io(t, s, s->bn_saved, true);
}

/* A reproducible step over K shards: this rank's shards run one after the
 * other, then combine, then the updates. Dropout is keyed by the shard:
 * every segment's step counter is micro-step * K + shard (the same seed on
 * every rank), and micro-step * K + K after the step, so a shard draws the
 * same masks on whichever rank trains it. stats: the mean of the local
 * shards' losses, the sum of their correct counts. */
static loom_status shard_step(loom_trainer *t, struct loom__dist_sync *s, const float *x, const int32_t *y, double lr,
                              float stats[2]) {
    const uint64_t base = (uint64_t)loom_optimizer_micro_steps(t->opt) * (uint64_t)s->K;
    const int first = loom_dist_rank(t->d.run.dist) * s->local;
    double acc[2] = {0, 0};
    loom_status st = loom_optimizer_begin_step(t->opt, t->tr.plan, lr);
    if (st == LOOM_OK) st = bn_io(t, s, s->bn_saved, false);
    for (int j = 0; j < s->local && st == LOOM_OK; j++) {
        for (int i = 0; i < s->nseg; i++) loom_plan_set_step(s->seg[i], base + (uint64_t)(first + j));
        st = run_shard(t, s, j, x, y, acc);
    }
    if (st == LOOM_OK) st = combine(t, s);
    if (st == LOOM_OK) st = loom_plan_run(s->seg[s->nseg - 1]);
    for (int i = 0; i < s->nseg; i++) loom_plan_set_step(s->seg[i], base + (uint64_t)s->K);
    stats[0] = (float)(acc[0] / s->local), stats[1] = (float)acc[1];
    return st;
}

loom_status loom__train_batch(loom_trainer *t, const loom_loader_batch *lb, double lr, float stats[2]) {
    if (t->shards) return shard_step(t, t->dist_sync, lb->x, lb->y, lr, stats);
    loom_plan *plan = t->tr.plan;
    loom_status st;
    if ((st = loom__train_write_x(&t->tr, lb, t->per)) != LOOM_OK ||
        (st = loom_plan_write(plan, t->tr.y, lb->y, (size_t)t->graph_batch * sizeof *lb->y)) != LOOM_OK ||
        (st = loom_optimizer_begin_step(t->opt, plan, lr)) != LOOM_OK)
        return st;
    if (!t->dist_sync) return loom_plan_run_read(plan, t->tr.stats, stats, 2 * sizeof *stats); /* one round trip */
    if ((st = train_run(t)) != LOOM_OK) return st;
    return loom_plan_read(plan, t->tr.stats, stats, 2 * sizeof *stats);
}
