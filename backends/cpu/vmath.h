/* backends/cpu/vmath.h — f32 exp and the normal CDF as straight-line code
 * (no calls, no branches: selects), so that a loop over them vectorises.
 * The libm functions are calls per element, the largest cost of GELU and of
 * attention's softmax. Each function does the same operations in the same
 * order at any vector width (no contraction, C11's default), so a kernel
 * compiled twice (baseline and AVX2, chosen at run time) gives the same bits.
 *
 * loom__vexpf: e^x = 2^n e^r, n = round(x / ln 2), r = x - n ln 2 (ln 2 in
 * two parts, the first with few bits so that n ln2_hi is exact), e^r by its
 * Taylor polynomial to r^7 (|r| <= ln(2)/2: truncation < 6e-9, below half
 * an ulp), 2^n through the exponent bits. Overflow gives +inf, results
 * below e^-86.5 (3e-38) flush to 0, NaN stays NaN.
 *
 * loom__vnormcdf: Phi(x) = erfc(-x / sqrt 2) / 2, with erfc(z), z >= 0, by
 * the Chebyshev fit t exp(-z^2 + P(t)), t = 1 / (1 + z / 2) (Press et al.,
 * Numerical Recipes, erfcc: fractional error < 1.2e-7 for every z), and
 * erfc(-z) = 2 - erfc(z): relative accuracy on both tails, so GELU's small
 * negative outputs stay accurate too. */
#ifndef LOOM_CPU_VMATH_H
#define LOOM_CPU_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define LOOM__VMATH static inline __attribute__((always_inline))

/* ISA variants of a kernel: LOOM__TARGET("avx2") compiles a function for
 * that ISA and LOOM__HAS("avx2") says whether this CPU runs it; elsewhere
 * than x86-64 (or with LOOM_NO_X86_KERNELS defined, which checks that the
 * code builds so) the variants are plain copies that are never picked.
 * LOOM__X86 is 1 or 0 (test it with #if). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(LOOM_NO_X86_KERNELS)
#define LOOM__X86 1
#define LOOM__TARGET(isa) __attribute__((target(isa)))
#define LOOM__HAS(isa) __builtin_cpu_supports(isa)
#else
#define LOOM__X86 0
#define LOOM__TARGET(isa)
#define LOOM__HAS(isa) 0
#endif

/* the widest of a kernel's three variants this CPU runs */
typedef void (*loom__vrange_fn)(void *, int64_t, int64_t);
static inline loom__vrange_fn loom__pick_isa(loom__vrange_fn base, loom__vrange_fn avx2, loom__vrange_fn avx512) {
    if (LOOM__HAS("avx512f")) return avx512;
    return LOOM__HAS("avx2") ? avx2 : base;
}

LOOM__VMATH float loom__vexpf(float x) {
    const float hi = 88.7228391f, lo = -86.5f; /* e^hi: FLT_MAX; below e^lo the result flushes to 0 */
    const float log2e = 1.44269504088896341f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440054690583e-4f;
    const float round = 12582912.0f; /* 1.5 2^23: v + round - round is v rounded to an integer for |v| < 2^22 */
    float c = x > hi ? hi : x;
    c = c < lo ? lo : c;
    c = c != c ? 0.0f : c; /* NaN: any finite value (the result is x); keeps the conversion below defined */
    float n = (c * log2e + round) - round; /* -125 ..= 128 */
    float r = (c - n * ln2_hi) - n * ln2_lo;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720 +
                                                                                             r * (1.0f / 5040)))))));
    uint32_t bits = (uint32_t)((int32_t)n + 126) << 23; /* 2^(n - 1), a normal float for every n above */
    float half_scale;
    memcpy(&half_scale, &bits, sizeof half_scale);
    float y = p * half_scale * 2.0f;
    y = x > hi ? (float)INFINITY : y;
    y = x < lo ? 0.0f : y;
    return x != x ? x : y;
}

/* Phi(x), the standard normal CDF. The fit's degree-9 polynomial in t is
 * evaluated by Estrin's scheme (pairs, then powers t^2, t^4, t^8): a chain of
 * 8 dependent operations where Horner's has 18. GELU's loops wait on
 * this chain more than on the core's units: 23 -> 20 ns per 16 values in
 * L1 with AVX-512, the same accuracy (tests/test-vmath.c; figures in
 * bench/results/2026-12-06-cpu-prefetch.md). */
LOOM__VMATH float loom__vnormcdf(float x) {
    const float rsqrt2 = 0.70710678118654752440f;
    float z = x * rsqrt2, a = z < 0 ? -z : z;
    float t = 1.0f / (1.0f + 0.5f * a);
    float t2 = t * t, t4 = t2 * t2, t8 = t4 * t4;
    float q01 = -1.26551223f + t * 1.00002368f, q23 = 0.37409196f + t * 0.09678418f;
    float q45 = -0.18628806f + t * 0.27886807f, q67 = -1.13520398f + t * 1.48851587f;
    float q89 = -0.82215223f + t * 0.17087277f;
    float p = ((q01 + t2 * q23) + t4 * (q45 + t2 * q67)) + t8 * q89;
    float erfc = t * loom__vexpf(p - a * a); /* erfc(|z|) */
    return z < 0 ? 0.5f * erfc : 1.0f - 0.5f * erfc;
}

/* GELU, x Phi(x): ops/activation.c's f32 expression (the GEMM epilogue of
 * gemm.c computes the same bits) */
LOOM__VMATH float loom__vgelu(float x) { return x * loom__vnormcdf(x); }

#endif
