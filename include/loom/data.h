/* loom/data.h — datasets in memory.
 *
 * defines: loom_dataset (IDX / Fashion-MNIST loading, a seeded split).
 *
 * A dataset holds N samples of u8 pixels (N, C, H, W) and i32 labels. Batches
 * come from the loader (loom/loader.h; loom_source_wrap in loom/source.h makes a
 * source of a dataset), the one batch path of training, evaluation and the LR finder.
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
    int c;              /* channels of one sample (C) */
    int h;              /* height of one sample in pixels (H) */
    int w;              /* width of one sample in pixels (W) */
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

#ifdef __cplusplus
}
#endif
#endif
