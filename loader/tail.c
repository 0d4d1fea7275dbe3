/* loader/tail.c — the fused end of a pipeline: ColorJitter, then a
 * RandomAffine with nearest interpolation, then (when nothing but
 * RandomErasing follows) ToTensor + Normalize, in one pass over the output
 * rows instead of up to six passes over the image.
 *
 * Bit-exact against the steps one by one, because:
 *   - the jitter's adjustments are per pixel except contrast's mean, and a
 *     nearest affine moves pixels without mixing them, so jittering the
 *     pixels the affine picks equals picking from the jittered image
 *     (fill pixels are not jittered: the affine writes them after); crops
 *     and flips right after the jitter commute with it the same way (the
 *     tail's inner view: the row pass covers only their window);
 *   - contrast's mean is of the whole image as it stands before contrast
 *     (before the jitter's crops):
 *     the adjustments ahead of contrast run first over the whole image
 *     (into a spare buffer), its mean is taken there, and the row pass
 *     continues from that image with the rest;
 *   - every adjustment is the span primitive adjust_* itself uses
 *     (loader/transforms.c), the affine's source point and rounding are
 *     loom_tf_affine's (loader_impl.h), and consecutive brightness /
 *     contrast tables compose exactly (u8 -> u8);
 *   - ToTensor + Normalize is the loader's own per-channel table.
 * Crops and flips right before the tail are not copied: the tail reads
 * through them (loom__tail_view). The random draws are the steps' own, in
 * their order (loader/pipeline.c draws them).
 * tests/test-fuse.c checks the bits against the unfused steps.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loader_impl.h"

enum { OP_BRIGHT, OP_CONTRAST, OP_SAT, OP_HUE };

float loom__norm_value(const loom__norm *n, int v) {
    const float x = (float)v, r255 = 1.0f / 255.0f;
    if (!n->fma) return (x / 255.0f - n->mean) / n->sd;
    float q0 = x * r255, q = fmaf(fmaf(-q0, 255.0f, x), r255, q0); /* x / 255 */
    float u = q - n->mean, y0 = u * n->rsd;
    return fmaf(fmaf(-y0, n->sd, u), n->rsd, y0); /* u / sd */
}

void loom__norm_init(loom__norm *n, float mean, float sd, const float table[256]) {
    *n = (loom__norm){.mean = mean, .sd = sd, .rsd = 1.0f / sd, .fma = true};
    for (int v = 0; v < 256 && n->fma; v++) {
        float got = loom__norm_value(n, v);
        n->fma = memcmp(&table[v], &got, sizeof got) == 0;
    }
}

/* Columns [x0, x1) of every row of job r, any channel count (the AVX2
 * version does the bulk of 3-channel rows; this does the rest). */
static loom_status rows_scalar(loom_ctx *ctx, loom__tail_rows *r, int64_t x0, int64_t x1) {
    const int c = r->c;
    const int64_t W = r->W, n = x1 - x0, hw = r->H * W;
    if (n <= 0) return LOOM_OK;
    uint8_t *row = malloc((size_t)(n * c) + (size_t)n);
    if (!row) return loom__err(ctx, LOOM_ERR_OOM, "loader: out of memory for a %lld-pixel row", (long long)n);
    uint8_t *inside = row + n * c;
    memset(inside, 1, (size_t)n);
    for (int64_t oy = 0; oy < r->H; oy++) {
        const uint8_t *from = r->base + loom__tail_px_at(r, oy, x0) * c;
        if (r->affine) {
            for (int64_t i = 0; i < n; i++) {
                double fx, fy;
                int64_t at;
                loom__affine_point(r->m, r->hx, r->hy, r->ax0 + r->axs * (x0 + i), r->ay0 + r->ays * oy, &fx, &fy);
                inside[i] = loom__nearest_at(fx, fy, r->aw, r->ah, &at);
                const uint8_t *p = inside[i] ? r->base + loom__tail_px_at(r, at / r->aw, at % r->aw) * c : r->fill;
                for (int k = 0; k < c; k++) row[i * c + k] = p[k];
            }
            from = row;
        } else if (r->cstep != 1) { /* a flipped view: gather the row */
            for (int64_t i = 0; i < n; i++)
                for (int k = 0; k < c; k++) row[i * c + k] = r->base[loom__tail_px_at(r, oy, x0 + i) * c + k];
            from = row;
        }
        for (int k = 0; k < r->ns; k++) {
            const loom__tail_stage *s = &r->st[k];
            if (s->kind == LOOM__TS_SAT) loom__sat_span(r->sat, from, row, n);
            else if (s->kind == LOOM__TS_HUE) loom__hue_span(s->f, from, row, n);
            else loom__lut_span(s->lut, from, row, (size_t)(n * c));
            from = row;
        }
        if (r->x) {
            for (int ch = 0; ch < c; ch++) {
                const float *lut = r->lut[ch];
                float *xr = r->x + (size_t)ch * (size_t)hw + (size_t)(oy * W + x0);
                float fillv = lut[r->fill[ch]];
                for (int64_t i = 0; i < n; i++) xr[i] = inside[i] ? lut[from[i * c + ch]] : fillv;
            }
        } else if (r->dst) {
            uint8_t *o = r->dst + (oy * W + x0) * c;
            for (int64_t i = 0; i < n; i++)
                for (int k = 0; k < c; k++) o[i * c + k] = inside[i] ? from[i * c + k] : r->fill[k];
        }
        if (r->want_gray) r->gray_sum += loom__gray_sum(from, n, c); /* no affine in these jobs */
    }
    free(row);
    return LOOM_OK;
}

static loom_status run_rows(loom_ctx *ctx, loom__tail_rows *r) {
    r->gray_sum = 0;
    int64_t done = r->c == 3 ? loom__tail_rows_avx512(r) : 0;
    if (r->c == 3 && !done) done = loom__tail_rows_avx2(r);
    return rows_scalar(ctx, r, done, r->W);
}

loom_status loom__tail_run(loom_ctx *ctx, const loom__tail *t, loom_image *img, uint8_t *a, uint8_t *b,
                           loom__tensor_out *out) {
    const int c = img->c;
    /* H0 x W0: view's image, whose gray mean contrast takes; H x W: the
     * image the affine sees (the same unless the jitter has inner crops) */
    const loom__tail_view in = t->inner.h > 0 ? t->inner : (loom__tail_view){t->view.h, t->view.w, 0, 1, 0, 1};
    const int64_t H0 = t->view.h, W0 = t->view.w, H = in.h, W = in.w;
    /* the adjustments that change anything here, in the drawn order */
    int ops[4], nops = 0, kc = -1;
    double fs[4];
    for (int k = 0; t->jitter && k < 4; k++) {
        int fn = t->order[k];
        if (!t->on[fn] || (c == 1 && fn >= OP_SAT)) continue; /* saturation and hue leave gray alone */
        if (fn == OP_CONTRAST) kc = nops;
        ops[nops] = fn, fs[nops] = t->f[fn], nops++;
    }
    bool tensor = out && out->x && out->c == c;
    uint8_t *in_ab = img->data == a || img->data == b ? img->data : NULL;
    uint8_t *spare = img->data == a ? b : a; /* free now */
    loom__sat_tables sat; /* the jitter has one saturation at most */
    for (int k = 0; k < nops; k++)
        if (ops[k] == OP_SAT) loom__sat_init(&sat, fs[k]);
    /* ops [k0, k1) as stages, consecutive tables composed into one (contrast's with `mean`) */
    loom__tail_stage st[4];
#define STAGES(k0, k1, mean)                                                                                           \
    for (int k = (k0); k < (k1); k++) {                                                                                \
        if (ops[k] == OP_BRIGHT || ops[k] == OP_CONTRAST) {                                                            \
            uint8_t lut[256];                                                                                          \
            if (ops[k] == OP_BRIGHT) loom__brightness_lut(fs[k], lut);                                                 \
            else loom__contrast_lut(fs[k], (mean), lut);                                                               \
            if (ns && st[ns - 1].kind == LOOM__TS_LUT) {                                                               \
                for (int u = 0; u < 256; u++) st[ns - 1].lut[u] = lut[st[ns - 1].lut[u]];                              \
            } else {                                                                                                   \
                st[ns].kind = LOOM__TS_LUT, st[ns].nlin = 0;                                                           \
                memcpy(st[ns].lut, lut, sizeof lut);                                                                   \
                ns++;                                                                                                  \
            }                                                                                                          \
            loom__tail_stage *q = &st[ns - 1];                                                                         \
            q->mul[q->nlin] = (float)fs[k];                                                                            \
            q->add[q->nlin++] = ops[k] == OP_BRIGHT ? 0.0f : (mean) * (float)(1.0 - fs[k]);                            \
        } else {                                                                                                       \
            st[ns].kind = ops[k] == OP_SAT ? LOOM__TS_SAT : LOOM__TS_HUE, st[ns].f = fs[k];                            \
            ns++;                                                                                                      \
        }                                                                                                              \
    }
    loom__tail_rows r = {.base = img->data, .H = H0, .W = W0, .c = c, .st = st, .sat = &sat, .pitch = img->w,
                         .roff = t->view.roff, .rstep = t->view.rstep, .coff = t->view.coff, .cstep = t->view.cstep,
                         .npx = img->h * img->w, .aw = W, .ah = H, .ays = 1, .axs = 1};
    loom_status s = LOOM_OK;
    int ns = 0, start = 0;
    float mean = 0;
    if (kc >= 0) {
        /* contrast's mean is of the image before contrast: the adjustments
         * ahead of it over the whole image first, summing the grays; their
         * result kept (in spare) for the row pass below, which then reads
         * it instead of the image (storing it costs less than the row pass
         * doing even one adjustment again) */
        const bool keep = kc > 0;
        STAGES(0, kc, 0.0f)
        r.ns = ns, r.want_gray = true, r.dst = keep ? spare : NULL;
        s = run_rows(ctx, &r);
        if (s != LOOM_OK) return s;
        mean = (float)((double)r.gray_sum / (double)(H0 * W0));
        if (keep) { /* spare holds view's image itself, row by row */
            r.base = spare, start = kc;
            r.pitch = W0, r.roff = r.coff = 0, r.rstep = r.cstep = 1, r.npx = H0 * W0;
        }
    }
    /* the row pass reads its base (view's image, or spare) through inner */
    r.roff += r.rstep * in.roff, r.rstep *= in.rstep, r.coff += r.cstep * in.coff, r.cstep *= in.cstep;
    r.H = H, r.W = W;
    ns = 0;
    STAGES(start, nops, mean)
#undef STAGES
    r.ns = ns, r.want_gray = false, r.dst = NULL;
    r.affine = t->affine;
    if (t->affine) {
        loom_tf_affine_inverse(t->p[0], t->p[1], t->p[2], t->p[3], t->p[4], t->p[5], r.m);
        r.hx = 0.5 * (double)(W - 1), r.hy = 0.5 * (double)(H - 1);
        memcpy(r.fill, t->fill, 3);
    }
    int64_t OH = H, OW = W; /* the output: the affine's crops and flips, if any */
    if (t->affine && t->oview.h > 0) {
        OH = r.H = t->oview.h, OW = r.W = t->oview.w;
        r.ay0 = t->oview.roff, r.ays = t->oview.rstep, r.ax0 = t->oview.coff, r.axs = t->oview.cstep;
    }
    /* the u8 result's buffer: whichever of a, b the pass no longer reads */
    uint8_t *dst8 = r.base == img->data ? spare : in_ab ? in_ab : (spare == a ? b : a);
    if (tensor) r.lut = out->lut, r.norm = out->norm, r.x = out->x;
    else r.dst = dst8;
    s = run_rows(ctx, &r);
    if (s != LOOM_OK) return s;
    if (tensor) {
        out->done = true;
    } else {
        img->data = dst8, img->h = OH, img->w = OW;
    }
    return LOOM_OK;
}
