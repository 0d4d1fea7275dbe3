/* loader/device_aug.h — library-private interface of the loader's device
 * augmentation (loader/device_aug.c), used by the worker pool
 * (loader/pool.c). */
#ifndef LOOM_LOADER_DEVICE_AUG_H
#define LOOM_LOADER_DEVICE_AUG_H

#include "../core/params.h"
#include "loader_impl.h"

/* The pipeline's split: steps [0, split) run on the host (after decoding),
 * [split, n) on the device (loom_augment_u8), whose padding reads `fill`.
 * resize: the images have one size and the pipeline starts with a Resize
 * that is the whole host part (split = 1): it runs on the device too
 * (loom_resize_u8, before augment_u8), the host only decodes. */
typedef struct loom__dev_split {
    int split;
    int fill;
    int64_t h, w;   /* the u8 images uploaded: the host part's output (the decoded image when resize) */
    bool resize;    /* steps[0] (a Resize) runs on the device */
    int64_t rh, rw; /* augment_u8's input: the Resize's output when resize, else h, w */
    bool affine;      /* the device part ends with a nearest RandomAffine */
    bool affine_host; /* the pipeline ends with one that stays on the host: the backend lacks 64-bit floats */
} loom__dev_split;

/* the steps the host runs: [0, loom__dev_host_steps) */
static inline int loom__dev_host_steps(const loom__dev_split *sp) { return sp->resize ? 0 : sp->split; }

/* The longest tail of crops (constant padding, one fill), flips, a
 * ColorJitter and a final nearest RandomAffine (in that order; the jitter
 * last or right before the affine; the affine only where f64: the backend
 * has 64-bit floats, and on 1..3 channels) that lies outside every
 * RandomOrder, for images of c channels (contrast, saturation and hue on 1
 * or 3 channels only); an error when the pipeline has RandomErasing (it
 * acts on the tensor). */
loom_status loom__dev_plan(loom_ctx *ctx, const loom_tf_step *steps, int n, int c, bool f64, loom__dev_split *out);

/* The device steps' row of the parameter table (LOOM_G_AUG_*, core/params.h)
 * for a host result of (h, w): the draws of steps [split, n), from rng
 * where the host part left it, as the host's steps draw them. */
void loom__dev_params(const loom_tf_step *steps, int n, int split, loom__aug_rng *rng, int64_t h, int64_t w, int c,
                      int32_t *prm);

/* loom__dev_plan (f64 from be, the training backend; NULL: assumed), then
 * the host part's output size for images of h x w (h = 0: of any size;
 * then it must not depend on the size), and whether a leading Resize moves
 * to the device (h > 0 only). */
loom_status loom__dev_setup(loom_ctx *ctx, const loom_tf_step *steps, int n, int c, int64_t h, int64_t w,
                            const loom_backend *be, loom__dev_split *out);
/* One sample: the host part on img (buffers a, b), its result copied into
 * u8 (h, w, c) and the device part's parameters into prm. */
loom_status loom__dev_sample(loom_ctx *ctx, const loom_tf_step *steps, int n, const loom__dev_split *sp,
                             loom__aug_rng *rng, loom_image img, uint8_t *a, uint8_t *b, uint8_t *u8, int32_t *prm);

/* resize_u8's taps (core/ops/resize.c) for h x w -> rh x rw: *tab (rh + rw,
 * *row) i32, the rows of loom__tf_resize_taps for both axes padded to the
 * wider span. The caller frees *tab. */
loom_status loom__dev_resize_table(loom_ctx *ctx, int64_t h, int64_t w, int64_t rh, int64_t rw, int64_t *row,
                                   int32_t **tab);

#endif
