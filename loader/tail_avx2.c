/* loader/tail_avx2.c — the bulk of the fused tail's 3-channel rows
 * (loader/tail.c) eight pixels at a time with AVX2, chosen at run time
 * (loom__simd_avx2: the CPU has it and LOOM_LOADER_SIMD is not 0).
 *
 * Lane by lane it is the scalar arithmetic, so the bits are the same
 * (tests/test-fuse.c compares the fused tail with the unfused steps, which
 * use the scalar primitives of loader/transforms.c):
 *   - the affine's source point first in float; a lane within the float
 *     sums' error bound of a rounding tie sends its eight pixels through
 *     double in the scalar order, rounded to nearest-even (_mm256_round_pd
 *     equals loom__round_even's k-trick wherever the point can be inside);
 *     any other lane rounds to the same integer either way; bounds tested
 *     the same way;
 *   - a row's pixels fetched first (into wb), then its colour stages: in
 *     one loop a block's long chain (point, gather, stages, two divisions)
 *     left too few blocks in flight (guide pipeline on a Zen 3, one thread:
 *     0.44 -> 0.40 ms per image);
 *   - pixels fetched as 32-bit words (masked gather: lanes outside read
 *     nothing; the image's last pixel is read one byte early and shifted, so
 *     nothing past the image is touched), or, without an affine and with
 *     rows read forwards (or only summed, as contrast's pre-pass does),
 *     loaded 24 bytes at a time and shuffled;
 *   - brightness / contrast as the expressions their tables hold (u f + a,
 *     clamped, truncated; a = 0 or mean (1 - f), as loom__contrast_lut);
 *     saturation and the gray sum with the scalar products and sums (no FMA:
 *     this file is compiled for AVX2 without FMA, and -ffp-contract=off);
 *     hue through the scalar primitive on the eight pixels;
 *   - ToTensor + Normalize as the loader's float tables' divisions (gathers
 *     from the tables when the caller gives no statistics), written with
 *     plain stores (streaming stores, tried, made the whole
 *     transform ~1.6x slower on a Zen 3: three planes, 32 bytes each per
 *     step, and the batch is read again soon after).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loader_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "avx2_util.h"

#define AVX2 LOOM_AVX2

/* eight pixels' channels, whole numbers 0..255 held as floats: a stage's
 * truncation rounds toward zero in place, so no conversion sits between
 * stages (cvttps + cvtdq2ps per channel and stage, before) */
typedef struct px8 {
    __m256 r, g, b;
} px8;

enum { TO_ZERO = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }; /* an immediate, even at -O0 */

/* clamped to 0..255 and truncated: cvttps's integer, as a float */
AVX2 static inline __m256 trunc_u8(__m256 v) {
    v = _mm256_max_ps(v, _mm256_setzero_ps());
    v = _mm256_min_ps(v, _mm256_set1_ps(255.0f));
    return _mm256_round_ps(v, TO_ZERO);
}

/* floor(gray) of integer-valued lanes: (r 0.2989 + g 0.587) + b 0.114 */
AVX2 static inline __m256 gray8(__m256 rf, __m256 gf, __m256 bf) {
    __m256 s = _mm256_add_ps(_mm256_mul_ps(rf, _mm256_set1_ps(0.2989f)), _mm256_mul_ps(gf, _mm256_set1_ps(0.587f)));
    return _mm256_round_ps(_mm256_add_ps(s, _mm256_mul_ps(bf, _mm256_set1_ps(0.114f))), TO_ZERO);
}

/* loom__sat_span: u f + floor(gray) (1 - f), truncated to 0..255 */
AVX2 static inline void sat8(px8 *p, __m256 ff, __m256 g) {
    __m256 add = _mm256_mul_ps(gray8(p->r, p->g, p->b), g);
    p->r = trunc_u8(_mm256_add_ps(_mm256_mul_ps(p->r, ff), add));
    p->g = trunc_u8(_mm256_add_ps(_mm256_mul_ps(p->g, ff), add));
    p->b = trunc_u8(_mm256_add_ps(_mm256_mul_ps(p->b, ff), add));
}

AVX2 static inline void hue8(px8 *p, double f) {
    int32_t v[3][8];
    uint8_t buf[24];
    _mm256_storeu_si256((__m256i *)v[0], _mm256_cvttps_epi32(p->r));
    _mm256_storeu_si256((__m256i *)v[1], _mm256_cvttps_epi32(p->g));
    _mm256_storeu_si256((__m256i *)v[2], _mm256_cvttps_epi32(p->b));
    for (int i = 0; i < 8; i++) buf[i * 3] = (uint8_t)v[0][i], buf[i * 3 + 1] = (uint8_t)v[1][i], buf[i * 3 + 2] = (uint8_t)v[2][i];
    loom__hue_span(f, buf, buf, 8);
    for (int i = 0; i < 8; i++) v[0][i] = buf[i * 3], v[1][i] = buf[i * 3 + 1], v[2][i] = buf[i * 3 + 2];
    p->r = _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)v[0]));
    p->g = _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)v[1]));
    p->b = _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)v[2]));
}

/* Eight pixels from 24 contiguous bytes (nothing past them is read), one
 * per 32-bit lane in memory order. */
#define PICK4(k) k, -1, -1, -1, k + 3, -1, -1, -1, k + 6, -1, -1, -1, k + 9, -1, -1, -1
AVX2 static inline px8 load8(const uint8_t *q) {
    const __m256i mr = _mm256_setr_epi8(PICK4(0), PICK4(0)), mg = _mm256_setr_epi8(PICK4(1), PICK4(1)),
                  mb = _mm256_setr_epi8(PICK4(2), PICK4(2));
    __m128i lo = _mm_loadu_si128((const __m128i *)(const void *)q), hi = _mm_loadl_epi64((const __m128i *)(const void *)(q + 16));
    __m256i v = _mm256_set_m128i(_mm_alignr_epi8(hi, lo, 12), lo); /* pixels 0-3 | 4-7, 12 bytes per lane */
    px8 p = {_mm256_cvtepi32_ps(_mm256_shuffle_epi8(v, mr)), _mm256_cvtepi32_ps(_mm256_shuffle_epi8(v, mg)),
             _mm256_cvtepi32_ps(_mm256_shuffle_epi8(v, mb))};
    return p;
}
#undef PICK4

/* The 64-bit lane masks of two __m256d compares as one 8 x 32-bit mask. */
AVX2 static inline __m256i mask_pd(__m256d lo, __m256d hi) {
    const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    __m128i a = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(lo), even));
    __m128i b = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(hi), even));
    return _mm256_set_m128i(b, a);
}

/* The colour stages of r on eight pixels; sat_f, sat_g: the saturation's
 * factors (when it has one). */
AVX2 static inline void stages8(const loom__tail_rows *r, px8 *p, __m256 sat_f, __m256 sat_g) {
    for (int k = 0; k < r->ns; k++) {
        int kind = r->st[k].kind;
        if (kind == LOOM__TS_LUT) { /* the table's expressions, computed: cheaper than gathers */
            const loom__tail_stage *q = &r->st[k];
            for (int j = 0; j < q->nlin; j++) {
                const __m256 mul = _mm256_set1_ps(q->mul[j]), add = _mm256_set1_ps(q->add[j]);
                p->r = trunc_u8(_mm256_add_ps(_mm256_mul_ps(p->r, mul), add));
                p->g = trunc_u8(_mm256_add_ps(_mm256_mul_ps(p->g, mul), add));
                p->b = trunc_u8(_mm256_add_ps(_mm256_mul_ps(p->b, mul), add));
            }
        } else if (kind == LOOM__TS_SAT) {
            sat8(p, sat_f, sat_g);
        } else {
            hue8(p, r->st[k].f);
        }
    }
}

/* ToTensor + Normalize of integer lanes v: the loader's table's own two
 * divisions, ((float)v / 255 - mean) / sd, the same bits as its entries.
 * One thread, Resize((256, 256)) + ToTensor + Normalize on this pass, a
 * Zen 3: 0.41 ms per image with the three table gathers, 0.37 with
 * loom__norm_value's FMA-corrected products (FMA target), 0.34 so. */
AVX2 static inline __m256 normalize8(__m256 v, __m256 mean, __m256 sd) {
    return _mm256_div_ps(_mm256_sub_ps(_mm256_div_ps(v, _mm256_set1_ps(255.0f)), mean), sd);
}

/* Row oy's pixels as 32-bit words (the image's last pixel shifted into
 * place) and their lanes' masks: wb[ox / 4] and wb[ox / 4 + 1] for the
 * block of eight at ox. cx0, fx0: the affine's per-column terms (m[0] x in
 * double and float, then m[3] x, W8 apart); see rows_avx2. */
AVX2 static void fetch_row(const loom__tail_rows *r, int64_t oy, int64_t W8, const double *cx0, const float *fx0, __m256i *wb) {
    const int *base = (const int *)r->base;
    const double *cx3 = r->affine ? cx0 + W8 : NULL;
    const float *fy0 = r->affine ? fx0 + W8 : NULL;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), last = _mm256_set1_epi32((int32_t)(r->npx - 1)),
                  eight = _mm256_set1_epi32(8), cstep = _mm256_set1_epi32((int32_t)r->cstep);
    const __m256d pitch = _mm256_set1_pd((double)r->pitch), roff = _mm256_set1_pd((double)r->roff),
                  rstep = _mm256_set1_pd((double)r->rstep), coff = _mm256_set1_pd((double)r->coff),
                  cstepd = _mm256_set1_pd((double)r->cstep);
    const __m256d m2 = _mm256_set1_pd(r->m[2]), m5 = _mm256_set1_pd(r->m[5]), hx = _mm256_set1_pd(r->hx), hy = _mm256_set1_pd(r->hy),
                  zero = _mm256_setzero_pd(), Wd = _mm256_set1_pd((double)r->aw), Hd = _mm256_set1_pd((double)r->ah);
    const double M = fmax(fabs(r->m[0]) * r->hx + fabs(r->m[1]) * r->hy + fabs(r->m[2]) + fabs(r->hx),
                          fabs(r->m[3]) * r->hx + fabs(r->m[4]) * r->hy + fabs(r->m[5]) + fabs(r->hy)) + 1.0;
    const __m256 tie = _mm256_set1_ps((float)(0.5 - M * 0x1p-20)), sign = _mm256_set1_ps(-0.0f), zerof = _mm256_setzero_ps(),
                 Wf = _mm256_set1_ps((float)r->aw), Hf = _mm256_set1_ps((float)r->ah), m2f = _mm256_set1_ps((float)r->m[2]),
                 m5f = _mm256_set1_ps((float)r->m[5]), hxf = _mm256_set1_ps((float)r->hx), hyf = _mm256_set1_ps((float)r->hy);
    const __m256i roffi = _mm256_set1_epi32((int32_t)r->roff), rstepi = _mm256_set1_epi32((int32_t)r->rstep),
                  pitchi = _mm256_set1_epi32((int32_t)r->pitch), coffi = _mm256_set1_epi32((int32_t)r->coff);
    enum { rnd = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }; /* an immediate, even at -O0 */
    double y = (double)(r->ay0 + r->ays * oy) - r->hy;
    const __m256d m1y = _mm256_set1_pd(r->m[1] * y), m4y = _mm256_set1_pd(r->m[4] * y);
    const __m256 m1yf = _mm256_set1_ps((float)(r->m[1] * y)), m4yf = _mm256_set1_ps((float)(r->m[4] * y));
    for (int64_t ox = 0; ox < W8; ox += 8) {
        __m256i in = _mm256_set1_epi32(-1);
        __m256i at;
        int near = 1;
        if (r->affine) { /* in float; lanes too near a rounding tie go through double below */
            __m256 fx = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(fx0 + ox), m1yf), m2f), hxf);
            __m256 fy = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(fy0 + ox), m4yf), m5f), hyf);
            __m256 rx = _mm256_round_ps(fx, rnd), ry = _mm256_round_ps(fy, rnd);
            __m256 dx = _mm256_andnot_ps(sign, _mm256_sub_ps(fx, rx)), dy = _mm256_andnot_ps(sign, _mm256_sub_ps(fy, ry));
            near = _mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(dx, tie, _CMP_GT_OQ), _mm256_cmp_ps(dy, tie, _CMP_GT_OQ)));
            if (!near) {
                __m256 ok = _mm256_and_ps(_mm256_and_ps(_mm256_cmp_ps(rx, zerof, _CMP_GE_OQ), _mm256_cmp_ps(rx, Wf, _CMP_LT_OQ)),
                                          _mm256_and_ps(_mm256_cmp_ps(ry, zerof, _CMP_GE_OQ), _mm256_cmp_ps(ry, Hf, _CMP_LT_OQ)));
                in = _mm256_castps_si256(ok);
                __m256i yi = _mm256_cvtps_epi32(ry), xi = _mm256_cvtps_epi32(rx);
                __m256i row = _mm256_mullo_epi32(_mm256_add_epi32(roffi, _mm256_mullo_epi32(rstepi, yi)), pitchi);
                at = _mm256_and_si256(_mm256_add_epi32(_mm256_add_epi32(row, coffi), _mm256_mullo_epi32(cstep, xi)), in);
            }
        }
        if (r->affine && near) {
            __m256d fxl = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(_mm256_loadu_pd(cx0 + ox), m1y), m2), hx);
            __m256d fxh = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(_mm256_loadu_pd(cx0 + ox + 4), m1y), m2), hx);
            __m256d fyl = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(_mm256_loadu_pd(cx3 + ox), m4y), m5), hy);
            __m256d fyh = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(_mm256_loadu_pd(cx3 + ox + 4), m4y), m5), hy);
            __m256d rxl = _mm256_round_pd(fxl, rnd), rxh = _mm256_round_pd(fxh, rnd);
            __m256d ryl = _mm256_round_pd(fyl, rnd), ryh = _mm256_round_pd(fyh, rnd);
            __m256d okl = _mm256_and_pd(_mm256_and_pd(_mm256_cmp_pd(rxl, zero, _CMP_GE_OQ), _mm256_cmp_pd(rxl, Wd, _CMP_LT_OQ)),
                                        _mm256_and_pd(_mm256_cmp_pd(ryl, zero, _CMP_GE_OQ), _mm256_cmp_pd(ryl, Hd, _CMP_LT_OQ)));
            __m256d okh = _mm256_and_pd(_mm256_and_pd(_mm256_cmp_pd(rxh, zero, _CMP_GE_OQ), _mm256_cmp_pd(rxh, Wd, _CMP_LT_OQ)),
                                        _mm256_and_pd(_mm256_cmp_pd(ryh, zero, _CMP_GE_OQ), _mm256_cmp_pd(ryh, Hd, _CMP_LT_OQ)));
            /* (roff + rstep y) pitch + coff + cstep x, exact in double; 0 where outside */
            __m256d al = _mm256_add_pd(_mm256_mul_pd(_mm256_add_pd(roff, _mm256_mul_pd(rstep, ryl)), pitch),
                                       _mm256_add_pd(coff, _mm256_mul_pd(cstepd, rxl)));
            __m256d ah = _mm256_add_pd(_mm256_mul_pd(_mm256_add_pd(roff, _mm256_mul_pd(rstep, ryh)), pitch),
                                       _mm256_add_pd(coff, _mm256_mul_pd(cstepd, rxh)));
            al = _mm256_and_pd(al, okl), ah = _mm256_and_pd(ah, okh);
            at = _mm256_set_m128i(_mm256_cvttpd_epi32(ah), _mm256_cvttpd_epi32(al));
            in = mask_pd(okl, okh);
        } else if (!r->affine) {
            int64_t a0 = (r->roff + r->rstep * oy) * r->pitch + r->coff + r->cstep * ox;
            at = _mm256_add_epi32(_mm256_set1_epi32((int32_t)a0), _mm256_mullo_epi32(lane, cstep));
        }
        __m256i is_last = _mm256_cmpeq_epi32(at, last);
        __m256i off = _mm256_add_epi32(_mm256_add_epi32(at, _mm256_add_epi32(at, at)), is_last);
        __m256i w = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), base, off, in, 1);
        w = _mm256_srlv_epi32(w, _mm256_and_si256(is_last, eight));
        wb[ox / 4] = w, wb[ox / 4 + 1] = in;
    }
}

AVX2 static int64_t rows_avx2(loom__tail_rows *r) {
    const int64_t H = r->H, W = r->W, hw = H * W, W8 = W & ~(int64_t)7;
    if (W8 == 0 || r->npx * 3 + 8 > 0x7fffffff) return 0;
    __m256 sat_f = _mm256_setzero_ps(), sat_g = _mm256_setzero_ps();
    for (int k = 0; k < r->ns; k++) {
        if (r->st[k].kind == LOOM__TS_SAT) /* uf[1] = (float)1 * f, gg[1] = (float)1 * (1 - f): the factors */
            sat_f = _mm256_set1_ps(r->sat->uf[1]), sat_g = _mm256_set1_ps(r->sat->gg[1]);
    }
    const __m256i ff = _mm256_set1_epi32(0xff);
    const __m256 fill_r = _mm256_set1_ps(r->fill[0]), fill_g = _mm256_set1_ps(r->fill[1]), fill_b = _mm256_set1_ps(r->fill[2]);
    __m256 fillv[3] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    if (r->x)
        for (int ch = 0; ch < 3; ch++) fillv[ch] = _mm256_set1_ps(r->lut[ch][r->fill[ch]]);
    __m256 mean[3], sd[3]; /* Normalize's, when the caller gives them (else the tables' gathers) */
    for (int ch = 0; ch < 3; ch++)
        mean[ch] = _mm256_set1_ps(r->norm ? r->norm[ch].mean : 0.0f), sd[ch] = _mm256_set1_ps(r->norm ? r->norm[ch].sd : 1.0f);
    /* m[0] x and m[3] x per column (x = ox - hx): the same for every row;
     * also in float: the source point is first computed in float, and only
     * when a lane lies within `tie` of a rounding tie (x.5) again in double,
     * the scalar arithmetic. tie bounds the float sums' error: eight
     * roundings of at most 2^-24 of the largest partial sum M, twice over. */
    double *cx0 = NULL, *cx3 = NULL;
    float *fx0 = NULL, *fy0 = NULL;
    /* no affine, rows read forwards (or only summed): plain loads */
    const bool contig = !r->affine && (r->cstep == 1 || (r->cstep == -1 && !r->x && !r->dst));
    /* otherwise a row's fetched words and masks first (wb), then its colour
     * stages: one loop doing both keeps too few of its long chains in flight */
    __m256i *wb = NULL;
    if (!contig && !(wb = aligned_alloc(32, (size_t)W8 * 8))) return 0;
    if (r->affine) {
        if (!(cx0 = malloc(2 * (size_t)W8 * (sizeof *cx0 + sizeof *fx0)))) { /* the scalar path does it all */
            free(wb);
            return 0;
        }
        cx3 = cx0 + W8;
        fx0 = (float *)(void *)(cx3 + W8), fy0 = fx0 + W8;
        for (int64_t ox = 0; ox < W8; ox++) {
            double x = (double)(r->ax0 + r->axs * ox) - r->hx;
            cx0[ox] = r->m[0] * x, cx3[ox] = r->m[3] * x;
            fx0[ox] = (float)cx0[ox], fy0[ox] = (float)cx3[ox];
        }
    }
    int64_t gray = 0;
    for (int64_t oy = 0; oy < H; oy++) {
        __m256i acc = _mm256_setzero_si256();
        if (!contig) fetch_row(r, oy, W8, cx0, fx0, wb);
        for (int64_t ox = 0; ox < W8; ox += 8) {
            __m256i in = _mm256_set1_epi32(-1);
            px8 p;
            if (contig) { /* the eight pixels lie side by side: loads, no gather */
                p = load8(r->base + (r->cstep > 0 ? loom__tail_px_at(r, oy, ox) : loom__tail_px_at(r, oy, ox + 7)) * 3);
            } else {
                const __m256i w = wb[ox / 4];
                in = wb[ox / 4 + 1];
                p = (px8){_mm256_cvtepi32_ps(_mm256_and_si256(w, ff)), _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(w, 8), ff)),
                          _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(w, 16), ff))};
            }
            const __m256 inf = _mm256_castsi256_ps(in);
            if (r->affine) {
                p.r = _mm256_blendv_ps(fill_r, p.r, inf);
                p.g = _mm256_blendv_ps(fill_g, p.g, inf);
                p.b = _mm256_blendv_ps(fill_b, p.b, inf);
            }
            stages8(r, &p, sat_f, sat_g);
            if (r->x) {
                __m256 u[3] = {p.r, p.g, p.b};
                for (int ch = 0; ch < 3; ch++) {
                    __m256 t = r->norm ? normalize8(u[ch], mean[ch], sd[ch])
                                       : _mm256_i32gather_ps(r->lut[ch], _mm256_cvttps_epi32(u[ch]), 4);
                    __m256 v = _mm256_blendv_ps(fillv[ch], t, inf);
                    float *o = r->x + (size_t)ch * (size_t)hw + (size_t)(oy * W + ox);
                    _mm256_storeu_ps(o, v);
                }
            } else if (r->dst) {
                if (r->affine) { /* the fill is written after the adjustments */
                    p.r = _mm256_blendv_ps(fill_r, p.r, inf);
                    p.g = _mm256_blendv_ps(fill_g, p.g, inf);
                    p.b = _mm256_blendv_ps(fill_b, p.b, inf);
                }
                loom__store_rgb8(r->dst + (oy * W + ox) * 3, _mm256_cvttps_epi32(p.r), _mm256_cvttps_epi32(p.g),
                                 _mm256_cvttps_epi32(p.b));
            }
            if (r->want_gray) acc = _mm256_add_epi32(acc, _mm256_cvttps_epi32(gray8(p.r, p.g, p.b)));
        }
        if (r->want_gray) {
            int32_t s[8];
            _mm256_storeu_si256((__m256i *)s, acc);
            for (int i = 0; i < 8; i++) gray += s[i];
        }
    }
    free(cx0), free(wb);
    r->gray_sum += gray;
    return W8;
}

int64_t loom__tail_rows_avx2(loom__tail_rows *r) { return loom__simd_avx2() && r->c == 3 ? rows_avx2(r) : 0; }

#else

int64_t loom__tail_rows_avx2(loom__tail_rows *r) {
    (void)r;
    return 0;
}

#endif
