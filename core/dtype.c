/* core/dtype.c — dtype table and conversions (f16/bf16 round to nearest even). */
#include <math.h>

#include "impl.h"

static const struct {
    const char *name;
    size_t size;
    bool is_float;
} dtypes[] = {
#define LOOM__X(n, s, b, f) {s, b, f},
    LOOM_DTYPE_LIST(LOOM__X)
#undef LOOM__X
};

size_t loom_dtype_size(loom_dtype dt) { return (unsigned)dt < LOOM_DTYPE_COUNT ? dtypes[dt].size : 0; }
const char *loom_dtype_name(loom_dtype dt) { return (unsigned)dt < LOOM_DTYPE_COUNT ? dtypes[dt].name : "?"; }
bool loom_dtype_is_float(loom_dtype dt) { return (unsigned)dt < LOOM_DTYPE_COUNT && dtypes[dt].is_float; }

int loom_dtype_parse(const char *name) {
    for (int i = 0; i < LOOM_DTYPE_COUNT; i++)
        if (name && strcmp(name, dtypes[i].name) == 0) return i;
    return -1;
}

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t loom_f32_to_f16(float f) {
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (exp == 0xff) /* inf or NaN (NaN stays NaN: keep a quiet bit) */
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u); /* overflow -> inf */
    if (e <= 0) {                                   /* subnormal or zero in f16 */
        if (e < -10) return (uint16_t)sign;         /* below half the smallest subnormal */
        man |= 0x800000u;                           /* implicit 1 */
        int shift = 14 - e;                         /* 14..24 */
        uint32_t half = 1u << (shift - 1);
        uint32_t rest = man & ((1u << shift) - 1);
        uint32_t r = man >> shift;
        if (rest > half || (rest == half && (r & 1))) r++;
        return (uint16_t)(sign | r); /* a carry into the exponent is correct */
    }
    uint32_t r = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (r & 1))) r++; /* carry may give inf: correct */
    return (uint16_t)(sign | r);
}

float loom_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0) {
        if (man == 0) return bits_f32(sign);
        /* subnormal: man * 2^-24 */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    if (exp == 31) return bits_f32(sign | 0x7f800000u | (man << 13));
    return bits_f32(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

uint16_t loom_f32_to_bf16(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu)) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (uint16_t)(x >> 16);
}

float loom_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

static double load_d(const void *p, loom_dtype dt, size_t i) {
    switch (dt) {
    case LOOM_F32: return ((const float *)p)[i];
    case LOOM_F16: return loom_f16_to_f32(((const uint16_t *)p)[i]);
    case LOOM_BF16: return loom_bf16_to_f32(((const uint16_t *)p)[i]);
    case LOOM_F64: return ((const double *)p)[i];
    case LOOM_I32: return ((const int32_t *)p)[i];
    case LOOM_U8: return ((const uint8_t *)p)[i];
    default: LOOM__ASSERT(0 && "bad dtype"); return 0;
    }
}

static void store_d(void *p, loom_dtype dt, size_t i, double v) {
    switch (dt) {
    case LOOM_F32: ((float *)p)[i] = (float)v; break;
    case LOOM_F16: ((uint16_t *)p)[i] = loom_f32_to_f16((float)v); break;
    case LOOM_BF16: ((uint16_t *)p)[i] = loom_f32_to_bf16((float)v); break;
    case LOOM_F64: ((double *)p)[i] = v; break;
    case LOOM_I32:
        ((int32_t *)p)[i] = isnan(v) ? 0 : v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : (int32_t)v;
        break;
    case LOOM_U8: ((uint8_t *)p)[i] = isnan(v) || v <= 0 ? 0 : v >= 255 ? 255 : (uint8_t)v; break;
    default: LOOM__ASSERT(0 && "bad dtype");
    }
}

/* ---- x86-64 fast path: F16C conversions, chosen at run time ----
 * vcvtph2ps is exact but quiets signalling NaNs (loom_f16_to_f32 keeps them
 * as they are), so a block of 8 holding an f16 NaN goes through the scalar
 * code; vcvtps2ph with round-to-nearest-even gives loom_f32_to_f16's result
 * for every input, NaNs included. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define LOOM_F16C 1
__attribute__((target("avx,f16c"))) static void f16_to_f32_f16c(const uint16_t *s, float *d, size_t n) {
    size_t i = 0;
    const __m128i expo = _mm_set1_epi16(0x7c00);
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i e = _mm_cmpeq_epi16(_mm_and_si128(h, expo), expo); /* inf or NaN lanes */
        if (_mm_movemask_epi8(e)) {
            for (size_t k = i; k < i + 8; k++) d[k] = loom_f16_to_f32(s[k]);
            continue;
        }
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; i++) d[i] = loom_f16_to_f32(s[i]);
}
__attribute__((target("avx,f16c"))) static void f32_to_f16_f16c(const float *s, uint16_t *d, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) d[i] = loom_f32_to_f16(s[i]);
}
/* CPUID leaf 1: ECX bit 29 F16C, bit 28 AVX, bit 27 OSXSAVE; and the OS saves
 * the YMM state (XCR0 bits 1-2). (clang's __builtin_cpu_supports lacks "f16c".) */
static bool have_f16c(void) {
    static int have = -1; /* a benign race: every thread computes the same value */
    if (have < 0) {
        unsigned a, b, c, d;
        bool ok = __get_cpuid(1, &a, &b, &c, &d) && (c >> 27 & 7u) == 7u;
        if (ok) {
            unsigned lo, hi;
            __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            ok = (lo & 6u) == 6u;
        }
        have = ok;
    }
    return have;
}
#endif

void loom_convert(const void *src, loom_dtype sdt, void *dst, loom_dtype ddt, size_t n) {
    if (sdt == ddt) {
        memmove(dst, src, n * loom_dtype_size(sdt));
        return;
    }
    /* the two hot conversions get their own loops (f16/bf16 <-> f32) */
#ifdef LOOM_F16C
    if (have_f16c() && ddt == LOOM_F32 && sdt == LOOM_F16) {
        f16_to_f32_f16c(src, dst, n);
        return;
    }
    if (have_f16c() && ddt == LOOM_F16 && sdt == LOOM_F32) {
        f32_to_f16_f16c(src, dst, n);
        return;
    }
#endif
    if (ddt == LOOM_F32 && sdt == LOOM_F16) {
        for (size_t i = 0; i < n; i++) ((float *)dst)[i] = loom_f16_to_f32(((const uint16_t *)src)[i]);
    } else if (ddt == LOOM_F32 && sdt == LOOM_BF16) {
        for (size_t i = 0; i < n; i++) ((float *)dst)[i] = loom_bf16_to_f32(((const uint16_t *)src)[i]);
    } else if (sdt == LOOM_F32 && ddt == LOOM_F16) {
        for (size_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = loom_f32_to_f16(((const float *)src)[i]);
    } else if (sdt == LOOM_F32 && ddt == LOOM_BF16) {
        for (size_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = loom_f32_to_bf16(((const float *)src)[i]);
    } else {
        for (size_t i = 0; i < n; i++) store_d(dst, ddt, i, load_d(src, sdt, i));
    }
}
