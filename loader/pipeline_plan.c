/* loader/pipeline_plan.c — planning the per-sample pipeline: each step's
 * checks and output shape (loom__tf_plan), the runs of geometric steps that
 * fuse into one resampling and their composed map (see "fused geometric
 * steps" below), and the part of an image that a fused run reads
 * (loom__tf_region, for decoding only that region).
 */
#include <math.h>

#include "pipeline_impl.h"

const char *loom__tf_name(loom_tf_kind k) {
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
void loom__tf_crop_pads(const loom_tf_step *s, int64_t h, int64_t w, int64_t pad[4]) {
    memcpy(pad, s->pad, sizeof s->pad);
    int64_t H = h + pad[1] + pad[3], W = w + pad[0] + pad[2];
    if (s->pad_if_needed && W < s->w) pad[0] += s->w - W, pad[2] += s->w - W;
    if (s->pad_if_needed && H < s->h) pad[1] += s->h - H, pad[3] += s->h - H;
}

/* ---- the plan ----------------------------------------------------------- */

bool loom__tf_keeps_size(const loom_tf_step *s) {
    return s->kind == LOOM_TF_RANDOM_HFLIP || s->kind == LOOM_TF_RANDOM_VFLIP || s->kind == LOOM_TF_COLOR_JITTER ||
           s->kind == LOOM_TF_RANDOM_AFFINE || loom__tf_resolved(s);
}

/* "RandomCrop (step 3), Resize (step 4)": the steps idx[perm[0..k)] */
static void order_names(const loom_tf_step *steps, const int *idx, const int *perm, int k, char *buf, size_t n) {
    size_t at = 0;
    buf[0] = 0;
    for (int q = 0; q < k && at < n; q++) {
        int j = idx[perm[q]];
        int m = snprintf(buf + at, n - at, "%s%s (step %d)", q ? ", " : "", loom__tf_name(steps[j].kind), j + 1);
        if (m < 0) break;
        at += (size_t)m;
    }
}

/* steps idx[perm[0..k)] one by one from (*h, *w); *mb grows to the largest image */
static loom_status plan_perm(loom_ctx *ctx, const loom_tf_step *steps, const int *idx, const int *perm, int k, int c,
                             int64_t *h, int64_t *w, size_t *mb) {
    for (int q = 0; q < k; q++) {
        size_t b;
        loom_status st = loom__tf_plan(ctx, &steps[idx[perm[q]]], 1, c, *h, *w, h, w, &b);
        if (st != LOOM_OK) return st;
        if (b > *mb) *mb = b;
    }
    return LOOM_OK;
}

/* next permutation of p[0..k) in lexicographic order; false after the last */
static bool next_perm(int *p, int k) {
    int i = k - 2;
    while (i >= 0 && p[i] > p[i + 1]) i--;
    if (i < 0) return false;
    int j = k - 1;
    while (p[j] < p[i]) j--;
    int t = p[i];
    p[i] = p[j], p[j] = t;
    for (int a = i + 1, b = k - 1; a < b; a++, b--) t = p[a], p[a] = p[b], p[b] = t;
    return true;
}

/* The RandomOrder at steps[i] on an (*h, *w, c) image (torchvision's
 * meaning: its steps in any order). The steps that keep the size are
 * checked once; every order of the others is planned, and all orders must
 * end at one size (*mismatch when two do not: the error names them).
 * *h, *w: the output; *mb: the largest image of any order. */
static loom_status plan_order(loom_ctx *ctx, const loom_tf_step *steps, int n, int i, int c, int64_t *h, int64_t *w,
                              size_t *mb, bool *mismatch) {
    const loom_tf_step *s = &steps[i];
    const char *nm = loom__tf_name(s->kind);
    *mismatch = false;
    *mb = (size_t)*h * (size_t)*w * (size_t)c;
    if (s->count < 0 || s->count > LOOM__TF_ORDER_MAX || i + s->count >= n)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s (step %d): %d steps (expected 0..%d, all present)", nm, i + 1,
                         s->count, LOOM__TF_ORDER_MAX);
    int idx[LOOM__TF_ORDER_MAX], k = 0;
    for (int j = i + 1; j <= i + s->count; j++) {
        loom_tf_kind kd = steps[j].kind;
        if (kd == LOOM_TF_RANDOM_ORDER || kd == LOOM_TF_RANDOM_ERASING)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s (step %d): may not hold %s (step %d)", nm, i + 1,
                             loom__tf_name(kd), j + 1);
        if (loom__tf_keeps_size(&steps[j])) {
            int64_t ch, cw;
            size_t b;
            loom_status st = loom__tf_plan(ctx, &steps[j], 1, c, *h, *w, &ch, &cw, &b);
            if (st != LOOM_OK) return st;
        } else {
            idx[k++] = j;
        }
    }
    if (k > LOOM__TF_ORDER_SIZED)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s (step %d): %d steps that change the size (at most %d)", nm, i + 1,
                         k, LOOM__TF_ORDER_SIZED);
    int perm[LOOM__TF_ORDER_SIZED], first[LOOM__TF_ORDER_SIZED];
    for (int q = 0; q < k; q++) perm[q] = first[q] = q;
    int64_t oh = 0, ow = 0;
    for (bool more = true, one = true; more; more = next_perm(perm, k), one = false) {
        int64_t ph = *h, pw = *w;
        char names[400];
        loom_status st = plan_perm(ctx, steps, idx, perm, k, c, &ph, &pw, mb);
        if (st != LOOM_OK) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", loom_last_error(ctx));
            order_names(steps, idx, perm, k, names, sizeof names);
            return loom__err(ctx, st, "%s (step %d), in the order %s on a %lldx%lld image: %s", nm, i + 1, names,
                             (long long)*h, (long long)*w, msg);
        }
        if (one) {
            oh = ph, ow = pw;
        } else if (ph != oh || pw != ow) {
            char a[400];
            order_names(steps, idx, first, k, a, sizeof a);
            order_names(steps, idx, perm, k, names, sizeof names);
            *mismatch = true;
            return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                             "%s (step %d): the order %s turns %lldx%lld into %lldx%lld but the order %s into %lldx%lld "
                             "(every order of its steps must end at one size)",
                             nm, i + 1, a, (long long)*h, (long long)*w, (long long)oh, (long long)ow, names, (long long)ph,
                             (long long)pw);
        }
    }
    *h = oh, *w = ow;
    return LOOM_OK;
}

/* The size after step s when it is known without the input's (RandomCrop,
 * CenterCrop, RandomResizedCrop, Resize((h, w))), or from a known input. */
static bool size_after(loom_ctx *ctx, const loom_tf_step *s, bool known, int64_t *h, int64_t *w) {
    switch (s->kind) {
    case LOOM_TF_RANDOM_CROP:
    case LOOM_TF_CENTER_CROP:
    case LOOM_TF_RANDOM_RESIZED_CROP: *h = s->h, *w = s->w; return true;
    case LOOM_TF_RESIZE:
        if (!s->short_side) {
            *h = s->h, *w = s->w;
            return true;
        }
        return known && s->h >= 1 && loom_tf_resize_size(ctx, *h, *w, s->h, 0, h, w) == LOOM_OK;
    default: return known;
    }
}

loom_status loom__tf_check_orders(loom_ctx *ctx, const char *spec, const loom_tf_step *steps, int n) {
    bool known = false;
    int64_t h = 0, w = 0;
    for (int i = 0; i < n; i++) {
        const loom_tf_step *s = &steps[i];
        if (s->kind != LOOM_TF_RANDOM_ORDER) {
            known = size_after(ctx, s, known, &h, &w);
            continue;
        }
        /* the input the steps before fix, else two large unrelated ones (as the loader plans an ImageFolder) */
        int64_t in[2][2] = {{known ? h : 4099, known ? w : 4093}, {3001, 5003}};
        for (int p = 0; p < (known ? 1 : 2); p++) {
            int64_t ph = in[p][0], pw = in[p][1];
            size_t mb;
            bool mismatch;
            loom_status st = plan_order(ctx, steps, n, i, 3, &ph, &pw, &mb, &mismatch);
            if (mismatch) {
                char msg[1024];
                snprintf(msg, sizeof msg, "%s", loom_last_error(ctx));
                return loom__err(ctx, st, "transform '%s': %s", spec, msg);
            }
            if (p == 0) known = known && st == LOOM_OK, h = ph, w = pw;
        }
        if (s->count > 0) i += s->count;
    }
    return LOOM_OK;
}


loom_status loom__tf_plan(loom_ctx *ctx, const loom_tf_step *steps, int n, int c, int64_t h, int64_t w, int64_t *oh,
                          int64_t *ow, size_t *max_bytes) {
    size_t mx = (size_t)h * (size_t)w * (size_t)c;
    for (int i = 0; i < n; i++) {
        const loom_tf_step *s = &steps[i];
        const char *nm = loom__tf_name(s->kind);
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
            loom__tf_crop_pads(s, h, w, pad);
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
            loom__tf_range_or(s->scale, rrc ? 0.08 : 0.02, rrc ? 1.0 : 0.33, sc);
            loom__tf_range_or(s->ratio, rrc ? 3.0 / 4.0 : 0.3, rrc ? 4.0 / 3.0 : 3.3, ra);
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
                                     nm, i + 1, j + 1, loom__tf_name(steps[j].kind));
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
            size_t b;
            bool mismatch;
            loom_status st = plan_order(ctx, steps, n, i, c, &h, &w, &b, &mismatch);
            if (st != LOOM_OK) return st;
            if (b > mx) mx = b;
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
void loom__tf_resize_out(loom_ctx *ctx, const loom_tf_step *s, int64_t h, int64_t w, int64_t *oh, int64_t *ow) {
    *oh = s->h, *ow = s->w;
    if (s->short_side && loom_tf_resize_size(ctx, h, w, s->h, 0, oh, ow) != LOOM_OK) *oh = s->h, *ow = s->h;
}

/* The end (exclusive) of the fusable run from step i on an (h, w) image. */
int loom__tf_fuse_end(loom_ctx *ctx, const loom_tf_step *steps, int n, int i, int64_t h, int64_t w) {
    int j = i, naff = 0;
    for (; j < n && (geometric(steps[j].kind) || loom__tf_resolved(&steps[j])); j++) {
        const loom_tf_step *s = &steps[j];
        if (loom__tf_resolved(s)) continue;
        if (s->kind == LOOM_TF_RANDOM_AFFINE && naff++) break;
        if (s->kind == LOOM_TF_RANDOM_CROP) {
            int64_t pad[4];
            loom__tf_crop_pads(s, h, w, pad);
            if (pad[0] || pad[1] || pad[2] || pad[3]) break;
        }
        if (s->kind == LOOM_TF_RESIZE) loom__tf_resize_out(ctx, s, h, w, &h, &w);
        else if (s->kind != LOOM_TF_RANDOM_HFLIP && s->kind != LOOM_TF_RANDOM_VFLIP && s->kind != LOOM_TF_RANDOM_AFFINE)
            h = s->h, w = s->w;
    }
    return j;
}

bool loom__tf_run_exact(const loom_tf_step *steps, int i, int j) {
    int resamples = 0;
    for (int k = i; k < j; k++) {
        loom_tf_kind kd = steps[k].kind;
        if (kd == LOOM_TF_RANDOM_AFFINE) return false;
        resamples += kd == LOOM_TF_RESIZE || kd == LOOM_TF_RANDOM_RESIZED_CROP;
    }
    return resamples <= 1;
}

/* m <- m o t */
static void geo_compose(loom__geo *g, const double t[6]) {
    const double *m = g->m;
    double r[6] = {m[0] * t[0] + m[1] * t[3], m[0] * t[1] + m[1] * t[4], m[0] * t[2] + m[1] * t[5] + m[2],
                   m[3] * t[0] + m[4] * t[3], m[3] * t[1] + m[4] * t[4], m[3] * t[2] + m[4] * t[5] + m[5]};
    memcpy(g->m, r, sizeof r);
}

/* Before a RandomAffine the map is axis-aligned: the current image's extent in the source. */
static void geo_valid(loom__geo *g) {
    if (g->affine) return;
    double xa = g->m[2], xb = g->m[0] * (double)g->n[1] + g->m[2];
    double ya = g->m[5], yb = g->m[4] * (double)g->n[0] + g->m[5];
    g->valid[0] = fmin(xa, xb), g->valid[2] = fmax(xa, xb), g->valid[1] = fmin(ya, yb), g->valid[3] = fmax(ya, yb);
}

static void geo_crop(loom__geo *g, int64_t top, int64_t left, int64_t h, int64_t w) {
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

static void geo_flip(loom__geo *g, int a) {
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

static void geo_resize(loom__geo *g, int64_t h, int64_t w) {
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
loom_status loom__geo_build(loom_ctx *ctx, const loom_tf_step *steps, int i, int j, loom__aug_rng *rng,
                            const loom_image *img, loom__geo *out) {
    loom__geo g = {.n = {img->h, img->w}, .exact = true, .m = {1, 0, 0, 0, 1, 0}};
    for (int k = 0; k < 2; k++) g.ax[k] = (loom_tf_axis){0, 1, g.n[k], g.n[k], 0, 1};
    geo_valid(&g);
    for (int k = i; k < j; k++) {
        const loom_tf_step *s = &steps[k];
        int64_t h = g.n[0], w = g.n[1];
        switch (s->kind) {
        case LOOM_TF_RANDOM_CROP: { /* no padding here (fuse_end) */
            int64_t top = loom__aug_int(rng, h - s->h + 1), left = loom__aug_int(rng, w - s->w + 1);
            geo_crop(&g, top, left, s->h, s->w);
            break;
        }
        case LOOM_TF_RANDOM_HFLIP:
        case LOOM_TF_RANDOM_VFLIP:
            if (loom__aug_coin(rng, s->p)) geo_flip(&g, s->kind == LOOM_TF_RANDOM_HFLIP);
            break;
        case LOOM_TF_CENTER_CROP: geo_crop(&g, half_even(h - s->h), half_even(w - s->w), s->h, s->w); break;
        case LOOM_TF_RESIZE: {
            int64_t oh, ow;
            loom__tf_resize_out(ctx, s, h, w, &oh, &ow);
            geo_resize(&g, oh, ow);
            break;
        }
        case LOOM_TF_RANDOM_RESIZED_CROP: {
            int64_t box[4];
            loom__tf_rrc_params(s, rng, h, w, box);
            geo_crop(&g, box[0], box[1], box[2], box[3]);
            geo_resize(&g, s->h, s->w);
            break;
        }
        case LOOM_TF_RANDOM_AFFINE: {
            double p[6], m[6], W = (double)w, H = (double)h;
            loom__tf_affine_params(s, rng, h, w, p);
            loom_tf_affine_inverse(p[0], p[1], p[2], p[3], p[4], p[5], m);
            /* centred index space -> continuous pixel space (centres at i + 0.5) */
            double t[6] = {m[0], m[1], m[2] + W / 2 - m[0] * W / 2 - m[1] * H / 2,
                           m[3], m[4], m[5] + H / 2 - m[3] * W / 2 - m[4] * H / 2};
            geo_compose(&g, t);
            g.exact = false, g.affine = true;
            for (int q = 0; q < 3; q++) g.fill[q] = s->afill[img->c == 3 ? q : 0];
            break;
        }
        case LOOM_TF_RANDOM_ORDER:
            if (loom__tf_resolved(s)) { /* the order's own draw, made already: the same words */
                int perm[LOOM__TF_ORDER_MAX];
                loom__aug_perm(rng, perm, -s->count);
                break;
            }
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "transform step %d (RandomOrder) is not resolved", k + 1);
        default:
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "transform step %d (%s) is not geometric", k + 1,
                             loom__tf_name(s->kind));
        }
    }
    *out = g;
    return LOOM_OK;
}

/* A composed map that only picks pixels (crops and flips, no resampling):
 * where output row / column k is in the source, off + step k. */
bool loom__geo_copy(const loom__geo *g, int64_t off[2], int64_t step[2]) {
    if (!g->exact) return false;
    for (int a = 0; a < 2; a++) {
        const loom_tf_axis *x = &g->ax[a];
        if (g->resampled[a] || x->n_in != x->n_out) return false;
        off[a] = x->pre_off + x->pre_step * x->post_off, step[a] = x->pre_step * x->post_step;
    }
    return true;
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
    /* RandomOrders: this sample's drawn orders (an order that crops before
     * its jitter and affine reads only the crop, as a fixed list would) */
    loom_tf_step flat[LOOM__TF_FLAT_MAX];
    bool ordered = false;
    for (int k = 0; k < n; k++) ordered = ordered || (steps[k].kind == LOOM_TF_RANDOM_ORDER && steps[k].count > 0);
    if (ordered && (n > LOOM__TF_FLAT_MAX || loom__tf_resolve(ctx, steps, n, rng, c, h, w, flat) != LOOM_OK)) return false;
    if (ordered) steps = flat;
    int j = loom__tf_fuse_end(ctx, steps, n, 0, h, w);
    /* a nearest RandomAffine never joins a run (loader/pipeline.c): it reads
     * the image the steps before it made, so the region is theirs */
    for (int k = 0; k < j; k++)
        if (loom__tf_nearest_affine(&steps[k])) j = k;
    if (j < 1) return false;
    loom__aug_rng r = *rng;
    loom__geo g;
    loom_image img = {NULL, h, w, c};
    if (loom__geo_build(ctx, steps, 0, j, &r, &img, &g) != LOOM_OK || !g.exact) return false;
    axis_extent(&g.ax[0], g.n[0], &box[0], &box[2]);
    axis_extent(&g.ax[1], g.n[1], &box[1], &box[3]);
    if (box[0] < 0) box[0] = 0;
    if (box[1] < 0) box[1] = 0;
    if (box[2] > h) box[2] = h;
    if (box[3] > w) box[3] = w;
    return box[0] < box[2] && box[1] < box[3] && (box[2] - box[0]) * (box[3] - box[1]) < h * w;
}
