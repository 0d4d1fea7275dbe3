/* loader/pipeline_draw.c — the per-sample random stream of the transform
 * pipeline and the parameters each random step draws from it (the layout
 * below); the planner (loader/pipeline_plan.c) and the executor
 * (loader/pipeline.c) draw through these functions only.
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
#include <math.h>

#include "pipeline_impl.h"

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
void loom__tf_range_or(const double in[2], double lo, double hi, double out[2]) {
    bool unset = in[0] == 0 && in[1] == 0;
    out[0] = unset ? lo : in[0], out[1] = unset ? hi : in[1];
}

/* Fisher-Yates over perm[0..n): n - 1 words */
void loom__aug_perm(loom__aug_rng *r, int *perm, int n) {
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)draw_small(r, i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
}

/* uniform integer in [0, n) (n >= 1) */
int64_t loom__aug_int(loom__aug_rng *r, int64_t n) {
    uint64_t x = (uint64_t)loom__aug_u32(r) << 32 | loom__aug_u32(r);
    return (int64_t)(x % (uint64_t)n);
}

/* one word, always drawn: true with probability p (0 = 0.5, < 0 = never) */
bool loom__aug_coin(loom__aug_rng *r, double p) {
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

void loom__tf_rrc_params(const loom_tf_step *s, loom__aug_rng *r, int64_t H, int64_t W, int64_t box[4]) {
    double sc[2], ra[2];
    loom__tf_range_or(s->scale, 0.08, 1.0, sc);
    loom__tf_range_or(s->ratio, 3.0 / 4.0, 4.0 / 3.0, ra);
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

bool loom__tf_erase_params(const loom_tf_step *s, loom__aug_rng *r, int64_t H, int64_t W, int64_t box[4]) {
    if (!loom__aug_coin(r, s->p)) return false;
    double sc[2], ra[2];
    loom__tf_range_or(s->scale, 0.02, 0.33, sc);
    loom__tf_range_or(s->ratio, 0.3, 3.3, ra);
    return box_attempts(r, H, W, sc, ra, true, box);
}

void loom__tf_jitter_params(const loom_tf_step *s, loom__aug_rng *r, int order[4], double f[4]) {
    loom__aug_perm(r, order, 4);
    for (int k = 0; k < 4; k++) f[k] = draw_unif(r, s->jitter[k][0], s->jitter[k][1]);
}

/* angle, tx, ty, scale, shear x, shear y */
void loom__tf_affine_params(const loom_tf_step *s, loom__aug_rng *r, int64_t H, int64_t W, double a[6]) {
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
        out[0] = (double)loom__aug_int(r, h), out[1] = (double)loom__aug_int(r, w); /* as the step, on (h, w) = padded - crop + 1 */
        break;
    case LOOM_TF_RANDOM_HFLIP:
    case LOOM_TF_RANDOM_VFLIP: out[0] = loom__aug_coin(r, s->p); break;
    case LOOM_TF_CENTER_CROP:
    case LOOM_TF_RESIZE: break;
    case LOOM_TF_RANDOM_RESIZED_CROP:
        loom__tf_rrc_params(s, r, h, w, box);
        for (int k = 0; k < 4; k++) out[k] = (double)box[k];
        break;
    case LOOM_TF_COLOR_JITTER:
        loom__tf_jitter_params(s, r, order, out + 4);
        for (int k = 0; k < 4; k++) out[k] = order[k];
        break;
    case LOOM_TF_RANDOM_AFFINE: loom__tf_affine_params(s, r, h, w, out); break;
    case LOOM_TF_RANDOM_ERASING:
        out[0] = loom__tf_erase_params(s, r, h, w, box);
        for (int k = 0; k < 4; k++) out[k + 1] = (double)box[k];
        break;
    case LOOM_TF_RANDOM_ORDER:
        loom__aug_perm(r, order, s->count < 8 ? s->count : 8);
        for (int k = 0; k < 8 && k < s->count; k++) out[k] = order[k];
        break;
    }
}

/* ---- RandomOrder resolved ------------------------------------------------ */

/* The draws of the steps up to the last RandomOrder are replayed on a copy
 * of the stream (each step's words on its input size, as the executor draws
 * them), so that each RandomOrder's words are read where the executor
 * reads them. */
loom_status loom__tf_resolve(loom_ctx *ctx, const loom_tf_step *steps, int n, const loom__aug_rng *rng, int c, int64_t h,
                             int64_t w, loom_tf_step *out) {
    loom__aug_rng r = *rng;
    memcpy(out, steps, (size_t)n * sizeof *out);
    int last = -1;
    for (int i = 0; i < n; i++)
        if (steps[i].kind == LOOM_TF_RANDOM_ORDER && steps[i].count > 0) last = i + steps[i].count;
    for (int i = 0; i < last; i++) {
        loom_tf_step *s = &out[i];
        if (s->kind == LOOM_TF_RANDOM_ORDER) {
            if (s->count <= 0) continue;
            int order[LOOM__TF_ORDER_MAX];
            loom__aug_perm(&r, order, s->count);
            for (int k = 0; k < s->count; k++) out[i + 1 + k] = steps[i + 1 + order[k]];
            s->count = -s->count;
            continue;
        }
        double p[8];
        int64_t oh, ow;
        size_t mb;
        loom__tf_draw(s, &r, h, w, p);
        loom_status st = loom__tf_plan(ctx, s, 1, c, h, w, &oh, &ow, &mb);
        if (st != LOOM_OK) return st;
        h = oh, w = ow;
    }
    return LOOM_OK;
}
