/* loom/loader.h — the threaded prefetching data loader.
 *
 * defines: loom_loader (worker pool, ring of pinned batch slots, ordered
 *          delivery, auto-tuned worker count; or synchronous, on the
 *          caller's thread), loom_loader_desc, loom_loader_batch,
 *          loom_loader_stats.
 *
 * It reads a loom_source (loom/source.h) in a loom_sampler's order
 * (loom/sampler.h) through per-sample transform steps (loom/transforms.h);
 * this header includes those and loom/npy.h and loom/shard.h, so that it
 * alone still declares everything the loader's parts offer. A loader is
 * used by one thread at a time (its workers are its own).
 */
#ifndef LOOM_LOADER_H
#define LOOM_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "npy.h"
#include "sampler.h"
#include "shard.h"
#include "source.h"
#include "status.h"
#include "transforms.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_WORKERS_AUTO 0  /* start at the core count, tune while running */
#define LOOM_WORKERS_SYNC (-1) /* no threads: next() loads on the calling thread */

/* Zero-initialised fields take defaults. */
typedef struct loom_loader_desc {
    const loom_source *src;  /* required; borrowed, must outlive the loader */
    int batch;               /* samples per batch, >= 1 (required) */
    bool shuffle;            /* the order of the epoch from (seed, epoch): loom_sampler's */
    bool drop_last;          /* drop the final partial batch */
    uint64_t seed;           /* order and per-sample randomness */
    int rank;                /* distributed: this process, 0..world-1 (as loom_sampler_desc) */
    int world;               /* distributed: as loom_sampler_desc (world 0 = 1) */
    int64_t rank_block;      /* distributed: loom_sampler_desc.block (0 = round-robin) */
    /* Worker threads: LOOM_WORKERS_AUTO (0, the default), LOOM_WORKERS_SYNC,
     * or N > 0. Batches are bitwise identical for every setting. */
    int workers;
    int max_workers;         /* auto: at most this many; 0 = 2x the cores */
    int prefetch;            /* batch slots per worker in the ring; 0 = 2 */
    /* U8 sources: the pipeline, then ToTensor + Normalize to CHW f32:
     *   x = ((float)u / 255.0f - mean[k]) / std[k]
     * nstat = 1 (one value for every channel) or c; 0 = mean 0, std 1. F32
     * sources take no steps. */
    const loom_tf_step *steps;
    int nsteps;              /* number of steps, >= 0 */
    const float *mean;       /* nstat values subtracted (after / 255), one per channel or one for all */
    const float *std;        /* nstat divisors, each nonzero */
    int nstat;               /* 0, 1 or the source's channel count */
    /* Where the batch slots live: loom_backend_host_alloc(backend), the
     * backend's pinned/staging host memory when it has one, else malloc.
     * NULL = malloc. */
    loom_backend *backend;
    /* true: run every transform step on its own. false (the default): runs
     * of consecutive geometric steps (Resize, crops, flips,
     * RandomResizedCrop, one RandomAffine) resample once (loader/pipeline_plan.c;
     * bit-exact when at most one resize per axis and no RandomAffine). */
    bool no_fuse;
    /* true: device augmentation. The trailing crops (constant padding, one
     * fill), flips, a ColorJitter, a last nearest RandomAffine (where
     * `backend` has 64-bit floats; NULL: assumed) and ToTensor + Normalize,
     * run on the training backend (loom_loader_device_input);
     * the workers decode and run the steps before them, and batches carry
     * those u8 images and a parameter table (u8, prm) instead of x. The
     * backend's x has the host path's bits (the same draws). A leading
     * Resize runs on the device too when the source's images have one size
     * and nothing else stays on the host (then the workers only decode).
     * Refused for RandomErasing. U8 sources only. */
    bool device_augment;
} loom_loader_desc;

typedef struct loom_loader loom_loader;

/* One delivered batch: x (count, c, h, w) f32 (or ids for token sources), y (count) i32, in the ring
 * slot (pinned when the backend has pinned memory). Valid until the next
 * loom_loader_next / begin / destroy. */
typedef struct loom_loader_batch {
    int count;               /* 0 = the epoch is over */
    int64_t index;           /* batch number within the epoch */
    const float *x;          /* U8 and F32 sources (NULL for I32) */
    const int32_t *ids;      /* I32 sources (token sequences): (count, c, h, w) int32; else NULL */
    const int32_t *y;        /* count labels */
    const uint8_t *u8;       /* device_augment: (batch, h, w, c) u8 images (loom_loader_device_input), else NULL */
    const int32_t *prm;      /* device_augment: (batch, 32) i32 per-sample parameters, else NULL */
} loom_loader_batch;

/* Counters since the last loom_loader_begin (all times in seconds). */
typedef struct loom_loader_stats {
    int64_t batches;         /* delivered */
    double wait_s;           /* the caller's time blocked in next() */
    double compute_s;        /* the caller's time between next() calls */
    double load_s;           /* summed worker time loading the delivered batches */
    double first_batch_s;    /* begin -> the first batch delivered */
    int workers;             /* worker threads active now (0 = synchronous) */
    int workers_min;         /* fewest worker threads active over the epoch */
    int workers_max;         /* most worker threads active over the epoch */
    int64_t carried;         /* batches of this epoch loaded or loading at its begin: started ahead while
                                the previous epoch ended (begin(e + 1) from the start after epoch e) */
} loom_loader_stats;

/* Validates the desc and the pipeline against the source's shape, allocates
 * the ring and starts the workers (they wait for begin). Per-sample
 * randomness: sample i in epoch e draws from Philox (seed, stream
 * "AUGM" + e, counter 16 i + k), one word after another in pipeline order
 * (words past 64 continue in a range no other sample uses: loader/pipeline_draw.c),
 * so batches do not depend on the worker count or on timing. */
loom_status loom_loader_create(loom_ctx *ctx, const loom_loader_desc *desc, loom_loader **out);
/* Stops and joins every worker (also mid-epoch), frees the ring. */
void loom_loader_destroy(loom_loader *ld);
/* The output record shape (after the pipeline): x per sample is (c, h, w). */
void loom_loader_shape(const loom_loader *ld, int *c, int64_t *h, int64_t *w);
/* Batches per epoch. */
int64_t loom_loader_batches(const loom_loader *ld);
/* Start epoch `epoch` at batch `first` (0 = its start), producing at most
 * `limit` batches (0 = to the end). Work in flight for an earlier epoch is
 * dropped. Workers start loading at once. Once every batch of an epoch is
 * claimed, idle workers load the first batches of the next epoch ahead;
 * begin(epoch + 1, 0, ...) keeps them (stats.carried), any other begin
 * drops them and stops this for the loader (LOOM_LOADER_AHEAD=0: never). */
void loom_loader_begin(loom_loader *ld, int64_t epoch, int64_t first, int64_t limit);
/* The next batch in order (count 0 at the end). A sample that failed to
 * load is returned here, in order, as its status with the message
 * ("loader: batch B, sample S: ..."); begin again to go on. */
loom_status loom_loader_next(loom_loader *ld, loom_loader_batch *out);
void loom_loader_stats_get(const loom_loader *ld, loom_loader_stats *out);

/* Device augmentation's graph inputs for a loader created from desc (with
 * device_augment; only src, batch, steps, nsteps, mean, std and nstat are
 * read): *u8 = loom_input "<name>_u8" u8 (batch, h, w, c) and *prm =
 * loom_input "<name>_prm" i32 (batch, 32), to be written from each batch's
 * u8 and prm (loom_plan_write, every row, as x), and the returned
 * (batch, c, oh, ow) tensor of dtype dt: loom_augment_u8 of them with the
 * loader's normalisation table (a constant "<name>_lut"). When the source
 * has one image size (h, w > 0) and the pipeline is a Resize followed by
 * device steps only, the Resize runs on the device too: u8 holds the
 * source's h x w images and loom_resize_u8 (taps: a constant
 * "<name>_taps") makes them the Resize's size, bit for bit as the host.
 * NULL on error (recorded in the graph). */
loom_tensor *loom_loader_device_input(loom_graph *g, const loom_loader_desc *desc, const char *name, loom_dtype dt,
                                      loom_tensor **u8, loom_tensor **prm);
/* true when `steps` can run with device_augment (no RandomErasing). */
bool loom_loader_device_capable(const loom_tf_step *steps, int n);

#ifdef __cplusplus
}
#endif
#endif
