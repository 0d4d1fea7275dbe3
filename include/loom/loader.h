/* loom/loader.h — pieces of the data loader: .npy arrays and samplers.
 *
 * defines: loom_npy_dtype, loom_npy (loom_npy_read/parse/write/free),
 *          loom_sampler (sequential, shuffled, distributed),
 *          loom_batches (fixed-size batching with drop_last, and
 *          length-bucketed dynamic batching under a token/pixel budget).
 *
 * Everything here is deterministic: a sampler's order is a function of
 * (seed, epoch) only, never of earlier epochs or of how many threads read.
 * Objects are used by one thread at a time; the index arrays they expose are
 * read-only and may be shared with worker threads until the next call that
 * changes them.
 */
#ifndef LOOM_LOADER_H
#define LOOM_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- .npy arrays ------------------------------------------------------- */

/* X(name, descr code, bytes) — the element types loom reads and writes. */
#define LOOM_NPY_DTYPE_LIST(X) \
    X(U1, "u1", 1)             \
    X(I4, "i4", 4)             \
    X(I8, "i8", 8)             \
    X(F2, "f2", 2)             \
    X(F4, "f4", 4)             \
    X(F8, "f8", 8)

typedef enum loom_npy_dtype {
#define LOOM__X(n, s, b) LOOM_NPY_##n,
    LOOM_NPY_DTYPE_LIST(LOOM__X)
#undef LOOM__X
    LOOM_NPY_DTYPE_COUNT
} loom_npy_dtype;

#define LOOM_NPY_MAX_DIMS 8

/* "u1", "i4", ...; "?" when out of range. */
const char *loom_npy_dtype_name(loom_npy_dtype dt);
/* Bytes per element; 0 when out of range. */
size_t loom_npy_dtype_size(loom_npy_dtype dt);

/* An array read from a .npy file: C order, little-endian, owned data. */
typedef struct loom_npy {
    loom_npy_dtype dtype;
    int ndim;                          /* 0 = a scalar (one element) */
    int64_t shape[LOOM_NPY_MAX_DIMS];
    int64_t count;                     /* elements: the product of shape */
    size_t bytes;                      /* count * element size */
    int version;                       /* format major version: 1, 2 or 3 */
    void *data;                        /* bytes bytes (NULL when 0), owned */
} loom_npy;

/* Read a .npy file: format 1.0, 2.0 or 3.0; C order (fortran_order True is
 * accepted for 0-d and 1-d arrays, whose layout is the same); dtype one of the list
 * above, little-endian ('<', or '|' for u1). The header dict must be exactly
 * {'descr', 'fortran_order', 'shape'} as numpy writes it (whitespace, key
 * order and a trailing comma are free). Errors (LOOM_ERR_IO for a missing or
 * unreadable file, LOOM_ERR_FORMAT for bad contents, LOOM_ERR_UNSUPPORTED for
 * Fortran order, big-endian or another dtype) name the file and the problem:
 * bad magic, unknown version, header length past the end of the file, a
 * malformed or incomplete header dict, truncated data, trailing bytes.
 * On failure *out is untouched. */
loom_status loom_npy_read(loom_ctx *ctx, const char *path, loom_npy *out);
/* The same from memory; `name` stands for the file in messages. The data is
 * copied. */
loom_status loom_npy_parse(loom_ctx *ctx, const char *name, const void *buf, size_t size, loom_npy *out);
void loom_npy_free(loom_npy *a);

/* Write a C-order little-endian array byte for byte as numpy's np.save
 * (numpy >= 1.23) would: format 1.0 (an 8-dim header is far below its 64 KiB
 * limit), the data starting at a multiple of 64 bytes. data holds the product of shape elements (ndim 0 =
 * one element). The file is written to "<path>.tmp" and renamed over path. */
loom_status loom_npy_write(loom_ctx *ctx, const char *path, loom_npy_dtype dt, int ndim, const int64_t *shape,
                           const void *data);

/* ---- samplers ---------------------------------------------------------- */

/* Zero-initialised is valid: sequential, not distributed. */
typedef struct loom_sampler_desc {
    int64_t n;          /* dataset size (samples 0..n-1), >= 1 */
    bool shuffle;       /* a permutation drawn from (seed, epoch) only */
    uint64_t seed;
    /* Distributed: rank in 0..world-1; world 0 or 1 = one process. As torch's
     * DistributedSampler: every rank sees the same global order, cut
     * round-robin (rank, rank + world, ...). When n % world != 0 the global
     * order is padded by repeating its start so every rank gets ceil(n/world)
     * samples, or, with drop_uneven, its tail is dropped so every rank gets
     * floor(n/world). */
    int rank, world;
    bool drop_uneven;
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
    int nbounds;
    bool drop_last;            /* drop each bucket's last batch when it could still have grown */
    uint64_t seed;
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
