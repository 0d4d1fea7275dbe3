/* loader/loader_impl.h — library-private pieces shared by the loader's
 * files: the per-sample random stream (loader/pipeline_draw.c), the
 * pipeline's plan and runner (loader/pipeline_plan.c, loader/pipeline.c),
 * used by the worker pool (loader/pool.c). */
#ifndef LOOM_LOADER_IMPL_H
#define LOOM_LOADER_IMPL_H

#include "../core/affine.h"
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
/* loom_tf_resize's fixed-point taps of one axis, in -> out, as rows of the
 * table of resize_u8 (core/ops/resize.c): *tab (out, 2 + *span) i32, row i
 * = (first input, count, count weights, zeros), the weights sep_run sums
 * (loader/transforms.c). The caller frees *tab. */
loom_status loom__tf_resize_taps(loom_ctx *ctx, int64_t in, int64_t out, int64_t *span, int32_t **tab);
/* Run the steps on *img (its data is a or b, each max_bytes); *img becomes
 * the result (in a or b). */
loom_status loom__tf_run(loom_ctx *ctx, const loom_tf_step *steps, int n, loom__aug_rng *rng, loom_image *img,
                         uint8_t *a, uint8_t *b);
/* ToTensor + Normalize of one channel by arithmetic instead of a table
 * lookup (the SIMD tails): the table's value ((float)v / 255 - mean) / sd
 * is two IEEE divisions; with `fma` set, each division is a product by the
 * reciprocal corrected by one fused multiply-add, which loom__norm_init
 * found equal to the caller's table for all 256 values (else the divisions). */
typedef struct loom__norm {
    float mean, sd, rsd;
    bool fma;
} loom__norm;
void loom__norm_init(loom__norm *n, float mean, float sd, const float table[256]);
float loom__norm_value(const loom__norm *n, int v); /* the table's value, as the SIMD tails compute it */
/* Where ToTensor + Normalize may write: x (c, h, w) through the loader's
 * per-channel tables; done when the run wrote x itself (then *img is not
 * the result). */
typedef struct loom__tensor_out {
    const float (*lut)[256];
    const loom__norm *norm; /* per channel, or NULL: the tails gather from lut */
    float *x;
    int c;
    bool done;
} loom__tensor_out;
/* loom__tf_run with runs of geometric steps fused into one resampling and
 * ColorJitter + nearest RandomAffine (+ ToTensor into out, when out is not
 * NULL and nothing but RandomErasing follows) as one pass (the same draws;
 * see loader/pipeline_plan.c and loader/tail.c for what stays bit-exact). */
loom_status loom__tf_run_fused(loom_ctx *ctx, const loom_tf_step *steps, int n, loom__aug_rng *rng, loom_image *img,
                               uint8_t *a, uint8_t *b, loom__tensor_out *out);
/* The part of an (h, w, c) image that loom__tf_run_fused with a copy of rng
 * reads: rows [box[0], box[2]) and columns [box[1], box[3]) (a few pixels
 * to spare); false when that is all of it or not known (the first steps do
 * not fuse into an axis-aligned crop / resize, or the plan fails). */
bool loom__tf_region(loom_ctx *ctx, const loom_tf_step *steps, int n, const loom__aug_rng *rng, int c, int64_t h,
                     int64_t w, int64_t box[4]);

/* The image a tail reads: h x w pixels, row y and column x of it being
 * source row roff + rstep y and column coff + cstep x (crops and flips read
 * through; the identity: roff = coff = 0, steps 1, h x w = the source). */
typedef struct loom__tail_view {
    int64_t h, w, roff, rstep, coff, cstep;
} loom__tail_view;

/* The fused tail (loader/tail.c): drawn jitter and affine parameters. */
typedef struct loom__tail {
    loom__tail_view view;
    bool jitter, affine;
    int order[4];    /* ColorJitter: 0 brightness, 1 contrast, 2 saturation, 3 hue */
    double f[4];
    bool on[4];
    double p[6];     /* RandomAffine (nearest): angle, tx, ty, scale, shear x, y */
    uint8_t fill[3]; /* per channel */
    /* with the affine, the crops and flips after it (oview.h > 0): the output
     * is oview.h x oview.w, its pixel (y, x) the affine result's pixel
     * (oview.roff + oview.rstep y, oview.coff + oview.cstep x); the affine is
     * evaluated there only */
    loom__tail_view oview;
    /* with the jitter, the crops and flips after it (inner.h > 0): the
     * jitter runs on the image before them seen through inner (it is per
     * pixel, so it commutes with them), except that contrast's mean is
     * still of all of that image */
    loom__tail_view inner;
} loom__tail;
/* Run t on *img (in a, b or the caller's buffer): into out->x when out
 * has x with img's channel count (out->done set), else into a or b
 * (*img updated). */
loom_status loom__tail_run(loom_ctx *ctx, const loom__tail *t, loom_image *img, uint8_t *a, uint8_t *b,
                           loom__tensor_out *out);
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

/* ---- colour primitives (loader/transforms.c): the arithmetic of the
 * adjust_* functions on spans of pixels (src may equal dst), shared by the
 * image functions and the fused tail, so both give the same bits. */
void loom__lut_span(const uint8_t lut[256], const uint8_t *src, uint8_t *dst, size_t n);
void loom__brightness_lut(double f, uint8_t lut[256]);
void loom__contrast_lut(double f, float mean, uint8_t lut[256]);
/* adjust_contrast's mean: of floor(gray) (3 channels) or of the values (1) */
float loom__gray_mean(const uint8_t *p, int64_t hw, int c);
int64_t loom__gray_sum(const uint8_t *p, int64_t npx, int c); /* the mean's exact sum */
typedef struct loom__sat_tables {
    float uf[256], gg[256], gr[3][256];
} loom__sat_tables;
void loom__sat_init(loom__sat_tables *t, double f);
void loom__sat_span(const loom__sat_tables *t, const uint8_t *src, uint8_t *dst, int64_t npx); /* 3 channels */
void loom__hue_span(double f, const uint8_t *src, uint8_t *dst, int64_t npx);                   /* 3 channels */

/* The tail's passes (loader/tail.c): rows of base, optionally through the
 * nearest affine (m about the centre hx, hy; fill outside), through the
 * stages, into the tensor (lut, x) or as u8 into dst or nowhere, with the
 * sum of the result's floor(gray) (3 channels) or values (1) when asked. */
enum { LOOM__TS_LUT = 1, LOOM__TS_SAT, LOOM__TS_HUE };
typedef struct loom__tail_stage {
    int kind;
    uint8_t lut[256]; /* LOOM__TS_LUT: the composed table of... */
    int nlin;         /* ...nlin steps v <- trunc(clamp(v mul + add)) (brightness: add 0) */
    float mul[4], add[4];
    double f; /* LOOM__TS_HUE */
} loom__tail_stage;
typedef struct loom__tail_rows {
    const uint8_t *base;
    int64_t H, W;
    /* image pixel (y, x) is base pixel (roff + rstep y) pitch + coff + cstep x; npx: base's pixels */
    int64_t pitch, roff, rstep, coff, cstep, npx;
    int c;
    bool affine, want_gray;
    double m[6], hx, hy;
    /* the affine's result is aw x ah; output pixel (y, x) is its pixel (ay0 + ays y, ax0 + axs x) */
    int64_t aw, ah, ay0, ays, ax0, axs;
    uint8_t fill[3];
    const loom__tail_stage *st;
    int ns;
    const loom__sat_tables *sat;
    const float (*lut)[256];
    const loom__norm *norm; /* with lut, or NULL */
    float *x;
    uint8_t *dst;
    int64_t gray_sum;
} loom__tail_rows;
/* Where image pixel (y, x) of job r is in its base (pixels, not bytes). */
static inline int64_t loom__tail_px_at(const loom__tail_rows *r, int64_t y, int64_t x) {
    return (r->roff + r->rstep * y) * r->pitch + r->coff + r->cstep * x;
}
/* Columns [0, returned) of every row, 3 channels, with AVX2 when the CPU
 * has it (loader/tail_avx2.c); 0 when it does not (the caller does all). */
int64_t loom__tail_rows_avx2(loom__tail_rows *r);
/* The same sixteen pixels at a time with AVX-512 (loader/tail_avx512.c); 0 without it. */
int64_t loom__tail_rows_avx512(loom__tail_rows *r);


/* The separable resampler's passes with AVX2 (loader/resample_avx2.c);
 * the same integer sums as sep_run's loops. A width plan (NULL when the
 * CPU lacks AVX2, LOOM_LOADER_SIMD=0, or fewer than 8 outputs) does the
 * 3-channel width pass of outputs [0, returned) of every source row. */
bool loom__simd_avx2(void);
bool loom__simd_avx512(void); /* F, BW, DQ and VL; LOOM_LOADER_SIMD=avx2 stops at AVX2 */
bool loom__simd_avx512_vbmi_vnni(void); /* and VBMI and VNNI; LOOM_LOADER_SIMD=avx512 stops before them */
/* tests: 3 AVX-512 with VBMI and VNNI (if the CPU can, else what it can), 2 AVX-512 without them, 1 AVX2 at most,
 * 0 off, -1 back to LOOM_LOADER_SIMD */
void loom__simd_set(int level);
typedef struct loom__wplan loom__wplan;
loom__wplan *loom__width_plan_avx2(const int64_t *idx, const int64_t *cnt, const int32_t *wt, int64_t span, int64_t ow,
                                   int64_t sw);
/* `rows` source rows from s (spitch bytes apart) into o (opitch apart), two at a
 * time; returns the outputs done in each row (the caller does the rest) */
int64_t loom__width_pass_avx2(const loom__wplan *p, const uint8_t *s, int64_t spitch, int64_t rows, int bits, int32_t half,
                              uint8_t *o, int64_t opitch);
void loom__width_plan_free(loom__wplan *p);
/* The same sixteen outputs at a time with AVX-512 VBMI (loader/resample_avx512.c):
 * NULL without it, or when a block's taps lie more than 42 pixels apart. */
typedef struct loom__wplan512 loom__wplan512;
loom__wplan512 *loom__width_plan_avx512(const int64_t *idx, const int64_t *cnt, const int32_t *wt, int64_t span,
                                        int64_t ow); /* (the row's length comes with each row: loads stop there) */
int64_t loom__width_row_avx512(const loom__wplan512 *p, const uint8_t *s, int64_t sw, int bits, int32_t half, uint8_t *o);
void loom__width_plan512_free(loom__wplan512 *p);
/* o[x] = clamp((half + sum_j w[j] t[j][x]) >> bits), for x < the returned
 * multiple of 32 (0 without AVX-512 or with weights outside 0..2^22). */
int64_t loom__height_row_avx512(const uint8_t *const *t, const int32_t *w, int64_t n, int64_t len, int bits, int32_t half,
                                uint8_t *o);
/* The same with AVX2 from byte x to the returned multiple of 16 past it (x
 * itself without AVX2, with more than 16 taps or weights of 2^25 or more) */
int64_t loom__height_row_avx2(const uint8_t *const *t, const int32_t *w, int64_t n, int64_t x, int64_t len, int bits,
                              int32_t half, uint8_t *o);
/* acc[x] += w * t[x], x < n; false when AVX2 is off (the caller loops) */
bool loom__height_acc_avx2(int32_t *a, const uint8_t *t, int32_t w, int64_t n);
/* o[x] = clamp(a[x] >> bits, 0, 255); false when AVX2 is off */
bool loom__acc_to_u8_avx2(const int32_t *a, uint8_t *o, int64_t n, int bits);

#endif
