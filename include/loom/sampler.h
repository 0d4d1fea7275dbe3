/* loom/sampler.h — the order of a dataset's samples and their batches.
 *
 * defines: loom_sampler (sequential, shuffled, distributed), loom_batches
 *          (fixed-size batching with drop_last, and length-bucketed dynamic
 *          batching under a token/pixel budget).
 *
 * Everything here is deterministic: a sampler's order is a function of
 * (seed, epoch) only, never of earlier epochs or of how many threads read.
 * Objects are used by one thread at a time; the index arrays they expose are
 * read-only and may be shared with worker threads until the next call that
 * changes them.
 */
#ifndef LOOM_SAMPLER_H
#define LOOM_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Zero-initialised is valid: sequential, not distributed. */
typedef struct loom_sampler_desc {
    int64_t n;          /* dataset size (samples 0..n-1), >= 1 */
    bool shuffle;       /* a permutation drawn from (seed, epoch) only */
    uint64_t seed;      /* seed of the shuffle (unused without it) */
    /* Distributed: rank in 0..world-1; world 0 or 1 = one process. As torch's
     * DistributedSampler: every rank sees the same global order, cut
     * round-robin (rank, rank + world, ...). When n % world != 0 the global
     * order is padded by repeating its start so every rank gets ceil(n/world)
     * samples, or, with drop_uneven, its tail is dropped so every rank gets
     * floor(n/world). */
    int rank;
    int world;          /* processes; 0 or 1 = one */
    bool drop_uneven;   /* n % world != 0: drop the global order's tail instead of padding */
    /* > 1: cut the global order in blocks instead of round-robin: each run of
     * world * block samples (a global batch) gives rank r its r-th block of
     * `block` consecutive samples; only whole runs are used (the tail of
     * fewer than world * block samples is dropped; an error when there is no
     * whole run). 0 or 1 = round-robin. */
    int64_t block;
} loom_sampler_desc;

typedef struct loom_sampler loom_sampler;

loom_status loom_sampler_create(loom_ctx *ctx, const loom_sampler_desc *desc, loom_sampler **out);
void loom_sampler_destroy(loom_sampler *s);
/* Set the order for epoch `epoch` (>= 0). Done for epoch 0 by create. */
void loom_sampler_set_epoch(loom_sampler *s, int64_t epoch);
/* This rank's samples per epoch, and their order for the current epoch
 * (valid until the next set_epoch or destroy). */
int64_t loom_sampler_len(const loom_sampler *s);
const int64_t *loom_sampler_indices(const loom_sampler *s);


/* ---- batching ---------------------------------------------------------- */

/* A list of batches: batch b is idx[offsets[b] .. offsets[b + 1]). */
typedef struct loom_batches {
    int64_t count;     /* batches */
    int64_t *offsets;  /* count + 1, owned */
    int64_t *idx;      /* offsets[count] sample indices, owned */
} loom_batches;

void loom_batches_free(loom_batches *b);

/* Cut idx[0..n) (typically a sampler's order) into batches of `batch`
 * samples, in order; the last one is shorter, or dropped with drop_last. */
loom_status loom_batches_fixed(loom_ctx *ctx, const int64_t *idx, int64_t n, int64_t batch, bool drop_last,
                               loom_batches *out);

/* Length-bucketed dynamic batching. Zero-initialised fields take defaults. */
typedef struct loom_bucket_desc {
    int64_t budget;            /* padded size per batch: max size * count <= budget (required) */
    int64_t max_batch;         /* at most this many samples per batch; 0 = no cap */
    /* Bucket upper bounds, strictly increasing: a sample of size s goes to
     * the first bucket with s <= bounds[i], or a last bucket past them all.
     * nbounds 0 = powers of two (sizes in (2^(k-1), 2^k] share a bucket),
     * which pads by less than 2x. */
    const int64_t *bounds;
    int nbounds;               /* entries of bounds; 0 = powers of two */
    bool drop_last;            /* drop each bucket's last batch when it could still have grown */
    uint64_t seed;             /* shuffle of the samples in each bucket and of the batches */
} loom_bucket_desc;

/* Form batches from idx[0..n) (this rank's samples; their order does not
 * matter) where sizes[i] is the size (tokens, pixels) of sample i, >= 1 and
 * <= budget. Within each bucket the samples are shuffled from
 * (seed, epoch, bucket) and packed greedily in that order: a batch closes
 * when the next sample would make max size * count exceed the budget (or
 * count exceed max_batch). The batches of all buckets are then shuffled
 * from (seed, epoch). Each sample of idx appears in exactly one batch
 * (unless drop_last dropped its batch). Errors name the sample whose size
 * is out of range. */
loom_status loom_batches_bucketed(loom_ctx *ctx, const int64_t *idx, int64_t n, const int64_t *sizes,
                                  const loom_bucket_desc *desc, int64_t epoch, loom_batches *out);

#ifdef __cplusplus
}
#endif
#endif
