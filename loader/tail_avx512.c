/* loader/tail_avx512.c — the fused tail's 3-channel rows (loader/tail.c)
 * sixteen pixels at a time with AVX-512 (F, BW, DQ, VL), chosen at run time
 * before the AVX2 version (loader/tail_avx2.c) when the CPU has it and
 * LOOM_LOADER_SIMD is neither 0 nor avx2.
 *
 * Lane by lane it is the scalar arithmetic, as the AVX2 version (whose
 * comment gives the reasons): the affine's source point in float, sixteen
 * pixels of which one lies within the float error bound of a rounding tie
 * placed by the scalar loom__affine_point / loom__nearest_at; masked gathers
 * (lanes outside read nothing, the image's last pixel read one byte early);
 * brightness / contrast / saturation / gray as separate products and sums
 * (this file is compiled with -ffp-contract=off, like every loader source:
 * AVX-512 has FMA, and a fused product would change the bits); hue through
 * the scalar primitive; ToTensor + Normalize computed (loom__norm: each
 * division a product by the reciprocal corrected by one FMA, checked equal
 * to the loader's table for all 256 values when the loader was made; else
 * the divisions themselves: gathers from the table cost a large part of
 * this pass), or gathered from the table when the caller gives no loom__norm; the
 * fill's value where the affine falls outside.
 * tests/test-fuse.c (e) compares it with the scalar steps and the AVX2 path.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loader_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "avx2_util.h"

#define AVX512 __attribute__((target("avx2,avx512f,avx512bw,avx512dq,avx512vl")))

typedef struct px16 {
    __m512i r, g, b; /* 0..255 per lane */
} px16;

AVX512 static inline __m512i trunc_u8(__m512 v) {
    v = _mm512_max_ps(v, _mm512_setzero_ps());
    v = _mm512_min_ps(v, _mm512_set1_ps(255.0f));
    return _mm512_cvttps_epi32(v);
}

/* floor(gray) of integer-valued lanes: (r 0.2989 + g 0.587) + b 0.114 */
AVX512 static inline __m512i gray16(__m512 rf, __m512 gf, __m512 bf) {
    __m512 s = _mm512_add_ps(_mm512_mul_ps(rf, _mm512_set1_ps(0.2989f)), _mm512_mul_ps(gf, _mm512_set1_ps(0.587f)));
    return _mm512_cvttps_epi32(_mm512_add_ps(s, _mm512_mul_ps(bf, _mm512_set1_ps(0.114f))));
}

/* loom__sat_span: u f + floor(gray) (1 - f), truncated to 0..255 */
AVX512 static inline void sat16(px16 *p, __m512 ff, __m512 g) {
    __m512 rf = _mm512_cvtepi32_ps(p->r), gf = _mm512_cvtepi32_ps(p->g), bf = _mm512_cvtepi32_ps(p->b);
    __m512 add = _mm512_mul_ps(_mm512_cvtepi32_ps(gray16(rf, gf, bf)), g);
    p->r = trunc_u8(_mm512_add_ps(_mm512_mul_ps(rf, ff), add));
    p->g = trunc_u8(_mm512_add_ps(_mm512_mul_ps(gf, ff), add));
    p->b = trunc_u8(_mm512_add_ps(_mm512_mul_ps(bf, ff), add));
}

AVX512 static inline void hue16(px16 *p, double f) {
    int32_t v[3][16];
    uint8_t buf[48];
    _mm512_storeu_si512(v[0], p->r);
    _mm512_storeu_si512(v[1], p->g);
    _mm512_storeu_si512(v[2], p->b);
    for (int i = 0; i < 16; i++) buf[i * 3] = (uint8_t)v[0][i], buf[i * 3 + 1] = (uint8_t)v[1][i], buf[i * 3 + 2] = (uint8_t)v[2][i];
    loom__hue_span(f, buf, buf, 16);
    for (int i = 0; i < 16; i++) v[0][i] = buf[i * 3], v[1][i] = buf[i * 3 + 1], v[2][i] = buf[i * 3 + 2];
    p->r = _mm512_loadu_si512(v[0]);
    p->g = _mm512_loadu_si512(v[1]);
    p->b = _mm512_loadu_si512(v[2]);
}

/* Sixteen pixels from 48 contiguous bytes, one per lane in memory order
 * (two 24-byte halves: nothing past them is read). */
#define PICK4(k) k, -1, -1, -1, k + 3, -1, -1, -1, k + 6, -1, -1, -1, k + 9, -1, -1, -1
AVX512 static inline __m256i spread8(const uint8_t *q, __m256i m) {
    __m128i lo = _mm_loadu_si128((const __m128i *)(const void *)q), hi = _mm_loadl_epi64((const __m128i *)(const void *)(q + 16));
    return _mm256_shuffle_epi8(_mm256_set_m128i(_mm_alignr_epi8(hi, lo, 12), lo), m);
}

AVX512 static inline px16 load16(const uint8_t *q) {
    const __m256i mr = _mm256_setr_epi8(PICK4(0), PICK4(0)), mg = _mm256_setr_epi8(PICK4(1), PICK4(1)),
                  mb = _mm256_setr_epi8(PICK4(2), PICK4(2));
    px16 p = {_mm512_inserti64x4(_mm512_castsi256_si512(spread8(q, mr)), spread8(q + 24, mr), 1),
              _mm512_inserti64x4(_mm512_castsi256_si512(spread8(q, mg)), spread8(q + 24, mg), 1),
              _mm512_inserti64x4(_mm512_castsi256_si512(spread8(q, mb)), spread8(q + 24, mb), 1)};
    return p;
}
#undef PICK4

/* ToTensor + Normalize of integer lanes v (loom__norm_value) */
typedef struct norm16 {
    __m512 mean, sd, rsd;
    bool fma;
} norm16;

AVX512 static inline __m512 normalize16(__m512i v, const norm16 *n) {
    const __m512 x = _mm512_cvtepi32_ps(v), c255 = _mm512_set1_ps(255.0f);
    if (!n->fma) return _mm512_div_ps(_mm512_sub_ps(_mm512_div_ps(x, c255), n->mean), n->sd);
    const __m512 r255 = _mm512_set1_ps(1.0f / 255.0f), q0 = _mm512_mul_ps(x, r255);
    const __m512 u = _mm512_sub_ps(_mm512_fmadd_ps(_mm512_fnmadd_ps(q0, c255, x), r255, q0), n->mean);
    const __m512 y0 = _mm512_mul_ps(u, n->rsd);
    return _mm512_fmadd_ps(_mm512_fnmadd_ps(y0, n->sd, u), n->rsd, y0);
}

/* Columns [0, W16) of every row; AFF (the affine), CONTIG (rows loaded as
 * bytes), OUT (1: the tensor, 2: u8 pixels, 0: nothing) and GRAY (the gray
 * sum) are constants where rows_avx512 calls it for the common cases, so
 * each gets its own loop without those branches. */
AVX512 static inline __attribute__((always_inline)) int64_t rows_body(loom__tail_rows *r, const bool AFF, const bool CONTIG,
                                                                      const int OUT, const bool GRAY) {
    const int64_t H = r->H, W = r->W, hw = H * W, W16 = W & ~(int64_t)15;
    if (W16 == 0 || r->npx * 3 + 8 > 0x7fffffff) return 0;
    __m512 sat_f = _mm512_setzero_ps(), sat_g = _mm512_setzero_ps();
    for (int k = 0; k < r->ns; k++) {
        if (r->st[k].kind == LOOM__TS_SAT) /* uf[1] = (float)1 * f, gg[1] = (float)1 * (1 - f): the factors */
            sat_f = _mm512_set1_ps(r->sat->uf[1]), sat_g = _mm512_set1_ps(r->sat->gg[1]);
    }
    const void *base = r->base;
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), ff = _mm512_set1_epi32(0xff);
    const __m512i last = _mm512_set1_epi32((int32_t)(r->npx - 1)), cstep = _mm512_set1_epi32((int32_t)r->cstep);
    const __m512i fill_r = _mm512_set1_epi32(r->fill[0]), fill_g = _mm512_set1_epi32(r->fill[1]),
                  fill_b = _mm512_set1_epi32(r->fill[2]);
    __m512 fillv[3] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    norm16 nv[3];
    if (OUT == 1)
        for (int ch = 0; ch < 3; ch++) {
            fillv[ch] = _mm512_set1_ps(r->lut[ch][r->fill[ch]]);
            if (r->norm)
                nv[ch] = (norm16){_mm512_set1_ps(r->norm[ch].mean), _mm512_set1_ps(r->norm[ch].sd),
                                  _mm512_set1_ps(r->norm[ch].rsd), r->norm[ch].fma};
        }
    /* m[0] x and m[3] x per column in float (x = ox - hx) */
    float *fx0 = NULL, *fy0 = NULL;
    if (AFF) {
        if (!(fx0 = malloc(2 * (size_t)W16 * sizeof *fx0))) return 0; /* the next path does it all */
        fy0 = fx0 + W16;
        for (int64_t ox = 0; ox < W16; ox++) {
            double x = (double)(r->ax0 + r->axs * ox) - r->hx;
            fx0[ox] = (float)(r->m[0] * x), fy0[ox] = (float)(r->m[3] * x);
        }
    }
    const double M = fmax(fabs(r->m[0]) * r->hx + fabs(r->m[1]) * r->hy + fabs(r->m[2]) + fabs(r->hx),
                          fabs(r->m[3]) * r->hx + fabs(r->m[4]) * r->hy + fabs(r->m[5]) + fabs(r->hy)) + 1.0;
    /* tie: tail_avx2.c's bound (eight roundings of at most 2^-24 M, twice
     * over); here there are three (m0 x, the row's part, their sum) */
    const __m512 tie = _mm512_set1_ps((float)(0.5 - M * 0x1p-20)), zerof = _mm512_setzero_ps(),
                 Wf = _mm512_set1_ps((float)r->aw), Hf = _mm512_set1_ps((float)r->ah);
    /* loom__tail_px_at(y, x) = at0 + rowi y + cstep x (all within int32: npx * 3 + 8 fits) */
    const __m512i at0 = _mm512_set1_epi32((int32_t)(r->roff * r->pitch + r->coff)),
                  rowi = _mm512_set1_epi32((int32_t)(r->rstep * r->pitch));
    const bool reverse = r->cstep == -1 && OUT != 0; /* a flip's lanes back in image order (a sum needs none) */
    const __m512i rev = _mm512_setr_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    enum { rnd = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }; /* an immediate, even at -O0 */
    int64_t gray = 0;
    for (int64_t oy = 0; oy < H; oy++) {
        /* the row's part of the source point, rounded once (fx = m0 x + this: two roundings) */
        const double y = (double)(r->ay0 + r->ays * oy) - r->hy;
        const __m512 cxf = _mm512_set1_ps((float)(r->m[1] * y + r->m[2] + r->hx)),
                     cyf = _mm512_set1_ps((float)(r->m[4] * y + r->m[5] + r->hy));
        __m512i acc = _mm512_setzero_si512();
        for (int64_t ox = 0; ox < W16; ox += 16) {
            __mmask16 in = 0xffff;
            px16 p;
            if (CONTIG) {
                p = load16(r->base + (r->cstep > 0 ? loom__tail_px_at(r, oy, ox) : loom__tail_px_at(r, oy, ox + 15)) * 3);
                if (reverse)
                    p = (px16){_mm512_permutexvar_epi32(rev, p.r), _mm512_permutexvar_epi32(rev, p.g),
                               _mm512_permutexvar_epi32(rev, p.b)};
            } else {
                __m512i at;
                if (AFF) {
                    __m512 fx = _mm512_add_ps(_mm512_loadu_ps(fx0 + ox), cxf), fy = _mm512_add_ps(_mm512_loadu_ps(fy0 + ox), cyf);
                    __m512 rx = _mm512_roundscale_ps(fx, rnd), ry = _mm512_roundscale_ps(fy, rnd);
                    __mmask16 near = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(fx, rx)), tie, _CMP_GT_OQ) |
                                     _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(fy, ry)), tie, _CMP_GT_OQ);
                    in = _mm512_cmp_ps_mask(rx, zerof, _CMP_GE_OQ) & _mm512_cmp_ps_mask(rx, Wf, _CMP_LT_OQ) &
                         _mm512_cmp_ps_mask(ry, zerof, _CMP_GE_OQ) & _mm512_cmp_ps_mask(ry, Hf, _CMP_LT_OQ);
                    __m512i yi = _mm512_cvtps_epi32(ry), xi = _mm512_cvtps_epi32(rx);
                    at = _mm512_maskz_add_epi32(in, _mm512_add_epi32(at0, _mm512_mullo_epi32(rowi, yi)), _mm512_mullo_epi32(cstep, xi));
                    if (near) { /* those lanes again with the scalar arithmetic */
                        int32_t a[16];
                        _mm512_storeu_si512(a, at);
                        for (unsigned m = near; m; m &= m - 1) {
                            const int l = __builtin_ctz(m);
                            double fxd, fyd;
                            int64_t q;
                            loom__affine_point(r->m, r->hx, r->hy, r->ax0 + r->axs * (ox + l), r->ay0 + r->ays * oy, &fxd,
                                               &fyd);
                            bool ok = loom__nearest_at(fxd, fyd, r->aw, r->ah, &q);
                            a[l] = ok ? (int32_t)loom__tail_px_at(r, q / r->aw, q % r->aw) : 0;
                            in = ok ? (__mmask16)(in | (1u << l)) : (__mmask16)(in & ~(1u << l));
                        }
                        at = _mm512_loadu_si512(a);
                    }
                } else {
                    int64_t a0 = loom__tail_px_at(r, oy, ox);
                    at = _mm512_add_epi32(_mm512_set1_epi32((int32_t)a0), _mm512_mullo_epi32(lane, cstep));
                }
                __mmask16 is_last = _mm512_cmpeq_epi32_mask(at, last);
                __m512i off = _mm512_mask_sub_epi32(_mm512_add_epi32(at, _mm512_add_epi32(at, at)), is_last,
                                                    _mm512_add_epi32(at, _mm512_add_epi32(at, at)), _mm512_set1_epi32(1));
                __m512i w = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), in, off, base, 1);
                w = _mm512_mask_srli_epi32(w, is_last, w, 8);
                p = (px16){_mm512_and_si512(w, ff), _mm512_and_si512(_mm512_srli_epi32(w, 8), ff),
                           _mm512_and_si512(_mm512_srli_epi32(w, 16), ff)};
            }
            if (AFF && GRAY) { /* (else the lanes outside are replaced at the end) */
                p.r = _mm512_mask_blend_epi32(in, fill_r, p.r);
                p.g = _mm512_mask_blend_epi32(in, fill_g, p.g);
                p.b = _mm512_mask_blend_epi32(in, fill_b, p.b);
            }
            for (int k = 0; k < r->ns; k++) {
                int kind = r->st[k].kind;
                if (kind == LOOM__TS_LUT) {
                    const loom__tail_stage *q = &r->st[k];
                    for (int j = 0; j < q->nlin; j++) {
                        const __m512 mul = _mm512_set1_ps(q->mul[j]), add = _mm512_set1_ps(q->add[j]);
                        p.r = trunc_u8(_mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(p.r), mul), add));
                        p.g = trunc_u8(_mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(p.g), mul), add));
                        p.b = trunc_u8(_mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(p.b), mul), add));
                    }
                } else if (kind == LOOM__TS_SAT) {
                    sat16(&p, sat_f, sat_g);
                } else {
                    hue16(&p, r->st[k].f);
                }
            }
            if (OUT == 1) {
                __m512i idx[3] = {p.r, p.g, p.b};
                for (int ch = 0; ch < 3; ch++) {
                    __m512 v = r->norm ? _mm512_mask_blend_ps(in, fillv[ch], normalize16(idx[ch], &nv[ch]))
                                       : _mm512_mask_i32gather_ps(fillv[ch], in, idx[ch], r->lut[ch], 4);
                    float *o = r->x + (size_t)ch * (size_t)hw + (size_t)(oy * W + ox);
                    if (((uintptr_t)o & 63) == 0) _mm512_stream_ps(o, v);
                    else _mm512_storeu_ps(o, v);
                }
            } else if (OUT == 2) {
                if (AFF) { /* the fill is written after the adjustments */
                    p.r = _mm512_mask_blend_epi32(in, fill_r, p.r);
                    p.g = _mm512_mask_blend_epi32(in, fill_g, p.g);
                    p.b = _mm512_mask_blend_epi32(in, fill_b, p.b);
                }
                uint8_t *o = r->dst + (oy * W + ox) * 3;
                loom__store_rgb8(o, _mm512_castsi512_si256(p.r), _mm512_castsi512_si256(p.g), _mm512_castsi512_si256(p.b));
                loom__store_rgb8(o + 24, _mm512_extracti64x4_epi64(p.r, 1), _mm512_extracti64x4_epi64(p.g, 1),
                                 _mm512_extracti64x4_epi64(p.b, 1));
            }
            if (GRAY)
                acc = _mm512_add_epi32(acc, gray16(_mm512_cvtepi32_ps(p.r), _mm512_cvtepi32_ps(p.g), _mm512_cvtepi32_ps(p.b)));
        }
        if (GRAY) gray += _mm512_reduce_add_epi32(acc);
    }
    free(fx0);
    if (OUT == 1) _mm_sfence(); /* the streaming stores, before the batch is handed over */
    r->gray_sum += gray;
    return W16;
}

AVX512 static int64_t rows_avx512(loom__tail_rows *r) {
    const bool contig = !r->affine && (r->cstep == 1 || r->cstep == -1);
    const int out = r->x ? 1 : r->dst ? 2 : 0;
    if (r->affine && out == 1 && !r->want_gray) return rows_body(r, true, false, 1, false); /* the guide's pass */
    if (contig && out == 0 && r->want_gray) return rows_body(r, false, true, 0, true);    /* contrast's pre-pass */
    if (contig && out == 2 && r->want_gray) return rows_body(r, false, true, 2, true);    /* the pre-pass, kept */
    if (contig && out == 1 && !r->want_gray) return rows_body(r, false, true, 1, false);  /* crops and flips */
    return rows_body(r, r->affine, contig, out, r->want_gray);
}

int64_t loom__tail_rows_avx512(loom__tail_rows *r) { return loom__simd_avx512() && r->c == 3 ? rows_avx512(r) : 0; }

#else

int64_t loom__tail_rows_avx512(loom__tail_rows *r) {
    (void)r;
    return 0;
}

#endif
