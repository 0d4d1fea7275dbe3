/* loom/transforms.h — image transforms of the data loader: the
 * deterministic ops, and the steps of the per-sample pipeline built on them.
 *
 * defines: loom_image, loom_tf_resize_size, loom_tf_resize,
 *          loom_tf_center_crop, loom_tf_hflip, loom_tf_vflip,
 *          loom_tf_to_tensor, loom_tf_resized_crop, loom_tf_adjust_brightness,
 *          loom_tf_adjust_contrast, loom_tf_adjust_saturation,
 *          loom_tf_adjust_hue, loom_tf_affine, loom_tf_erase,
 *          loom_tf_affine_inverse, loom_tf_axis, loom_tf_remap, loom_tf_warp
 *          (the fused geometric pass of loader/pipeline_plan.c);
 *          loom_tf_kind, loom_pad_mode, loom_tf_step, loom_tf_parse (the
 *          per-sample pipeline's steps: RandomCrop, RandomHorizontalFlip, ...,
 *          run by loom_loader, loom/loader.h).
 *
 * Images are HWC uint8, C = 1 or 3, rows packed (stride w * c). Parameters
 * mean what they mean in torchvision.transforms.v2.functional on a uint8
 * (C, H, W) tensor; the results are checked against torchvision outputs in
 * tests/test-transforms.c (fixtures from tests/gen_transform_fixtures.py):
 *   resize        bilinear, antialias=True: within 1 per u8 value
 *   center_crop, hflip, vflip, to_tensor (+ normalize): exact
 * and in tests/test-augment.c (fixtures from tests/gen_augment_fixtures.py):
 *   resized_crop  within 1;  adjust_*: within 1 (torch computes in f32 and
 *   truncates; loom the same formulas, summation order may differ);
 *   affine (bilinear / nearest, with fill): within 1;  erase: exact.
 * The random transforms (RandomHorizontalFlip, ...) are these deterministic
 * ops applied or not from a per-sample draw.
 *
 * Functions are pure (no state): any thread may call them on its own
 * buffers. src and dst must not overlap. Errors (LOOM_ERR_INVALID_ARG) name
 * the transform, the shapes and what was expected.
 */
#ifndef LOOM_TRANSFORMS_H
#define LOOM_TRANSFORMS_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A view of an HWC uint8 image: data holds h * w * c bytes (not owned). */
typedef struct loom_image {
    uint8_t *data;  /* h * w * c bytes, row after row (not owned) */
    int64_t h;      /* height in pixels */
    int64_t w;      /* width in pixels */
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

/* resized_crop(img, top, left, h, w, size=(dst->h, dst->w), BILINEAR,
 * antialias=True): the window rows top..top+h-1, columns left..left+w-1
 * (inside the image), then loom_tf_resize. */
loom_status loom_tf_resized_crop(loom_ctx *ctx, const loom_image *src, int64_t top, int64_t left, int64_t h, int64_t w,
                                 const loom_image *dst);

/* Colour adjustments (dst has src's shape), torchvision's uint8 kernels,
 * computed in f32 and converted back by truncation after clamping to
 * [0, 255]:
 *   brightness  u * f
 *   contrast    blend with the mean of floor(gray) over the image (1-channel:
 *               the mean of the image):  u * f + mean * (1 - f)
 *   saturation  blend with the pixel's floor(gray); 1-channel: a copy
 *   hue         RGB -> HSV (of u / 255), h = (h + f) mod 1, back to RGB,
 *               u = trunc(x * 255.999); 1-channel: a copy
 * gray = 0.2989 r + 0.587 g + 0.114 b. Factors: f >= 0 (brightness,
 * contrast, saturation), f in [-0.5, 0.5] (hue). */
loom_status loom_tf_adjust_brightness(loom_ctx *ctx, const loom_image *src, const loom_image *dst, double f);
loom_status loom_tf_adjust_contrast(loom_ctx *ctx, const loom_image *src, const loom_image *dst, double f);
loom_status loom_tf_adjust_saturation(loom_ctx *ctx, const loom_image *src, const loom_image *dst, double f);
loom_status loom_tf_adjust_hue(loom_ctx *ctx, const loom_image *src, const loom_image *dst, double f);

/* affine(img, angle, translate=(tx, ty), scale, shear=(shx, shy),
 * interpolation, fill, center=None): degrees clockwise-positive as
 * torchvision (angle rotates the content counter-clockwise on screen),
 * about the image centre; dst has src's shape. Output pixel (x, y) samples
 * the input at M^-1 (x - (W-1)/2, y - (H-1)/2) + ((W-1)/2, (H-1)/2), M the
 * torchvision inverse affine matrix; bilinear or nearest (half to even)
 * with zero padding; then out = (v - fill) * m + fill where m is the same
 * sampling of an all-ones image (torchvision's mask), rounded half to
 * even. fill: c values (NULL = 0). scale > 0, |shear| < 90. */
loom_status loom_tf_affine(loom_ctx *ctx, const loom_image *src, const loom_image *dst, double angle, double tx,
                           double ty, double scale, double shear_x, double shear_y, bool nearest, const uint8_t *fill);

/* torchvision's _get_inverse_affine_matrix(center (0, 0), angle, (tx, ty),
 * scale, (shear_x, shear_y)) in m: an output point (x, y), relative to the
 * image centre, samples the input at (m[0] x + m[1] y + m[2],
 * m[3] x + m[4] y + m[5]) relative to the centre (what loom_tf_affine uses). */
void loom_tf_affine_inverse(double angle, double tx, double ty, double scale, double shear_x, double shear_y,
                            double m[6]);

/* ---- the fused geometric pass (loader/pipeline_plan.c composes the steps) ----
 *
 * loom_tf_remap: a chain of integer crops and flips around at most ONE
 * antialiased resize per axis, in one pass and bit-exact against running
 * the steps one by one (same weights, same width-then-height order, same
 * rounding). Per axis: */
typedef struct loom_tf_axis {
    /* virtual input j (0 <= j < n_in) is source row / column pre_off + pre_step * j */
    int64_t pre_off;
    int64_t pre_step;  /* +1 or -1 */
    /* resampled n_in -> n_out as loom_tf_resize (n_in == n_out: no resampling) */
    int64_t n_in;
    int64_t n_out;     /* the extent after resampling */
    /* output i (0 <= i < the dst extent) is resampled index post_off + post_step * i */
    int64_t post_off;
    int64_t post_step; /* +1 or -1 */
} loom_tf_axis;

/* dst <- src through ax[0] (rows) and ax[1] (columns); every index must land
 * inside (an error names the axis otherwise). */
loom_status loom_tf_remap(loom_ctx *ctx, const loom_image *src, const loom_image *dst, const loom_tf_axis ax[2]);

/* loom_tf_warp: any composed affine map, resampled once. Output pixel
 * (x, y) has its centre at (x + 0.5, y + 0.5); it maps to the source point
 *   (m[0] X + m[1] Y + m[2], m[3] X + m[4] Y + m[5])
 * in continuous coordinates (source pixel (i, j) covers [j, j+1) x [i, i+1)).
 * valid = {x0, y0, x1, y1}: the source rectangle the chain may read (a crop
 * before a rotation: outside it is `fill`); NULL = the whole source.
 *   - m axis-aligned (m[1] = m[3] = 0): separable, per axis the triangle
 *     filter of loom_tf_resize with support max(|scale|, 1) (antialiased at
 *     any shrink), taps limited to valid and renormalised, width pass then
 *     height pass, each rounded to u8.
 *   - otherwise bilinear with torchvision's fill mask (as loom_tf_affine,
 *     bilinear): out = (v - fill) * mask + fill, half to even. When an
 *     output step spans >= 2 source pixels along a source axis (the length
 *     of (m[0], m[1]) or (m[3], m[4])), the valid rectangle is first shrunk
 *     by that integer factor with the antialiased loom_tf_resize (a box-like
 *     prefilter) and the map rescaled, so bilinear never skips pixels.
 * fill: c values (NULL = 0). */
loom_status loom_tf_warp(loom_ctx *ctx, const loom_image *src, const loom_image *dst, const double m[6],
                         const double valid[4], const uint8_t *fill);

/* erase(x, i, j, h, w, v) on a CHW f32 tensor x (c, ht, wd): rows i..i+h-1,
 * columns j..j+w-1 of every channel k become v[k] (nv = c) or v[0]
 * (nv = 1). The box must lie inside. */
loom_status loom_tf_erase(loom_ctx *ctx, float *x, int c, int64_t ht, int64_t wd, int64_t i, int64_t j, int64_t h,
                          int64_t w, const float *v, int nv);

/* ---- the per-sample pipeline's steps -------------------------------------- */

/* One step of the per-sample pipeline on U8 HWC images. Parameters mean
 * what they mean in torchvision.transforms (v2). Random steps draw only from
 * (seed, epoch, sample index): see loom_loader_desc. */
typedef enum loom_tf_kind {
    LOOM_TF_RANDOM_CROP,   /* RandomCrop(size=(h, w), padding=pad, pad_if_needed, fill, padding_mode) */
    LOOM_TF_RANDOM_HFLIP,  /* RandomHorizontalFlip(p) */
    LOOM_TF_RANDOM_VFLIP,  /* RandomVerticalFlip(p) */
    LOOM_TF_CENTER_CROP,   /* CenterCrop(size=(h, w)) (loom_tf_center_crop) */
    LOOM_TF_RESIZE,        /* Resize(size=(h, w)), bilinear, antialiased (loom_tf_resize) */
    LOOM_TF_RANDOM_RESIZED_CROP, /* RandomResizedCrop(size=(h, w), scale, ratio) (loom_tf_resized_crop) */
    LOOM_TF_COLOR_JITTER,  /* ColorJitter(brightness, contrast, saturation, hue) (loom_tf_adjust_*) */
    LOOM_TF_RANDOM_AFFINE, /* RandomAffine(degrees, translate, scale, shear, interpolation, fill) (loom_tf_affine) */
    LOOM_TF_RANDOM_ERASING, /* RandomErasing(p, scale, ratio, value) on the normalised tensor (loom_tf_erase) */
    LOOM_TF_RANDOM_ORDER,  /* RandomOrder([...]): the next `count` steps in a random order */
} loom_tf_kind;

typedef enum loom_pad_mode {
    LOOM_PAD_CONSTANT,  /* fill */
    LOOM_PAD_EDGE,      /* repeat the edge pixel */
    LOOM_PAD_REFLECT,   /* mirror without repeating the edge: 2 1 | 0 1 2 */
    LOOM_PAD_SYMMETRIC, /* mirror repeating the edge:         1 0 | 0 1 2 */
} loom_pad_mode;

/* A step's parameters: each kind reads the fields its comments name, the
 * others are ignored. loom_tf_parse fills them from torchvision-like text. */
typedef struct loom_tf_step {
    loom_tf_kind kind;     /* which transform */
    int64_t h;             /* crop / resize output height */
    int64_t w;             /* crop / resize output width */
    /* Resize: h is torchvision's Resize(int), the shorter side (the longer
     * becomes int(h * long / short)); w is unused. loom_tf_parse sets it for
     * Resize(N), as torchvision; Resize((h, w)) sets both sides. */
    bool short_side;
    /* RandomCrop: padding left, top, right, bottom (torchvision's 4-tuple
     * order; an int p is {p, p, p, p}, a pair (a, b) is {a, b, a, b});
     * pad_if_needed then pads each side by the missing width / height (as
     * torchvision: both sides, after `pad`). The crop's top-left corner is
     * uniform over the padded image: i in [0, H - h], j in [0, W - w]. */
    int64_t pad[4];
    bool pad_if_needed;    /* RandomCrop: pad an image smaller than (h, w) up to it */
    loom_pad_mode pad_mode; /* RandomCrop: what the padding holds (torchvision's padding_mode) */
    uint8_t fill;          /* constant padding value, every channel */
    double p;              /* flip / erasing probability; 0 = 0.5 (torchvision's default); < 0 = never */
    /* RandomResizedCrop: the crop's area as a fraction of the image's, and
     * its aspect ratio w / h (drawn log-uniform); {0, 0} = torchvision's
     * defaults (0.08, 1) and (3/4, 4/3). 10 attempts, then the centre crop
     * of the largest box within `ratio`. RandomErasing: the erased box's,
     * defaults (0.02, 0.33) and (0.3, 3.3); 10 attempts, then no erasing. */
    double scale[2];
    double ratio[2];       /* RandomResizedCrop, RandomErasing: aspect ratio range (lo, hi) */
    /* ColorJitter: factor ranges [lo, hi] of brightness, contrast,
     * saturation (>= 0) and hue (in [-0.5, 0.5]); jitter_on[k] false = that
     * adjustment is not applied (torchvision's None). The four run in a
     * random order per sample. */
    double jitter[4][2];
    bool jitter_on[4];     /* ColorJitter: brightness, contrast, saturation, hue applied or not */
    /* RandomAffine: angle uniform in degrees[0..1]; translate (fractions of
     * the width, height; has_translate), tx = round(uniform(-a W, a W));
     * scale uniform in ascale (has_ascale); shear x uniform in shear[0..1],
     * y in shear[2..3] (nshear 0, 2 or 4); nearest (the parser's default,
     * torchvision's) or bilinear; afill per channel for the area outside. */
    double degrees[2];
    double translate[2];   /* RandomAffine: largest shift as fractions of the width and height, in [0, 1] */
    double ascale[2];      /* RandomAffine: scale range (lo, hi), 0 < lo <= hi */
    double shear[4];       /* RandomAffine: shear x range, shear y range (degrees, within (-90, 90)) */
    bool has_translate;    /* RandomAffine: translate is given (false: no shift) */
    bool has_ascale;       /* RandomAffine: ascale is given (false: scale 1) */
    bool nearest;          /* RandomAffine: nearest-neighbour sampling (false: bilinear) */
    int nshear;            /* RandomAffine: shear values given: 0 (none), 2 (x only) or 4 (x and y) */
    uint8_t afill[3];      /* RandomAffine: value outside the image per channel (1 channel: afill[0]) */
    /* RandomErasing: the erased value per channel (nvalue 1 or c), in the
     * normalised tensor's units. Erasing steps end the pipeline (they act
     * after ToTensor + Normalize). */
    float value[3];
    int nvalue;            /* RandomErasing: values given, 1 or c; 0 = erase to 0 */
    int count;             /* RandomOrder: how many of the following steps it orders */
} loom_tf_step;

/* Parse a torchvision-like list, steps separated by ';' or top-level ',':
 *   RandomCrop(28, padding=4, pad_if_needed=True, fill=0, padding_mode=reflect)
 *   RandomCrop((24, 20), padding=(2, 4))     RandomHorizontalFlip(p=0.5)
 *   RandomVerticalFlip()   CenterCrop(24)   Resize((32, 32))
 *   RandomResizedCrop(224, scale=(0.08, 1.0), ratio=(0.75, 1.3333))
 *   ColorJitter(0.2, 0.2, 0.2, 0.05)   ColorJitter(brightness=(0.5, 1.5), hue=0.1)
 *   RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=(-5, 5, -5, 5),
 *                interpolation=bilinear, fill=0)
 *   RandomOrder([RandomHorizontalFlip(), ColorJitter(0.4)])
 *   RandomErasing(p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0)
 * (names are case-insensitive; "hflip" and "vflip" are short names). Up to
 * max steps; *n gets the count. Errors name the step and the problem. */
loom_status loom_tf_parse(loom_ctx *ctx, const char *spec, loom_tf_step *steps, int max, int *n);

#ifdef __cplusplus
}
#endif
#endif
