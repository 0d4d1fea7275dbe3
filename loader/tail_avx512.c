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
 * fill's value where the affine falls outside. With VBMI as well (and
 * LOOM_LOADER_SIMD not avx512), the loop's second instance keeps pixels as
 * packed bytes where it can: brightness / contrast are one lookup in their
 * composed u8 table instead of float arithmetic per step
 * (loader/tail_avx512_body.h; the guide's pass ~9% faster on Zen 4).
 * tests/test-fuse.c (e) compares it with the scalar steps and the AVX2 path,
 * at every SIMD level the CPU has.
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

/* Packed RGBx words (x: any byte) to channels and back (channels 0..255) */
AVX512 static inline px16 split16(__m512i w, __m512i ff) {
    return (px16){_mm512_and_si512(w, ff), _mm512_and_si512(_mm512_srli_epi32(w, 8), ff),
                  _mm512_and_si512(_mm512_srli_epi32(w, 16), ff)};
}

AVX512 static inline __m512i pack16(px16 p) {
    return _mm512_or_si512(p.r, _mm512_or_si512(_mm512_slli_epi32(p.g, 8), _mm512_slli_epi32(p.b, 16)));
}

/* A job's constants: saturation's factors, and for the tensor the fill's
 * value and Normalize per channel */
AVX512 static inline void consts16(const loom__tail_rows *r, bool tensor, __m512 *sat_f, __m512 *sat_g, __m512 fillv[3],
                                   norm16 nv[3]) {
    *sat_f = *sat_g = _mm512_setzero_ps();
    for (int k = 0; k < r->ns; k++) {
        if (r->st[k].kind == LOOM__TS_SAT) /* uf[1] = (float)1 * f, gg[1] = (float)1 * (1 - f): the factors */
            *sat_f = _mm512_set1_ps(r->sat->uf[1]), *sat_g = _mm512_set1_ps(r->sat->gg[1]);
    }
    for (int ch = 0; ch < 3; ch++) {
        fillv[ch] = tensor ? _mm512_set1_ps(r->lut[ch][r->fill[ch]]) : _mm512_setzero_ps();
        nv[ch] = tensor && r->norm ? (norm16){_mm512_set1_ps(r->norm[ch].mean), _mm512_set1_ps(r->norm[ch].sd),
                                              _mm512_set1_ps(r->norm[ch].rsd), r->norm[ch].fma}
                                   : (norm16){fillv[ch], fillv[ch], fillv[ch], false};
    }
}

/* vpermb indices: pixel i of 48 bytes to lane i (unpack), to lane 15 - i
 * (unpack_rev), and lanes' RGB back to 48 bytes (pack); lanes are RGBx words */
AVX512 static inline void vb_tables(__m512i *unpack, __m512i *unpack_rev, __m512i *pack) {
    uint8_t u[64], ur[64], pk[64] = {0};
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 4; j++)
            u[4 * i + j] = (uint8_t)(3 * i + (j < 3 ? j : 2)), ur[4 * i + j] = (uint8_t)(3 * (15 - i) + (j < 3 ? j : 2));
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 3; j++) pk[3 * i + j] = (uint8_t)(4 * i + j);
    *unpack = _mm512_loadu_si512(u), *unpack_rev = _mm512_loadu_si512(ur), *pack = _mm512_loadu_si512(pk);
}

#define VBMI __attribute__((target("avx2,avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi")))

/* t[v] for each of the 64 bytes v: two 128-entry halves, chosen by the top bit */
VBMI static inline __m512i lut64(__m512i v, const uint8_t t[256]) {
    const __m512i lo = _mm512_permutex2var_epi8(_mm512_loadu_si512(t), v, _mm512_loadu_si512(t + 64));
    const __m512i hi = _mm512_permutex2var_epi8(_mm512_loadu_si512(t + 128), v, _mm512_loadu_si512(t + 192));
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi);
}

#define TAIL_TARGET AVX512
#define TAIL_VB 0
#define TAIL_BODY rows_body
#define TAIL_STAGES stages16
#include "tail_avx512_body.h"
#undef TAIL_TARGET
#undef TAIL_VB
#undef TAIL_BODY
#undef TAIL_STAGES
#define TAIL_TARGET VBMI
#define TAIL_VB 1
#define TAIL_BODY rows_body_vbmi
#define TAIL_STAGES stages16_vbmi
#include "tail_avx512_body.h"
#undef TAIL_TARGET
#undef TAIL_VB
#undef TAIL_BODY
#undef TAIL_STAGES

/* The common cases with their constants, then the rest. */
#define TAIL_DISPATCH(body)                                                                                            \
    const bool contig = !r->affine && (r->cstep == 1 || r->cstep == -1);                                               \
    const int out = r->x ? 1 : r->dst ? 2 : 0;                                                                         \
    if (r->affine && out == 1 && !r->want_gray) return body(r, true, false, 1, false); /* the guide's pass */          \
    if (contig && out == 0 && r->want_gray) return body(r, false, true, 0, true);    /* contrast's pre-pass */         \
    if (contig && out == 2 && r->want_gray) return body(r, false, true, 2, true);    /* the pre-pass, kept */          \
    if (contig && out == 1 && !r->want_gray) return body(r, false, true, 1, false);  /* crops and flips */             \
    return body(r, r->affine, contig, out, r->want_gray)

AVX512 static int64_t rows_avx512(loom__tail_rows *r) { TAIL_DISPATCH(rows_body); }

VBMI static int64_t rows_avx512_vbmi(loom__tail_rows *r) { TAIL_DISPATCH(rows_body_vbmi); }
#undef TAIL_DISPATCH

int64_t loom__tail_rows_avx512(loom__tail_rows *r) {
    if (!loom__simd_avx512() || r->c != 3) return 0;
    return loom__simd_avx512_vbmi_vnni() ? rows_avx512_vbmi(r) : rows_avx512(r);
}

#else

int64_t loom__tail_rows_avx512(loom__tail_rows *r) {
    (void)r;
    return 0;
}

#endif
