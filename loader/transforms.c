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

/* ---- resized_crop ---------------------------------------------------------- */

loom_status loom_tf_resized_crop(loom_ctx *ctx, const loom_image *src, int64_t top, int64_t left, int64_t h, int64_t w,
                                 const loom_image *dst) {
    loom_status st = check_pair(ctx, "resized_crop", src, dst);
    if (st != LOOM_OK) return st;
    if (h < 1 || w < 1 || top < 0 || left < 0 || top + h > src->h || left + w > src->w)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                         "resized_crop: box top %lld left %lld size %lldx%lld is not inside the %lldx%lld image",
                         (long long)top, (long long)left, (long long)h, (long long)w, (long long)src->h,
                         (long long)src->w);
    int c = src->c;
    uint8_t *tmp = malloc((size_t)(h * w * c));
    if (!tmp) return loom__err(ctx, LOOM_ERR_OOM, "resized_crop: out of memory");
    for (int64_t y = 0; y < h; y++)
        memcpy(tmp + (size_t)(y * w * c), src->data + ((top + y) * src->w + left) * c, (size_t)(w * c));
    loom_image crop = {tmp, h, w, c};
    st = loom_tf_resize(ctx, &crop, dst);
    free(tmp);
    return st;
}

/* ---- colour ---------------------------------------------------------------- */

/* torch: float result clamped to [0, 255], then .to(uint8) truncates */
static inline uint8_t trunc_u8(float v) { return (uint8_t)(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v); }

static inline float gray_of(const uint8_t *p) { return (float)p[0] * 0.2989f + (float)p[1] * 0.587f + (float)p[2] * 0.114f; }

static loom_status check_factor(loom_ctx *ctx, const char *tf, double f, double lo, double hi) {
    if (!(f >= lo && f <= hi))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: factor %g (expected %g..%g)", tf, f, lo, hi);
    return LOOM_OK;
}

loom_status loom_tf_adjust_brightness(loom_ctx *ctx, const loom_image *src, const loom_image *dst, double f) {
    loom_status st = check_same(ctx, "adjust_brightness", src, dst);
    if (st == LOOM_OK) st = check_factor(ctx, "adjust_brightness", f, 0, HUGE_VAL);
    if (st != LOOM_OK) return st;
    float ff = (float)f;
    size_t n = (size_t)(src->h * src->w * src->c);
    for (size_t i = 0; i < n; i++) dst->data[i] = trunc_u8((float)src->data[i] * ff);
    return LOOM_OK;
}

/* _blend(img, other, f): img * f + other * (1 - f) in f32 */
static inline uint8_t blend(uint8_t u, float other, float f, float g) { return trunc_u8((float)u * f + other * g); }

loom_status loom_tf_adjust_contrast(loom_ctx *ctx, const loom_image *src, const loom_image *dst, double f) {
    loom_status st = check_same(ctx, "adjust_contrast", src, dst);
    if (st == LOOM_OK) st = check_factor(ctx, "adjust_contrast", f, 0, HUGE_VAL);
    if (st != LOOM_OK) return st;
    int64_t hw = src->h * src->w;
    int c = src->c;
    double sum = 0;
    for (int64_t i = 0; i < hw; i++) sum += c == 3 ? floorf(gray_of(src->data + i * 3)) : (float)src->data[i];
    float mean = (float)(sum / (double)hw), ff = (float)f, g = (float)(1.0 - f);
    for (int64_t i = 0; i < hw * c; i++) dst->data[i] = blend(src->data[i], mean, ff, g);
    return LOOM_OK;
}

loom_status loom_tf_adjust_saturation(loom_ctx *ctx, const loom_image *src, const loom_image *dst, double f) {
    loom_status st = check_same(ctx, "adjust_saturation", src, dst);
    if (st == LOOM_OK) st = check_factor(ctx, "adjust_saturation", f, 0, HUGE_VAL);
    if (st != LOOM_OK) return st;
    int64_t hw = src->h * src->w;
    if (src->c == 1) {
        memcpy(dst->data, src->data, (size_t)hw);
        return LOOM_OK;
    }
    float ff = (float)f, g = (float)(1.0 - f);
    for (int64_t i = 0; i < hw; i++) {
        const uint8_t *p = src->data + i * 3;
        float gr = floorf(gray_of(p));
        for (int k = 0; k < 3; k++) dst->data[i * 3 + k] = blend(p[k], gr, ff, g);
    }
    return LOOM_OK;
}

static inline float clamp01(float v) { return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; }

loom_status loom_tf_adjust_hue(loom_ctx *ctx, const loom_image *src, const loom_image *dst, double f) {
    loom_status st = check_same(ctx, "adjust_hue", src, dst);
    if (st == LOOM_OK) st = check_factor(ctx, "adjust_hue", f, -0.5, 0.5);
    if (st != LOOM_OK) return st;
    int64_t hw = src->h * src->w;
    if (src->c == 1) {
        memcpy(dst->data, src->data, (size_t)hw);
        return LOOM_OK;
    }
    const float inv = (float)(1.0 / 255.0), ff = (float)f;
    for (int64_t i = 0; i < hw; i++) {
        const uint8_t *p = src->data + i * 3;
        float r = (float)p[0] * inv, g = (float)p[1] * inv, b = (float)p[2] * inv;
        /* _rgb_to_hsv (Pillow's formulas) */
        float maxc = fmaxf(r, fmaxf(g, b)), minc = fminf(r, fminf(g, b));
        bool eqc = maxc == minc;
        float range = maxc - minc;
        float s = range / (eqc ? 1.0f : maxc);
        float div = eqc ? 1.0f : range;
        float rc = (maxc - r) / div, gc = (maxc - g) / div, bc = (maxc - b) / div;
        float hr = maxc == r ? bc - gc : 0.0f;
        float hg = (maxc == g && maxc != r) ? 2.0f + rc - bc : 0.0f;
        float hb = (maxc != g && maxc != r) ? 4.0f + gc - rc : 0.0f;
        float h = fmodf((hr + hg + hb) * (1.0f / 6.0f) + 1.0f, 1.0f), v = maxc;
        /* h.add_(f).remainder_(1.0): Python's modulo, result in [0, 1) */
        h += ff;
        h = h - floorf(h);
        if (h >= 1.0f) h = 0.0f;
        /* _hsv_to_rgb */
        float h6 = h * 6.0f, fi = floorf(h6), fr = h6 - fi;
        int sect = ((int)fi % 6 + 6) % 6;
        float sxf = s * fr;
        float q = clamp01((1.0f - sxf) * v), t = clamp01((sxf + (1.0f - s)) * v), pp = clamp01((1.0f - s) * v);
        float vpqt[4] = {v, pp, q, t};
        static const int sel[3][6] = {{0, 2, 1, 1, 3, 0}, {3, 0, 0, 2, 1, 1}, {1, 1, 3, 0, 0, 2}};
        for (int k = 0; k < 3; k++) dst->data[i * 3 + k] = trunc_u8(vpqt[sel[k][sect]] * (255.0f + 1.0f - 1e-3f));
    }
    return LOOM_OK;
}

/* ---- affine ---------------------------------------------------------------- */

loom_status loom_tf_affine(loom_ctx *ctx, const loom_image *src, const loom_image *dst, double angle, double tx,
                           double ty, double scale, double shear_x, double shear_y, bool nearest, const uint8_t *fill) {
    loom_status st = check_same(ctx, "affine", src, dst);
    if (st != LOOM_OK) return st;
    if (!(scale > 0) || !isfinite(scale) || !isfinite(angle) || !isfinite(tx) || !isfinite(ty) ||
        !(fabs(shear_x) < 90) || !(fabs(shear_y) < 90))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                         "affine: angle %g, translate (%g, %g), scale %g, shear (%g, %g) (expected finite, scale > 0, "
                         "|shear| < 90)",
                         angle, tx, ty, scale, shear_x, shear_y);
    /* torchvision's _get_inverse_affine_matrix, centre (0, 0) = the image centre */
    const double deg = 3.14159265358979323846 / 180.0;
    double rot = angle * deg, sx = shear_x * deg, sy = shear_y * deg;
    double a = cos(rot - sy) / cos(sy), b = -(a * tan(sx) + sin(rot)), c = sin(rot - sy) / cos(sy),
           d = cos(rot) - c * tan(sx);
    double m[6] = {d / scale, -b / scale, 0, -c / scale, a / scale, 0};
    m[2] += -m[0] * tx - m[1] * ty;
    m[5] += -m[3] * tx - m[4] * ty;
    int64_t H = src->h, W = src->w;
    int nc = src->c;
    double hx = 0.5 * (double)(W - 1), hy = 0.5 * (double)(H - 1);
    // dst (H, W, c) <- src (H, W, c) sampled at M^-1 p
    for (int64_t oy = 0; oy < H; oy++)
        for (int64_t ox = 0; ox < W; ox++) {
            double x = (double)ox - hx, y = (double)oy - hy;
            double fx = m[0] * x + m[1] * y + m[2] + hx, fy = m[3] * x + m[4] * y + m[5] + hy;
            uint8_t *o = dst->data + (oy * W + ox) * nc;
            for (int k = 0; k < nc; k++) {
                double fl = fill ? fill[k] : 0.0, v = 0, mask = 0;
                if (nearest) {
                    double rx = nearbyint(fx), ry = nearbyint(fy);
                    if (rx >= 0 && rx < (double)W && ry >= 0 && ry < (double)H) {
                        v = src->data[((int64_t)ry * W + (int64_t)rx) * nc + k];
                        mask = 1;
                    }
                    v = mask < 0.5 ? fl : v;
                } else {
                    double x0 = floor(fx), y0 = floor(fy), wx = fx - x0, wy = fy - y0;
                    for (int dy = 0; dy < 2; dy++)
                        for (int dx = 0; dx < 2; dx++) {
                            int64_t xi = (int64_t)x0 + dx, yi = (int64_t)y0 + dy;
                            if (xi < 0 || xi >= W || yi < 0 || yi >= H) continue;
                            double wgt = (dx ? wx : 1 - wx) * (dy ? wy : 1 - wy);
                            v += wgt * src->data[(yi * W + xi) * nc + k];
                            mask += wgt;
                        }
                    v = (v - fl) * mask + fl;
                }
                v = nearbyint(v);
                o[k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
    return LOOM_OK;
}

/* ---- erase (on the tensor) --------------------------------------------------- */

loom_status loom_tf_erase(loom_ctx *ctx, float *x, int c, int64_t ht, int64_t wd, int64_t i, int64_t j, int64_t h,
                          int64_t w, const float *v, int nv) {
    if (!x || !v || c < 1 || (nv != 1 && nv != c) || i < 0 || j < 0 || h < 0 || w < 0 || i + h > ht || j + w > wd)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                         "erase: box top %lld left %lld size %lldx%lld, %d values, on a (%d, %lld, %lld) tensor (expected "
                         "the box inside, 1 or c values)",
                         (long long)i, (long long)j, (long long)h, (long long)w, nv, c, (long long)ht, (long long)wd);
    // x (c, ht, wd)
    for (int k = 0; k < c; k++)
        for (int64_t y = i; y < i + h; y++)
            for (int64_t xx = j; xx < j + w; xx++) x[((int64_t)k * ht + y) * wd + xx] = v[nv == 1 ? 0 : k];
    return LOOM_OK;
}
