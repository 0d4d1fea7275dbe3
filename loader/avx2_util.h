/* loader/avx2_util.h — small AVX2 helpers shared by loader/tail_avx2.c and
 * loader/resample_avx2.c (x86-64 GCC/Clang only; the functions carry
 * target("avx2"), so the files need no -mavx2). */
#ifndef LOOM_LOADER_AVX2_UTIL_H
#define LOOM_LOADER_AVX2_UTIL_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define LOOM_AVX2 __attribute__((target("avx2")))

/* Eight pixels as packed RGB0 words (any fourth byte; pixels 0-3 in the low
 * 128 bits, 4-7 in the high) as 24 interleaved RGB bytes at o: the fourth
 * bytes squeezed out per 128-bit half, 12 + 12 bytes stored (nothing past
 * o + 24 is touched). */
LOOM_AVX2 static inline void loom__store_rgb0(uint8_t *o, __m256i w) {
    const __m256i pick = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1, 0, 1, 2, 4, 5, 6, 8,
                                          9, 10, 12, 13, 14, -1, -1, -1, -1);
    w = _mm256_shuffle_epi8(w, pick);
    __m128i lo = _mm256_castsi256_si128(w), hi = _mm256_extracti128_si256(w, 1);
    int32_t t;
    _mm_storel_epi64((__m128i *)o, lo);
    t = _mm_extract_epi32(lo, 2);
    memcpy(o + 8, &t, 4);
    _mm_storel_epi64((__m128i *)(o + 12), hi);
    t = _mm_extract_epi32(hi, 2);
    memcpy(o + 20, &t, 4);
}

/* Eight pixels' channels (0..255 per 32-bit lane) as 24 interleaved RGB
 * bytes at o (loom__store_rgb0 of their packed words). */
LOOM_AVX2 static inline void loom__store_rgb8(uint8_t *o, __m256i r, __m256i g, __m256i b) {
    loom__store_rgb0(o, _mm256_or_si256(r, _mm256_or_si256(_mm256_slli_epi32(g, 8), _mm256_slli_epi32(b, 16))));
}

#endif
