/* loader/pipeline.c — the per-sample transform pipeline of the loader:
 * RandomCrop (with padding), RandomHorizontalFlip, RandomVerticalFlip,
 * CenterCrop, Resize; their per-sample random stream; and the parser of
 * torchvision-like specs. Reference loops (one image at a time; the pool
 * runs many images at once).
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
    if (r->k % 4 == 0) loom_philox(r->seed, r->stream, r->base + (uint64_t)(r->k / 4), r->w);
    return r->w[r->k++ % 4];
}

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
            if (s->h < 1 || s->w < 1 || s->h > 65536 || s->w > 65536)
                return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s (step %d): size %lldx%lld (expected 1..65536)", nm, i + 1,
                                 (long long)s->h, (long long)s->w);
            h = s->h, w = s->w;
            break;
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

loom_status loom__tf_run(loom_ctx *ctx, const loom_tf_step *steps, int n, loom__aug_rng *rng, loom_image *img,
                         uint8_t *a, uint8_t *b) {
    for (int i = 0; i < n; i++) {
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
            if (!coin(rng, s->p)) continue;
            st = s->kind == LOOM_TF_RANDOM_HFLIP ? loom_tf_hflip(ctx, img, &dst) : loom_tf_vflip(ctx, img, &dst);
            break;
        case LOOM_TF_CENTER_CROP:
            dst.h = s->h, dst.w = s->w;
            st = loom_tf_center_crop(ctx, img, &dst);
            break;
        case LOOM_TF_RESIZE:
            dst.h = s->h, dst.w = s->w;
            st = loom_tf_resize(ctx, img, &dst);
            break;
        }
        if (st != LOOM_OK) return st;
        *img = dst;
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
    return LOOM_OK;
}

loom_status loom_tf_parse(loom_ctx *ctx, const char *spec, loom_tf_step *steps, int max, int *n) {
    tparse t = {spec ? spec : "", ctx, spec ? spec : ""};
    *n = 0;
    for (;;) {
        ws(&t);
        if (!*t.p) break;
        char nm[48];
        if (!ident(&t, nm, sizeof nm)) return perr(&t, "a transform name");
        loom_tf_step s = {0};
        if (!strcmp(nm, "randomcrop")) s.kind = LOOM_TF_RANDOM_CROP;
        else if (!strcmp(nm, "randomhorizontalflip") || !strcmp(nm, "hflip")) s.kind = LOOM_TF_RANDOM_HFLIP;
        else if (!strcmp(nm, "randomverticalflip") || !strcmp(nm, "vflip")) s.kind = LOOM_TF_RANDOM_VFLIP;
        else if (!strcmp(nm, "centercrop")) s.kind = LOOM_TF_CENTER_CROP;
        else if (!strcmp(nm, "resize")) s.kind = LOOM_TF_RESIZE;
        else
            return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                             "transform '%s': unknown transform '%s' (RandomCrop, RandomHorizontalFlip, RandomVerticalFlip, "
                             "CenterCrop, Resize)",
                             spec, nm);
        bool flip = s.kind == LOOM_TF_RANDOM_HFLIP || s.kind == LOOM_TF_RANDOM_VFLIP;
        bool has_size = false;
        ws(&t);
        if (*t.p == '(') {
            t.p++;
            for (int pos = 0;; pos++) {
                ws(&t);
                if (*t.p == ')') break;
                char key[32] = "";
                const char *save = t.p;
                if (ident(&t, key, sizeof key)) {
                    ws(&t);
                    if (*t.p == '=') t.p++;
                    else t.p = save, key[0] = 0;
                }
                tval v;
                loom_status st = value(&t, &v);
                if (st != LOOM_OK) return st;
                if (!key[0]) snprintf(key, sizeof key, "%s", pos == 0 ? (flip ? "p" : "size") : pos == 1 ? "padding" : "?");
                if (!strcmp(key, "size") && !flip) {
                    if ((st = set_size(&t, &v, &s)) != LOOM_OK) return st;
                    has_size = true;
                } else if (!strcmp(key, "p") && flip) {
                    if (v.n != 1 || !(v.v[0] >= 0 && v.v[0] <= 1)) return perr(&t, "p in [0, 1]");
                    s.p = v.v[0] == 0 ? -1 : v.v[0];
                } else if (!strcmp(key, "padding") && s.kind == LOOM_TF_RANDOM_CROP) {
                    for (int k = 0; k < v.n; k++)
                        if (!is_int(v.v[k], 0, 1 << 20)) return perr(&t, "padding: non-negative ints");
                    if (v.n == 3 || v.n == 0) return perr(&t, "padding: an int, (lr, tb) or (l, t, r, b)");
                    int64_t a = (int64_t)v.v[0], b2 = (int64_t)v.v[v.n > 1], c2 = (int64_t)v.v[v.n > 2 ? 2 : 0],
                            d2 = (int64_t)v.v[v.n > 2 ? 3 : v.n > 1];
                    if (v.n == 1) b2 = c2 = d2 = a;
                    s.pad[0] = a, s.pad[1] = b2, s.pad[2] = c2, s.pad[3] = d2;
                } else if (!strcmp(key, "pad_if_needed") && s.kind == LOOM_TF_RANDOM_CROP) {
                    if (strcmp(v.name, "true") && strcmp(v.name, "false")) return perr(&t, "True or False");
                    s.pad_if_needed = !strcmp(v.name, "true");
                } else if (!strcmp(key, "fill") && s.kind == LOOM_TF_RANDOM_CROP) {
                    if (v.n != 1 || !is_int(v.v[0], 0, 255)) return perr(&t, "fill: an int in 0..255");
                    s.fill = (uint8_t)v.v[0];
                } else if (!strcmp(key, "padding_mode") && s.kind == LOOM_TF_RANDOM_CROP) {
                    if (!strcmp(v.name, "constant")) s.pad_mode = LOOM_PAD_CONSTANT;
                    else if (!strcmp(v.name, "edge")) s.pad_mode = LOOM_PAD_EDGE;
                    else if (!strcmp(v.name, "reflect")) s.pad_mode = LOOM_PAD_REFLECT;
                    else if (!strcmp(v.name, "symmetric")) s.pad_mode = LOOM_PAD_SYMMETRIC;
                    else return perr(&t, "padding_mode constant, edge, reflect or symmetric");
                } else {
                    return loom__err(ctx, LOOM_ERR_INVALID_ARG, "transform '%s': %s takes no argument '%s'", spec,
                                     tf_name(s.kind), key);
                }
                ws(&t);
                if (*t.p == ',') t.p++;
                else if (*t.p != ')') return perr(&t, "',' or ')'");
            }
            t.p++;
        }
        if (!flip && !has_size)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "transform '%s': %s needs a size", spec, tf_name(s.kind));
        if (*n == max) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "transform '%s': more than %d steps", spec, max);
        steps[(*n)++] = s;
        ws(&t);
        if (*t.p == ',' || *t.p == ';') t.p++;
        else if (*t.p) return perr(&t, "',' or ';' between transforms");
    }
    return LOOM_OK;
}
