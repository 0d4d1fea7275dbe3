/* loader/sampler.c — samplers (sequential, shuffled, distributed) and
 * batching (fixed size with drop_last; length-bucketed under a budget).
 *
 * Every order is a pure function of (seed, epoch[, bucket]): Fisher-Yates
 * driven by Philox draws keyed by (seed, stream). The shuffled sampler's
 * stream is LOOM__STREAM_EPOCH_ORDER, so a one-process shuffled sampler
 * visits samples in the order the trainer always has.
 */
#include "../core/impl.h"
#include "loom/sampler.h"

#define STREAM_BUCKET 0x4255434b00000000ull /* "BUCK": samples within a bucket */
#define STREAM_BATCHES 0x4241544300000000ull /* "BATC": the order of batches */

/* ---- samplers ------------------------------------------------------------ */

struct loom_sampler {
    loom_sampler_desc d;
    int64_t len;    /* this rank's samples per epoch */
    int64_t *perm;  /* n: the global order */
    int64_t *idx;   /* len: this rank's order */
};

loom_status loom_sampler_create(loom_ctx *ctx, const loom_sampler_desc *desc, loom_sampler **out) {
    *out = NULL;
    if (!desc || desc->n < 1)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "sampler: dataset size must be >= 1 (got %lld)",
                         desc ? (long long)desc->n : 0LL);
    loom_sampler_desc d = *desc;
    if (d.world == 0) d.world = 1;
    if (d.world < 0 || d.rank < 0 || d.rank >= d.world)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "sampler: rank %d of world %d (expected 0 <= rank < world)", d.rank,
                         d.world);
    if (d.block < 0)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "sampler: block %lld (expected >= 0)", (long long)d.block);
    int64_t w = d.world, len;
    if (d.block > 1) {
        len = d.n / (w * d.block) * d.block;
        if (len == 0)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                             "sampler: %lld samples hold no whole run of %d ranks x %lld (block)", (long long)d.n,
                             d.world, (long long)d.block);
    } else if (d.drop_uneven) {
        len = d.n / w;
        if (len == 0)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                             "sampler: %lld samples cannot be split over %d ranks without padding (drop_uneven)",
                             (long long)d.n, d.world);
    } else {
        len = (d.n + w - 1) / w;
    }
    loom_sampler *s = calloc(1, sizeof *s);
    if (!s || !(s->perm = malloc((size_t)d.n * sizeof *s->perm)) || !(s->idx = malloc((size_t)len * sizeof *s->idx))) {
        if (s) free(s->perm);
        free(s);
        return loom__err(ctx, LOOM_ERR_OOM, "sampler: out of memory for %lld samples", (long long)d.n);
    }
    s->d = d;
    s->len = len;
    loom_sampler_set_epoch(s, 0);
    *out = s;
    return LOOM_OK;
}

void loom_sampler_destroy(loom_sampler *s) {
    if (!s) return;
    free(s->perm);
    free(s->idx);
    free(s);
}

void loom_sampler_set_epoch(loom_sampler *s, int64_t epoch) {
    int64_t n = s->d.n, w = s->d.world;
    for (int64_t i = 0; i < n; i++) s->perm[i] = i;
    if (s->d.shuffle) loom__shuffle(s->perm, n, s->d.seed, LOOM__STREAM_EPOCH_ORDER + (uint64_t)epoch);
    /* global position of this rank's k-th sample: rank + k * world; past n
     * it wraps to the start of the order (padding, repeated as often as
     * needed when world > n); with drop_uneven it never passes n */
    if (s->d.block > 1) { /* blocks: the k-th sample is in run k / block, rank's block, place k % block */
        int64_t b = s->d.block;
        for (int64_t k = 0; k < s->len; k++) s->idx[k] = s->perm[k / b * w * b + s->d.rank * b + k % b];
        return;
    }
    for (int64_t k = 0; k < s->len; k++) s->idx[k] = s->perm[(s->d.rank + k * w) % n];
}

int64_t loom_sampler_len(const loom_sampler *s) { return s->len; }
const int64_t *loom_sampler_indices(const loom_sampler *s) { return s->idx; }

/* ---- batching ------------------------------------------------------------ */

void loom_batches_free(loom_batches *b) {
    if (!b) return;
    free(b->offsets);
    free(b->idx);
    memset(b, 0, sizeof *b);
}

static loom_status batches_alloc(loom_ctx *ctx, int64_t count, int64_t n, loom_batches *b) {
    b->count = count;
    b->offsets = malloc((size_t)(count + 1) * sizeof *b->offsets);
    b->idx = malloc((size_t)(n ? n : 1) * sizeof *b->idx);
    if (!b->offsets || !b->idx) {
        loom_batches_free(b);
        return loom__err(ctx, LOOM_ERR_OOM, "batches: out of memory for %lld samples", (long long)n);
    }
    return LOOM_OK;
}

loom_status loom_batches_fixed(loom_ctx *ctx, const int64_t *idx, int64_t n, int64_t batch, bool drop_last,
                               loom_batches *out) {
    if (batch < 1) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "batches: batch size must be >= 1 (got %lld)", (long long)batch);
    if (n < 0 || (n && !idx)) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "batches: %lld samples", (long long)n);
    int64_t count = drop_last ? n / batch : (n + batch - 1) / batch;
    int64_t used = drop_last ? count * batch : n;
    loom_batches b = {0};
    loom_status st = batches_alloc(ctx, count, used, &b);
    if (st != LOOM_OK) return st;
    if (used) memcpy(b.idx, idx, (size_t)used * sizeof *idx);
    for (int64_t i = 0; i <= count; i++) b.offsets[i] = i * batch < used ? i * batch : used;
    *out = b;
    return LOOM_OK;
}

/* The bucket of size s: the first bound >= s, or nbounds; default powers of
 * two: ceil(log2(s)). */
static int bucket_of(int64_t s, const loom_bucket_desc *d) {
    if (d->nbounds > 0) {
        int lo = 0, hi = d->nbounds;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (d->bounds[mid] >= s)
                hi = mid;
            else
                lo = mid + 1;
        }
        return lo;
    }
    int k = 0;
    while (((int64_t)1 << k) < s) k++;
    return k;
}

typedef struct keyed {
    int64_t bucket, pos, sample;
} keyed;

static int cmp_keyed(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->bucket != y->bucket) return x->bucket < y->bucket ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

loom_status loom_batches_bucketed(loom_ctx *ctx, const int64_t *idx, int64_t n, const int64_t *sizes,
                                  const loom_bucket_desc *desc, int64_t epoch, loom_batches *out) {
    if (!desc || desc->budget < 1)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "bucketed batches: budget must be >= 1 (got %lld)",
                         desc ? (long long)desc->budget : 0LL);
    if (n < 0 || (n && (!idx || !sizes)))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "bucketed batches: %lld samples, idx and sizes required",
                         (long long)n);
    if (desc->max_batch < 0)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "bucketed batches: max_batch %lld (expected >= 0)",
                         (long long)desc->max_batch);
    if (desc->nbounds < 0 || (desc->nbounds && !desc->bounds))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "bucketed batches: %d bucket bounds", desc->nbounds);
    for (int i = 1; i < desc->nbounds; i++)
        if (desc->bounds[i] <= desc->bounds[i - 1])
            return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                             "bucketed batches: bucket bounds must increase (bounds[%d] = %lld after %lld)", i,
                             (long long)desc->bounds[i], (long long)desc->bounds[i - 1]);
    for (int64_t i = 0; i < n; i++) {
        int64_t s = sizes[idx[i]];
        if (s < 1 || s > desc->budget)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                             "bucketed batches: sample %lld has size %lld, expected 1..%lld (the budget)",
                             (long long)idx[i], (long long)s, (long long)desc->budget);
    }
    /* group by bucket; within a bucket, a seeded random order: shuffle the
     * positions, then sort by (bucket, shuffled position) */
    keyed *k = malloc((size_t)(n ? n : 1) * sizeof *k);
    int64_t *pos = malloc((size_t)(n ? n : 1) * sizeof *pos);
    if (!k || !pos) {
        free(k), free(pos);
        return loom__err(ctx, LOOM_ERR_OOM, "bucketed batches: out of memory for %lld samples", (long long)n);
    }
    for (int64_t i = 0; i < n; i++) pos[i] = i;
    /* the input order of idx is irrelevant to the result: sort it first */
    for (int64_t i = 0; i < n; i++) k[i] = (keyed){0, idx[i], idx[i]};
    qsort(k, (size_t)n, sizeof *k, cmp_keyed);
    loom__shuffle(pos, n, desc->seed, STREAM_BUCKET + (uint64_t)epoch);
    for (int64_t i = 0; i < n; i++) {
        k[i].bucket = bucket_of(sizes[k[i].sample], desc);
        k[i].pos = pos[i];
    }
    qsort(k, (size_t)n, sizeof *k, cmp_keyed);
    free(pos);

    /* greedy packing: start offsets of each batch (at most n of them) */
    int64_t *start = malloc((size_t)(n + 1) * sizeof *start);
    bool *keep = malloc((size_t)(n ? n : 1));
    if (!start || !keep) {
        free(k), free(start), free(keep);
        return loom__err(ctx, LOOM_ERR_OOM, "bucketed batches: out of memory");
    }
    int64_t nb = 0, mx = 0, cnt = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t s = sizes[k[i].sample];
        int64_t m = s > mx ? s : mx;
        bool fits = cnt > 0 && k[i].bucket == k[i - 1].bucket && m * (cnt + 1) <= desc->budget &&
                    (!desc->max_batch || cnt + 1 <= desc->max_batch);
        if (fits) {
            mx = m, cnt++;
        } else {
            if (cnt > 0) keep[nb - 1] = true; /* closed because full (or its bucket ended: see below) */
            start[nb++] = i, mx = s, cnt = 1;
        }
        /* a bucket's last batch closes because the bucket ended: with
         * drop_last it is dropped unless it could not have grown anyway */
        bool last_of_bucket = i + 1 == n || k[i + 1].bucket != k[i].bucket;
        if (last_of_bucket) {
            bool full = mx * (cnt + 1) > desc->budget || (desc->max_batch && cnt >= desc->max_batch);
            keep[nb - 1] = !desc->drop_last || full;
            cnt = 0, mx = 0;
        }
    }
    start[nb] = n;
    /* the order of the batches: seeded shuffle over the kept ones */
    int64_t kept = 0, used = 0;
    int64_t *order = malloc((size_t)(nb ? nb : 1) * sizeof *order);
    if (!order) {
        free(k), free(start), free(keep);
        return loom__err(ctx, LOOM_ERR_OOM, "bucketed batches: out of memory");
    }
    for (int64_t b = 0; b < nb; b++)
        if (keep[b]) order[kept++] = b, used += start[b + 1] - start[b];
    loom__shuffle(order, kept, desc->seed, STREAM_BATCHES + (uint64_t)epoch);
    loom_batches r = {0};
    loom_status st = batches_alloc(ctx, kept, used, &r);
    if (st == LOOM_OK) {
        int64_t at = 0;
        for (int64_t j = 0; j < kept; j++) {
            r.offsets[j] = at;
            for (int64_t i = start[order[j]]; i < start[order[j] + 1]; i++) r.idx[at++] = k[i].sample;
        }
        r.offsets[kept] = at;
        *out = r;
    }
    free(k), free(start), free(keep), free(order);
    return st;
}
