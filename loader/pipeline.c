/* loader/pipeline.c — the per-sample transform pipeline of the loader:
 * RandomCrop (with padding), RandomHorizontalFlip, RandomVerticalFlip,
 * CenterCrop, Resize, RandomResizedCrop, ColorJitter, RandomAffine,
 * RandomOrder, RandomErasing (on the tensor); their per-sample random
 * stream; runs of geometric steps fused into one resampling (see "fused
 * geometric steps" below; loom__tf_run_fused); and the parser of
 * torchvision-like specs. Reference loops (one image at a time; the pool
 * runs many images at once).
 *
 * Every draw of sample i in epoch e is one 32-bit word of Philox (seed,
 * "AUGM" + e, counter 16 i + k / 4), word k = 0, 1, ... in pipeline order
 * (64 words per sample; a sample needing more continues at counter
 * 2^63 | i << 16 | (k / 4 - 16), never another sample's). Layout per step:
 *   RandomCrop          top, left: 2 words each (64-bit modulo)
 *   flips               1 word (always drawn)
 *   RandomResizedCrop   per attempt: area, log-ratio (1 word each), and on
 *                       success top, left (1 word each); the fallback draws
 *                       nothing
 *   ColorJitter         order: 3 words (Fisher-Yates), then 4 factors
 *                       (always drawn, also for an adjustment that is off)
 *   RandomAffine        angle, tx, ty, scale, shear x, shear y (always)
 *   RandomOrder         count - 1 words (Fisher-Yates)
 *   RandomErasing       the coin (1 word); if it erases, as RandomResizedCrop
 * A uniform in [lo, hi) is lo + (hi - lo) * u / 2^32; an int in [0, n) is
 * (u * n) >> 32.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>

#include "loader_impl.h"

/* ---- per-sample randomness ---------------------------------------------- */

void loom__aug_init(loom__aug_rng *r, uint64_t seed, int64_t epoch, int64_t sample) {
    r->seed = seed;
    r->stream = LOOM__STREAM_AUG + (uint64_t)epoch;
    r->base = (uint64_t)sample * 16;
    r->k = 0;
}

uint32_t loom__aug_u32(loom__aug_rng *r) {
    if (r->k % 4 == 0) {
        uint64_t ctr = r->k < 64 ? r->base + (uint64_t)(r->k / 4)
                                 : (1ull << 63) | (r->base / 16) << 16 | (uint64_t)(r->k / 4 - 16);
        loom_philox(r->seed, r->stream, ctr, r->w);
    }
    return r->w[r->k++ % 4];
}

/* one word: uniform in [lo, hi) */
static double draw_unif(loom__aug_rng *r, double lo, double hi) {
    return lo + (hi - lo) * ((double)loom__aug_u32(r) * (1.0 / 4294967296.0));
}

/* one word: uniform integer in [0, n), n >= 1 */
static int64_t draw_small(loom__aug_rng *r, int64_t n) {
    return (int64_t)(((uint64_t)loom__aug_u32(r) * (uint64_t)n) >> 32);
}

/* a range, {0, 0} = the default (lo, hi) */
static void range_or(const double in[2], double lo, double hi, double out[2]) {
    bool unset = in[0] == 0 && in[1] == 0;
    out[0] = unset ? lo : in[0], out[1] = unset ? hi : in[1];
}

/* Fisher-Yates over perm[0..n): n - 1 words */
static void draw_perm(loom__aug_rng *r, int *perm, int n) {
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)draw_small(r, i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
}

#define LOOM__TF_ORDER_MAX 16 /* steps one RandomOrder may hold */

/* uniform integer in [0, n) (n >= 1) */
static int64_t draw_int(loom__aug_rng *r, int64_t n) {
    uint64_t x = (uint64_t)loom__aug_u32(r) << 32 | loom__aug_u32(r);
    return (int64_t)(x % (uint64_t)n);
}

static const char *tf_name(loom_tf_kind k) {
    switch (k) {
    case LOOM_TF_RANDOM_CROP: return "RandomCrop";
    case LOOM_TF_RANDOM_HFLIP: return "RandomHorizontalFlip";
    case LOOM_TF_RANDOM_VFLIP: return "RandomVerticalFlip";
    case LOOM_TF_CENTER_CROP: return "CenterCrop";
    case LOOM_TF_RESIZE: return "Resize";
    case LOOM_TF_RANDOM_RESIZED_CROP: return "RandomResizedCrop";
    case LOOM_TF_COLOR_JITTER: return "ColorJitter";
    case LOOM_TF_RANDOM_AFFINE: return "RandomAffine";
    case LOOM_TF_RANDOM_ERASING: return "RandomErasing";
    case LOOM_TF_RANDOM_ORDER: return "RandomOrder";
    }
    return "?";
}

/* ---- RandomCrop --------------------------------------------------------- */

/* The padding of a RandomCrop on an (h, w) image: left, top, right, bottom,
 * with pad_if_needed applied as torchvision does (both sides). */
static void crop_pads(const loom_tf_step *s, int64_t h, int64_t w, int64_t pad[4]) {
    memcpy(pad, s->pad, sizeof s->pad);
    int64_t H = h + pad[1] + pad[3], W = w + pad[0] + pad[2];
    if (s->pad_if_needed && W < s->w) pad[0] += s->w - W, pad[2] += s->w - W;
    if (s->pad_if_needed && H < s->h) pad[1] += s->h - H, pad[3] += s->h - H;
}

/* Index into [0, n) of padded coordinate v (-1 = constant fill). */
static int64_t pad_index(int64_t v, int64_t n, loom_pad_mode m) {
    if (v >= 0 && v < n) return v;
    switch (m) {
    case LOOM_PAD_CONSTANT: return -1;
    case LOOM_PAD_EDGE: return v < 0 ? 0 : n - 1;
    case LOOM_PAD_REFLECT: {
        if (n == 1) return 0;
        int64_t p = 2 * (n - 1);
        v %= p;
        if (v < 0) v += p;
        return v < n ? v : p - v;
    }
    case LOOM_PAD_SYMMETRIC: {
        int64_t p = 2 * n;
        v %= p;
        if (v < 0) v += p;
        return v < n ? v : p - 1 - v;
    }
    }
    return -1;
}

// src (h, w, c) u8, padded by pad[] -> dst (s->h, s->w, c), window at (top, left) of the padded image
static void crop_padded(const loom_image *src, const loom_tf_step *s, const int64_t pad[4], int64_t top, int64_t left,
                        uint8_t *dst) {
    int c = src->c;
    for (int64_t y = 0; y < s->h; y++) {
        int64_t sy = pad_index(top + y - pad[1], src->h, s->pad_mode);
        for (int64_t x = 0; x < s->w; x++) {
            int64_t sx = pad_index(left + x - pad[0], src->w, s->pad_mode);
            uint8_t *o = dst + ((size_t)y * (size_t)s->w + (size_t)x) * (size_t)c;
            if (sy < 0 || sx < 0) {
                memset(o, s->fill, (size_t)c);
            } else {
                const uint8_t *i = src->data + ((size_t)sy * (size_t)src->w + (size_t)sx) * (size_t)c;
                memcpy(o, i, (size_t)c);
            }
        }
    }
}

/* ---- planning and running ----------------------------------------------- */

loom_status loom__tf_plan(loom_ctx *ctx, const loom_tf_step *steps, int n, int c, int64_t h, int64_t w, int64_t *oh,
                          int64_t *ow, size_t *max_bytes) {
    size_t mx = (size_t)h * (size_t)w * (size_t)c;
    for (int i = 0; i < n; i++) {
        const loom_tf_step *s = &steps[i];
        const char *nm = tf_name(s->kind);
        switch (s->kind) {
        case LOOM_TF_RANDOM_CROP: {
            if (s->h < 1 || s->w < 1)
                return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s (step %d): size %lldx%lld (expected >= 1)", nm, i + 1,
                                 (long long)s->h, (long long)s->w);
            for (int k = 0; k < 4; k++)
                if (s->pad[k] < 0)
                    return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s (step %d): padding %lld (expected >= 0)", nm, i + 1,
                                     (long long)s->pad[k]);
            if ((unsigned)s->pad_mode > LOOM_PAD_SYMMETRIC)
                return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s (step %d): padding mode %d", nm, i + 1, (int)s->pad_mode);
            int64_t pad[4];
            crop_pads(s, h, w, pad);
            int64_t H = h + pad[1] + pad[3], W = w + pad[0] + pad[2];
            if (H < s->h || W < s->w)
                return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                                 "%s (step %d): the crop %lldx%lld is larger than the padded image %lldx%lld (input %lldx%lld; "
                                 "pad_if_needed pads it)",
                                 nm, i + 1, (long long)s->h, (long long)s->w, (long long)H, (long long)W, (long long)h,
                                 (long long)w);
            h = s->h, w = s->w;
            break;
        }
        case LOOM_TF_RANDOM_HFLIP:
        case LOOM_TF_RANDOM_VFLIP:
            if (!(s->p <= 1) || isnan(s->p))
                return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s (step %d): p = %g (expected at most 1)", nm, i + 1, s->p);
            break;
        case LOOM_TF_CENTER_CROP:
            if (s->h < 1 || s->w < 1 || s->h > h || s->w > w)
                return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s (step %d): size %lldx%lld on a %lldx%lld image (expected 1.."
                                 "the image's size)",
                                 nm, i + 1, (long long)s->h, (long long)s->w, (long long)h, (long long)w);
            h = s->h, w = s->w;
            break;
        case LOOM_TF_RESIZE:
            if (s->h < 1 || (!s->short_side && s->w < 1) || s->h > 65536 || (!s->short_side && s->w > 65536))
                return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s (step %d): size %lldx%lld (expected 1..65536)", nm, i + 1,
                                 (long long)s->h, (long long)s->w);
            if (s->short_side) {
                loom_status st = loom_tf_resize_size(ctx, h, w, s->h, 0, &h, &w);
                if (st != LOOM_OK) return st;
            } else {
                h = s->h, w = s->w;
            }
            break;
        case LOOM_TF_RANDOM_RESIZED_CROP:
        case LOOM_TF_RANDOM_ERASING: {
            bool rrc = s->kind == LOOM_TF_RANDOM_RESIZED_CROP;
            if (rrc && (s->h < 1 || s->w < 1 || s->h > 65536 || s->w > 65536))
                return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s (step %d): size %lldx%lld (expected 1..65536)", nm, i + 1,
                                 (long long)s->h, (long long)s->w);
            double sc[2], ra[2];
            range_or(s->scale, rrc ? 0.08 : 0.02, rrc ? 1.0 : 0.33, sc);
            range_or(s->ratio, rrc ? 3.0 / 4.0 : 0.3, rrc ? 4.0 / 3.0 : 3.3, ra);
            if (!(sc[0] > 0 && sc[0] <= sc[1] && isfinite(sc[1])) || !(ra[0] > 0 && ra[0] <= ra[1] && isfinite(ra[1])))
                return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                                 "%s (step %d): scale (%g, %g), ratio (%g, %g) (expected 0 < lo <= hi, finite)", nm, i + 1,
                                 sc[0], sc[1], ra[0], ra[1]);
            if (rrc) {
                h = s->h, w = s->w;
                break;
            }
            if (!(s->p <= 1) || isnan(s->p))
                return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s (step %d): p = %g (expected at most 1)", nm, i + 1, s->p);
            if (s->nvalue != 0 && s->nvalue != 1 && s->nvalue != c)
                return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s (step %d): %d values for a %d-channel image (expected 1 or %d)",
                                 nm, i + 1, s->nvalue, c, c);
            for (int j = i + 1; j < n; j++)
                if (steps[j].kind != LOOM_TF_RANDOM_ERASING)
                    return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                                     "%s (step %d) acts on the normalised tensor: it must come after every image step "
                                     "(step %d is %s)",
                                     nm, i + 1, j + 1, tf_name(steps[j].kind));
            break;
        }
        case LOOM_TF_COLOR_JITTER:
            for (int k = 0; k < 4; k++) {
                double lo = s->jitter[k][0], hi = s->jitter[k][1];
                bool ok = k < 3 ? (lo >= 0 && lo <= hi && isfinite(hi)) : (lo >= -0.5 && lo <= hi && hi <= 0.5);
                if (s->jitter_on[k] && !ok)
                    return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s (step %d): %s range (%g, %g) (expected %s)", nm, i + 1,
                                     k == 0 ? "brightness" : k == 1 ? "contrast" : k == 2 ? "saturation" : "hue", lo, hi,
                                     k < 3 ? "0 <= lo <= hi" : "-0.5 <= lo <= hi <= 0.5");
            }
            break;
        case LOOM_TF_RANDOM_AFFINE: {
            bool ok = isfinite(s->degrees[0]) && isfinite(s->degrees[1]) && s->degrees[0] <= s->degrees[1];
            if (s->has_translate)
                ok = ok && s->translate[0] >= 0 && s->translate[0] <= 1 && s->translate[1] >= 0 && s->translate[1] <= 1;
            if (s->has_ascale) ok = ok && s->ascale[0] > 0 && s->ascale[0] <= s->ascale[1] && isfinite(s->ascale[1]);
            ok = ok && (s->nshear == 0 || s->nshear == 2 || s->nshear == 4);
            for (int k = 0; k < s->nshear && ok; k++) ok = fabs(s->shear[k]) < 90 && (k % 2 == 0 || s->shear[k - 1] <= s->shear[k]);
            if (!ok)
                return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                                 "%s (step %d): degrees (%g, %g), translate (%g, %g), scale (%g, %g), %d shear values "
                                 "(expected lo <= hi, translate in [0, 1], scale > 0, 0/2/4 shears within (-90, 90))",
                                 nm, i + 1, s->degrees[0], s->degrees[1], s->translate[0], s->translate[1], s->ascale[0],
                                 s->ascale[1], s->nshear);
            break;
        }
        case LOOM_TF_RANDOM_ORDER: {
            if (s->count < 0 || s->count > LOOM__TF_ORDER_MAX || i + s->count >= n)
                return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s (step %d): %d steps (expected 0..%d, all present)", nm, i + 1,
                                 s->count, LOOM__TF_ORDER_MAX);
            for (int j = i + 1; j <= i + s->count; j++) {
                loom_tf_kind k = steps[j].kind;
                if (k == LOOM_TF_RANDOM_ORDER || k == LOOM_TF_RANDOM_ERASING)
                    return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s (step %d): may not hold %s (step %d)", nm, i + 1,
                                     tf_name(k), j + 1);
                int64_t ch, cw;
                size_t b;
                loom_status st = loom__tf_plan(ctx, &steps[j], 1, c, h, w, &ch, &cw, &b);
                if (st != LOOM_OK) return st;
                if (ch != h || cw != w)
                    return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                                     "%s (step %d): %s (step %d) turns %lldx%lld into %lldx%lld (every step it orders must "
                                     "keep the size)",
                                     nm, i + 1, tf_name(k), j + 1, (long long)h, (long long)w, (long long)ch, (long long)cw);
            }
            i += s->count;
            break;
        }
        default: return loom__err(ctx, LOOM_ERR_INVALID_ARG, "transform step %d: unknown kind %d", i + 1, (int)s->kind);
        }
        size_t b = (size_t)h * (size_t)w * (size_t)c;
        if (b > mx) mx = b;
    }
    *oh = h, *ow = w, *max_bytes = mx;
    return LOOM_OK;
}

static bool coin(loom__aug_rng *r, double p) {
    float u = loom_u32_to_unit(loom__aug_u32(r)); /* drawn even when p says never: a fixed stream layout */
    if (p == 0) p = 0.5;
    return p > 0 && u < p;
}

/* ---- the random steps' parameters ---------------------------------------- */


/* A box of area fraction in sc and aspect w / h log-uniform in ra, 10
 * attempts (RandomResizedCrop.get_params and RandomErasing.get_params): true
 * with box = top, left, h, w when an attempt fits. Erasing needs h < H and
 * w < W, the crop 0 < h <= H and 0 < w <= W. */
static bool box_attempts(loom__aug_rng *r, int64_t H, int64_t W, const double sc[2], const double ra[2], bool erase,
                         int64_t box[4]) {
    double area = (double)H * (double)W, lr0 = log(ra[0]), lr1 = log(ra[1]);
    for (int a = 0; a < 10; a++) {
        double target = area * draw_unif(r, sc[0], sc[1]);
        double aspect = exp(draw_unif(r, lr0, lr1));
        /* Python's int(round(.)): halves to even, as nearbyint */
        double wa = nearbyint(sqrt(target * aspect)), ha = nearbyint(sqrt(target / aspect));
        int64_t w = erase ? (int64_t)ha : (int64_t)wa, h = erase ? (int64_t)wa : (int64_t)ha;
        bool fits = erase ? (h < H && w < W) : (0 < w && w <= W && 0 < h && h <= H);
        if (!fits) continue;
        box[0] = draw_small(r, H - h + 1), box[1] = draw_small(r, W - w + 1), box[2] = h, box[3] = w;
        return true;
    }
    return false;
}

static void rrc_params(const loom_tf_step *s, loom__aug_rng *r, int64_t H, int64_t W, int64_t box[4]) {
    double sc[2], ra[2];
    range_or(s->scale, 0.08, 1.0, sc);
    range_or(s->ratio, 3.0 / 4.0, 4.0 / 3.0, ra);
    if (box_attempts(r, H, W, sc, ra, false, box)) return;
    /* fallback: the centre crop of the largest box with its ratio in range */
    double in_ratio = (double)W / (double)H, rmin = fmin(ra[0], ra[1]), rmax = fmax(ra[0], ra[1]);
    int64_t w = W, h = H;
    if (in_ratio < rmin) h = (int64_t)nearbyint((double)W / rmin);
    else if (in_ratio > rmax) w = (int64_t)nearbyint((double)H * rmax);
    if (h < 1) h = 1;
    if (w < 1) w = 1;
    box[0] = (H - h) / 2, box[1] = (W - w) / 2, box[2] = h, box[3] = w;
}

static bool erase_params(const loom_tf_step *s, loom__aug_rng *r, int64_t H, int64_t W, int64_t box[4]) {
    if (!coin(r, s->p)) return false;
    double sc[2], ra[2];
    range_or(s->scale, 0.02, 0.33, sc);
    range_or(s->ratio, 0.3, 3.3, ra);
    return box_attempts(r, H, W, sc, ra, true, box);
}

static void jitter_params(const loom_tf_step *s, loom__aug_rng *r, int order[4], double f[4]) {
    draw_perm(r, order, 4);
    for (int k = 0; k < 4; k++) f[k] = draw_unif(r, s->jitter[k][0], s->jitter[k][1]);
}

/* angle, tx, ty, scale, shear x, shear y */
static void affine_params(const loom_tf_step *s, loom__aug_rng *r, int64_t H, int64_t W, double a[6]) {
    a[0] = draw_unif(r, s->degrees[0], s->degrees[1]);
    double mx = s->translate[0] * (double)W, my = s->translate[1] * (double)H;
    double tx = draw_unif(r, -mx, mx), ty = draw_unif(r, -my, my), sc = draw_unif(r, s->ascale[0], s->ascale[1]);
    double shx = draw_unif(r, s->shear[0], s->shear[1]), shy = draw_unif(r, s->shear[2], s->shear[3]);
    a[1] = s->has_translate ? nearbyint(tx) : 0;
    a[2] = s->has_translate ? nearbyint(ty) : 0;
    a[3] = s->has_ascale ? sc : 1.0;
    a[4] = s->nshear >= 2 ? shx : 0;
    a[5] = s->nshear == 4 ? shy : 0;
}

void loom__tf_draw(const loom_tf_step *s, loom__aug_rng *r, int64_t h, int64_t w, double out[8]) {
    int64_t box[4] = {0};
    int order[8];
    memset(out, 0, 8 * sizeof *out);
    switch (s->kind) {
    case LOOM_TF_RANDOM_CROP:
        out[0] = (double)draw_int(r, h), out[1] = (double)draw_int(r, w); /* as the step, on (h, w) = padded - crop + 1 */
        break;
    case LOOM_TF_RANDOM_HFLIP:
    case LOOM_TF_RANDOM_VFLIP: out[0] = coin(r, s->p); break;
    case LOOM_TF_CENTER_CROP:
    case LOOM_TF_RESIZE: break;
    case LOOM_TF_RANDOM_RESIZED_CROP:
        rrc_params(s, r, h, w, box);
        for (int k = 0; k < 4; k++) out[k] = (double)box[k];
        break;
    case LOOM_TF_COLOR_JITTER:
        jitter_params(s, r, order, out + 4);
        for (int k = 0; k < 4; k++) out[k] = order[k];
        break;
    case LOOM_TF_RANDOM_AFFINE: affine_params(s, r, h, w, out); break;
    case LOOM_TF_RANDOM_ERASING:
        out[0] = erase_params(s, r, h, w, box);
        for (int k = 0; k < 4; k++) out[k + 1] = (double)box[k];
        break;
    case LOOM_TF_RANDOM_ORDER:
        draw_perm(r, order, s->count < 8 ? s->count : 8);
        for (int k = 0; k < 8 && k < s->count; k++) out[k] = order[k];
        break;
    }
}

/* ---- fused geometric steps ---------------------------------------------- */
/* A run of consecutive geometric steps (Resize, RandomCrop without padding,
 * CenterCrop, flips, RandomResizedCrop, at most one RandomAffine) draws
 * exactly what the steps draw one by one, composes their maps and
 * resamples once:
 *   - crops and flips around at most one resize per axis, no RandomAffine
 *     (Resize(256 short); RandomCrop(224); hflip, or RandomResizedCrop +
 *     hflip): loom_tf_remap, bit-exact against the unfused steps;
 *   - anything else (two resizes on an axis, or a RandomAffine): one affine
 *     map, loom_tf_warp: antialiased separable triangle filter when
 *     axis-aligned (any shrink), bilinear with the fill mask and a box-like
 *     prefilter at >= 2x shrink when rotated. Within interpolation error of
 *     the unfused steps (tests/test-fuse.c states the numbers); a
 *     RandomAffine with nearest interpolation is sampled bilinearly here.
 * A RandomCrop that pads (at this image's size) ends the run. */

static bool geometric(loom_tf_kind k) {
    return k == LOOM_TF_RANDOM_CROP || k == LOOM_TF_RANDOM_HFLIP || k == LOOM_TF_RANDOM_VFLIP ||
           k == LOOM_TF_CENTER_CROP || k == LOOM_TF_RESIZE || k == LOOM_TF_RANDOM_RESIZED_CROP ||
           k == LOOM_TF_RANDOM_AFFINE;
}

/* Resize's output size on an (h, w) image (the plan has checked it). */
static void resize_out(loom_ctx *ctx, const loom_tf_step *s, int64_t h, int64_t w, int64_t *oh, int64_t *ow) {
    *oh = s->h, *ow = s->w;
    if (s->short_side && loom_tf_resize_size(ctx, h, w, s->h, 0, oh, ow) != LOOM_OK) *oh = s->h, *ow = s->h;
}

/* The end (exclusive) of the fusable run from step i on an (h, w) image. */
static int fuse_end(loom_ctx *ctx, const loom_tf_step *steps, int n, int i, int64_t h, int64_t w) {
    int j = i, naff = 0;
    for (; j < n && geometric(steps[j].kind); j++) {
        const loom_tf_step *s = &steps[j];
        if (s->kind == LOOM_TF_RANDOM_AFFINE && naff++) break;
        if (s->kind == LOOM_TF_RANDOM_CROP) {
            int64_t pad[4];
            crop_pads(s, h, w, pad);
            if (pad[0] || pad[1] || pad[2] || pad[3]) break;
        }
        if (s->kind == LOOM_TF_RESIZE) resize_out(ctx, s, h, w, &h, &w);
        else if (s->kind != LOOM_TF_RANDOM_HFLIP && s->kind != LOOM_TF_RANDOM_VFLIP && s->kind != LOOM_TF_RANDOM_AFFINE)
            h = s->h, w = s->w;
    }
    return j;
}

/* The composed map of a run so far. */
typedef struct geo {
    int64_t n[2];       /* current rows, columns */
    bool exact;         /* still loom_tf_remap's form (ax) */
    bool resampled[2];
    loom_tf_axis ax[2];
    double m[6];        /* current continuous point -> source point */
    double valid[4];    /* x0, y0, x1, y1: the source area the run reads */
    bool affine;
    uint8_t fill[3];
} geo;

/* m <- m o t */
static void geo_compose(geo *g, const double t[6]) {
    const double *m = g->m;
    double r[6] = {m[0] * t[0] + m[1] * t[3], m[0] * t[1] + m[1] * t[4], m[0] * t[2] + m[1] * t[5] + m[2],
                   m[3] * t[0] + m[4] * t[3], m[3] * t[1] + m[4] * t[4], m[3] * t[2] + m[4] * t[5] + m[5]};
    memcpy(g->m, r, sizeof r);
}

/* Before a RandomAffine the map is axis-aligned: the current image's extent in the source. */
static void geo_valid(geo *g) {
    if (g->affine) return;
    double xa = g->m[2], xb = g->m[0] * (double)g->n[1] + g->m[2];
    double ya = g->m[5], yb = g->m[4] * (double)g->n[0] + g->m[5];
    g->valid[0] = fmin(xa, xb), g->valid[2] = fmax(xa, xb), g->valid[1] = fmin(ya, yb), g->valid[3] = fmax(ya, yb);
}

static void geo_crop(geo *g, int64_t top, int64_t left, int64_t h, int64_t w) {
    int64_t off[2] = {top, left}, nn[2] = {h, w};
    for (int a = 0; a < 2; a++) {
        loom_tf_axis *x = &g->ax[a];
        if (g->resampled[a]) {
            x->post_off += x->post_step * off[a];
        } else {
            x->pre_off += x->pre_step * off[a];
            x->n_in = x->n_out = nn[a];
        }
        g->n[a] = nn[a];
    }
    geo_compose(g, (double[6]){1, 0, (double)left, 0, 1, (double)top});
    geo_valid(g);
}

static void geo_flip(geo *g, int a) {
    loom_tf_axis *x = &g->ax[a];
    if (g->resampled[a]) {
        x->post_off += x->post_step * (g->n[a] - 1), x->post_step = -x->post_step;
    } else {
        x->pre_off += x->pre_step * (g->n[a] - 1), x->pre_step = -x->pre_step;
    }
    double N = (double)g->n[a];
    geo_compose(g, a == 1 ? (double[6]){-1, 0, N, 0, 1, 0} : (double[6]){1, 0, 0, 0, -1, N});
    geo_valid(g);
}

static void geo_resize(geo *g, int64_t h, int64_t w) {
    int64_t nn[2] = {h, w};
    for (int a = 0; a < 2; a++) {
        if (nn[a] == g->n[a]) continue; /* loom_tf_resize leaves an unchanged axis alone */
        if (g->resampled[a]) g->exact = false;
        g->resampled[a] = true;
        g->ax[a].n_in = g->n[a], g->ax[a].n_out = nn[a], g->ax[a].post_off = 0, g->ax[a].post_step = 1;
    }
    geo_compose(g, (double[6]){(double)g->n[1] / (double)w, 0, 0, 0, (double)g->n[0] / (double)h, 0});
    g->n[0] = h, g->n[1] = w;
    geo_valid(g);
}

static int64_t half_even(int64_t d) { /* Python's int(round(d / 2.0)), d >= 0 */
    int64_t q = d / 2;
    return (d % 2 && q % 2) ? q + 1 : q;
}

/* The composed map of steps i..j-1 on *img; draws as run_one would. */
static loom_status geo_build(loom_ctx *ctx, const loom_tf_step *steps, int i, int j, loom__aug_rng *rng,
                             const loom_image *img, geo *out) {
    geo g = {.n = {img->h, img->w}, .exact = true, .m = {1, 0, 0, 0, 1, 0}};
    for (int k = 0; k < 2; k++) g.ax[k] = (loom_tf_axis){0, 1, g.n[k], g.n[k], 0, 1};
    geo_valid(&g);
    for (int k = i; k < j; k++) {
        const loom_tf_step *s = &steps[k];
        int64_t h = g.n[0], w = g.n[1];
        switch (s->kind) {
        case LOOM_TF_RANDOM_CROP: { /* no padding here (fuse_end) */
            int64_t top = draw_int(rng, h - s->h + 1), left = draw_int(rng, w - s->w + 1);
            geo_crop(&g, top, left, s->h, s->w);
            break;
        }
        case LOOM_TF_RANDOM_HFLIP:
        case LOOM_TF_RANDOM_VFLIP:
            if (coin(rng, s->p)) geo_flip(&g, s->kind == LOOM_TF_RANDOM_HFLIP);
            break;
        case LOOM_TF_CENTER_CROP: geo_crop(&g, half_even(h - s->h), half_even(w - s->w), s->h, s->w); break;
        case LOOM_TF_RESIZE: {
            int64_t oh, ow;
            resize_out(ctx, s, h, w, &oh, &ow);
            geo_resize(&g, oh, ow);
            break;
        }
        case LOOM_TF_RANDOM_RESIZED_CROP: {
            int64_t box[4];
            rrc_params(s, rng, h, w, box);
            geo_crop(&g, box[0], box[1], box[2], box[3]);
            geo_resize(&g, s->h, s->w);
            break;
        }
        case LOOM_TF_RANDOM_AFFINE: {
            double p[6], m[6], W = (double)w, H = (double)h;
            affine_params(s, rng, h, w, p);
            loom_tf_affine_inverse(p[0], p[1], p[2], p[3], p[4], p[5], m);
            /* centred index space -> continuous pixel space (centres at i + 0.5) */
            double t[6] = {m[0], m[1], m[2] + W / 2 - m[0] * W / 2 - m[1] * H / 2,
                           m[3], m[4], m[5] + H / 2 - m[3] * W / 2 - m[4] * H / 2};
            geo_compose(&g, t);
            g.exact = false, g.affine = true;
            for (int q = 0; q < 3; q++) g.fill[q] = s->afill[img->c == 3 ? q : 0];
            break;
        }
        default: return loom__err(ctx, LOOM_ERR_INVALID_ARG, "transform step %d (%s) is not geometric", k + 1, tf_name(s->kind));
        }
    }
    *out = g;
    return LOOM_OK;
}

/* Steps i..j-1 on *img, one resampling; draws as run_one would. */
static loom_status run_fused(loom_ctx *ctx, const loom_tf_step *steps, int i, int j, loom__aug_rng *rng,
                             loom_image *img, uint8_t *a, uint8_t *b) {
    geo g;
    loom_status st = geo_build(ctx, steps, i, j, rng, img, &g);
    if (st != LOOM_OK) return st;
    loom_image dst = {img->data == a ? b : a, g.n[0], g.n[1], img->c};
    st = g.exact ? loom_tf_remap(ctx, img, &dst, g.ax) : loom_tf_warp(ctx, img, &dst, g.m, g.valid, g.affine ? g.fill : NULL);
    if (st == LOOM_OK) *img = dst;
    return st;
}

/* A composed map that only picks pixels (crops and flips, no resampling):
 * where output row / column k is in the source, off + step k. */
static bool geo_copy(const geo *g, int64_t off[2], int64_t step[2]) {
    if (!g->exact) return false;
    for (int a = 0; a < 2; a++) {
        const loom_tf_axis *x = &g->ax[a];
        if (g->resampled[a] || x->n_in != x->n_out) return false;
        off[a] = x->pre_off + x->pre_step * x->post_off, step[a] = x->pre_step * x->post_step;
    }
    return true;
}

/* One step on *img (in a or b): the result lands in the other buffer (or,
 * for multi-pass steps, alternates) and *img points at it. */
static loom_status run_one(loom_ctx *ctx, const loom_tf_step *steps, int i, loom__aug_rng *rng, loom_image *img,
                           uint8_t *a, uint8_t *b) {
    const loom_tf_step *s = &steps[i];
    loom_image dst = {img->data == a ? b : a, img->h, img->w, img->c};
    loom_status st = LOOM_OK;
    switch (s->kind) {
    case LOOM_TF_RANDOM_CROP: {
        int64_t pad[4];
        crop_pads(s, img->h, img->w, pad);
        int64_t H = img->h + pad[1] + pad[3], W = img->w + pad[0] + pad[2];
        int64_t top = draw_int(rng, H - s->h + 1), left = draw_int(rng, W - s->w + 1);
        dst.h = s->h, dst.w = s->w;
        crop_padded(img, s, pad, top, left, dst.data);
        break;
    }
    case LOOM_TF_RANDOM_HFLIP:
    case LOOM_TF_RANDOM_VFLIP:
        if (!coin(rng, s->p)) return LOOM_OK;
        st = s->kind == LOOM_TF_RANDOM_HFLIP ? loom_tf_hflip(ctx, img, &dst) : loom_tf_vflip(ctx, img, &dst);
        break;
    case LOOM_TF_CENTER_CROP:
        dst.h = s->h, dst.w = s->w;
        st = loom_tf_center_crop(ctx, img, &dst);
        break;
    case LOOM_TF_RESIZE:
        resize_out(ctx, s, img->h, img->w, &dst.h, &dst.w);
        st = loom_tf_resize(ctx, img, &dst);
        break;
    case LOOM_TF_RANDOM_RESIZED_CROP: {
        int64_t box[4];
        rrc_params(s, rng, img->h, img->w, box);
        dst.h = s->h, dst.w = s->w;
        st = loom_tf_resized_crop(ctx, img, box[0], box[1], box[2], box[3], &dst);
        break;
    }
    case LOOM_TF_COLOR_JITTER: {
        int order[4];
        double f[4];
        jitter_params(s, rng, order, f);
        for (int k = 0; k < 4 && st == LOOM_OK; k++) {
            int fn = order[k];
            if (!s->jitter_on[fn]) continue;
            loom_image o = {img->data == a ? b : a, img->h, img->w, img->c};
            st = fn == 0   ? loom_tf_adjust_brightness(ctx, img, &o, f[fn])
                 : fn == 1 ? loom_tf_adjust_contrast(ctx, img, &o, f[fn])
                 : fn == 2 ? loom_tf_adjust_saturation(ctx, img, &o, f[fn])
                           : loom_tf_adjust_hue(ctx, img, &o, f[fn]);
            if (st == LOOM_OK) *img = o;
        }
        return st;
    }
    case LOOM_TF_RANDOM_AFFINE: {
        double p[6];
        affine_params(s, rng, img->h, img->w, p);
        uint8_t fill[3] = {s->afill[0], img->c == 3 ? s->afill[1] : s->afill[0], img->c == 3 ? s->afill[2] : s->afill[0]};
        st = loom_tf_affine(ctx, img, &dst, p[0], p[1], p[2], p[3], p[4], p[5], s->nearest, fill);
        break;
    }
    case LOOM_TF_RANDOM_ERASING: return LOOM_OK; /* on the tensor: loom__tf_run_tensor */
    case LOOM_TF_RANDOM_ORDER: {
        int order[LOOM__TF_ORDER_MAX];
        draw_perm(rng, order, s->count);
        for (int k = 0; k < s->count && st == LOOM_OK; k++) st = run_one(ctx, steps, i + 1 + order[k], rng, img, a, b);
        return st;
    }
    }
    if (st != LOOM_OK) return st;
    *img = dst;
    return LOOM_OK;
}

/* The fused tail at step i (loader/tail.c): a ColorJitter, a nearest
 * RandomAffine, or the two in that order; into the tensor when only
 * RandomErasing (applied to the tensor) follows. Returns the steps it
 * covers, 0 when there is no tail here or it would not pay (a lone affine
 * whose result stays u8 is loom_tf_affine's one pass already). */
static int tail_len(const loom_tf_step *steps, int n, int i, const loom__tensor_out *out, bool *to_tensor) {
    int j = i;
    bool jit = steps[j].kind == LOOM_TF_COLOR_JITTER;
    if (jit) j++;
    bool aff = j < n && steps[j].kind == LOOM_TF_RANDOM_AFFINE && steps[j].nearest;
    if (aff) j++;
    bool last = true;
    for (int k = j; k < n; k++) last = last && steps[k].kind == LOOM_TF_RANDOM_ERASING;
    *to_tensor = last && out && out->x;
    if (!jit && !(aff && *to_tensor)) return 0;
    return j - i;
}

/* A tail with no steps (ToTensor + Normalize alone) is worth running: the
 * tensor takes img's channels, three of them, and the vector pass exists. */
static bool empty_tail_pays(const loom__tensor_out *out, const loom_image *img) {
    return out && out->x && out->c == img->c && img->c == 3 && loom__simd_avx2();
}

/* The tail at steps i..i+len-1; view (may be NULL): the crops and flips
 * before it, read through instead of copied (tail.view). */
static loom_status run_tail(loom_ctx *ctx, const loom_tf_step *steps, int i, int len, loom__aug_rng *rng,
                            loom_image *img, uint8_t *a, uint8_t *b, loom__tensor_out *out, const loom__tail_view *view) {
    loom__tail t = {0};
    if (view) t.view = *view;
    else t.view = (loom__tail_view){img->h, img->w, 0, 1, 0, 1};
    int k = i;
    if (len > 0 && steps[k].kind == LOOM_TF_COLOR_JITTER) {
        t.jitter = true;
        jitter_params(&steps[k], rng, t.order, t.f);
        memcpy(t.on, steps[k].jitter_on, sizeof t.on);
        k++;
    }
    if (k < i + len) {
        const loom_tf_step *s = &steps[k];
        t.affine = true;
        affine_params(s, rng, t.view.h, t.view.w, t.p);
        for (int q = 0; q < 3; q++) t.fill[q] = s->afill[img->c == 3 ? q : 0];
    }
    return loom__tail_run(ctx, &t, img, a, b, out);
}

static loom_status run_steps(loom_ctx *ctx, const loom_tf_step *steps, int n, loom__aug_rng *rng, loom_image *img,
                             uint8_t *a, uint8_t *b, bool fuse, loom__tensor_out *out) {
    for (int i = 0; i < n; i++) {
        bool to_tensor = false;
        int t = fuse ? tail_len(steps, n, i, out, &to_tensor) : 0;
        if (t > 0) {
            loom_status st = run_tail(ctx, steps, i, t, rng, img, a, b, to_tensor ? out : NULL, NULL);
            if (st != LOOM_OK) return st;
            i += t - 1;
            continue;
        }
        int j = fuse ? fuse_end(ctx, steps, n, i, img->h, img->w) : i;
        /* a nearest RandomAffine that can be a tail ends the run: the tail
         * (exact, ~0.2 ms for 224x224) instead of a bilinear warp of the
         * whole run (~3 ms) */
        for (int k = i + 1; k < j; k++) {
            bool tt;
            if (tail_len(steps, n, k, out, &tt) > 0) {
                j = k;
                break;
            }
        }
        /* crops and flips (no resampling) right before a tail: the tail reads
         * through them; also right before the end (nothing but RandomErasing
         * follows), where an empty tail does ToTensor + Normalize through them */
        int t2 = j > i && j < n ? tail_len(steps, n, j, out, &to_tensor) : 0;
        bool to_end = j > i && t2 == 0 && empty_tail_pays(out, img);
        for (int k = j; k < n && to_end; k++) to_end = steps[k].kind == LOOM_TF_RANDOM_ERASING;
        if (to_end) to_tensor = true;
        if (t2 > 0 || to_end) {
            loom__aug_rng saved = *rng;
            geo g;
            int64_t off[2], step[2];
            loom_status st = geo_build(ctx, steps, i, j, rng, img, &g);
            if (st != LOOM_OK) return st;
            if (geo_copy(&g, off, step)) {
                loom__tail_view v = {g.n[0], g.n[1], off[0], step[0], off[1], step[1]};
                st = run_tail(ctx, steps, j, t2, rng, img, a, b, to_tensor ? out : NULL, &v);
                if (st != LOOM_OK) return st;
                i = j + t2 - 1;
                continue;
            }
            *rng = saved; /* resampling: the usual fused pass below draws again */
        }
        if (j - i >= 2) {
            loom_status st = run_fused(ctx, steps, i, j, rng, img, a, b);
            if (st != LOOM_OK) return st;
            i = j - 1;
            continue;
        }
        loom_status st = run_one(ctx, steps, i, rng, img, a, b);
        if (st != LOOM_OK) return st;
        if (steps[i].kind == LOOM_TF_RANDOM_ORDER) i += steps[i].count;
    }
    return LOOM_OK;
}

loom_status loom__tf_run(loom_ctx *ctx, const loom_tf_step *steps, int n, loom__aug_rng *rng, loom_image *img,
                         uint8_t *a, uint8_t *b) {
    return run_steps(ctx, steps, n, rng, img, a, b, false, NULL);
}

loom_status loom__tf_run_fused(loom_ctx *ctx, const loom_tf_step *steps, int n, loom__aug_rng *rng, loom_image *img,
                               uint8_t *a, uint8_t *b, loom__tensor_out *out) {
    if (out) out->done = false;
    loom_status st = run_steps(ctx, steps, n, rng, img, a, b, true, out);
    if (st == LOOM_OK && empty_tail_pays(out, img) && !out->done) {
        /* ToTensor + Normalize still to do: the tail's vector pass with no steps */
        loom__tail t = {.view = {img->h, img->w, 0, 1, 0, 1}};
        st = loom__tail_run(ctx, &t, img, a, b, out);
    }
    return st;
}

/* The source indices [*lo, *hi) that an exact axis reads for outputs
 * 0..n-1: loom_tf_remap's taps (axis_make's first / count in
 * loader/transforms.c), two more each side. */
static void axis_extent(const loom_tf_axis *a, int64_t n, int64_t *lo, int64_t *hi) {
    int64_t r0 = a->post_off, r1 = a->post_off + a->post_step * (n - 1);
    if (r0 > r1) {
        int64_t t = r0;
        r0 = r1, r1 = t;
    }
    int64_t l = r0, h = r1 + 1; /* virtual inputs read */
    if (a->n_in != a->n_out) {
        double scale = (double)a->n_in / (double)a->n_out, support = scale >= 1.0 ? scale : 1.0;
        l = (int64_t)floor(scale * ((double)r0 + 0.5) - support + 0.5);
        h = (int64_t)floor(scale * ((double)r1 + 0.5) + support + 0.5);
    }
    l -= 2, h += 2;
    if (l < 0) l = 0;
    if (h > a->n_in) h = a->n_in;
    if (a->pre_step > 0) *lo = a->pre_off + l, *hi = a->pre_off + h;
    else *lo = a->pre_off - (h - 1), *hi = a->pre_off - l + 1;
}

bool loom__tf_region(loom_ctx *ctx, const loom_tf_step *steps, int n, const loom__aug_rng *rng, int c, int64_t h,
                     int64_t w, int64_t box[4]) {
    int64_t oh, ow;
    size_t mb;
    if (n < 1 || steps[0].kind == LOOM_TF_COLOR_JITTER || steps[0].kind == LOOM_TF_RANDOM_AFFINE ||
        loom__tf_plan(ctx, steps, n, c, h, w, &oh, &ow, &mb) != LOOM_OK)
        return false;
    int j = fuse_end(ctx, steps, n, 0, h, w);
    if (j < 1) return false;
    loom__aug_rng r = *rng;
    geo g;
    loom_image img = {NULL, h, w, c};
    if (geo_build(ctx, steps, 0, j, &r, &img, &g) != LOOM_OK || !g.exact) return false;
    axis_extent(&g.ax[0], g.n[0], &box[0], &box[2]);
    axis_extent(&g.ax[1], g.n[1], &box[1], &box[3]);
    if (box[0] < 0) box[0] = 0;
    if (box[1] < 0) box[1] = 0;
    if (box[2] > h) box[2] = h;
    if (box[3] > w) box[3] = w;
    return box[0] < box[2] && box[1] < box[3] && (box[2] - box[0]) * (box[3] - box[1]) < h * w;
}

loom_status loom__tf_run_tensor(loom_ctx *ctx, const loom_tf_step *steps, int n, loom__aug_rng *rng, float *x, int c,
                                int64_t h, int64_t w) {
    for (int i = 0; i < n; i++) {
        const loom_tf_step *s = &steps[i];
        if (s->kind != LOOM_TF_RANDOM_ERASING) continue;
        int64_t box[4];
        if (!erase_params(s, rng, h, w, box)) continue;
        static const float zero = 0.0f;
        loom_status st = loom_tf_erase(ctx, x, c, h, w, box[0], box[1], box[2], box[3], s->nvalue ? s->value : &zero,
                                       s->nvalue ? s->nvalue : 1);
        if (st != LOOM_OK) return st;
    }
    return LOOM_OK;
}

/* ---- the parser --------------------------------------------------------- */

typedef struct tparse {
    const char *p;
    loom_ctx *ctx;
    const char *spec;
} tparse;

static void ws(tparse *t) {
    while (isspace((unsigned char)*t->p)) t->p++;
}

static loom_status perr(tparse *t, const char *what) {
    return loom__err(t->ctx, LOOM_ERR_INVALID_ARG, "transform '%s': expected %s at '%.20s'", t->spec, what, t->p);
}

/* An identifier into buf (lower-cased). */
static bool ident(tparse *t, char *buf, size_t n) {
    ws(t);
    size_t k = 0;
    while ((isalnum((unsigned char)*t->p) || *t->p == '_') && k + 1 < n) buf[k++] = (char)tolower((unsigned char)*t->p++);
    buf[k] = 0;
    return k > 0;
}

/* A value: a number, a name, or a tuple of up to 4 numbers. */
typedef struct tval {
    int n;          /* numbers (0 = a name) */
    double v[4];
    char name[32];
} tval;

static loom_status value(tparse *t, tval *v) {
    ws(t);
    memset(v, 0, sizeof *v);
    if (*t->p == '(' || *t->p == '[') {
        char close = *t->p == '(' ? ')' : ']';
        t->p++;
        for (;;) {
            ws(t);
            if (*t->p == close) break;
            char *end;
            errno = 0;
            double x = strtod(t->p, &end);
            if (end == t->p || errno || v->n == 4) return perr(t, "a number (tuples hold up to 4)");
            v->v[v->n++] = x;
            t->p = end;
            ws(t);
            if (*t->p == ',') t->p++;
        }
        t->p++;
        if (v->n == 0) return perr(t, "a non-empty tuple");
        return LOOM_OK;
    }
    char *end;
    errno = 0;
    double x = strtod(t->p, &end);
    if (end != t->p && !errno) {
        v->n = 1, v->v[0] = x;
        t->p = end;
        return LOOM_OK;
    }
    if (!ident(t, v->name, sizeof v->name)) return perr(t, "a value");
    return LOOM_OK;
}

static bool is_int(double x, double lo, double hi) { return x == floor(x) && x >= lo && x <= hi; }

/* size: an int s -> (s, s); a pair (h, w) */
static loom_status set_size(tparse *t, const tval *v, loom_tf_step *s) {
    if ((v->n != 1 && v->n != 2) || !is_int(v->v[0], 1, 1 << 20) || !is_int(v->v[v->n - 1], 1, 1 << 20))
        return perr(t, "a size: a positive int or (h, w)");
    s->h = (int64_t)v->v[0], s->w = (int64_t)v->v[v->n - 1];
    /* torchvision: Resize(int) sets the shorter side (the longer keeps the aspect), Resize((h, w)) both */
    if (s->kind == LOOM_TF_RESIZE) s->short_side = v->n == 1;
    return LOOM_OK;
}

/* Positional argument pos of a step (torchvision's parameter order). */
static const char *pos_key(loom_tf_kind k, int pos) {
    static const char *const rrc[] = {"size", "scale", "ratio"}, *const cj[] = {"brightness", "contrast", "saturation", "hue"},
                             *const af[] = {"degrees", "translate", "scale", "shear"},
                             *const er[] = {"p", "scale", "ratio", "value"}, *const crop[] = {"size", "padding"};
    switch (k) {
    case LOOM_TF_RANDOM_HFLIP:
    case LOOM_TF_RANDOM_VFLIP: return pos == 0 ? "p" : "?";
    case LOOM_TF_RANDOM_RESIZED_CROP: return pos < 3 ? rrc[pos] : "?";
    case LOOM_TF_COLOR_JITTER: return pos < 4 ? cj[pos] : "?";
    case LOOM_TF_RANDOM_AFFINE: return pos < 4 ? af[pos] : "?";
    case LOOM_TF_RANDOM_ERASING: return pos < 4 ? er[pos] : "?";
    case LOOM_TF_RANDOM_ORDER: return pos == 0 ? "transforms" : "?";
    default: return pos < 2 ? crop[pos] : "?";
    }
}

/* a (lo, hi) pair with lo <= hi (and lo > 0 when positive) */
static loom_status set_range(tparse *t, const tval *v, double out[2], bool positive) {
    if (v->n != 2 || !(v->v[0] <= v->v[1]) || (positive && !(v->v[0] > 0)))
        return perr(t, positive ? "a range (lo, hi) with 0 < lo <= hi" : "a range (lo, hi) with lo <= hi");
    out[0] = v->v[0], out[1] = v->v[1];
    return LOOM_OK;
}

static loom_status parse_list(tparse *t, loom_tf_step *steps, int max, int *n, bool nested);

/* ColorJitter's brightness / contrast / saturation (k < 3) or hue (k = 3):
 * x -> [max(0, 1 - x), 1 + x] or [-x, x]; a pair as it is; off when it is
 * the identity (torchvision's None). */
static loom_status set_jitter(tparse *t, const tval *v, loom_tf_step *s, int k) {
    double lo, hi, centre = k < 3 ? 1.0 : 0.0;
    if (v->n == 1) {
        if (!(v->v[0] >= 0) || (k == 3 && v->v[0] > 0.5)) return perr(t, k < 3 ? "a factor >= 0" : "hue in [0, 0.5]");
        lo = centre - v->v[0], hi = centre + v->v[0];
        if (k < 3 && lo < 0) lo = 0;
    } else if (v->n == 2 && v->v[0] <= v->v[1]) {
        lo = v->v[0], hi = v->v[1];
        if (k < 3 ? !(lo >= 0) : !(lo >= -0.5 && hi <= 0.5))
            return perr(t, k < 3 ? "a range within [0, inf)" : "a hue range within [-0.5, 0.5]");
    } else {
        return perr(t, "a number or a range (lo, hi)");
    }
    s->jitter[k][0] = lo, s->jitter[k][1] = hi;
    s->jitter_on[k] = !(lo == centre && hi == centre);
    return LOOM_OK;
}

/* One key = value of step s (kind set); steps/max/n for RandomOrder's list,
 * which goes into steps after s's own slot. */
static loom_status set_arg(tparse *t, loom_tf_step *s, const char *key, bool *has_size, bool *has_deg) {
    loom_status st;
    tval v;
    bool flip = s->kind == LOOM_TF_RANDOM_HFLIP || s->kind == LOOM_TF_RANDOM_VFLIP;
    bool sized = s->kind == LOOM_TF_RANDOM_CROP || s->kind == LOOM_TF_CENTER_CROP || s->kind == LOOM_TF_RESIZE ||
                 s->kind == LOOM_TF_RANDOM_RESIZED_CROP;
    if ((st = value(t, &v)) != LOOM_OK) return st;
    if (!strcmp(key, "size") && sized) {
        if ((st = set_size(t, &v, s)) != LOOM_OK) return st;
        *has_size = true;
    } else if (!strcmp(key, "p") && (flip || s->kind == LOOM_TF_RANDOM_ERASING)) {
        if (v.n != 1 || !(v.v[0] >= 0 && v.v[0] <= 1)) return perr(t, "p in [0, 1]");
        s->p = v.v[0] == 0 ? -1 : v.v[0];
    } else if ((!strcmp(key, "scale") || !strcmp(key, "ratio")) &&
               (s->kind == LOOM_TF_RANDOM_RESIZED_CROP || s->kind == LOOM_TF_RANDOM_ERASING)) {
        return set_range(t, &v, !strcmp(key, "scale") ? s->scale : s->ratio, true);
    } else if (s->kind == LOOM_TF_COLOR_JITTER &&
               (!strcmp(key, "brightness") || !strcmp(key, "contrast") || !strcmp(key, "saturation") || !strcmp(key, "hue"))) {
        int k = key[0] == 'b' ? 0 : key[0] == 'c' ? 1 : key[0] == 's' ? 2 : 3;
        return set_jitter(t, &v, s, k);
    } else if (s->kind == LOOM_TF_RANDOM_AFFINE && !strcmp(key, "degrees")) {
        if (v.n == 1) {
            if (!(v.v[0] >= 0)) return perr(t, "degrees >= 0");
            s->degrees[0] = -v.v[0], s->degrees[1] = v.v[0];
        } else if ((st = set_range(t, &v, s->degrees, false)) != LOOM_OK) {
            return st;
        }
        *has_deg = true;
    } else if (s->kind == LOOM_TF_RANDOM_AFFINE && !strcmp(key, "translate")) {
        if (v.n != 2 || !(v.v[0] >= 0 && v.v[0] <= 1 && v.v[1] >= 0 && v.v[1] <= 1))
            return perr(t, "translate (a, b) in [0, 1]");
        s->translate[0] = v.v[0], s->translate[1] = v.v[1], s->has_translate = true;
    } else if (s->kind == LOOM_TF_RANDOM_AFFINE && !strcmp(key, "scale")) {
        if ((st = set_range(t, &v, s->ascale, true)) != LOOM_OK) return st;
        s->has_ascale = true;
    } else if (s->kind == LOOM_TF_RANDOM_AFFINE && !strcmp(key, "shear")) {
        if (v.n == 1) {
            if (!(v.v[0] >= 0)) return perr(t, "shear >= 0");
            s->shear[0] = -v.v[0], s->shear[1] = v.v[0], s->nshear = 2;
        } else if (v.n == 2 || v.n == 4) {
            for (int k = 0; k < v.n; k++) s->shear[k] = v.v[k];
            s->nshear = v.n;
        } else {
            return perr(t, "shear: a number, (lo, hi) or (xlo, xhi, ylo, yhi)");
        }
    } else if (s->kind == LOOM_TF_RANDOM_AFFINE && !strcmp(key, "interpolation")) {
        if (!strcmp(v.name, "nearest")) s->nearest = true;
        else if (!strcmp(v.name, "bilinear")) s->nearest = false;
        else return perr(t, "interpolation nearest or bilinear");
    } else if (s->kind == LOOM_TF_RANDOM_AFFINE && !strcmp(key, "fill")) {
        if (v.n != 1 && v.n != 3) return perr(t, "fill: an int in 0..255 or 3 of them");
        for (int k = 0; k < v.n; k++)
            if (!is_int(v.v[k], 0, 255)) return perr(t, "fill: ints in 0..255");
        for (int k = 0; k < 3; k++) s->afill[k] = (uint8_t)v.v[v.n == 3 ? k : 0];
    } else if (s->kind == LOOM_TF_RANDOM_ERASING && !strcmp(key, "value")) {
        if (v.n != 1 && v.n != 3) return perr(t, "value: a number or 3 of them (\"random\" is not supported)");
        for (int k = 0; k < v.n; k++) s->value[k] = (float)v.v[k];
        s->nvalue = v.n;
    } else if (!strcmp(key, "padding") && s->kind == LOOM_TF_RANDOM_CROP) {
        for (int k = 0; k < v.n; k++)
            if (!is_int(v.v[k], 0, 1 << 20)) return perr(t, "padding: non-negative ints");
        if (v.n == 3 || v.n == 0) return perr(t, "padding: an int, (lr, tb) or (l, t, r, b)");
        int64_t a = (int64_t)v.v[0], b2 = (int64_t)v.v[v.n > 1], c2 = (int64_t)v.v[v.n > 2 ? 2 : 0],
                d2 = (int64_t)v.v[v.n > 2 ? 3 : v.n > 1];
        if (v.n == 1) b2 = c2 = d2 = a;
        s->pad[0] = a, s->pad[1] = b2, s->pad[2] = c2, s->pad[3] = d2;
    } else if (!strcmp(key, "pad_if_needed") && s->kind == LOOM_TF_RANDOM_CROP) {
        if (strcmp(v.name, "true") && strcmp(v.name, "false")) return perr(t, "True or False");
        s->pad_if_needed = !strcmp(v.name, "true");
    } else if (!strcmp(key, "fill") && s->kind == LOOM_TF_RANDOM_CROP) {
        if (v.n != 1 || !is_int(v.v[0], 0, 255)) return perr(t, "fill: an int in 0..255");
        s->fill = (uint8_t)v.v[0];
    } else if (!strcmp(key, "padding_mode") && s->kind == LOOM_TF_RANDOM_CROP) {
        if (!strcmp(v.name, "constant")) s->pad_mode = LOOM_PAD_CONSTANT;
        else if (!strcmp(v.name, "edge")) s->pad_mode = LOOM_PAD_EDGE;
        else if (!strcmp(v.name, "reflect")) s->pad_mode = LOOM_PAD_REFLECT;
        else if (!strcmp(v.name, "symmetric")) s->pad_mode = LOOM_PAD_SYMMETRIC;
        else return perr(t, "padding_mode constant, edge, reflect or symmetric");
    } else {
        return loom__err(t->ctx, LOOM_ERR_INVALID_ARG, "transform '%s': %s takes no argument '%s'", t->spec,
                         tf_name(s->kind), key);
    }
    return LOOM_OK;
}

static const struct {
    const char *name;
    loom_tf_kind kind;
} kinds[] = {
    {"randomcrop", LOOM_TF_RANDOM_CROP},     {"randomhorizontalflip", LOOM_TF_RANDOM_HFLIP},
    {"hflip", LOOM_TF_RANDOM_HFLIP},         {"randomverticalflip", LOOM_TF_RANDOM_VFLIP},
    {"vflip", LOOM_TF_RANDOM_VFLIP},         {"centercrop", LOOM_TF_CENTER_CROP},
    {"resize", LOOM_TF_RESIZE},              {"randomresizedcrop", LOOM_TF_RANDOM_RESIZED_CROP},
    {"colorjitter", LOOM_TF_COLOR_JITTER},   {"randomaffine", LOOM_TF_RANDOM_AFFINE},
    {"randomerasing", LOOM_TF_RANDOM_ERASING}, {"randomorder", LOOM_TF_RANDOM_ORDER},
};

/* Steps until the end (or, nested, until ']'), separated by ',' or ';'. */
static loom_status parse_list(tparse *t, loom_tf_step *steps, int max, int *n, bool nested) {
    for (;;) {
        ws(t);
        if (!*t->p || (nested && *t->p == ']')) break;
        char nm[48];
        if (!ident(t, nm, sizeof nm)) return perr(t, "a transform name");
        loom_tf_step s = {0};
        size_t kk = 0;
        while (kk < sizeof kinds / sizeof *kinds && strcmp(nm, kinds[kk].name)) kk++;
        if (kk == sizeof kinds / sizeof *kinds)
            return loom__err(t->ctx, LOOM_ERR_INVALID_ARG,
                             "transform '%s': unknown transform '%s' (RandomCrop, RandomHorizontalFlip, RandomVerticalFlip, "
                             "CenterCrop, Resize, RandomResizedCrop, ColorJitter, RandomAffine, RandomErasing, RandomOrder)",
                             t->spec, nm);
        s.kind = kinds[kk].kind;
        s.nearest = s.kind == LOOM_TF_RANDOM_AFFINE; /* torchvision's RandomAffine interpolates NEAREST by default */
        bool sized = s.kind == LOOM_TF_RANDOM_CROP || s.kind == LOOM_TF_CENTER_CROP || s.kind == LOOM_TF_RESIZE ||
                     s.kind == LOOM_TF_RANDOM_RESIZED_CROP;
        bool has_size = false, has_deg = false, has_list = false;
        int at = *n;
        if (*n == max) return loom__err(t->ctx, LOOM_ERR_INVALID_ARG, "transform '%s': more than %d steps", t->spec, max);
        (*n)++; /* s's slot; RandomOrder's steps follow it */
        ws(t);
        if (*t->p == '(') {
            t->p++;
            for (int pos = 0;; pos++) {
                ws(t);
                if (*t->p == ')') break;
                char key[32] = "";
                const char *save = t->p;
                if (ident(t, key, sizeof key)) {
                    ws(t);
                    if (*t->p == '=') t->p++;
                    else t->p = save, key[0] = 0;
                }
                if (!key[0]) snprintf(key, sizeof key, "%s", pos_key(s.kind, pos));
                loom_status st;
                if (s.kind == LOOM_TF_RANDOM_ORDER && !strcmp(key, "transforms")) {
                    ws(t);
                    if (*t->p != '[') return perr(t, "'[' and a list of transforms");
                    t->p++;
                    int before = *n;
                    if ((st = parse_list(t, steps, max, n, true)) != LOOM_OK) return st;
                    if (*t->p != ']') return perr(t, "']'");
                    t->p++;
                    s.count = *n - before;
                    has_list = true;
                } else if ((st = set_arg(t, &s, key, &has_size, &has_deg)) != LOOM_OK) {
                    return st;
                }
                ws(t);
                if (*t->p == ',') t->p++;
                else if (*t->p != ')') return perr(t, "',' or ')'");
            }
            t->p++;
        }
        if (sized && !has_size)
            return loom__err(t->ctx, LOOM_ERR_INVALID_ARG, "transform '%s': %s needs a size", t->spec, tf_name(s.kind));
        if (s.kind == LOOM_TF_RANDOM_AFFINE && !has_deg)
            return loom__err(t->ctx, LOOM_ERR_INVALID_ARG, "transform '%s': RandomAffine needs degrees", t->spec);
        if (s.kind == LOOM_TF_RANDOM_ORDER && !has_list)
            return loom__err(t->ctx, LOOM_ERR_INVALID_ARG, "transform '%s': RandomOrder needs a list [...]", t->spec);
        steps[at] = s;
        ws(t);
        if (*t->p == ',' || *t->p == ';') t->p++;
        else if (*t->p && !(nested && *t->p == ']')) return perr(t, "',' or ';' between transforms");
    }
    return LOOM_OK;
}

loom_status loom_tf_parse(loom_ctx *ctx, const char *spec, loom_tf_step *steps, int max, int *n) {
    tparse t = {spec ? spec : "", ctx, spec ? spec : ""};
    *n = 0;
    return parse_list(&t, steps, max, n, false);
}
