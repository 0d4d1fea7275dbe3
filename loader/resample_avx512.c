/* loader/resample_avx512.c — the separable resampler's 3-channel width
 * pass (sep_run in loader/transforms.c) sixteen outputs at a time with
 * AVX-512 VBMI and VNNI, chosen at run time before the AVX2 version
 * (loader/resample_avx2.c) when the CPU has it (LOOM_LOADER_SIMD as there).
 *
 * No gathers and no 32-bit multiplies: the sixteen outputs of a block read
 * source pixels within 42 of one another (a shrink up to ~2.3x), so two
 * 64-byte loads hold them all; for each pair of taps one byte permute
 * (vpermt2b) per channel puts both taps' values of every output in one
 * 32-bit lane as two 16-bit numbers, and vpdpwssd multiplies them by the
 * pair's weights and adds both products to the sums. A weight w (FIX_BITS = 22 fraction bits, 0 <= w
 * <= 2^22) is split as w = 2^11 wh + wl (both fit 16 bits), so the sum is
 * 2^11 sum(p wh) + sum(p wl) + half: the same integer as the scalar loop's,
 * the same bits. Blocks whose pixels lie further apart get no plan (the
 * AVX2 pass runs instead); loads stop at the row's end (masked).
 * The height pass of a row likewise: the taps' rows in pairs, 32 bytes at
 * a time (height_row512).
 * tests/test-fuse.c (e) compares both with the scalar loops and AVX2.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loader_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "avx2_util.h"

#define VBMI __attribute__((target("avx2,avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx512vnni")))

enum { WIN = 42 }; /* pixels two 64-byte loads hold whole (126 bytes) */

struct loom__wplan512 {
    int64_t nb, npair;
    int64_t *base;    /* nb: the block's first source byte in the row */
    int8_t *idx;      /* (b npair + q) 3 + ch: 64 byte positions */
    int16_t *wl, *wh; /* (b npair + q): 32 weights (two per output) */
};

void loom__width_plan512_free(loom__wplan512 *p) {
    if (!p) return;
    free(p->base), free(p->idx), free(p->wl), free(p->wh), free(p);
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
    int64_t npair = (maxn + 1) / 2;
    loom__wplan512 *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->nb = nb, p->npair = npair;
    p->base = malloc((size_t)nb * sizeof *p->base);
    p->idx = malloc((size_t)(nb * npair * 3 * 64));
    p->wl = malloc((size_t)(nb * npair * 32) * sizeof *p->wl);
    p->wh = malloc((size_t)(nb * npair * 32) * sizeof *p->wh);
    if (!p->base || !p->idx || !p->wl || !p->wh) {
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
        for (int64_t q = 0; q < npair; q++) {
            int8_t *ix = p->idx + (b * npair + q) * 3 * 64;
            int16_t *wl = p->wl + (b * npair + q) * 32, *wh = p->wh + (b * npair + q) * 32;
            for (int l = 0; l < 16; l++) {
                int64_t x = b * 16 + l;
                for (int t = 0; t < 2; t++) {
                    int64_t j = 2 * q + t;
                    int64_t i = j < cnt[x] ? idx[x * span + j] : lo; /* past the count: weight 0 */
                    int32_t w = j < cnt[x] ? wt[x * span + j] : 0;
                    for (int ch = 0; ch < 3; ch++) {
                        ix[ch * 64 + l * 4 + 2 * t] = (int8_t)((i - lo) * 3 + ch);
                        ix[ch * 64 + l * 4 + 2 * t + 1] = 0; /* zeroed by the mask */
                    }
                    wl[l * 2 + t] = (int16_t)(w & 2047), wh[l * 2 + t] = (int16_t)(w >> 11);
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

VBMI static void width_row512(const loom__wplan512 *p, const uint8_t *s, int64_t row_bytes, int bits, int32_t half,
                              uint8_t *o) {
    const __mmask64 even = 0x5555555555555555ull;
    const __m512i h = _mm512_set1_epi32(half);
    for (int64_t b = 0; b < p->nb; b++) {
        const uint8_t *q = s + p->base[b];
        int64_t avail = row_bytes - p->base[b]; /* bytes left in the row from q */
        __m512i lo = avail >= 64 ? _mm512_loadu_si512(q) : _mm512_maskz_loadu_epi8((1ull << avail) - 1, q);
        __m512i hi = avail >= 128 ? _mm512_loadu_si512(q + 64)
                     : avail > 64 ? _mm512_maskz_loadu_epi8((1ull << (avail - 64)) - 1, q + 64)
                                  : _mm512_setzero_si512();
        __m512i al[3], ah[3];
        for (int ch = 0; ch < 3; ch++) al[ch] = ah[ch] = _mm512_setzero_si512();
        for (int64_t k = 0; k < p->npair; k++) {
            const int64_t at = b * p->npair + k;
            const __m512i wl = _mm512_loadu_si512(p->wl + at * 32), wh = _mm512_loadu_si512(p->wh + at * 32);
            for (int ch = 0; ch < 3; ch++) {
                __m512i v = _mm512_maskz_permutex2var_epi8(even, lo, _mm512_loadu_si512(p->idx + (at * 3 + ch) * 64), hi);
                al[ch] = _mm512_dpwssd_epi32(al[ch], v, wl);
                ah[ch] = _mm512_dpwssd_epi32(ah[ch], v, wh);
            }
        }
        __m512i r[3];
        for (int ch = 0; ch < 3; ch++)
            r[ch] = to_u8_512(_mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(ah[ch], 11), al[ch]), h), bits);
        uint8_t *d = o + b * 48;
        loom__store_rgb8(d, _mm512_castsi512_si256(r[0]), _mm512_castsi512_si256(r[1]), _mm512_castsi512_si256(r[2]));
        loom__store_rgb8(d + 24, _mm512_extracti64x4_epi64(r[0], 1), _mm512_extracti64x4_epi64(r[1], 1),
                         _mm512_extracti64x4_epi64(r[2], 1));
    }
}

int64_t loom__width_row_avx512(const loom__wplan512 *p, const uint8_t *s, int64_t sw, int bits, int32_t half, uint8_t *o) {
    width_row512(p, s, sw * 3, bits, half, o);
    return p->nb * 16;
}

/* The height pass of one output row, 32 bytes at a time: the taps' rows
 * in pairs, widened to 16 bits and interleaved, through vpmaddwd with the
 * split weights (as above); the same integer sums as the scalar loop.
 * Written once for two targets: with VNNI, each product pair is added to
 * its sum by vpdpwssd (one instruction for vpmaddwd + vpaddd, the same
 * 32-bit integers); without, by the two. */
#define BW __attribute__((target("avx2,avx512f,avx512bw,avx512dq,avx512vl")))
#define BW_VNNI __attribute__((target("avx2,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))
#define MAC_BW(acc, a, b) acc = _mm512_add_epi32(acc, _mm512_madd_epi16(a, b))
#define MAC_VNNI(acc, a, b) acc = _mm512_dpwssd_epi32(acc, a, b)

#define HEIGHT_ROW(NAME, ATTR, MAC)                                                                                     \
    ATTR static int64_t NAME(const uint8_t *const *t, const int32_t *w, int64_t n, int64_t len, int bits, int32_t half, \
                             uint8_t *o) {                                                                              \
        const int64_t npair = (n + 1) / 2;                                                                              \
        __m512i wl[8], wh[8]; /* n <= 16 taps */                                                                        \
        for (int64_t k = 0; k < npair; k++) {                                                                           \
            int32_t w0 = w[2 * k], w1 = 2 * k + 1 < n ? w[2 * k + 1] : 0;                                               \
            wl[k] = _mm512_set1_epi32((int32_t)((uint32_t)(w0 & 2047) | (uint32_t)(w1 & 2047) << 16));                  \
            wh[k] = _mm512_set1_epi32((int32_t)((uint32_t)(w0 >> 11) | (uint32_t)(w1 >> 11) << 16));                    \
        }                                                                                                               \
        const __m512i h = _mm512_set1_epi32(half), max = _mm512_set1_epi16(255);                                        \
        const __m128i sh = _mm_cvtsi32_si128(bits);                                                                     \
        int64_t x = 0;                                                                                                  \
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

int64_t loom__height_row_avx512(const uint8_t *const *t, const int32_t *w, int64_t n, int64_t len, int bits, int32_t half,
                                uint8_t *o) {
    if (!loom__simd_avx512() || n < 1 || n > 16) return 0;
    for (int64_t j = 0; j < n; j++)
        if (w[j] < 0 || w[j] > (1 << 22)) return 0;
    return loom__simd_avx512_vbmi_vnni() ? height_row512_vnni(t, w, n, len, bits, half, o)
                                         : height_row512(t, w, n, len, bits, half, o);
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
