/* loader/loader_impl.h — library-private pieces shared by the loader's
 * files: the per-sample random stream and the pipeline runner
 * (loader/pipeline.c), used by the worker pool (loader/pool.c). */
#ifndef LOOM_LOADER_IMPL_H
#define LOOM_LOADER_IMPL_H

#include "../core/impl.h"
#include "loom/loader.h"
#include "loom/transforms.h"

/* Draws of one sample in one epoch: Philox (seed, AUG + epoch, 16 i + k),
 * word by word. */
#define LOOM__STREAM_AUG 0x4155474d00000000ull /* "AUGM" */

typedef struct loom__aug_rng {
    uint64_t seed, stream, base;
    uint32_t w[4];
    int k; /* words used so far */
} loom__aug_rng;

void loom__aug_init(loom__aug_rng *r, uint64_t seed, int64_t epoch, int64_t sample);
uint32_t loom__aug_u32(loom__aug_rng *r);

/* The output shape of the steps on a (h, w, c) U8 image and the largest
 * intermediate in bytes; errors name the step and the shapes. */
loom_status loom__tf_plan(loom_ctx *ctx, const loom_tf_step *steps, int n, int c, int64_t h, int64_t w, int64_t *oh,
                          int64_t *ow, size_t *max_bytes);
/* Run the steps on *img (its data is a or b, each max_bytes); *img becomes
 * the result (in a or b). */
loom_status loom__tf_run(loom_ctx *ctx, const loom_tf_step *steps, int n, loom__aug_rng *rng, loom_image *img,
                         uint8_t *a, uint8_t *b);
/* loom__tf_run with runs of geometric steps fused into one resampling
 * (the same draws; see loader/pipeline.c for what stays bit-exact). */
loom_status loom__tf_run_fused(loom_ctx *ctx, const loom_tf_step *steps, int n, loom__aug_rng *rng, loom_image *img,
                               uint8_t *a, uint8_t *b);
/* The trailing RandomErasing steps on the normalised tensor x (c, h, w),
 * after loom__tf_run with the same rng (it continues the sample's stream). */
loom_status loom__tf_run_tensor(loom_ctx *ctx, const loom_tf_step *steps, int n, loom__aug_rng *rng, float *x, int c,
                                int64_t h, int64_t w);
/* The parameters one random step draws on an (h, w) input (tests):
 *   RandomResizedCrop  top, left, h, w
 *   ColorJitter        order[4] (0 brightness .. 3 hue), factor[4]
 *   RandomAffine       angle, tx, ty, scale, shear_x, shear_y
 *   RandomErasing      apply (0/1), top, left, h, w
 *   RandomOrder        the permutation of its count steps
 *   flips              apply (0/1);  RandomCrop  top, left (padded) */
void loom__tf_draw(const loom_tf_step *s, loom__aug_rng *r, int64_t h, int64_t w, double out[8]);

#endif
