/* loader/transforms.c — deterministic image transforms on HWC u8 images
 * (Resize, CenterCrop, flips, ToTensor + Normalize); the meaning of every
 * parameter is torchvision's, see include/loom/transforms.h.
 *
 * Resize is the antialiased bilinear filter of PIL / torch's
 * _upsample_bilinear2d_aa: per axis, a table of (first input, count,
 * normalised weights) per output, then a width pass into a u8 buffer and a
 * height pass into dst. Weights are double here where torch's uint8 kernel
 * uses int16 fixed point, hence "within 1" rather than exact.
 */
#include <math.h>

#include "../core/impl.h"
#include "loom/transforms.h"

static loom_status check_image(loom_ctx *ctx, const char *tf, const char *which, const loom_image *im) {
    if (!im || !im->data)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: %s image is NULL or has no data", tf, which);
    if (im->c != 1 && im->c != 3)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: %s image (%lld, %lld, %d) has %d channels (expected 1 or 3)",
                         tf, which, (long long)im->h, (long long)im->w, im->c, im->c);
    if (im->h < 1 || im->w < 1)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: %s image size %lldx%lld (expected h, w >= 1)", tf, which,
                         (long long)im->h, (long long)im->w);
    return LOOM_OK;
}

static loom_status check_pair(loom_ctx *ctx, const char *tf, const loom_image *src, const loom_image *dst) {
    loom_status st = check_image(ctx, tf, "source", src);
    if (st == LOOM_OK) st = check_image(ctx, tf, "destination", dst);
    if (st != LOOM_OK) return st;
    if (dst->c != src->c)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                         "%s: source (%lld, %lld, %d) and destination (%lld, %lld, %d) channel counts differ", tf,
                         (long long)src->h, (long long)src->w, src->c, (long long)dst->h, (long long)dst->w, dst->c);
    return LOOM_OK;
}

/* ---- Resize -------------------------------------------------------------- */

loom_status loom_tf_resize_size(loom_ctx *ctx, int64_t h, int64_t w, int64_t size, int64_t max_size, int64_t *out_h,
                                int64_t *out_w) {
    if (h < 1 || w < 1 || size < 1)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "resize: shorter side %lld for a %lldx%lld image (expected >= 1)",
                         (long long)size, (long long)h, (long long)w);
    if (max_size > 0 && max_size <= size)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                         "resize: max_size %lld must be greater than the shorter side %lld", (long long)max_size,
                         (long long)size);
    int64_t shrt = w <= h ? w : h, lng = w <= h ? h : w;
    /* Python: int(size * long / short), a double division then truncation */
    int64_t ns = size, nl = (int64_t)((double)size * (double)lng / (double)shrt);
    if (max_size > 0 && nl > max_size) ns = (int64_t)((double)max_size * (double)ns / (double)nl), nl = max_size;
    if (ns < 1 || nl < 1)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "resize: size %lld (max_size %lld) of a %lldx%lld image gives %lldx%lld",
                         (long long)size, (long long)max_size, (long long)h, (long long)w,
                         (long long)(w <= h ? nl : ns), (long long)(w <= h ? ns : nl));
    *out_h = w <= h ? nl : ns;
    *out_w = w <= h ? ns : nl;
    return LOOM_OK;
}

/* Weights of one axis, in -> out: output i reads inputs first[i] ..
 * first[i] + count[i] - 1 with weights wt[i * span ...]. */
typedef struct axis_weights {
    int64_t span;
    int64_t *first, *count;
    double *wt;
} axis_weights;

static void axis_free(axis_weights *a) {
    free(a->first);
    free(a->count);
    free(a->wt);
}

static bool axis_make(int64_t in, int64_t out, axis_weights *a) {
    double scale = (double)in / (double)out;
    double support = scale >= 1.0 ? scale : 1.0; /* bilinear: interp_size 2 * 0.5 */
    double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
    a->span = (int64_t)ceil(support) * 2 + 1;
    a->first = malloc((size_t)out * sizeof *a->first);
    a->count = malloc((size_t)out * sizeof *a->count);
    a->wt = malloc((size_t)(out * a->span) * sizeof *a->wt);
    if (!a->first || !a->count || !a->wt) return false;
    for (int64_t i = 0; i < out; i++) {
        double centre = scale * ((double)i + 0.5);
        int64_t lo = (int64_t)(centre - support + 0.5), hi = (int64_t)(centre + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > in) hi = in;
        int64_t n = hi - lo;
        LOOM__ASSERT(n >= 1 && n <= a->span);
        double *wt = a->wt + i * a->span, total = 0;
        for (int64_t j = 0; j < n; j++) {
            double t = fabs(((double)(j + lo) - centre + 0.5) * invscale);
            wt[j] = t < 1.0 ? 1.0 - t : 0.0;
            total += wt[j];
        }
        for (int64_t j = 0; j < n; j++) wt[j] = total != 0.0 ? wt[j] / total : 0.0;
        a->first[i] = lo;
        a->count[i] = n;
    }
    return true;
}

static inline uint8_t round_u8(double v) {
    v = floor(v + 0.5);
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* One pass along axis `ax` (0 = rows/height, 1 = columns/width).
 * src (ih, iw, c) -> dst (oh, ow, c), where only the pass's axis changes. */
static void resize_pass(const uint8_t *src, int64_t ih, int64_t iw, int c, uint8_t *dst, int64_t oh, int64_t ow,
                        int ax, const axis_weights *a) {
    if (ax == 1) {
        for (int64_t y = 0; y < oh; y++)
            for (int64_t x = 0; x < ow; x++) {
                const double *wt = a->wt + x * a->span;
                const uint8_t *s = src + (y * iw + a->first[x]) * c;
                for (int k = 0; k < c; k++) {
                    double acc = 0;
                    for (int64_t j = 0; j < a->count[x]; j++) acc += wt[j] * s[j * c + k];
                    dst[(y * ow + x) * c + k] = round_u8(acc);
                }
            }
    } else {
        (void)ih;
        for (int64_t y = 0; y < oh; y++) {
            const double *wt = a->wt + y * a->span;
            const uint8_t *s = src + a->first[y] * iw * c;
            for (int64_t x = 0; x < ow * c; x++) {
                double acc = 0;
                for (int64_t j = 0; j < a->count[y]; j++) acc += wt[j] * s[j * iw * c + x];
                dst[y * ow * c + x] = round_u8(acc);
            }
        }
    }
}

loom_status loom_tf_resize(loom_ctx *ctx, const loom_image *src, const loom_image *dst) {
    loom_status st = check_pair(ctx, "resize", src, dst);
    if (st != LOOM_OK) return st;
    int64_t ih = src->h, iw = src->w, oh = dst->h, ow = dst->w;
    int c = src->c;
    if (ih == oh && iw == ow) {
        memcpy(dst->data, src->data, (size_t)(ih * iw * c));
        return LOOM_OK;
    }
    axis_weights ax = {0}, ay = {0};
    uint8_t *tmp = NULL;
    bool ok = true;
    if (iw != ow) ok = axis_make(iw, ow, &ax);
    if (ok && ih != oh) ok = axis_make(ih, oh, &ay);
    if (ok && iw != ow && ih != oh) ok = (tmp = malloc((size_t)(ih * ow * c))) != NULL;
    if (!ok) {
        axis_free(&ax), axis_free(&ay);
        return loom__err(ctx, LOOM_ERR_OOM, "resize: out of memory for %lldx%lld -> %lldx%lld", (long long)ih,
                         (long long)iw, (long long)oh, (long long)ow);
    }
    if (iw != ow && ih != oh) {
        resize_pass(src->data, ih, iw, c, tmp, ih, ow, 1, &ax);  /* width first, as PIL and torch */
        resize_pass(tmp, ih, ow, c, dst->data, oh, ow, 0, &ay);
    } else if (iw != ow) {
        resize_pass(src->data, ih, iw, c, dst->data, oh, ow, 1, &ax);
    } else {
        resize_pass(src->data, ih, iw, c, dst->data, oh, ow, 0, &ay);
    }
    free(tmp);
    axis_free(&ax), axis_free(&ay);
    return LOOM_OK;
}

/* ---- CenterCrop, flips ------------------------------------------------------ */

/* Python's int(round(d / 2.0)) for d >= 0: halves go to the even neighbour. */
static int64_t half_round_even(int64_t d) {
    int64_t q = d / 2;
    return (d % 2 && q % 2) ? q + 1 : q;
}

loom_status loom_tf_center_crop(loom_ctx *ctx, const loom_image *src, const loom_image *dst) {
    loom_status st = check_pair(ctx, "center_crop", src, dst);
    if (st != LOOM_OK) return st;
    if (dst->h > src->h || dst->w > src->w)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                         "center_crop: crop %lldx%lld is larger than the image %lldx%lld (padding is not supported)",
                         (long long)dst->h, (long long)dst->w, (long long)src->h, (long long)src->w);
    int64_t top = half_round_even(src->h - dst->h), left = half_round_even(src->w - dst->w);
    size_t row = (size_t)(dst->w * dst->c);
    for (int64_t y = 0; y < dst->h; y++)
        memcpy(dst->data + (size_t)y * row, src->data + ((top + y) * src->w + left) * src->c, row);
    return LOOM_OK;
}

static loom_status check_same(loom_ctx *ctx, const char *tf, const loom_image *src, const loom_image *dst) {
    loom_status st = check_pair(ctx, tf, src, dst);
    if (st == LOOM_OK && (dst->h != src->h || dst->w != src->w))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: destination %lldx%lld differs from the source %lldx%lld", tf,
                         (long long)dst->h, (long long)dst->w, (long long)src->h, (long long)src->w);
    return st;
}

loom_status loom_tf_hflip(loom_ctx *ctx, const loom_image *src, const loom_image *dst) {
    loom_status st = check_same(ctx, "hflip", src, dst);
    if (st != LOOM_OK) return st;
    int64_t w = src->w, c = src->c;
    for (int64_t y = 0; y < src->h; y++)
        for (int64_t x = 0; x < w; x++)
            memcpy(dst->data + (y * w + x) * c, src->data + (y * w + (w - 1 - x)) * c, (size_t)c);
    return LOOM_OK;
}

loom_status loom_tf_vflip(loom_ctx *ctx, const loom_image *src, const loom_image *dst) {
    loom_status st = check_same(ctx, "vflip", src, dst);
    if (st != LOOM_OK) return st;
    size_t row = (size_t)(src->w * src->c);
    for (int64_t y = 0; y < src->h; y++) memcpy(dst->data + (size_t)y * row, src->data + (size_t)(src->h - 1 - y) * row, row);
    return LOOM_OK;
}

/* ---- ToTensor + Normalize ------------------------------------------------- */

loom_status loom_tf_to_tensor(loom_ctx *ctx, const loom_image *src, const float *mean, const float *std, int nstat,
                              void *dst, loom_dtype dt) {
    loom_status st = check_image(ctx, "to_tensor", "source", src);
    if (st != LOOM_OK) return st;
    if (!dst) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "to_tensor: destination is NULL");
    if (dt != LOOM_F32 && dt != LOOM_F16 && dt != LOOM_BF16 && dt != LOOM_F64)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "to_tensor: output dtype %s (expected f32, f16, bf16 or f64)",
                         loom_dtype_name(dt));
    int c = src->c;
    if (nstat != 0 && (nstat != 1 && nstat != c))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                         "normalize: %d mean/std values for a %d-channel image (expected %d or 1)", nstat, c, c);
    if (nstat != 0 && (!mean || !std))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "normalize: mean or std is NULL with %d values", nstat);
    for (int k = 0; k < nstat; k++)
        if (std[k] == 0.0f || !isfinite(std[k]) || !isfinite(mean[k]))
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "normalize: channel %d has mean %g, std %g (std must be nonzero, both finite)",
                             k, (double)mean[k], (double)std[k]);
    int64_t hw = src->h * src->w;
    const float inv = (float)(1.0 / 255.0); /* torchvision: .to(float32).mul_(1.0 / 255) */
    float *plane = dt == LOOM_F32 ? NULL : malloc((size_t)hw * sizeof *plane);
    if (dt != LOOM_F32 && !plane) return loom__err(ctx, LOOM_ERR_OOM, "to_tensor: out of memory");
    // y (C, H, W) <- x (H, W, C), one channel plane at a time
    for (int k = 0; k < c; k++) {
        float *y = plane ? plane : (float *)dst + k * hw;
        float m = nstat ? mean[nstat == 1 ? 0 : k] : 0.0f, s = nstat ? std[nstat == 1 ? 0 : k] : 1.0f;
        const uint8_t *x = src->data + k;
        if (nstat) {
            for (int64_t i = 0; i < hw; i++) y[i] = ((float)x[i * c] * inv - m) / s;
        } else {
            for (int64_t i = 0; i < hw; i++) y[i] = (float)x[i * c] * inv;
        }
        if (plane) loom_convert(plane, LOOM_F32, (char *)dst + (size_t)(k * hw) * loom_dtype_size(dt), dt, (size_t)hw);
    }
    free(plane);
    return LOOM_OK;
}
