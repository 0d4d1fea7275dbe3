/* loader/tail.c — the fused end of a pipeline: ColorJitter, then a
 * RandomAffine with nearest interpolation, then (when nothing but
 * RandomErasing follows) ToTensor + Normalize, in one pass over the output
 * rows instead of up to six passes over the image.
 *
 * Bit-exact against the steps one by one, because:
 *   - the jitter's adjustments are per pixel except contrast's mean, and a
 *     nearest affine moves pixels without mixing them, so jittering the
 *     pixels the affine picks equals picking from the jittered image
 *     (fill pixels are not jittered: the affine writes them after);
 *   - contrast's mean is of the whole image as it stands before contrast:
 *     the adjustments ahead of contrast run first over the whole image
 *     (into a spare buffer), its mean is taken there, and the row pass
 *     continues from that image with the rest;
 *   - every adjustment is the span primitive adjust_* itself uses
 *     (loader/transforms.c), the affine's source point and rounding are
 *     loom_tf_affine's (loader_impl.h), and consecutive brightness /
 *     contrast tables compose exactly (u8 -> u8);
 *   - ToTensor + Normalize is the loader's own per-channel table.
 * The random draws are the steps' own, in their order (jitter, affine).
 * tests/test-fuse.c checks the bits against the unfused steps.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "loader_impl.h"

enum { OP_BRIGHT, OP_CONTRAST, OP_SAT, OP_HUE };

typedef struct stage {
    int kind; /* OP_CONTRAST stands for any composed table */
    uint8_t lut[256];
    double f;
} stage;

/* Apply adjustment op (of factor f) to n pixels from src into dst. */
static void apply_op(int op, double f, const loom__sat_tables *sat, const uint8_t lut[256], const uint8_t *src,
                     uint8_t *dst, int64_t n, int c) {
    switch (op) {
    case OP_SAT: loom__sat_span(sat, src, dst, n); break;
    case OP_HUE: loom__hue_span(f, src, dst, n); break;
    default: loom__lut_span(lut, src, dst, (size_t)(n * c)); break;
    }
    (void)f;
}

/* Row oy of the nearest affine: the source pixels (or the fill) into row,
 * inside[ox] = 1 where the source point is in the image. */
static void gather_row(const double m[6], double hx, double hy, int64_t oy, int64_t W, int64_t H, int c,
                       const uint8_t *base, const uint8_t fill[3], uint8_t *row, uint8_t *inside) {
    for (int64_t ox = 0; ox < W; ox++) {
        double fx, fy;
        int64_t at;
        loom__affine_point(m, hx, hy, ox, oy, &fx, &fy);
        bool in = loom__nearest_at(fx, fy, W, H, &at);
        inside[ox] = in;
        const uint8_t *p = in ? base + at * c : fill;
        if (c == 3) {
            uint8_t *o = row + ox * 3;
            o[0] = p[0], o[1] = p[1], o[2] = p[2];
        } else {
            row[ox] = p[0];
        }
    }
}

/* One channel of one output row into the tensor: lut[value], or the fill's
 * where the affine left the image. Streaming stores: the batch is far
 * larger than the caches and is read by the caller's step, not here. */
static void put_row(float *xr, const float *lut, const uint8_t *from, int c, const uint8_t *inside, float fillv,
                    int64_t W) {
    int64_t ox = 0;
#define PX(i) (inside[i] ? lut[from[(i) * c]] : fillv)
#ifdef __SSE2__
    for (; ox < W && ((uintptr_t)(xr + ox) & 15); ox++) xr[ox] = PX(ox);
    for (; ox + 4 <= W; ox += 4) _mm_stream_ps(xr + ox, _mm_setr_ps(PX(ox), PX(ox + 1), PX(ox + 2), PX(ox + 3)));
#endif
    for (; ox < W; ox++) xr[ox] = PX(ox);
#undef PX
}

loom_status loom__tail_run(loom_ctx *ctx, const loom__tail *t, loom_image *img, uint8_t *a, uint8_t *b,
                           loom__tensor_out *out) {
    const int c = img->c;
    const int64_t H = img->h, W = img->w, hw = H * W;
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
    const uint8_t *base = img->data;
    loom__sat_tables sat; /* the jitter has one saturation at most */
    for (int k = 0; k < nops; k++)
        if (ops[k] == OP_SAT) loom__sat_init(&sat, fs[k]);
    /* the adjustments ahead of contrast over the whole image, then its mean */
    int start = 0;
    float mean = 0;
    if (kc >= 0) {
        if (kc > 0) {
            for (int k = 0; k < kc; k++) {
                uint8_t lut[256];
                if (ops[k] == OP_BRIGHT) loom__brightness_lut(fs[k], lut);
                apply_op(ops[k], fs[k], &sat, lut, k ? spare : base, spare, hw, c);
            }
            base = spare;
        }
        mean = loom__gray_mean(base, hw, c);
        start = kc;
    }
    /* the rest as stages; consecutive tables composed into one */
    stage st[4];
    int ns = 0;
    for (int k = start; k < nops; k++) {
        if (ops[k] == OP_BRIGHT || ops[k] == OP_CONTRAST) {
            uint8_t lut[256];
            if (ops[k] == OP_BRIGHT) loom__brightness_lut(fs[k], lut);
            else loom__contrast_lut(fs[k], mean, lut);
            if (ns && st[ns - 1].kind == OP_CONTRAST) {
                for (int u = 0; u < 256; u++) st[ns - 1].lut[u] = lut[st[ns - 1].lut[u]];
            } else {
                st[ns].kind = OP_CONTRAST;
                memcpy(st[ns].lut, lut, sizeof lut);
                ns++;
            }
        } else {
            st[ns].kind = ops[k], st[ns].f = fs[k];
            ns++;
        }
    }
    /* the u8 result's buffer: whichever of a, b the pass no longer reads */
    uint8_t *dst8 = NULL;
    if (!tensor) dst8 = base == img->data ? spare : in_ab ? in_ab : (spare == a ? b : a);
    double m[6], hx = 0.5 * (double)(W - 1), hy = 0.5 * (double)(H - 1);
    if (t->affine) loom_tf_affine_inverse(t->p[0], t->p[1], t->p[2], t->p[3], t->p[4], t->p[5], m);
    uint8_t *row = malloc((size_t)(W * c) + (size_t)W);
    if (!row) return loom__err(ctx, LOOM_ERR_OOM, "loader: out of memory for a %lld-pixel row", (long long)W);
    uint8_t *inside = row + W * c;
    memset(inside, 1, (size_t)W);
    for (int64_t oy = 0; oy < H; oy++) {
        const uint8_t *from = base + oy * W * c;
        if (t->affine) {
            gather_row(m, hx, hy, oy, W, H, c, base, t->fill, row, inside);
            from = row;
        }
        for (int k = 0; k < ns; k++) {
            apply_op(st[k].kind, st[k].f, &sat, st[k].lut, from, row, W, c);
            from = row;
        }
        if (tensor) {
            for (int ch = 0; ch < c; ch++)
                put_row(out->x + (size_t)ch * (size_t)hw + (size_t)(oy * W), out->lut[ch], from + ch, c, inside,
                        out->lut[ch][t->fill[ch]], W);
        } else {
            uint8_t *o = dst8 + oy * W * c;
            for (int64_t ox = 0; ox < W; ox++)
                for (int k = 0; k < c; k++) o[ox * c + k] = inside[ox] ? from[ox * c + k] : t->fill[k];
        }
    }
#ifdef __SSE2__
    if (tensor) _mm_sfence(); /* put_row's streaming stores, before the batch is handed over */
#endif
    free(row);
    if (tensor) out->done = true;
    else img->data = dst8;
    return LOOM_OK;
}
