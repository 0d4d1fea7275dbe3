/* loader/pipeline_spec.c — the parser of torchvision-like transform specs
 * (loom_tf_parse): "RandomCrop(28, padding=4); RandomHorizontalFlip()"
 * into loom_tf_step values.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>

#include "pipeline_impl.h"

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

/* A decimal number at p (as Python writes one: digits, a point, an
 * exponent; no hex, inf or nan, which strtod would take), else false. */
static bool decimal(const char *p, double *x, char **end) {
    const char *q = p;
    if (*q == '+' || *q == '-') q++;
    if (!(*q >= '0' && *q <= '9') && !(*q == '.' && q[1] >= '0' && q[1] <= '9')) return false;
    errno = 0;
    *x = strtod(p, end);
    if (*end == p || errno || !isfinite(*x)) return false;
    for (q = p; q < *end; q++)
        if (!strchr("+-.0123456789eE", *q)) return false;
    return true;
}

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
            double x;
            if (!decimal(t->p, &x, &end) || v->n == 4) return perr(t, "a number (tuples hold up to 4)");
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
    double x;
    if (decimal(t->p, &x, &end)) {
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
                         loom__tf_name(s->kind), key);
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
            return loom__err(t->ctx, LOOM_ERR_INVALID_ARG, "transform '%s': %s needs a size", t->spec, loom__tf_name(s.kind));
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
    loom_status st = parse_list(&t, steps, max, n, false);
    /* a RandomOrder whose orders end at different sizes can never make one batch */
    if (st == LOOM_OK) st = loom__tf_check_orders(ctx, t.spec, steps, *n);
    return st;
}
