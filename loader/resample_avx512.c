/* loader/resample_avx512.c — the separable resampler's 3-channel width
 * pass (sep_run in loader/transforms.c) sixteen outputs at a time with
 * AVX-512 VBMI and VNNI, chosen at run time before the AVX2 version
 * (loader/resample_avx2.c) when the CPU has it (LOOM_LOADER_SIMD as there).
 *
 * No gathers and no 32-bit multiplies: the sixteen outputs of a block read
 * source pixels within 42 of one another (a shrink up to ~2.3x), so two
 * 64-byte loads hold them all; for each four taps one byte permute
 * (vpermt2b) per channel puts the four taps' values of every output in one
 * 32-bit lane, and vpdpbusd multiplies them by the taps' weights and adds
 * the four products to the sums. vpdpbusd multiplies u8 by s8, so a weight
 * w (FIX_BITS = 22 fraction bits, 0 <= w <= 2^22) is written in three
 * signed base-256 digits, w = 2^16 d2 + 2^8 d1 + d0 (each -128..127), one
 * sum per digit: 2^16 S2 + 2^8 S1 + S0 + half is the same integer as the
 * scalar loop's, the same bits. The 48 output bytes leave by one byte
 * permute and a 64-byte store (the next block overwrites the 16 past
 * them; the row's last block stores 48). Blocks whose pixels lie further
 * apart get no plan (the AVX2 pass runs instead); loads stop at the row's
 * end (masked).
 * The height pass of a row likewise: four taps' rows interleaved byte by
 * byte, 64 bytes at a time, through vpdpbusd with the digits
 * (height_row512_dp); the rest of the row, and CPUs without VNNI, 32 bytes
 * at a time with the weights split as w = 2^11 wh + wl (height_row512).
 * tests/test-fuse.c (e) compares both with the scalar loops and AVX2.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loader_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define VBMI __attribute__((target("avx2,avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx512vnni")))

enum { WIN = 42 }; /* pixels two 64-byte loads hold whole (126 bytes) */

struct loom__wplan512 {
    int64_t nb, nquad;
    int64_t *base;  /* nb: the block's first source byte in the row */
    int8_t *idx;    /* (b nquad + q) 3 + ch: 64 byte positions (four taps per output) */
    int8_t *digit;  /* (b nquad + q) 3 + k: the weights' signed base-256 digit k, same layout */
};

void loom__width_plan512_free(loom__wplan512 *p) {
    if (!p) return;
    free(p->base), free(p->idx), free(p->digit), free(p);
}

loom__wplan512 *loom__width_plan_avx512(const int64_t *idx, const int64_t *cnt, const int32_t *wt, int64_t span, int64_t ow) {
    int64_t nb = ow / 16, maxn = 0;
    if (nb == 0 || !loom__simd_avx512_vbmi_vnni()) return NULL;
    for (int64_t x = 0; x < nb * 16; x++) {
        if (cnt[x] < 1) return NULL;
        maxn = cnt[x] > maxn ? cnt[x] : maxn;
        for (int64_t j = 0; j < cnt[x]; j++)
            if (wt[x * span + j] < 0 || wt[x * span + j] > (1 << 22)) return NULL;
    }
    int64_t nquad = (maxn + 3) / 4;
    loom__wplan512 *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->nb = nb, p->nquad = nquad;
    p->base = malloc((size_t)nb * sizeof *p->base);
    p->idx = malloc((size_t)(nb * nquad * 3 * 64));
    p->digit = malloc((size_t)(nb * nquad * 3 * 64));
    if (!p->base || !p->idx || !p->digit) {
        loom__width_plan512_free(p);
        return NULL;
    }
    for (int64_t b = 0; b < nb; b++) {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (int64_t x = b * 16; x < b * 16 + 16; x++)
            for (int64_t j = 0; j < cnt[x]; j++) {
                int64_t i = idx[x * span + j];
                lo = i < lo ? i : lo, hi = i > hi ? i : hi;
            }
        if (hi - lo + 1 > WIN) { /* too far apart for one window: the AVX2 pass */
            loom__width_plan512_free(p);
            return NULL;
        }
        p->base[b] = lo * 3;
        for (int64_t q = 0; q < nquad; q++) {
            int8_t *ix = p->idx + (b * nquad + q) * 3 * 64, *dg = p->digit + (b * nquad + q) * 3 * 64;
            for (int l = 0; l < 16; l++) {
                int64_t x = b * 16 + l;
                for (int t = 0; t < 4; t++) {
                    int64_t j = 4 * q + t;
                    int64_t i = j < cnt[x] ? idx[x * span + j] : lo; /* past the count: weight 0 */
                    int32_t w = j < cnt[x] ? wt[x * span + j] : 0;
                    for (int ch = 0; ch < 3; ch++) ix[ch * 64 + l * 4 + t] = (int8_t)((i - lo) * 3 + ch);
                    /* w = 2^16 d2 + 2^8 d1 + d0, each digit in -128..127 (0 <= w <= 2^22: d2 <= 64) */
                    for (int k = 0; k < 3; k++) {
                        int32_t d = ((w + 128) & 255) - 128;
                        dg[k * 64 + l * 4 + t] = (int8_t)d;
                        w = (w - d) / 256;
                    }
                }
            }
        }
    }
    return p;
}

/* (acc >> bits) clamped to 0..255 */
VBMI static inline __m512i to_u8_512(__m512i acc, int bits) {
    __m512i v = _mm512_sra_epi32(acc, _mm_cvtsi32_si128(bits));
    return _mm512_min_epi32(_mm512_max_epi32(v, _mm512_setzero_si512()), _mm512_set1_epi32(255));
}

/* vpermb indices: lane i's bytes 0..2 to bytes 3 i .. 3 i + 2 (RGBx words to 48 RGB bytes) */
#define PACK3(i) 4 * (i), 4 * (i) + 1, 4 * (i) + 2
static const uint8_t PACK48[64] = {PACK3(0),  PACK3(1),  PACK3(2),  PACK3(3),  PACK3(4),  PACK3(5),
                                   PACK3(6),  PACK3(7),  PACK3(8),  PACK3(9),  PACK3(10), PACK3(11),
                                   PACK3(12), PACK3(13), PACK3(14), PACK3(15)};
#undef PACK3

VBMI static void width_row512(const loom__wplan512 *p, const uint8_t *s, int64_t row_bytes, int bits, int32_t half,
                              uint8_t *o) {
    const __m512i h = _mm512_set1_epi32(half), pack = _mm512_loadu_si512(PACK48);
    for (int64_t b = 0; b < p->nb; b++) {
        const uint8_t *q = s + p->base[b];
        int64_t avail = row_bytes - p->base[b]; /* bytes left in the row from q */
        __m512i lo = avail >= 64 ? _mm512_loadu_si512(q) : _mm512_maskz_loadu_epi8((1ull << avail) - 1, q);
        __m512i hi = avail >= 128 ? _mm512_loadu_si512(q + 64)
                     : avail > 64 ? _mm512_maskz_loadu_epi8((1ull << (avail - 64)) - 1, q + 64)
                                  : _mm512_setzero_si512();
        __m512i a[3][3]; /* [channel][digit] */
        for (int ch = 0; ch < 3; ch++) a[ch][0] = a[ch][1] = a[ch][2] = _mm512_setzero_si512();
        for (int64_t k = 0; k < p->nquad; k++) {
            const int64_t at = (b * p->nquad + k) * 3 * 64;
            const __m512i d0 = _mm512_loadu_si512(p->digit + at), d1 = _mm512_loadu_si512(p->digit + at + 64),
                          d2 = _mm512_loadu_si512(p->digit + at + 128);
            for (int ch = 0; ch < 3; ch++) {
                /* four taps' u8 values of each output in its 32-bit lane: vpdpbusd multiplies them by
                 * the signed digits and adds the four products to the digit's sum */
                __m512i v = _mm512_permutex2var_epi8(lo, _mm512_loadu_si512(p->idx + at + ch * 64), hi);
                a[ch][0] = _mm512_dpbusd_epi32(a[ch][0], v, d0);
                a[ch][1] = _mm512_dpbusd_epi32(a[ch][1], v, d1);
                a[ch][2] = _mm512_dpbusd_epi32(a[ch][2], v, d2);
            }
        }
        __m512i r[3];
        for (int ch = 0; ch < 3; ch++) {
            __m512i acc = _mm512_add_epi32(_mm512_slli_epi32(a[ch][2], 16), _mm512_slli_epi32(a[ch][1], 8));
            r[ch] = to_u8_512(_mm512_add_epi32(_mm512_add_epi32(acc, a[ch][0]), h), bits);
        }
        /* RGBx words, then their 48 bytes in order by one byte permute; all 64
         * bytes stored where the next block overwrites the 16 past ours */
        const __m512i w = _mm512_permutexvar_epi8(
            pack, _mm512_or_si512(r[0], _mm512_or_si512(_mm512_slli_epi32(r[1], 8), _mm512_slli_epi32(r[2], 16))));
        if (b + 1 < p->nb) _mm512_storeu_si512(o + b * 48, w);
        else _mm512_mask_storeu_epi8(o + b * 48, 0xffffffffffffull, w);
    }
}

int64_t loom__width_row_avx512(const loom__wplan512 *p, const uint8_t *s, int64_t sw, int bits, int32_t half, uint8_t *o) {
    width_row512(p, s, sw * 3, bits, half, o);
    return p->nb * 16;
}

/* The height pass of one output row from byte x, 32 bytes at a time: the
 * taps' rows in pairs, widened to 16 bits and interleaved, through vpmaddwd
 * with the weights split as w = 2^11 wh + wl (both fit 16 bits: the sum is
 * 2^11 sum(p wh) + sum(p wl) + half); the same integer sums as the scalar loop.
 * Written once for two targets: with VNNI, each product pair is added to
 * its sum by vpdpwssd (one instruction for vpmaddwd + vpaddd, the same
 * 32-bit integers); without, by the two. */
#define BW __attribute__((target("avx2,avx512f,avx512bw,avx512dq,avx512vl")))
#define BW_VNNI __attribute__((target("avx2,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))
#define MAC_BW(acc, a, b) acc = _mm512_add_epi32(acc, _mm512_madd_epi16(a, b))
#define MAC_VNNI(acc, a, b) acc = _mm512_dpwssd_epi32(acc, a, b)

#define HEIGHT_ROW(NAME, ATTR, MAC)                                                                                     \
    ATTR static int64_t NAME(const uint8_t *const *t, const int32_t *w, int64_t n, int64_t x, int64_t len, int bits,   \
                             int32_t half, uint8_t *o) {                                                                \
        const int64_t npair = (n + 1) / 2;                                                                              \
        __m512i wl[8], wh[8]; /* n <= 16 taps */                                                                        \
        for (int64_t k = 0; k < npair; k++) {                                                                           \
            int32_t w0 = w[2 * k], w1 = 2 * k + 1 < n ? w[2 * k + 1] : 0;                                               \
            wl[k] = _mm512_set1_epi32((int32_t)((uint32_t)(w0 & 2047) | (uint32_t)(w1 & 2047) << 16));                  \
            wh[k] = _mm512_set1_epi32((int32_t)((uint32_t)(w0 >> 11) | (uint32_t)(w1 >> 11) << 16));                    \
        }                                                                                                               \
        const __m512i h = _mm512_set1_epi32(half), max = _mm512_set1_epi16(255);                                        \
        const __m128i sh = _mm_cvtsi32_si128(bits);                                                                     \
        for (; x + 32 <= len; x += 32) {                                                                                \
            __m512i l0 = _mm512_setzero_si512(), l1 = l0, h0 = l0, h1 = l0;                                             \
            for (int64_t k = 0; k < npair; k++) {                                                                       \
                const uint8_t *r0 = t[2 * k], *r1 = 2 * k + 1 < n ? t[2 * k + 1] : t[2 * k];                            \
                __m512i a = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(r0 + x)));          \
                __m512i b = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(r1 + x)));          \
                __m512i lo = _mm512_unpacklo_epi16(a, b), hi = _mm512_unpackhi_epi16(a, b);                             \
                MAC(l0, lo, wl[k]);                                                                                     \
                MAC(h0, lo, wh[k]);                                                                                     \
                MAC(l1, hi, wl[k]);                                                                                     \
                MAC(h1, hi, wh[k]);                                                                                     \
            }                                                                                                           \
            __m512i v0 = _mm512_sra_epi32(_mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(h0, 11), l0), h), sh);    \
            __m512i v1 = _mm512_sra_epi32(_mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(h1, 11), l1), h), sh);    \
            /* packus: 0..65535 per lane, back in order (the unpacks' lane order undone); then at most 255, as          \
             * fix_u8 clamps (a guard: weights rounded one by one need not sum to exactly 2^22) */                      \
            __m512i v = _mm512_min_epu16(_mm512_packus_epi32(v0, v1), max);                                             \
            _mm256_storeu_si256((__m256i *)(void *)(o + x), _mm512_cvtepi16_epi8(v));                                   \
        }                                                                                                               \
        return x;                                                                                                       \
    }

HEIGHT_ROW(height_row512, BW, MAC_BW)
HEIGHT_ROW(height_row512_vnni, BW_VNNI, MAC_VNNI)

/* With VNNI, 64 bytes at a time: four taps' rows interleaved byte by byte
 * (each 32-bit lane: one output byte's four source values) and multiplied
 * by the weights' signed base-256 digits with vpdpbusd (w = 2^16 d2 + 2^8
 * d1 + d0, as the width pass); the unpacks and the saturating packs are
 * both within 128-bit lanes, so the packs put the bytes back in order. */
BW_VNNI static int64_t height_row512_dp(const uint8_t *const *t, const int32_t *w, int64_t n, int64_t len, int bits,
                                        int32_t half, uint8_t *o) {
    const int64_t nquad = (n + 3) / 4;
    __m512i dg[4][3]; /* n <= 16 taps */
    const uint8_t *row[16];
    for (int64_t q = 0; q < nquad; q++) {
        uint32_t d[3] = {0, 0, 0};
        for (int u = 0; u < 4; u++) {
            int64_t j = 4 * q + u;
            int32_t v = j < n ? w[j] : 0; /* past the count: weight 0 on the first row */
            row[j] = j < n ? t[j] : t[0];
            for (int k = 0; k < 3; k++) {
                int32_t dk = ((v + 128) & 255) - 128;
                d[k] |= (uint32_t)(uint8_t)(int8_t)dk << (8 * u);
                v = (v - dk) / 256;
            }
        }
        for (int k = 0; k < 3; k++) dg[q][k] = _mm512_set1_epi32((int32_t)d[k]);
    }
    const __m512i h = _mm512_set1_epi32(half);
    const __m128i sh = _mm_cvtsi32_si128(bits);
    int64_t x = 0;
    for (; x + 64 <= len; x += 64) {
        __m512i a[4][3]; /* [bytes 4i..4i+3 of each 16][digit] */
        for (int i = 0; i < 4; i++) a[i][0] = a[i][1] = a[i][2] = _mm512_setzero_si512();
        for (int64_t q = 0; q < nquad; q++) {
            const __m512i r0 = _mm512_loadu_si512(row[4 * q] + x), r1 = _mm512_loadu_si512(row[4 * q + 1] + x),
                          r2 = _mm512_loadu_si512(row[4 * q + 2] + x), r3 = _mm512_loadu_si512(row[4 * q + 3] + x);
            const __m512i lo01 = _mm512_unpacklo_epi8(r0, r1), hi01 = _mm512_unpackhi_epi8(r0, r1);
            const __m512i lo23 = _mm512_unpacklo_epi8(r2, r3), hi23 = _mm512_unpackhi_epi8(r2, r3);
            const __m512i v[4] = {_mm512_unpacklo_epi16(lo01, lo23), _mm512_unpackhi_epi16(lo01, lo23),
                                  _mm512_unpacklo_epi16(hi01, hi23), _mm512_unpackhi_epi16(hi01, hi23)};
            for (int i = 0; i < 4; i++)
                for (int k = 0; k < 3; k++) a[i][k] = _mm512_dpbusd_epi32(a[i][k], v[i], dg[q][k]);
        }
        __m512i s[4];
        for (int i = 0; i < 4; i++) {
            __m512i acc = _mm512_add_epi32(_mm512_slli_epi32(a[i][2], 16), _mm512_slli_epi32(a[i][1], 8));
            s[i] = _mm512_sra_epi32(_mm512_add_epi32(_mm512_add_epi32(acc, a[i][0]), h), sh);
        }
        /* packus: 0..65535, then 0..255 (fix_u8's clamp) */
        const __m512i lo = _mm512_packus_epi32(s[0], s[1]), hi = _mm512_packus_epi32(s[2], s[3]);
        _mm512_storeu_si512(o + x, _mm512_packus_epi16(lo, hi));
    }
    return x;
}

int64_t loom__height_row_avx512(const uint8_t *const *t, const int32_t *w, int64_t n, int64_t len, int bits, int32_t half,
                                uint8_t *o) {
    if (!loom__simd_avx512() || n < 1 || n > 16) return 0;
    for (int64_t j = 0; j < n; j++)
        if (w[j] < 0 || w[j] > (1 << 22)) return 0;
    if (!loom__simd_avx512_vbmi_vnni()) return height_row512(t, w, n, 0, len, bits, half, o);
    return height_row512_vnni(t, w, n, height_row512_dp(t, w, n, len, bits, half, o), len, bits, half, o);
}

#else

int64_t loom__height_row_avx512(const uint8_t *const *t, const int32_t *w, int64_t n, int64_t len, int bits, int32_t half,
                                uint8_t *o) {
    (void)t, (void)w, (void)n, (void)len, (void)bits, (void)half, (void)o;
    return 0;
}
loom__wplan512 *loom__width_plan_avx512(const int64_t *idx, const int64_t *cnt, const int32_t *wt, int64_t span, int64_t ow) {
    (void)idx, (void)cnt, (void)wt, (void)span, (void)ow;
    return NULL;
}
int64_t loom__width_row_avx512(const loom__wplan512 *p, const uint8_t *s, int64_t sw, int bits, int32_t half, uint8_t *o) {
    (void)p, (void)s, (void)sw, (void)bits, (void)half, (void)o;
    return 0;
}
void loom__width_plan512_free(loom__wplan512 *p) { (void)p; }

#endif
