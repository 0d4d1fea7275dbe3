/* loader/resample_avx2.c — the separable resampler's two passes (sep_run in
 * loader/transforms.c) eight outputs at a time with AVX2, chosen at run
 * time (LOOM_LOADER_SIMD=0 turns it off). The passes are integer sums of
 * fixed-point weights (FIX_BITS fraction bits, started at half), so any
 * order gives the same bits as the scalar loops.
 *
 * Width pass, 3 channels, when every output's taps are consecutive source
 * pixels (a resize or a crop of one): no gathers. An output's four taps at
 * a time are 12 bytes of one 16-byte load; a byte shuffle spreads them as
 * 16-bit words (r0 r1 g0 g1 b0 b1 0 0 for taps 0, 1; likewise 2, 3) and
 * vpmaddwd multiplies them by the taps' weights, split w = 2^11 wh + wl
 * (both fit 16 bits), giving one sum of wh and one of wl per channel:
 * 2^11 S_h + S_l is the scalar loop's integer, the same bits. Two outputs
 * per vector (one per 128-bit lane), eight per block, two rows at a time
 * (each weight vector loaded once for both: 500 -> 224 of 256 columns, 5
 * taps, 334 rows on a Zen 3: 0.142 -> 0.112 ms). Other taps (flipped
 * or strided): for eight consecutive outputs and tap j, one gather of
 * 32-bit words at their j-th source pixels (R, G, B and one byte of the
 * next pixel, dropped) and the eight weights of tap j (the taps table
 * transposed once per call, weight 0 past an output's count), then shifts
 * and masks to the three channels. A block whose loads would leave the
 * row: the shuffle form runs it on a zero-padded copy of its bytes, the
 * gather form sums it in scalar code.
 * Height pass: up to 16 taps, 16 bytes of the output row at a time from
 * the taps' rows through vpmaddwd as the AVX-512 version (height_row);
 * more taps as acc[x] += w * row[x] over the row, eight lanes at a time.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/prefetch.h"
#include "loader_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "avx2_util.h"

#define AVX2 LOOM_AVX2

/* the level: 0 none, 1 AVX2, 2 AVX-512 (F, BW, DQ, VL) too, 3 also VBMI and
 * VNNI; every thread computes the same value */
static atomic_int use = -1;

static int cpu_level(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2")) return 0;
    if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
          __builtin_cpu_supports("avx512vl")))
        return 1;
    return __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vnni") ? 3 : 2;
}

void loom__simd_set(int level) {
    int c = cpu_level();
    atomic_store_explicit(&use, level < 0 ? -1 : level < c ? level : c, memory_order_relaxed);
}

static int level(void) {
    int u = atomic_load_explicit(&use, memory_order_relaxed);
    if (u < 0) {
        const char *e = getenv("LOOM_LOADER_SIMD"); /* 0: scalar, avx2: no AVX-512, avx512: not VBMI / VNNI */
        u = cpu_level();
        if (e && !strcmp(e, "0")) u = 0;
        else if (e && !strcmp(e, "avx2") && u > 1) u = 1;
        else if (e && !strcmp(e, "avx512") && u > 2) u = 2;
        atomic_store_explicit(&use, u, memory_order_relaxed);
    }
    return u;
}

bool loom__simd_avx2(void) { return level() >= 1; }
bool loom__simd_avx512(void) { return level() >= 2; }
bool loom__simd_avx512_vbmi_vnni(void) { return level() >= 3; }

/* (acc >> bits) clamped to 0..255, per lane */
AVX2 static inline __m256i to_u8(__m256i acc, int bits) {
    __m256i v = _mm256_srai_epi32(acc, bits);
    return _mm256_min_epi32(_mm256_max_epi32(v, _mm256_setzero_si256()), _mm256_set1_epi32(255));
}

struct loom__wplan {
    int64_t nb, maxn, span;
    const int64_t *idx, *cnt;
    const int32_t *wt;
    /* gathers: (b maxn + j) 8 + l. Shuffles (ng groups of four taps):
     * offs[b 8 + l] output l's first tap's byte; wts as 16-bit words, 16
     * vectors per block and group: ((b ng + g) 4 + k) 4 + 2 pair + half for
     * the outputs k and 4 + k (k = 0..3, one per 128-bit lane), taps 4 g +
     * 2 pair + (0, 1), half 0 the wh, 1 the wl: words (t0 t1 t0 t1 t0 t1 0 0)
     * per lane */
    int32_t *offs, *wts;
    bool *ok;
    int64_t ng; /* > 0: the shuffle form */
    int64_t rowbytes; /* the source row's bytes (3 sw) */
};

void loom__width_plan_free(loom__wplan *p) {
    if (!p) return;
    free(p->offs), free(p->wts), free(p->ok), free(p);
}

/* The shuffle form's plan (NULL when an output's taps are not consecutive
 * pixels or a weight does not split into 16-bit halves). */
static loom__wplan *plan_shuf(const int64_t *idx, const int64_t *cnt, const int32_t *wt, int64_t span, int64_t ow,
                              int64_t sw) {
    int64_t nb = ow / 8, maxn = 0;
    for (int64_t x = 0; x < nb * 8; x++) {
        if (cnt[x] < 1) return NULL;
        maxn = cnt[x] > maxn ? cnt[x] : maxn;
        for (int64_t j = 0; j < cnt[x]; j++)
            if (idx[x * span + j] != idx[x * span] + j || wt[x * span + j] < -(1 << 25) || wt[x * span + j] >= (1 << 25))
                return NULL;
    }
    int64_t ng = (maxn + 3) / 4;
    loom__wplan *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    const size_t wbytes = (size_t)(nb * ng * 16 * 32);
    *p = (loom__wplan){nb, maxn, span, idx, cnt, wt, malloc((size_t)(nb * 8) * sizeof(int32_t)), aligned_alloc(32, wbytes),
                       malloc((size_t)nb), ng, sw * 3};
    if (!p->offs || !p->wts || !p->ok) {
        loom__width_plan_free(p);
        return NULL;
    }
    int16_t *w16 = (int16_t *)(void *)p->wts;
    memset(w16, 0, wbytes);
    for (int64_t b = 0; b < nb; b++) {
        p->ok[b] = true;
        for (int l = 0; l < 8; l++) {
            int64_t x = b * 8 + l, n = cnt[x], i0 = idx[x * span];
            p->offs[b * 8 + l] = (int32_t)(i0 * 3);
            /* the last group's 16-byte load inside the row */
            p->ok[b] = p->ok[b] && i0 >= 0 && (i0 + 4 * (ng - 1)) * 3 + 16 <= sw * 3;
            int k = l & 3, lane = l >> 2;
            for (int64_t j = 0; j < n; j++) {
                int32_t w = wt[x * span + j];
                int64_t v = ((b * ng + j / 4) * 4 + k) * 4 + 2 * ((j & 3) >> 1);
                int16_t *hv = w16 + v * 16 + lane * 8 + (j & 1), *lv = hv + 16;
                for (int ch = 0; ch < 3; ch++) hv[2 * ch] = (int16_t)(w >> 11), lv[2 * ch] = (int16_t)(w & 2047);
            }
        }
    }
    return p;
}

loom__wplan *loom__width_plan_avx2(const int64_t *idx, const int64_t *cnt, const int32_t *wt, int64_t span, int64_t ow,
                                   int64_t sw) {
    int64_t nb = ow / 8, maxn = 0;
    if (nb == 0 || !loom__simd_avx2()) return NULL;
    loom__wplan *q = plan_shuf(idx, cnt, wt, span, ow, sw);
    if (q) return q;
    for (int64_t x = 0; x < nb * 8; x++) maxn = cnt[x] > maxn ? cnt[x] : maxn;
    loom__wplan *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    *p = (loom__wplan){nb, maxn, span, idx, cnt, wt, malloc((size_t)(nb * maxn * 8) * sizeof(int32_t)),
                       malloc((size_t)(nb * maxn * 8) * sizeof(int32_t)), malloc((size_t)nb), 0, sw * 3};
    if (!p->offs || !p->wts || !p->ok) {
        loom__width_plan_free(p);
        return NULL;
    }
    /* per block and tap j: the eight source byte offsets and weights (a
     * lane past its count repeats its last tap with weight 0); ok[b]: every
     * word of the block inside its row (pixel < sw - 1) */
    for (int64_t b = 0; b < nb; b++) {
        p->ok[b] = true;
        for (int l = 0; l < 8; l++) {
            int64_t x = b * 8 + l, n = cnt[x];
            for (int64_t j = 0; j < maxn; j++) {
                int64_t i = n >= 1 ? idx[x * span + (j < n ? j : n - 1)] : 0;
                p->ok[b] = p->ok[b] && n >= 1 && i >= 0 && i < sw - 1;
                p->offs[(b * maxn + j) * 8 + l] = (int32_t)(i * 3);
                p->wts[(b * maxn + j) * 8 + l] = j < n ? wt[x * span + j] : 0;
            }
        }
    }
    return p;
}

/* Block b's eight outputs by the scalar sums (either form: the taps table) */
static void block_scalar(const loom__wplan *p, const uint8_t *s, int64_t b, int bits, int32_t half, uint8_t *q) {
    for (int l = 0; l < 8; l++) {
        int64_t x = b * 8 + l;
        int32_t a0 = half, a1 = half, a2 = half;
        for (int64_t j = 0; j < p->cnt[x]; j++) {
            const uint8_t *px = s + p->idx[x * p->span + j] * 3;
            int32_t w = p->wt[x * p->span + j];
            a0 += w * px[0], a1 += w * px[1], a2 += w * px[2];
        }
        int32_t v[3] = {a0 >> bits, a1 >> bits, a2 >> bits};
        for (int k = 0; k < 3; k++) q[l * 3 + k] = (uint8_t)(v[k] < 0 ? 0 : v[k] > 255 ? 255 : v[k]);
    }
}

AVX2 static void width_row(const loom__wplan *p, const uint8_t *s, int bits, int32_t half, uint8_t *o) {
    const int64_t maxn = p->maxn;
    const __m256i ff = _mm256_set1_epi32(0xff), h = _mm256_set1_epi32(half);
    for (int64_t b = 0; b < p->nb; b++) {
        uint8_t *q = o + b * 24;
        if (!p->ok[b]) { /* the row's last pixel is read: the scalar sums */
            block_scalar(p, s, b, bits, half, q);
            continue;
        }
        __m256i ar = h, ag = h, ab = h;
        for (int64_t j = 0; j < maxn; j++) {
            const int64_t at = (b * maxn + j) * 8;
            __m256i w = _mm256_loadu_si256((const __m256i *)(p->wts + at));
            __m256i px = _mm256_i32gather_epi32((const int *)s, _mm256_loadu_si256((const __m256i *)(p->offs + at)), 1);
            ar = _mm256_add_epi32(ar, _mm256_mullo_epi32(_mm256_and_si256(px, ff), w));
            ag = _mm256_add_epi32(ag, _mm256_mullo_epi32(_mm256_and_si256(_mm256_srli_epi32(px, 8), ff), w));
            ab = _mm256_add_epi32(ab, _mm256_mullo_epi32(_mm256_and_si256(_mm256_srli_epi32(px, 16), ff), w));
        }
        loom__store_rgb8(q, to_u8(ar, bits), to_u8(ag, bits), to_u8(ab, bits));
    }
}

/* Block b of the shuffle form on two rows at once (s0 -> o0, s1 -> o1):
 * each weight vector is loaded once for both; output pair k (k, 4 + k) at
 * a time. off: the block's eight first-tap byte offsets into s0 and s1. */
AVX2 static inline void block2(const loom__wplan *p, int64_t b, const int32_t *off, const uint8_t *s0, const uint8_t *s1,
                               int bits, int32_t half, uint8_t *o0, uint8_t *o1) {
    const int64_t ng = p->ng;
    const __m256i sa = _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1, 0, -1, 3, -1, 1, -1, 4,
                                        -1, 2, -1, 5, -1, -1, -1, -1, -1),
                  sb = _mm256_setr_epi8(6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1, 6, -1, 9, -1, 7, -1,
                                        10, -1, 8, -1, 11, -1, -1, -1, -1, -1),
                  h = _mm256_set1_epi32(half);
    const __m128i shift = _mm_cvtsi32_si128(bits);
    const __m256i *wb = (const __m256i *)(const void *)p->wts + b * ng * 16;
    __m256i v0[4], v1[4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        __m256i h0 = _mm256_setzero_si256(), l0 = h0, h1 = h0, l1 = h0;
        const uint8_t *a0 = s0 + off[k], *b0 = s0 + off[4 + k], *a1 = s1 + off[k], *b1 = s1 + off[4 + k];
        const __m256i *w = wb + 4 * k;
        for (int64_t g = 0; g < ng; g++, w += 16) {
            __m256i d0 = _mm256_loadu2_m128i((const __m128i *)(const void *)(b0 + 12 * g), (const __m128i *)(const void *)(a0 + 12 * g));
            __m256i d1 = _mm256_loadu2_m128i((const __m128i *)(const void *)(b1 + 12 * g), (const __m128i *)(const void *)(a1 + 12 * g));
            __m256i da0 = _mm256_shuffle_epi8(d0, sa), db0 = _mm256_shuffle_epi8(d0, sb);
            __m256i da1 = _mm256_shuffle_epi8(d1, sa), db1 = _mm256_shuffle_epi8(d1, sb);
            const __m256i w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
            h0 = _mm256_add_epi32(h0, _mm256_add_epi32(_mm256_madd_epi16(da0, w0), _mm256_madd_epi16(db0, w2)));
            l0 = _mm256_add_epi32(l0, _mm256_add_epi32(_mm256_madd_epi16(da0, w1), _mm256_madd_epi16(db0, w3)));
            h1 = _mm256_add_epi32(h1, _mm256_add_epi32(_mm256_madd_epi16(da1, w0), _mm256_madd_epi16(db1, w2)));
            l1 = _mm256_add_epi32(l1, _mm256_add_epi32(_mm256_madd_epi16(da1, w1), _mm256_madd_epi16(db1, w3)));
        }
        v0[k] = _mm256_sra_epi32(_mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h0, 11), l0), h), shift);
        v1[k] = _mm256_sra_epi32(_mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h1, 11), l1), h), shift);
    }
    loom__store_rgb0(o0 + b * 24, _mm256_packus_epi16(_mm256_packs_epi32(v0[0], v0[1]), _mm256_packs_epi32(v0[2], v0[3])));
    loom__store_rgb0(o1 + b * 24, _mm256_packus_epi16(_mm256_packs_epi32(v1[0], v1[1]), _mm256_packs_epi32(v1[2], v1[3])));
}

AVX2 static void width_rows2_shuf(const loom__wplan *p, const uint8_t *s0, const uint8_t *s1, int bits, int32_t half,
                                  uint8_t *o0, uint8_t *o1) {
    for (int64_t b = 0; b < p->nb; b++) {
        const int32_t *off = p->offs + b * 8;
        if (p->ok[b]) {
            block2(p, b, off, s0, s1, bits, half, o0, o1);
            continue;
        }
        int64_t lo = off[0], hi = off[0]; /* the bytes the loads cover (outputs may run backwards: a flip) */
        for (int l = 1; l < 8; l++) lo = off[l] < lo ? off[l] : lo, hi = off[l] > hi ? off[l] : hi;
        hi += 12 * (p->ng - 1) + 16;
        if (lo >= 0 && hi - lo <= 256 && lo < p->rowbytes && p->rowbytes < hi) {
            /* a load would leave the row (its last block or two): the
             * block's bytes copied into zeroed buffers first (the taps
             * past an output's count have weight 0) */
            uint8_t t0[256] = {0}, t1[256] = {0};
            int32_t o8[8];
            memcpy(t0, s0 + lo, (size_t)(p->rowbytes - lo)), memcpy(t1, s1 + lo, (size_t)(p->rowbytes - lo));
            for (int l = 0; l < 8; l++) o8[l] = off[l] - (int32_t)lo;
            block2(p, b, o8, t0, t1, bits, half, o0, o1);
        } else {
            block_scalar(p, s0, b, bits, half, o0 + b * 24);
            block_scalar(p, s1, b, bits, half, o1 + b * 24);
        }
    }
}

int64_t loom__width_pass_avx2(const loom__wplan *p, const uint8_t *s, int64_t spitch, int64_t rows, int bits, int32_t half,
                              uint8_t *o, int64_t opitch) {
    for (int64_t r = 0; r < rows; r += 2) {
        const uint8_t *s0 = s + r * spitch;
        uint8_t *o0 = o + r * opitch;
        if (r + 3 < rows) loom__prefetch_span(s0 + 2 * spitch, (size_t)(2 * spitch)); /* a fresh decode: not in L2 */
        const int64_t d = r + 1 < rows; /* an odd last row: the shuffle form's pair is it twice over */
        if (p->ng > 0) width_rows2_shuf(p, s0, s0 + d * spitch, bits, half, o0, o0 + d * opitch);
        else {
            width_row(p, s0, bits, half, o0);
            if (d) width_row(p, s0 + spitch, bits, half, o0 + opitch);
        }
    }
    return p->nb * 8;
}

/* The height pass of one output row from byte x, 16 bytes at a time (the
 * AVX-512 version's scheme, loader/resample_avx512.c): the taps' rows in
 * pairs, widened to 16 bits and interleaved, through vpmaddwd with the
 * weights split as w = 2^11 wh + wl; 2^11 sum(p wh) + sum(p wl) + half is the
 * scalar loop's integer. */
AVX2 static int64_t height_row(const uint8_t *const *t, const int32_t *w, int64_t n, int64_t x, int64_t len, int bits,
                               int32_t half, uint8_t *o) {
    const int64_t npair = (n + 1) / 2;
    __m256i wl[8], wh[8]; /* n <= 16 taps */
    const uint8_t *r0[8], *r1[8];
    for (int64_t k = 0; k < npair; k++) {
        int32_t w0 = w[2 * k], w1 = 2 * k + 1 < n ? w[2 * k + 1] : 0;
        wl[k] = _mm256_set1_epi32((int32_t)((uint32_t)(w0 & 2047) | (uint32_t)(w1 & 2047) << 16));
        wh[k] = _mm256_set1_epi32((int32_t)(((uint32_t)(w0 >> 11) & 0xffff) | (uint32_t)(w1 >> 11) << 16));
        r0[k] = t[2 * k], r1[k] = 2 * k + 1 < n ? t[2 * k + 1] : t[2 * k];
    }
    const __m256i h = _mm256_set1_epi32(half), max = _mm256_set1_epi16(255);
    const __m128i sh = _mm_cvtsi32_si128(bits);
    for (; x + 16 <= len; x += 16) {
        __m256i l0 = _mm256_setzero_si256(), l1 = l0, h0 = l0, h1 = l0;
        for (int64_t k = 0; k < npair; k++) {
            __m256i a = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(r0[k] + x)));
            __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(r1[k] + x)));
            __m256i lo = _mm256_unpacklo_epi16(a, b), hi = _mm256_unpackhi_epi16(a, b);
            l0 = _mm256_add_epi32(l0, _mm256_madd_epi16(lo, wl[k]));
            h0 = _mm256_add_epi32(h0, _mm256_madd_epi16(lo, wh[k]));
            l1 = _mm256_add_epi32(l1, _mm256_madd_epi16(hi, wl[k]));
            h1 = _mm256_add_epi32(h1, _mm256_madd_epi16(hi, wh[k]));
        }
        __m256i v0 = _mm256_sra_epi32(_mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h0, 11), l0), h), sh);
        __m256i v1 = _mm256_sra_epi32(_mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h1, 11), l1), h), sh);
        /* packus: 0..65535 per lane, in order again (the unpacks' order undone); then at most 255 (fix_u8's clamp) */
        __m256i v = _mm256_min_epu16(_mm256_packus_epi32(v0, v1), max);
        _mm_storeu_si128((__m128i *)(void *)(o + x),
                         _mm_packus_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
    }
    return x;
}

int64_t loom__height_row_avx2(const uint8_t *const *t, const int32_t *w, int64_t n, int64_t x, int64_t len, int bits,
                              int32_t half, uint8_t *o) {
    if (!loom__simd_avx2() || n < 1 || n > 16) return x;
    for (int64_t j = 0; j < n; j++)
        if (w[j] < -(1 << 25) || w[j] >= (1 << 25)) return x;
    return height_row(t, w, n, x, len, bits, half, o);
}

AVX2 static void height_acc(int32_t *a, const uint8_t *t, int32_t w, int64_t n) {
    const __m256i wv = _mm256_set1_epi32(w);
    int64_t x = 0;
    for (; x + 8 <= n; x += 8) {
        __m128i b = _mm_loadl_epi64((const __m128i *)(t + x));
        __m256i v = _mm256_mullo_epi32(_mm256_cvtepu8_epi32(b), wv);
        _mm256_storeu_si256((__m256i *)(a + x), _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(a + x)), v));
    }
    for (; x < n; x++) a[x] += w * t[x];
}

bool loom__height_acc_avx2(int32_t *a, const uint8_t *t, int32_t w, int64_t n) {
    if (!loom__simd_avx2()) return false;
    height_acc(a, t, w, n);
    return true;
}

AVX2 static void acc_to_u8(const int32_t *a, uint8_t *o, int64_t n, int bits) {
    int64_t x = 0;
    for (; x + 16 <= n; x += 16) {
        __m256i lo = to_u8(_mm256_loadu_si256((const __m256i *)(a + x)), bits);
        __m256i hi = to_u8(_mm256_loadu_si256((const __m256i *)(a + x + 8)), bits);
        __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8); /* 16 x u16 in order */
        __m128i b = _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
        _mm_storeu_si128((__m128i *)(o + x), b);
    }
    for (; x < n; x++) {
        int32_t v = a[x] >> bits;
        o[x] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

bool loom__acc_to_u8_avx2(const int32_t *a, uint8_t *o, int64_t n, int bits) {
    if (!loom__simd_avx2()) return false;
    acc_to_u8(a, o, n, bits);
    return true;
}

#else

bool loom__simd_avx2(void) { return false; }
bool loom__simd_avx512(void) { return false; }
bool loom__simd_avx512_vbmi_vnni(void) { return false; }
void loom__simd_set(int level) { (void)level; }
loom__wplan *loom__width_plan_avx2(const int64_t *idx, const int64_t *cnt, const int32_t *wt, int64_t span, int64_t ow,
                                   int64_t sw) {
    (void)idx, (void)cnt, (void)wt, (void)span, (void)ow, (void)sw;
    return NULL;
}
int64_t loom__width_pass_avx2(const loom__wplan *p, const uint8_t *s, int64_t spitch, int64_t rows, int bits, int32_t half,
                              uint8_t *o, int64_t opitch) {
    (void)p, (void)s, (void)spitch, (void)rows, (void)bits, (void)half, (void)o, (void)opitch;
    return 0;
}
void loom__width_plan_free(loom__wplan *p) { (void)p; }
bool loom__height_acc_avx2(int32_t *a, const uint8_t *t, int32_t w, int64_t n) {
    (void)a, (void)t, (void)w, (void)n;
    return false;
}
int64_t loom__height_row_avx2(const uint8_t *const *t, const int32_t *w, int64_t n, int64_t x, int64_t len, int bits,
                              int32_t half, uint8_t *o) {
    (void)t, (void)w, (void)n, (void)len, (void)bits, (void)half, (void)o;
    return x;
}
bool loom__acc_to_u8_avx2(const int32_t *a, uint8_t *o, int64_t n, int bits) {
    (void)a, (void)o, (void)n, (void)bits;
    return false;
}

#endif
