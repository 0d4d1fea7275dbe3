/* loom/transforms.h — deterministic image transforms of the data loader.
 *
 * defines: loom_image, loom_tf_resize_size, loom_tf_resize,
 *          loom_tf_center_crop, loom_tf_hflip, loom_tf_vflip,
 *          loom_tf_to_tensor.
 *
 * Images are HWC uint8, C = 1 or 3, rows packed (stride w * c). Parameters
 * mean what they mean in torchvision.transforms.v2.functional on a uint8
 * (C, H, W) tensor; the results are checked against torchvision outputs in
 * tests/test-transforms.c (fixtures from tests/gen_transform_fixtures.py):
 *   resize        bilinear, antialias=True: within 1 per u8 value
 *   center_crop, hflip, vflip, to_tensor (+ normalize): exact
 * The random transforms (RandomHorizontalFlip, ...) are these deterministic
 * ops applied or not from a per-sample draw.
 *
 * Functions are pure (no state): any thread may call them on its own
 * buffers. src and dst must not overlap. Errors (LOOM_ERR_INVALID_ARG) name
 * the transform, the shapes and what was expected.
 */
#ifndef LOOM_TRANSFORMS_H
#define LOOM_TRANSFORMS_H

#include <stdint.h>

#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A view of an HWC uint8 image: data holds h * w * c bytes (not owned). */
typedef struct loom_image {
    uint8_t *data;
    int64_t h, w;
    int c;  /* 1 or 3 */
} loom_image;

/* The output size of Resize(size) with one int, "the shorter side": the
 * shorter side becomes `size`, the longer int(size * long / short); with
 * max_size > 0 (must be > size) the longer side is capped at max_size and
 * the shorter scaled to int(max_size * short' / long'). */
loom_status loom_tf_resize_size(loom_ctx *ctx, int64_t h, int64_t w, int64_t size, int64_t max_size, int64_t *out_h,
                                int64_t *out_w);

/* Resize(size=(dst->h, dst->w), interpolation=BILINEAR, antialias=True):
 * separable, the width pass first then the height pass, each rounded to u8
 * (as PIL and torch's uint8 kernel). Along an axis scaled by s = in / out,
 * output i is centred at (i + 0.5) * s and weighs input j by the triangle
 * max(0, 1 - |j + 0.5 - centre| / max(s, 1)) over the inputs within
 * max(s, 1) of the centre, normalised to sum 1: plain half-pixel bilinear
 * when enlarging, an area-like triangle filter when shrinking. An unchanged
 * axis is copied. dst->c must equal src->c. */
loom_status loom_tf_resize(loom_ctx *ctx, const loom_image *src, const loom_image *dst);

/* CenterCrop(size=(dst->h, dst->w)): the window at top = round((h - ch) / 2),
 * left = round((w - cw) / 2), Python's round (halves to even). A crop larger
 * than the image is an error (torchvision would zero-pad). */
loom_status loom_tf_center_crop(loom_ctx *ctx, const loom_image *src, const loom_image *dst);

/* horizontal_flip (mirror columns) and vertical_flip (mirror rows); dst has
 * src's shape. */
loom_status loom_tf_hflip(loom_ctx *ctx, const loom_image *src, const loom_image *dst);
loom_status loom_tf_vflip(loom_ctx *ctx, const loom_image *src, const loom_image *dst);

/* ToTensor then Normalize: HWC u8 -> CHW `dt` (LOOM_F32, LOOM_F16, LOOM_BF16
 * or LOOM_F64), dst holding c * h * w elements. Computed in f32 exactly as
 * torchvision's to_dtype(float32, scale=True) then normalize:
 *   x = (float)u * (float)(1.0 / 255);  y = (x - mean[k]) / std[k]
 * (mean, std rounded to f32), then converted with loom_convert (round to
 * nearest even). nstat is the length of mean and std: c, or 1 for all
 * channels; mean = std = NULL (nstat 0) skips Normalize. std must be
 * nonzero and finite. */
loom_status loom_tf_to_tensor(loom_ctx *ctx, const loom_image *src, const float *mean, const float *std, int nstat,
                              void *dst, loom_dtype dt);

#ifdef __cplusplus
}
#endif
#endif
