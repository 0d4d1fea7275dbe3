/* loader/device_aug.h — library-private interface of the loader's device
 * augmentation (loader/device_aug.c), used by the worker pool
 * (loader/pool.c). */
#ifndef LOOM_LOADER_DEVICE_AUG_H
#define LOOM_LOADER_DEVICE_AUG_H

#include "../core/params.h"
#include "loader_impl.h"

/* The pipeline's split: steps [0, split) run on the host (after decoding),
 * [split, n) on the device (loom_augment_u8), whose padding reads `fill`. */
typedef struct loom__dev_split {
    int split;
    int fill;
    int64_t h, w; /* the host part's output size: the u8 images uploaded */
} loom__dev_split;

/* The longest tail of crops (constant padding, one fill), flips and a
 * final ColorJitter that lies outside every RandomOrder, for images of c
 * channels (contrast, saturation and hue on 1 or 3 channels only); an error
 * when the pipeline has RandomErasing (it acts on the tensor). */
loom_status loom__dev_plan(loom_ctx *ctx, const loom_tf_step *steps, int n, int c, loom__dev_split *out);

/* The device steps' row of the parameter table (LOOM_G_AUG_*, core/params.h)
 * for a host result of (h, w): the draws of steps [split, n), from rng
 * where the host part left it, as the host's steps draw them. */
void loom__dev_params(const loom_tf_step *steps, int n, int split, loom__aug_rng *rng, int64_t h, int64_t w,
                      int32_t *prm);

/* loom__dev_plan, then the host part's output size for images of h x w
 * (h = 0: of any size; then it must not depend on the size). */
loom_status loom__dev_setup(loom_ctx *ctx, const loom_tf_step *steps, int n, int c, int64_t h, int64_t w,
                            loom__dev_split *out);
/* One sample: the host part on img (buffers a, b), its result copied into
 * u8 (h, w, c) and the device part's parameters into prm. */
loom_status loom__dev_sample(loom_ctx *ctx, const loom_tf_step *steps, int n, const loom__dev_split *sp,
                             loom__aug_rng *rng, loom_image img, uint8_t *a, uint8_t *b, uint8_t *u8, int32_t *prm);

#endif
