/* loader/transforms.c — deterministic image transforms on HWC u8 images
 * (Resize, CenterCrop, flips, ToTensor + Normalize); the meaning of every
 * parameter is torchvision's, see include/loom/transforms.h.
 *
 * Resize is the antialiased bilinear filter of PIL / torch's
 * _upsample_bilinear2d_aa: per axis, a table of (first input, count,
 * normalised weights) per output, then a width pass into a u8 buffer and a
 * height pass into dst, with the weights in 22-bit fixed point as PIL's
 * resampler (torch's uint8 kernel uses int16 weights of varying
 * precision), hence "within 1" of torchvision rather than exact.
 *
 * The fused geometric pass (loom_tf_remap, loom_tf_warp) runs the same
 * kernel (sep_run; loom_tf_resize is a remap without crops): crops and
 * flips around one resize per axis resample once, bit-exact; any other
 * composed map once, within interpolation error.
 */
#include <math.h>

#include "../core/color.h"
#include "../core/params.h"
#include "../core/prefetch.h"
#include "loader_impl.h"

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

/* The weights of the last few axes, per context: a loader worker (one
 * context each) resizes image after image of the same sizes, and making
 * them (a division per tap) is ~1% of an image's time. */
enum { AXIS_CACHE = 4 };
typedef struct axis_cache {
    int64_t in[AXIS_CACHE], out[AXIS_CACHE];
    axis_weights aw[AXIS_CACHE];
    int n, next;
} axis_cache;

static void axis_cache_free(void *p) {
    axis_cache *c = p;
    for (int i = 0; c && i < c->n; i++) axis_free(&c->aw[i]);
    free(c);
}

/* in -> out's weights: the context's cached ones, else made into the cache
 * (or into *own, which the caller frees, when the context has none); NULL
 * when out of memory */
static const axis_weights *axis_get(loom_ctx *ctx, int64_t in, int64_t out, axis_weights *own) {
    axis_cache *c = NULL;
    if (ctx && !ctx->cache && (c = calloc(1, sizeof *c))) ctx->cache = c, ctx->cache_free = axis_cache_free;
    else if (ctx && ctx->cache_free == axis_cache_free) c = ctx->cache;
    for (int i = 0; c && i < c->n; i++)
        if (c->in[i] == in && c->out[i] == out) return &c->aw[i];
    axis_weights a = {0};
    if (!axis_make(in, out, &a)) {
        axis_free(&a);
        return NULL;
    }
    if (!c) {
        *own = a;
        return own;
    }
    int k = c->n;
    if (c->n < AXIS_CACHE) {
        c->n++;
    } else { /* the oldest goes */
        k = c->next, c->next = (c->next + 1) % AXIS_CACHE;
        axis_free(&c->aw[k]);
    }
    c->aw[k] = a, c->in[k] = in, c->out[k] = out;
    return &c->aw[k];
}

loom_status loom_tf_resize(loom_ctx *ctx, const loom_image *src, const loom_image *dst) {
    loom_status st = check_pair(ctx, "resize", src, dst);
    if (st != LOOM_OK) return st;
    if (src->h == dst->h && src->w == dst->w) {
        memcpy(dst->data, src->data, (size_t)(src->h * src->w * src->c));
        return LOOM_OK;
    }
    /* the fused pass's kernel with identity crops: one implementation of the filter */
    const loom_tf_axis ax[2] = {{0, 1, src->h, dst->h, 0, 1}, {0, 1, src->w, dst->w, 0, 1}};
    return loom_tf_remap(ctx, src, dst, ax);
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
/* Each adjustment is a span primitive (loader_impl.h) that the fused tail
 * (loader/tail.c) applies row by row and the image functions below apply
 * to the whole image: the same arithmetic either way. */


static inline float gray_of(const uint8_t *p) { return (float)p[0] * 0.2989f + (float)p[1] * 0.587f + (float)p[2] * 0.114f; }

/* floorf of a value in [0, 2^31): truncation (no libm call on plain SSE2) */
static inline float floor_pos(float v) { return (float)(int32_t)v; }

static inline double round_even(double v) { return loom__round_even(v); }

static loom_status check_factor(loom_ctx *ctx, const char *tf, double f, double lo, double hi) {
    if (!(f >= lo && f <= hi))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: factor %g (expected %g..%g)", tf, f, lo, hi);
    return LOOM_OK;
}

void loom__lut_span(const uint8_t lut[256], const uint8_t *src, uint8_t *dst, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = lut[src[i]];
}

void loom__brightness_lut(double f, uint8_t lut[256]) {
    float ff = (float)f;
    for (int u = 0; u < 256; u++) lut[u] = loom__trunc_u8((float)u * ff);
}

/* _blend(img, other, f): img * f + other * (1 - f) in f32 (other * (1 - f) is the same for every value) */
void loom__contrast_lut(double f, float mean, uint8_t lut[256]) {
    float ff = (float)f, g = (float)(1.0 - f), add = mean * g;
    for (int u = 0; u < 256; u++) lut[u] = loom__trunc_u8((float)u * ff + add);
}

int64_t loom__gray_sum(const uint8_t *p, int64_t npx, int c) {
    int64_t sum = 0; /* of integers: exact, as torch's sum of the floored grays */
    if (c == 3)
        for (int64_t i = 0; i < npx; i++) sum += (int32_t)floor_pos(gray_of(p + i * 3));
    else
        for (int64_t i = 0; i < npx; i++) sum += p[i];
    return sum;
}

float loom__gray_mean(const uint8_t *p, int64_t hw, int c) { return (float)((double)loom__gray_sum(p, hw, c) / (double)hw); }

void loom__sat_init(loom__sat_tables *t, double f) {
    float ff = (float)f, g = (float)(1.0 - f);
    /* blend's products tabulated (u * f and gray * g, gray an integer), summed as blend sums them */
    for (int u = 0; u < 256; u++) {
        t->uf[u] = (float)u * ff, t->gg[u] = (float)u * g;
        t->gr[0][u] = (float)u * 0.2989f, t->gr[1][u] = (float)u * 0.587f, t->gr[2][u] = (float)u * 0.114f;
    }
}

void loom__sat_span(const loom__sat_tables *t, const uint8_t *src, uint8_t *dst, int64_t npx) {
    for (int64_t i = 0; i < npx; i++) {
        const uint8_t *p = src + i * 3;
        int gr = (int)(t->gr[0][p[0]] + t->gr[1][p[1]] + t->gr[2][p[2]]); /* floor(gray_of(p)) */
        float add = t->gg[gr];
        uint8_t o0 = loom__trunc_u8(t->uf[p[0]] + add), o1 = loom__trunc_u8(t->uf[p[1]] + add),
                o2 = loom__trunc_u8(t->uf[p[2]] + add);
        dst[i * 3] = o0, dst[i * 3 + 1] = o1, dst[i * 3 + 2] = o2;
    }
}

void loom__hue_span(double f, const uint8_t *src, uint8_t *dst, int64_t npx) {
    const float ff = (float)f;
    for (int64_t i = 0; i < npx; i++) loom__hue_px(ff, src + i * 3, dst + i * 3);
}

loom_status loom_tf_adjust_brightness(loom_ctx *ctx, const loom_image *src, const loom_image *dst, double f) {
    loom_status st = check_same(ctx, "adjust_brightness", src, dst);
    if (st == LOOM_OK) st = check_factor(ctx, "adjust_brightness", f, 0, HUGE_VAL);
    if (st != LOOM_OK) return st;
    uint8_t lut[256]; /* the same expression per value, tabulated */
    loom__brightness_lut(f, lut);
    loom__lut_span(lut, src->data, dst->data, (size_t)(src->h * src->w * src->c));
    return LOOM_OK;
}

loom_status loom_tf_adjust_contrast(loom_ctx *ctx, const loom_image *src, const loom_image *dst, double f) {
    loom_status st = check_same(ctx, "adjust_contrast", src, dst);
    if (st == LOOM_OK) st = check_factor(ctx, "adjust_contrast", f, 0, HUGE_VAL);
    if (st != LOOM_OK) return st;
    uint8_t lut[256];
    loom__contrast_lut(f, loom__gray_mean(src->data, src->h * src->w, src->c), lut);
    loom__lut_span(lut, src->data, dst->data, (size_t)(src->h * src->w * src->c));
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
    loom__sat_tables t;
    loom__sat_init(&t, f);
    loom__sat_span(&t, src->data, dst->data, hw);
    return LOOM_OK;
}

loom_status loom_tf_adjust_hue(loom_ctx *ctx, const loom_image *src, const loom_image *dst, double f) {
    loom_status st = check_same(ctx, "adjust_hue", src, dst);
    if (st == LOOM_OK) st = check_factor(ctx, "adjust_hue", f, -0.5, 0.5);
    if (st != LOOM_OK) return st;
    int64_t hw = src->h * src->w;
    if (src->c == 1) {
        memcpy(dst->data, src->data, (size_t)hw);
        return LOOM_OK;
    }
    loom__hue_span(f, src->data, dst->data, hw);
    return LOOM_OK;
}

/* ---- affine ---------------------------------------------------------------- */

void loom_tf_affine_inverse(double angle, double tx, double ty, double scale, double shear_x, double shear_y,
                            double m[6]) {
    /* torchvision's _get_inverse_affine_matrix, centre (0, 0) = the image centre */
    const double deg = 3.14159265358979323846 / 180.0;
    double rot = angle * deg, sx = shear_x * deg, sy = shear_y * deg;
    double a = cos(rot - sy) / cos(sy), b = -(a * tan(sx) + sin(rot)), c = sin(rot - sy) / cos(sy),
           d = cos(rot) - c * tan(sx);
    m[0] = d / scale, m[1] = -b / scale, m[2] = 0, m[3] = -c / scale, m[4] = a / scale, m[5] = 0;
    m[2] += -m[0] * tx - m[1] * ty;
    m[5] += -m[3] * tx - m[4] * ty;
}

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
    double m[6];
    loom_tf_affine_inverse(angle, tx, ty, scale, shear_x, shear_y, m);
    int64_t H = src->h, W = src->w;
    int nc = src->c;
    double hx = 0.5 * (double)(W - 1), hy = 0.5 * (double)(H - 1);
    // dst (H, W, c) <- src (H, W, c) sampled at M^-1 p (coordinates and weights once per pixel)
    for (int64_t oy = 0; oy < H; oy++)
        for (int64_t ox = 0; ox < W; ox++) {
            double fx, fy;
            loom__affine_point(m, hx, hy, ox, oy, &fx, &fy);
            uint8_t *o = dst->data + (oy * W + ox) * nc;
            if (nearest) {
                int64_t at;
                if (loom__nearest_at(fx, fy, W, H, &at)) {
                    const uint8_t *p = src->data + at * nc;
                    for (int k = 0; k < nc; k++) o[k] = p[k];
                } else {
                    for (int k = 0; k < nc; k++) o[k] = fill ? fill[k] : 0;
                }
                continue;
            }
            double x0 = floor(fx), y0 = floor(fy), wx = fx - x0, wy = fy - y0, wgt[4], mask = 0;
            const uint8_t *tap[4] = {NULL, NULL, NULL, NULL};
            for (int dy = 0; dy < 2; dy++)
                for (int dx = 0; dx < 2; dx++) {
                    int64_t xi = (int64_t)x0 + dx, yi = (int64_t)y0 + dy;
                    if (xi < 0 || xi >= W || yi < 0 || yi >= H) continue;
                    wgt[dy * 2 + dx] = (dx ? wx : 1 - wx) * (dy ? wy : 1 - wy);
                    tap[dy * 2 + dx] = src->data + (yi * W + xi) * nc;
                    mask += wgt[dy * 2 + dx];
                }
            for (int k = 0; k < nc; k++) {
                double fl = fill ? fill[k] : 0.0, v = 0;
                for (int t = 0; t < 4; t++)
                    if (tap[t]) v += wgt[t] * tap[t][k];
                v = round_even((v - fl) * mask + fl);
                o[k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
    return LOOM_OK;
}

/* ---- the fused geometric pass ----------------------------------------------- */

/* One output axis as taps into a source axis: output i reads source indices
 * idx[i * span + t], t < cnt[i] (consecutive, ascending or descending),
 * with fixed-point weights wt[i * span + t] (FIX_BITS fraction bits, as
 * PIL's resampler); copy = every output is one input. */
typedef struct taps {
    int64_t span;
    int64_t *idx, *cnt;
    int32_t *wt;
    bool copy;
} taps;

#define FIX_BITS 22 /* PIL's PRECISION_BITS: 255 * 2^22 * (sum of weights ~1) fits an int32 */

static inline int32_t fix_w(double w) { return (int32_t)(w * (double)(1 << FIX_BITS) + 0.5); }

/* a sum started at 1 << (FIX_BITS - 1) (rounding half up), to u8 */
static inline uint8_t fix_u8(int32_t acc) {
    acc >>= FIX_BITS;
    return (uint8_t)(acc < 0 ? 0 : acc > 255 ? 255 : acc);
}

static void taps_free(taps *t) {
    free(t->idx);
    free(t->cnt);
    free(t->wt);
}

static bool taps_alloc(taps *t, int64_t n, int64_t span) {
    t->span = span;
    t->idx = malloc((size_t)(n * span) * sizeof *t->idx);
    t->cnt = malloc((size_t)n * sizeof *t->cnt);
    t->wt = malloc((size_t)(n * span) * sizeof *t->wt);
    return t->idx && t->cnt && t->wt;
}

/* The smallest and largest source index the taps read. */
static void taps_range(const taps *t, int64_t n, int64_t *lo, int64_t *hi) {
    *lo = INT64_MAX, *hi = INT64_MIN;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < t->cnt[i]; k++) {
            int64_t j = t->idx[i * t->span + k];
            if (j < *lo) *lo = j;
            if (j > *hi) *hi = j;
        }
}

/* dst (oh, ow, c) <- src through the column taps tx then the row taps ty:
 * the width pass over the source rows ty reads (into tmp, rounded to u8),
 * then the height pass (rounded to u8), as PIL and torch's uint8 kernel:
 * integer sums of fixed-point weights, so any order gives the same bits.
 * Every resize (loom_tf_resize too) runs here. */
static loom_status sep_run(loom_ctx *ctx, const char *tf, const loom_image *src, const loom_image *dst, const taps *ty,
                           const taps *tx) {
    int64_t ow = dst->w, oh = dst->h, rlo, rhi, row = ow * src->c;
    int c = src->c;
    const int32_t half = 1 << (FIX_BITS - 1);
    taps_range(ty, oh, &rlo, &rhi);
    int64_t rows = rhi - rlo + 1;
    uint8_t *tmp = malloc((size_t)(rows * row));
    int32_t *acc = malloc((size_t)row * sizeof *acc);
    if (!tmp || !acc) {
        free(tmp), free(acc);
        return loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory for %lldx%lld", tf, (long long)rows, (long long)ow);
    }
    bool run = tx->copy && tx->idx[(ow - 1) * tx->span] - tx->idx[0] == ow - 1; /* columns in order (a crop): memcpy */
    loom__wplan512 *wq = c == 3 && !tx->copy ? loom__width_plan_avx512(tx->idx, tx->cnt, tx->wt, tx->span, ow) : NULL;
    loom__wplan *wp = c == 3 && !tx->copy && !wq ? loom__width_plan_avx2(tx->idx, tx->cnt, tx->wt, tx->span, ow, src->w) : NULL;
    // tmp (rows, ow, c) <- src rows rlo..rhi, columns through tx: AVX2's outputs [0, wx) of every row first
    int64_t wx = wp ? loom__width_pass_avx2(wp, src->data + rlo * src->w * c, src->w * c, rows, FIX_BITS, half, tmp, row) : 0;
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *s = src->data + (rlo + r) * src->w * c;
        uint8_t *o = tmp + r * row;
        if (r + 2 < rows) loom__prefetch_span(s + 2 * src->w * c, (size_t)(src->w * c)); /* a fresh decode: not in L2 */
        if (run) {
            memcpy(o, s + tx->idx[0] * c, (size_t)row);
            continue;
        }
        int64_t x = wq ? loom__width_row_avx512(wq, s, src->w, FIX_BITS, half, o) : wx;
        for (o += x * c; x < ow; x++, o += c) {
            const int64_t *ix = tx->idx + x * tx->span, n = tx->cnt[x];
            const uint8_t *p = s + ix[0] * c;
            if (tx->copy) {
                for (int k = 0; k < c; k++) o[k] = p[k];
                continue;
            }
            const int32_t *wt = tx->wt + x * tx->span;
            ptrdiff_t st = (ptrdiff_t)(n > 1 ? ix[1] - ix[0] : 1) * c;
            if (c == 3 && st == 3) { /* the common case: ascending taps, RGB */
                int32_t a0 = half, a1 = half, a2 = half;
                for (int64_t j = 0; j < n; j++, p += 3) a0 += wt[j] * p[0], a1 += wt[j] * p[1], a2 += wt[j] * p[2];
                o[0] = fix_u8(a0), o[1] = fix_u8(a1), o[2] = fix_u8(a2);
            } else if (c == 3) {
                int32_t a0 = half, a1 = half, a2 = half;
                for (int64_t j = 0; j < n; j++, p += st) a0 += wt[j] * p[0], a1 += wt[j] * p[1], a2 += wt[j] * p[2];
                o[0] = fix_u8(a0), o[1] = fix_u8(a1), o[2] = fix_u8(a2);
            } else {
                for (int k = 0; k < c; k++) {
                    int32_t a = half;
                    for (int64_t j = 0; j < n; j++) a += wt[j] * p[j * st + k];
                    o[k] = fix_u8(a);
                }
            }
        }
    }
    // dst (oh, ow, c) <- tmp rows through ty
    for (int64_t y = 0; y < oh; y++) {
        const int64_t *iy = ty->idx + y * ty->span;
        uint8_t *o = dst->data + y * row;
        if (ty->copy) {
            memcpy(o, tmp + (iy[0] - rlo) * row, (size_t)row);
            continue;
        }
        const int32_t *wt = ty->wt + y * ty->span;
        int64_t x0 = 0, n = ty->cnt[y];
        if (n <= 16) {
            const uint8_t *t[16];
            for (int64_t j = 0; j < n; j++) t[j] = tmp + (iy[j] - rlo) * row;
            x0 = loom__height_row_avx2(t, wt, n, loom__height_row_avx512(t, wt, n, row, FIX_BITS, half, o), row, FIX_BITS, half, o);
            if (x0 == row) continue;
        }
        int32_t *restrict a = acc + x0; /* (restrict: u8 rows could alias anything; they do not) */
        int64_t len = row - x0;
        for (int64_t x = 0; x < len; x++) a[x] = half;
        for (int64_t j = 0; j < n; j++) {
            const uint8_t *restrict t = tmp + (iy[j] - rlo) * row + x0;
            int32_t w = wt[j];
            if (!loom__height_acc_avx2(a, t, w, len))
                for (int64_t x = 0; x < len; x++) a[x] += w * t[x];
        }
        if (!loom__acc_to_u8_avx2(a, o + x0, len, FIX_BITS))
            for (int64_t x = 0; x < len; x++) o[x0 + x] = fix_u8(a[x]);
    }
    free(tmp), free(acc);
    loom__width_plan_free(wp);
    loom__width_plan512_free(wq);
    return LOOM_OK;
}

/* The taps of one remap axis for n outputs over a source extent `in`. */
static loom_status remap_taps(loom_ctx *ctx, const loom_tf_axis *a, int64_t n, int64_t in, const char *name, taps *t) {
    int64_t nr = a->n_out, r0 = a->post_off, r1 = a->post_off + a->post_step * (n - 1);
    int64_t j0 = a->pre_off, j1 = a->pre_off + a->pre_step * (a->n_in - 1);
    if ((a->pre_step != 1 && a->pre_step != -1) || (a->post_step != 1 && a->post_step != -1) || a->n_in < 1 ||
        a->n_out < 1 || r0 < 0 || r0 >= nr || r1 < 0 || r1 >= nr || j0 < 0 || j0 >= in || j1 < 0 || j1 >= in)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                         "remap: %s axis: source %lld + %lld j (j < %lld) -> %lld -> output %lld + %lld i (i < %lld) "
                         "leaves the source (%lld) or the resampled axis (steps must be +-1)",
                         name, (long long)a->pre_off, (long long)a->pre_step, (long long)a->n_in, (long long)a->n_out,
                         (long long)a->post_off, (long long)a->post_step, (long long)n, (long long)in);
    if (a->n_in == a->n_out) {
        if (!taps_alloc(t, n, 1)) return loom__err(ctx, LOOM_ERR_OOM, "remap: out of memory");
        t->copy = true;
        for (int64_t i = 0; i < n; i++)
            t->idx[i] = a->pre_off + a->pre_step * (a->post_off + a->post_step * i), t->cnt[i] = 1, t->wt[i] = 1 << FIX_BITS;
        return LOOM_OK;
    }
    axis_weights own = {0};
    const axis_weights *aw = axis_get(ctx, a->n_in, a->n_out, &own);
    bool ok = aw && taps_alloc(t, n, aw->span);
    if (ok) {
        for (int64_t i = 0; i < n; i++) {
            int64_t r = a->post_off + a->post_step * i;
            t->cnt[i] = aw->count[r];
            for (int64_t k = 0; k < aw->count[r]; k++) {
                t->idx[i * t->span + k] = a->pre_off + a->pre_step * (aw->first[r] + k);
                t->wt[i * t->span + k] = fix_w(aw->wt[r * aw->span + k]);
            }
        }
    }
    axis_free(&own);
    return ok ? LOOM_OK : loom__err(ctx, LOOM_ERR_OOM, "remap: out of memory");
}

/* resize_u8 (core/ops/resize.c) sums the same fixed point as sep_run */
_Static_assert(FIX_BITS == LOOM_K_RESIZE_FIX_BITS, "resize_u8's weights have FIX_BITS fraction bits");

loom_status loom__tf_resize_taps(loom_ctx *ctx, int64_t in, int64_t out, int64_t *span, int32_t **tab) {
    *tab = NULL, *span = 0;
    if (in < 1 || out < 1 || in > INT32_MAX || out > INT32_MAX)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "resize taps: %lld -> %lld (expected sizes 1..2^31 - 1)",
                         (long long)in, (long long)out);
    taps t = {0};
    const loom_tf_axis a = {0, 1, in, out, 0, 1}; /* loom_tf_resize's axis */
    loom_status st = remap_taps(ctx, &a, out, in, "resize", &t);
    int64_t row = 2 + t.span;
    if (st == LOOM_OK && !(*tab = calloc((size_t)(out * row), sizeof **tab)))
        st = loom__err(ctx, LOOM_ERR_OOM, "resize taps: out of memory for %lld outputs", (long long)out);
    for (int64_t i = 0; st == LOOM_OK && i < out; i++) {
        int32_t *r = *tab + i * row;
        r[0] = (int32_t)t.idx[i * t.span], r[1] = (int32_t)t.cnt[i];
        for (int64_t k = 0; k < t.cnt[i]; k++) {
            LOOM__ASSERT(t.idx[i * t.span + k] == t.idx[i * t.span] + k); /* consecutive, ascending */
            r[2 + k] = t.wt[i * t.span + k];
        }
    }
    if (st == LOOM_OK) *span = t.span;
    taps_free(&t);
    return st;
}

loom_status loom_tf_remap(loom_ctx *ctx, const loom_image *src, const loom_image *dst, const loom_tf_axis ax[2]) {
    loom_status st = check_pair(ctx, "remap", src, dst);
    if (st != LOOM_OK) return st;
    taps ty = {0}, tx = {0};
    st = remap_taps(ctx, &ax[0], dst->h, src->h, "row", &ty);
    if (st == LOOM_OK) st = remap_taps(ctx, &ax[1], dst->w, src->w, "column", &tx);
    if (st == LOOM_OK) st = sep_run(ctx, "remap", src, dst, &ty, &tx);
    taps_free(&ty), taps_free(&tx);
    return st;
}

/* Taps of an axis-aligned map: output i centred at a (i + 0.5) + b in the
 * source, the triangle filter of support max(|a|, 1), limited to the source
 * pixels [v0, v1) and renormalised (none there: the nearest one). */
static bool warp_taps(double a, double b, int64_t n, int64_t v0, int64_t v1, taps *t) {
    double scale = fabs(a), support = scale >= 1.0 ? scale : 1.0, inv = 1.0 / support;
    if (!taps_alloc(t, n, (int64_t)ceil(support) * 2 + 2)) return false;
    for (int64_t i = 0; i < n; i++) {
        double centre = a * ((double)i + 0.5) + b;
        int64_t lo = (int64_t)floor(centre - support + 0.5), hi = (int64_t)floor(centre + support + 0.5);
        if (lo < v0) lo = v0;
        if (hi > v1) hi = v1;
        if (hi - lo > t->span) hi = lo + t->span;
        int64_t *ix = t->idx + i * t->span, k = 0;
        int32_t *wt = t->wt + i * t->span;
        double total = 0;
        for (int64_t j = lo; j < hi; j++) total += fmax(0.0, 1.0 - fabs(((double)j + 0.5 - centre) * inv));
        if (total > 0) {
            for (int64_t j = lo; j < hi; j++, k++)
                ix[k] = j, wt[k] = fix_w(fmax(0.0, 1.0 - fabs(((double)j + 0.5 - centre) * inv)) / total);
        } else {
            int64_t j = (int64_t)floor(centre);
            ix[0] = j < v0 ? v0 : j >= v1 ? v1 - 1 : j, wt[0] = 1 << FIX_BITS, k = 1;
        }
        t->cnt[i] = k;
    }
    return true;
}

/* dst <- src sampled bilinearly at m (index space after the - 0.5), taps
 * outside [v[0], v[2]) x [v[1], v[3]) masked as torchvision's fill. */
static void warp_bilinear(const loom_image *src, const loom_image *dst, const double m[6], const int64_t v[4],
                          const uint8_t *fill) {
    int nc = src->c;
    int64_t W = src->w;
    for (int64_t oy = 0; oy < dst->h; oy++)
        for (int64_t ox = 0; ox < dst->w; ox++) {
            double X = (double)ox + 0.5, Y = (double)oy + 0.5;
            double fx = m[0] * X + m[1] * Y + m[2] - 0.5, fy = m[3] * X + m[4] * Y + m[5] - 0.5;
            double x0 = floor(fx), y0 = floor(fy), wx = fx - x0, wy = fy - y0;
            uint8_t *o = dst->data + (oy * dst->w + ox) * nc;
            for (int k = 0; k < nc; k++) {
                double fl = fill ? fill[k] : 0.0, val = 0, mask = 0;
                for (int dy = 0; dy < 2; dy++)
                    for (int dx = 0; dx < 2; dx++) {
                        int64_t xi = (int64_t)x0 + dx, yi = (int64_t)y0 + dy;
                        if (xi < v[0] || xi >= v[2] || yi < v[1] || yi >= v[3]) continue;
                        double wgt = (dx ? wx : 1 - wx) * (dy ? wy : 1 - wy);
                        val += wgt * src->data[(yi * W + xi) * nc + k];
                        mask += wgt;
                    }
                val = round_even((val - fl) * mask + fl);
                o[k] = (uint8_t)(val < 0 ? 0 : val > 255 ? 255 : val);
            }
        }
}

loom_status loom_tf_warp(loom_ctx *ctx, const loom_image *src, const loom_image *dst, const double m[6],
                         const double valid[4], const uint8_t *fill) {
    loom_status st = check_pair(ctx, "warp", src, dst);
    if (st != LOOM_OK) return st;
    bool finite = true;
    for (int k = 0; k < 6; k++) finite = finite && isfinite(m[k]);
    for (int k = 0; k < 4 && valid; k++) finite = finite && isfinite(valid[k]);
    if (!finite) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "warp: the map or the valid rectangle is not finite");
    /* the valid source pixels [v0, v2) x [v1, v3) */
    int64_t v[4] = {0, 0, src->w, src->h};
    if (valid) {
        double lim[4] = {(double)src->w, (double)src->h, (double)src->w, (double)src->h};
        for (int k = 0; k < 4; k++) {
            double e = k < 2 ? floor(valid[k] + 1e-9) : ceil(valid[k] - 1e-9);
            v[k] = e < 0 ? 0 : e > lim[k] ? (int64_t)lim[k] : (int64_t)e;
        }
    }
    if (v[2] <= v[0] || v[3] <= v[1])
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "warp: the valid rectangle (%g, %g)-(%g, %g) holds no pixel of the "
                         "%lldx%lld source", valid[0], valid[1], valid[2], valid[3], (long long)src->h, (long long)src->w);
    if (!fill && m[1] == 0 && m[3] == 0) {
        taps ty = {0}, tx = {0};
        if (!warp_taps(m[4], m[5], dst->h, v[1], v[3], &ty) || !warp_taps(m[0], m[2], dst->w, v[0], v[2], &tx))
            st = loom__err(ctx, LOOM_ERR_OOM, "warp: out of memory");
        if (st == LOOM_OK) st = sep_run(ctx, "warp", src, dst, &ty, &tx);
        taps_free(&ty), taps_free(&tx);
        return st;
    }
    /* bilinear; first the box-like prefilter when one output step spans >= 2 source pixels */
    double kx = floor(hypot(m[0], m[1])), ky = floor(hypot(m[3], m[4]));
    if (kx < 2 && ky < 2) {
        warp_bilinear(src, dst, m, v, fill);
        return LOOM_OK;
    }
    if (kx < 1) kx = 1;
    if (ky < 1) ky = 1;
    int64_t vw = v[2] - v[0], vh = v[3] - v[1];
    int64_t nw = (int64_t)ceil((double)vw / kx), nh = (int64_t)ceil((double)vh / ky);
    loom_image pre = {malloc((size_t)(nw * nh * src->c)), nh, nw, src->c};
    if (!pre.data) return loom__err(ctx, LOOM_ERR_OOM, "warp: out of memory for the %lldx%lld prefilter", (long long)nh,
                                    (long long)nw);
    st = loom_tf_resized_crop(ctx, src, v[1], v[0], vh, vw, &pre);
    if (st == LOOM_OK) {
        double sx = (double)nw / (double)vw, sy = (double)nh / (double)vh;
        double m2[6] = {m[0] * sx, m[1] * sx, (m[2] - (double)v[0]) * sx, m[3] * sy, m[4] * sy, (m[5] - (double)v[1]) * sy};
        int64_t v2[4] = {0, 0, nw, nh};
        warp_bilinear(&pre, dst, m2, v2, fill);
    }
    free(pre.data);
    return st;
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
