/* loom/data.h — datasets in memory and the batch source the trainer reads.
 *
 * defines: loom_dataset (IDX / Fashion-MNIST loading), loom_batch_iter (a
 *          simple shuffled in-memory batch iterator).
 *
 * A dataset holds N samples of u8 pixels (N, C, H, W) and i32 labels. The
 * batch iterator is the seam where the threaded prefetching loader plugs in:
 * the trainer only calls loom_batch_iter_next.
 */
#ifndef LOOM_DATA_H
#define LOOM_DATA_H

#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_dataset {
    int64_t n;          /* samples */
    int c, h, w;        /* per-sample shape (C, H, W) */
    int num_classes;    /* max label + 1 */
    uint8_t *pixels;    /* n * c * h * w, owned */
    int32_t *labels;    /* n, owned */
} loom_dataset;

/* Read an IDX image file ((N,H,W) or (N,C,H,W) u8; gzip or plain) and its
 * IDX label file ((N) u8). Errors name the file and the problem: missing,
 * wrong magic, unsupported type, truncated, trailing data, counts that differ.
 * On failure *out is untouched. */
loom_status loom_dataset_load_idx(loom_ctx *ctx, const char *images_path, const char *labels_path,
                                  loom_dataset *out);
/* Fashion-MNIST (or MNIST) from a directory holding the four standard files
 * ({train,t10k}-{images-idx3,labels-idx1}-ubyte, optionally .gz).
 * dir NULL = /usr/share/datasets/fashion-mnist. */
loom_status loom_dataset_load_mnist(loom_ctx *ctx, const char *dir, bool train, loom_dataset *out);
void loom_dataset_free(loom_dataset *ds);
/* Split off the last `count` samples (after a seeded shuffle) into `val`. */
loom_status loom_dataset_split(loom_ctx *ctx, loom_dataset *ds, int64_t count, uint64_t seed, loom_dataset *val);

typedef struct loom_batch_iter_desc {
    int batch;        /* samples per batch */
    bool shuffle;     /* reshuffled each epoch from (seed, epoch) */
    bool drop_last;   /* drop the final partial batch */
    uint64_t seed;
    float mean, std;  /* normalisation: x = (pixel/255 - mean) / std; std 0 = 1 */
} loom_batch_iter_desc;

typedef struct loom_batch_iter loom_batch_iter;

loom_status loom_batch_iter_create(loom_ctx *ctx, const loom_dataset *ds, const loom_batch_iter_desc *desc,
                                   loom_batch_iter **out);
void loom_batch_iter_destroy(loom_batch_iter *it);
/* Start epoch `epoch` (sets the order). */
void loom_batch_iter_begin(loom_batch_iter *it, int64_t epoch);
/* Fill the next batch: x (count, C, H, W) f32, y (count) i32. Returns the
 * number of samples (0 at the end of the epoch). */
int loom_batch_iter_next(loom_batch_iter *it, float *x, int32_t *y);
/* Batches per epoch. */
int64_t loom_batch_iter_batches(const loom_batch_iter *it);
/* Position within the epoch (samples consumed), and a way to restore it. */
int64_t loom_batch_iter_pos(const loom_batch_iter *it);
void loom_batch_iter_seek(loom_batch_iter *it, int64_t pos);

#ifdef __cplusplus
}
#endif
#endif
