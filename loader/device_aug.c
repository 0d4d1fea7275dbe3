/* loader/device_aug.c — device augmentation (loom_loader_desc.device_augment):
 * which trailing steps of a pipeline run on the training backend, and each
 * sample's row of augment_u8's parameter table (core/ops/augment.c), drawn
 * from the sample's own Philox stream exactly as the host's steps draw it,
 * so that the backend's batch has the host path's bits.
 *
 * The device part composes crops and flips into one map per axis: output
 * (y, x) reads host-result pixel (ROW0 + RSTEP y, COL0 + CSTEP x), inside
 * the window [Y0, Y1) x [X0, X1) (the part of the host result that is not
 * padding of an earlier crop); elsewhere the fill. A ColorJitter must
 * come last: it also changes the padding, and contrast's mean is of the
 * whole image, padding included, as on the host. Its adjustments go into
 * the table in the sample's drawn order (LOOM_G_AUG_JITTER), with the f32
 * factors the host's adjustments round theirs to (loader/transforms.c).
 * A nearest RandomAffine may follow as the very last step (after the
 * jitter, if any): the table holds its inverse matrix (the host's
 * loom_tf_affine_inverse of the same draws, as doubles) and fill, and the
 * op picks the source pixel with the host's double arithmetic; on a
 * backend without 64-bit floats it stays on the host.
 *
 * Images of one size (a source with h, w > 0) whose pipeline is a Resize
 * and then device steps only: the Resize runs on the device too, as
 * resize_u8 (core/ops/resize.c) with the host Resize's own fixed-point taps
 * (loom__tf_resize_taps), so the host only decodes and the batch keeps the
 * host path's bits. Images of different sizes keep it on the host (the
 * device graph has one input size).
 */
#include "device_aug.h"

#include <stdio.h>
#include <string.h>

#include "../core/backend_impl.h"
#include "pipeline_impl.h"

_Static_assert(LOOM_G_AUG_COUNT == 32, "loom_loader_batch.prm documents 32 columns");
_Static_assert(LOOM_G_AUG_M + 12 <= LOOM_G_AUG_AFILL && LOOM_G_AUG_AFILL < LOOM_G_AUG_COUNT, "the affine's columns");
_Static_assert(LOOM_K_AUG_BRIGHT == 1 && LOOM_K_AUG_CONTRAST == 2 && LOOM_K_AUG_SAT == 3 && LOOM_K_AUG_HUE == 4,
               "the jitter codes are 1 + the host's adjustment index (loom__tf_jitter_params)");

bool loom_loader_device_capable(const loom_tf_step *steps, int n) {
    for (int i = 0; i < n; i++)
        if (steps[i].kind == LOOM_TF_RANDOM_ERASING) return false;
    return true;
}

/* what a RandomCrop pads with, or -1 when it never pads */
static int crop_fill(const loom_tf_step *s) {
    bool pads = s->pad_if_needed || s->pad[0] || s->pad[1] || s->pad[2] || s->pad[3];
    return pads ? s->fill : -1;
}

/* a ColorJitter the device runs on images of c channels: brightness on
 * any, contrast, saturation and hue on gray or RGB (as the host defines them) */
static bool device_jitter(const loom_tf_step *s, int c) {
    return s->kind == LOOM_TF_COLOR_JITTER &&
           (c == 1 || c == 3 || (!s->jitter_on[1] && !s->jitter_on[2] && !s->jitter_on[3]));
}

/* a RandomAffine the device runs on images of c channels: nearest (bilinear
 * stays on the host), 1..3 channels (the host's fill has three) */
static bool device_affine(const loom_tf_step *s, int c) {
    return loom__tf_nearest_affine(s) && c <= 3;
}

loom_status loom__dev_plan(loom_ctx *ctx, const loom_tf_step *steps, int n, int c, bool f64, loom__dev_split *out) {
    for (int i = 0; i < n; i++)
        if (steps[i].kind == LOOM_TF_RANDOM_ERASING)
            return loom__err(ctx, LOOM_ERR_UNSUPPORTED, "loader: device augmentation: step %d (RandomErasing) acts on "
                             "the normalised tensor, which the device part does not run (augment on the host)", i + 1);
    int split = n, fill = -1;
    out->affine = out->affine_host = false;
    if (n > 0 && device_affine(&steps[n - 1], c)) {
        if (f64) split = n - 1, out->affine = true;
        else out->affine_host = true;
    }
    int last = split; /* a ColorJitter runs on the device only right before it (or the end) */
    while (split > 0 && !out->affine_host) {
        const loom_tf_step *s = &steps[split - 1];
        bool ok = s->kind == LOOM_TF_RANDOM_HFLIP || s->kind == LOOM_TF_RANDOM_VFLIP || s->kind == LOOM_TF_CENTER_CROP ||
                  (device_jitter(s, c) && split == last);
        if (s->kind == LOOM_TF_RANDOM_CROP && s->pad_mode == LOOM_PAD_CONSTANT) {
            int f = crop_fill(s);
            ok = f < 0 || fill < 0 || f == fill;
            if (ok && f >= 0) fill = f;
        }
        if (!ok) break;
        split--;
    }
    for (int i = 0; i < n; i++) /* never inside a RandomOrder: its steps stay together on the host */
        if (steps[i].kind == LOOM_TF_RANDOM_ORDER && split <= i + steps[i].count) split = i + steps[i].count + 1;
    if (split > n) split = n;
    if (split == n) out->affine = false; /* inside a RandomOrder */
    out->split = split;
    out->fill = 0;
    for (int i = split; i < n; i++) /* the fill of the crops that stayed */
        if (steps[i].kind == LOOM_TF_RANDOM_CROP && crop_fill(&steps[i]) >= 0) out->fill = steps[i].fill;
    return LOOM_OK;
}

/* Python's int(round(d / 2)) for d >= 0 (loom_tf_center_crop's offset) */
static int64_t half_round_even(int64_t d) {
    int64_t q = d / 2;
    return (d % 2 && q % 2) ? q + 1 : q;
}

/* the composed map of one axis: position i reads host-result index off + step i; [lo, hi) is readable */
typedef struct axis_map {
    int64_t off, step, n, lo, hi;
} axis_map;

/* a window of m positions at a (may start before 0 or end past n: padding) */
static void axis_crop(axis_map *a, int64_t at, int64_t m) {
    int64_t first = a->off, last = a->off + a->step * (a->n - 1); /* the current extent, before cropping */
    int64_t lo = first < last ? first : last, hi = (first < last ? last : first) + 1;
    if (lo > a->lo) a->lo = lo;
    if (hi < a->hi) a->hi = hi;
    a->off += a->step * at;
    a->n = m;
}

static void axis_flip(axis_map *a) {
    a->off += a->step * (a->n - 1);
    a->step = -a->step;
}

static void set_f32(int32_t *prm, int col, float f) { memcpy(&prm[col], &f, sizeof f); }

void loom__dev_params(const loom_tf_step *steps, int n, int split, loom__aug_rng *rng, int64_t h, int64_t w, int c,
                      int32_t *prm) {
    axis_map ax[2] = {{0, 1, h, 0, h}, {0, 1, w, 0, w}};
    memset(prm, 0, LOOM_G_AUG_COUNT * sizeof *prm);
    for (int i = split; i < n; i++) {
        const loom_tf_step *s = &steps[i];
        switch (s->kind) {
        case LOOM_TF_RANDOM_CROP: {
            int64_t pad[4];
            loom__tf_crop_pads(s, ax[0].n, ax[1].n, pad);
            int64_t H = ax[0].n + pad[1] + pad[3], W = ax[1].n + pad[0] + pad[2];
            int64_t top = loom__aug_int(rng, H - s->h + 1), left = loom__aug_int(rng, W - s->w + 1);
            axis_crop(&ax[0], top - pad[1], s->h), axis_crop(&ax[1], left - pad[0], s->w);
            break;
        }
        case LOOM_TF_CENTER_CROP:
            axis_crop(&ax[0], half_round_even(ax[0].n - s->h), s->h);
            axis_crop(&ax[1], half_round_even(ax[1].n - s->w), s->w);
            break;
        case LOOM_TF_RANDOM_HFLIP:
        case LOOM_TF_RANDOM_VFLIP:
            if (loom__aug_coin(rng, s->p)) axis_flip(&ax[s->kind == LOOM_TF_RANDOM_HFLIP ? 1 : 0]);
            break;
        case LOOM_TF_COLOR_JITTER: {
            int order[4];
            double f[4];
            loom__tf_jitter_params(s, rng, order, f);
            uint32_t list = 0;
            for (int k = 0, at = 0; k < 4; k++) /* codes LOOM_K_AUG_BRIGHT .. HUE are 1 + the host's index */
                if (s->jitter_on[order[k]]) list |= (uint32_t)(order[k] + 1) << (LOOM_K_AUG_BITS * at++);
            prm[LOOM_G_AUG_JITTER] = (int32_t)list;
            set_f32(prm, LOOM_G_AUG_BFACTOR, (float)f[0]);
            set_f32(prm, LOOM_G_AUG_CFACTOR, (float)f[1]), set_f32(prm, LOOM_G_AUG_CGAIN, (float)(1.0 - f[1]));
            set_f32(prm, LOOM_G_AUG_SFACTOR, (float)f[2]), set_f32(prm, LOOM_G_AUG_SGAIN, (float)(1.0 - f[2]));
            set_f32(prm, LOOM_G_AUG_HFACTOR, (float)f[3]);
            break;
        }
        case LOOM_TF_RANDOM_AFFINE: { /* the last step (loom__dev_plan), on the image as it now stands */
            double a[6], m[6];
            loom__tf_affine_params(s, rng, ax[0].n, ax[1].n, a);
            loom_tf_affine_inverse(a[0], a[1], a[2], a[3], a[4], a[5], m);
            prm[LOOM_G_AUG_AFFINE] = 1;
            for (int k = 0; k < 6; k++) {
                uint64_t bits;
                memcpy(&bits, &m[k], sizeof bits);
                prm[LOOM_G_AUG_M + 2 * k] = (int32_t)(uint32_t)bits;
                prm[LOOM_G_AUG_M + 2 * k + 1] = (int32_t)(uint32_t)(bits >> 32);
            }
            uint32_t fill = 0; /* per channel as the host's (loader/pipeline.c run_tail): afill[k] for 3, else afill[0] */
            for (int k = 0; k < 3; k++) fill |= (uint32_t)s->afill[c == 3 ? k : 0] << (8 * k);
            prm[LOOM_G_AUG_AFILL] = (int32_t)fill;
            break;
        }
        default: break; /* loom__dev_plan keeps no other step */
        }
    }
    prm[LOOM_G_AUG_ROW0] = (int32_t)ax[0].off, prm[LOOM_G_AUG_RSTEP] = (int32_t)ax[0].step;
    prm[LOOM_G_AUG_COL0] = (int32_t)ax[1].off, prm[LOOM_G_AUG_CSTEP] = (int32_t)ax[1].step;
    prm[LOOM_G_AUG_Y0] = (int32_t)ax[0].lo, prm[LOOM_G_AUG_Y1] = (int32_t)ax[0].hi;
    prm[LOOM_G_AUG_X0] = (int32_t)ax[1].lo, prm[LOOM_G_AUG_X1] = (int32_t)ax[1].hi;
}

loom_status loom__dev_setup(loom_ctx *ctx, const loom_tf_step *steps, int n, int c, int64_t h, int64_t w,
                            const loom_backend *be, loom__dev_split *out) {
    loom_status st = loom__dev_plan(ctx, steps, n, c, !be || loom__backend_f64(be), out);
    if (st != LOOM_OK) return st;
    size_t mb;
    out->resize = false;
    if (h > 0) {
        if ((st = loom__tf_plan(ctx, steps, out->split, c, h, w, &out->rh, &out->rw, &mb)) != LOOM_OK) return st;
        /* a Resize that is the whole host part: on the device, the host only decodes */
        out->resize = out->split == 1 && steps[0].kind == LOOM_TF_RESIZE && (out->rh != h || out->rw != w);
        out->h = out->resize ? h : out->rh, out->w = out->resize ? w : out->rw;
        return LOOM_OK;
    }
    /* images of any size: the host part must end at one size (planned on two unrelated sizes) */
    int64_t h2, w2;
    if ((st = loom__tf_plan(ctx, steps, out->split, c, 4099, 4093, &out->h, &out->w, &mb)) != LOOM_OK ||
        (st = loom__tf_plan(ctx, steps, out->split, c, 3001, 5003, &h2, &w2, &mb)) != LOOM_OK)
        return st;
    if (h2 != out->h || w2 != out->w)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "loader: device augmentation: the images differ in size and the "
                         "host part of the pipeline (its first %d steps) does not make them one size (end it with "
                         "Resize((h, w)) or a crop)", out->split);
    out->rh = out->h, out->rw = out->w;
    return LOOM_OK;
}

loom_status loom__dev_sample(loom_ctx *ctx, const loom_tf_step *steps, int n, const loom__dev_split *sp,
                             loom__aug_rng *rng, loom_image img, uint8_t *a, uint8_t *b, uint8_t *u8, int32_t *prm) {
    loom_status st = loom__tf_run_fused(ctx, steps, loom__dev_host_steps(sp), rng, &img, a, b, NULL);
    if (st != LOOM_OK) return st;
    if (img.h != sp->h || img.w != sp->w)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "loader: device augmentation: the host part made a %lldx%lld image, "
                         "not %lldx%lld", (long long)img.h, (long long)img.w, (long long)sp->h, (long long)sp->w);
    memcpy(u8, img.data, (size_t)(img.h * img.w * img.c));
    loom__dev_params(steps, n, sp->split, rng, sp->rh, sp->rw, img.c, prm);
    return LOOM_OK;
}

loom_status loom__dev_resize_table(loom_ctx *ctx, int64_t h, int64_t w, int64_t rh, int64_t rw, int64_t *row,
                                   int32_t **tab) {
    int64_t sy = 0, sx = 0;
    int32_t *ty = NULL, *tx = NULL;
    *tab = NULL, *row = 0;
    loom_status st = loom__tf_resize_taps(ctx, h, rh, &sy, &ty);
    if (st == LOOM_OK) st = loom__tf_resize_taps(ctx, w, rw, &sx, &tx);
    int64_t r = 2 + (sy > sx ? sy : sx);
    if (st == LOOM_OK && !(*tab = calloc((size_t)((rh + rw) * r), sizeof **tab)))
        st = loom__err(ctx, LOOM_ERR_OOM, "resize taps: out of memory for %lld rows", (long long)(rh + rw));
    for (int64_t i = 0; st == LOOM_OK && i < rh + rw; i++) /* rows of the height axis, then of the width axis */
        memcpy(*tab + i * r, i < rh ? ty + i * (2 + sy) : tx + (i - rh) * (2 + sx),
               (size_t)(2 + (i < rh ? sy : sx)) * sizeof **tab);
    if (st == LOOM_OK) *row = r;
    free(ty), free(tx);
    return st;
}

/* resize_u8 of x (h x w images) to (rh, rw) with loom_tf_resize's taps (a constant "<name>_taps") */
static loom_tensor *device_resize(loom_graph *g, const char *name, loom_tensor *x, int64_t h, int64_t w, int64_t rh,
                                  int64_t rw) {
    int64_t row;
    int32_t *t;
    loom_status st = loom__dev_resize_table(g->ctx, h, w, rh, rw, &row, &t);
    if (st != LOOM_OK) {
        char msg[512]; /* the context's message, copied before loom__fail writes it */
        snprintf(msg, sizeof msg, "%s", loom_last_error(g->ctx));
        return loom__fail(g, st, "%s", msg);
    }
    char nm[96];
    snprintf(nm, sizeof nm, "%s_taps", name);
    loom_tensor *out = loom_resize_u8(g, x, loom_constant(g, nm, LOOM_I32, 2, (int64_t[]){rh + rw, row}, t), rh, rw);
    free(t);
    return out;
}

loom_tensor *loom_loader_device_input(loom_graph *g, const loom_loader_desc *d, const char *name, loom_dtype dt,
                                      loom_tensor **u8, loom_tensor **prm) {
    *u8 = *prm = NULL;
    if (!g || g->status != LOOM_OK) return NULL;
    const loom_source *src = d->src;
    if (!d->device_augment || !src || src->kind != LOOM_SAMPLE_U8 || d->batch < 1 || src->c < 1 || src->c > 4 ||
        (d->nstat != 0 && d->nstat != 1 && d->nstat != src->c))
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "loader: device input '%s': the loader desc must have "
                          "device_augment, a U8 source of 1..4 channels, a batch >= 1 and 1 or c statistics", name);
    loom__dev_split sp;
    int64_t oh, ow;
    size_t mb;
    loom_status st = loom__dev_setup(g->ctx, d->steps, d->nsteps, src->c, src->h, src->w, d->backend, &sp);
    if (st == LOOM_OK && sp.affine_host)
        loom__log(g->ctx, LOOM_LOG_WARN, "loader: device augmentation: the last step (RandomAffine) runs on the host: "
                  "backend '%s' has no 64-bit floats for its source points", loom_backend_name(d->backend));
    if (st == LOOM_OK)
        st = loom__tf_plan(g->ctx, d->steps + sp.split, d->nsteps - sp.split, src->c, sp.rh, sp.rw, &oh, &ow, &mb);
    if (st != LOOM_OK) {
        char msg[512]; /* the context's message, copied before loom__fail writes it */
        snprintf(msg, sizeof msg, "%s", loom_last_error(g->ctx));
        return loom__fail(g, st, "%s", msg);
    }
    float lut[4][256]; /* as the loader's (loader/pool.c) */
    for (int ch = 0; ch < src->c; ch++) {
        int k = d->nstat == 1 ? 0 : ch;
        float mean = d->nstat ? d->mean[k] : 0.0f, sd = d->nstat ? d->std[k] : 1.0f;
        for (int i = 0; i < 256; i++) lut[ch][i] = ((float)i / 255.0f - mean) / sd;
    }
    char nm[96];
    snprintf(nm, sizeof nm, "%s_u8", name);
    *u8 = loom_input(g, nm, LOOM_U8, 4, (int64_t[]){d->batch, sp.h, sp.w, src->c});
    snprintf(nm, sizeof nm, "%s_prm", name);
    *prm = loom_input(g, nm, LOOM_I32, 2, (int64_t[]){d->batch, LOOM_G_AUG_COUNT});
    snprintf(nm, sizeof nm, "%s_lut", name);
    loom_tensor *t = loom_constant(g, nm, LOOM_F32, 2, (int64_t[]){src->c, 256}, lut);
    loom_tensor *img = sp.resize ? device_resize(g, name, *u8, sp.h, sp.w, sp.rh, sp.rw) : *u8;
    return loom_augment_u8(g, img, *prm, t, dt, oh, ow, sp.fill, sp.affine);
}
