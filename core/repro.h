/* core/repro.h — reproducible mode: the canonical f32 arithmetic that every
 * backend follows when loom_backend_desc.reproducible is set, so that the
 * same graph gives the same bits on the CPU, Vulkan and OpenCL backends.
 *
 * defines: LOOM__REPRO_CHUNK, loom__repro_exp, loom__repro_log, and the
 *          sequential csum / cdot accumulator loom__csum.
 *
 * One source for C and OpenCL C: the C backends include this header, and
 * backends/opencl/embed.cmake prepends it to the OpenCL program (after
 * core/params.h), so the chunk size and the exp / log steps are the same
 * text on both. Only the bit casts and the floor differ, by macro. GLSL
 * cannot include it (no C casts, and names with "__" are reserved there):
 * shaders/repro.comp keeps its own copy, step for step.
 *
 * Ordinary kernels reassociate sums (OpenBLAS's blocking, work-group trees,
 * vector lanes) and call the platform's exp and log, so backends agree to a
 * few units in the last place; training amplifies such differences (two
 * backends' losses drift 1e-3 apart within 50 cnn steps). In reproducible
 * mode each op below is computed in exactly this order, with IEEE single
 * precision +, -, *, / and sqrt (correctly rounded) and no contraction: a
 * product and a sum are two roundings, never one fused multiply-add (Vulkan
 * does not promise that fma() is fused, and lavapipe does not fuse it):
 *
 *   csum(v[0..n))   the sum of a sequence: chunks of LOOM__REPRO_CHUNK
 *                   elements, each summed from 0 in order (s = s + v[i]);
 *                   the chunk sums added in order (t = p0; t = t + pc).
 *   cdot(a, b, n)   the same with s = s + a[i] * b[i] inside each chunk.
 *   matmul          C[i,j] = cdot over k in index order (k = 0..K-1).
 *   linear          y = cdot(x row, w row) + bias (one add after the sum).
 *   conv2d          per image, as im2col + matmul: y[n] = W (O, K) x
 *                   cols (K, P), k = (c*KH + kh)*KW + kw; padding taps are
 *                   zeros (adding 0 * w changes nothing); + bias after.
 *   conv2d_grad_input  cols = W^T (K, O) x dy[n] (O, P) (cdot over o),
 *                   then dx[c, h, w] = 0 + each covering column value in
 *                   (kh, kw) order.
 *   conv2d_grad_weight dw = p0 + p1 + ... + p(N-1) in image order, pn =
 *                   dy[n] (O, P) x cols[n]^T (P, K) (cdot over p).
 *   sum, mean       csum over the reduced elements in row-major order of the
 *                   reduced axes; mean = sum / (float)count.
 *   batch_norm      per channel over M = N*S elements in (n, s) order:
 *                   mean = csum(x) / M; var = cdot(d, d) / M, d = x - mean;
 *                   invstd = 1 / sqrt(var + eps); xh = (x - mean) * invstd;
 *                   y = xh * gamma + beta; running stats
 *                   r = a*r + b*v with a = (float)(1 - momentum),
 *                   b = (float)momentum, v = mean or var * (float)(M/(M-1)).
 *   batch_norm_grad_params  (4, C): cdot(dy, xh), csum(dy), mean, invstd.
 *   batch_norm_grad dx = (gamma * invstd) * ((dy - sdy/M) - xh * (sdyxh/M))
 *                   (train), (gamma * invstd) * dy (eval).
 *   cross_entropy   per row: m = max (first of equals), se = csum of
 *                   exp(x - m), sx = csum(x), lse = m + log(se),
 *                   l = -(a1 * (x[t] - lse)) - a2 * (sx / C - lse) with
 *                   a1 = (float)(1 - eps), a2 = (float)eps; loss = csum over all
 *                   rows of l (0 for an ignored row) / (float)count, count =
 *                   the rows not ignored.
 *   cross_entropy_grad  s = dloss / (float)count; per row as above,
 *                   dx = (exp(x - m) * (1 / se) - q) * s, q = (float)(1 - eps
 *                   + eps/C) at the target, (float)(eps/C) elsewhere.
 *   exp, log        loom__repro_exp / loom__repro_log below: range
 *                   reduction and Horner polynomials in single roundings,
 *                   the same steps in C, GLSL and OpenCL C; results below
 *                   FLT_MIN flush to 0.
 * Ops that are exact by construction (elementwise +-x/, max, copies,
 * dropout's Philox masks, the optimizer steps) need nothing extra; the ops
 * that are neither (ops.def flag LOOM__OPF_REPRO absent) are an error when a
 * plan is compiled in reproducible mode, and so is any f16/bf16/f64 node.
 *
 * Limits: bitwise equality holds where the device rounds division and sqrt
 * correctly and keeps subnormals (or never produces them): true of the CPU,
 * lavapipe and PoCL; a GPU whose division is approximate, or that flushes
 * subnormals, can differ in the last bits.
 */
#ifndef LOOM_CORE_REPRO_H
#define LOOM_CORE_REPRO_H

#ifdef __OPENCL_VERSION__
#pragma OPENCL FP_CONTRACT OFF /* every product and sum rounds on its own */
#define LOOM__REPRO_FN inline
typedef uint loom__repro_u32;
typedef int loom__repro_i32;
#define loom__repro_bits_f(u) as_float(u)
#define loom__repro_f_bits(f) as_uint(f)
#define LOOM__REPRO_FLOOR(x) floor(x)
#else
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "params.h"

#define LOOM__REPRO_FN static inline
typedef uint32_t loom__repro_u32;
typedef int32_t loom__repro_i32;
static inline float loom__repro_bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline uint32_t loom__repro_f_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
#define LOOM__REPRO_FLOOR(x) floorf(x)
#endif

#define LOOM__REPRO_CHUNK LOOM_K_REPRO_CHUNK /* core/params.h: GLSL reads it there too */

/* exp(x): k = floor(x log2(e) + 1/2), r = x - k ln2 (in two parts; k *
 * 0.693359375 is exact), p = 1 + r + r^2 q(r) (degree-5 q, Horner), 2^k
 * applied as two exact power-of-two factors; x > 88.72283 -> inf, results
 * < FLT_MIN -> 0. Max error ~1.5 ulp. */
LOOM__REPRO_FN float loom__repro_exp(float x) {
    if (x != x) return x;
    if (x > 88.72283f) return INFINITY;
    if (x < -87.33654f) return 0.0f;
    float k = LOOM__REPRO_FLOOR(x * 1.44269504f + 0.5f);
    float r = x - k * 0.693359375f;
    r = r + k * 2.12194440e-4f;
    float q = 1.9875691500e-4f;
    q = q * r + 1.3981999507e-3f;
    q = q * r + 8.3334519073e-3f;
    q = q * r + 4.1665795894e-2f;
    q = q * r + 1.6666665459e-1f;
    q = q * r + 5.0000001201e-1f;
    float r2 = r * r;
    float p = q * r2 + r;
    p = p + 1.0f;
    loom__repro_i32 ki = (loom__repro_i32)k, k1 = ki >> 1, k2 = ki - k1;
    float y = p * loom__repro_bits_f((loom__repro_u32)(k1 + 127) << 23);
    y = y * loom__repro_bits_f((loom__repro_u32)(k2 + 127) << 23);
    return y < 1.17549435e-38f ? 0.0f : y;
}

/* log(x): x = m 2^e with m in [sqrt(1/2), sqrt(2)), f = m - 1,
 * log = f + (f^3 q(f) - e*2.12194440e-4 - f^2/2) + e*0.693359375 (degree-8
 * q, Horner); 0 and values below FLT_MIN -> -inf, x < 0 -> NaN. */
LOOM__REPRO_FN float loom__repro_log(float x) {
    if (x != x || x == INFINITY) return x;
    if (x < 0.0f) return NAN;
    if (x < 1.17549435e-38f) return -INFINITY;
    loom__repro_u32 u = loom__repro_f_bits(x);
    float e = (float)((loom__repro_i32)(u >> 23) - 126);
    float m = loom__repro_bits_f((u & 0x007fffffu) | 0x3f000000u); /* [0.5, 1) */
    if (m < 0.707106781f) {
        e = e - 1.0f;
        m = m + m;
        m = m - 1.0f;
    } else {
        m = m - 1.0f;
    }
    float z = m * m;
    float q = 7.0376836292e-2f;
    q = q * m - 1.1514610310e-1f;
    q = q * m + 1.1676998740e-1f;
    q = q * m - 1.2420140846e-1f;
    q = q * m + 1.4249322787e-1f;
    q = q * m - 1.6668057665e-1f;
    q = q * m + 2.0000714765e-1f;
    q = q * m - 2.4999993993e-1f;
    q = q * m + 3.3333331174e-1f;
    float y = q * m;
    y = y * z;
    y = y - e * 2.12194440e-4f;
    y = y - z * 0.5f;
    float r = m + y;
    return r + e * 0.693359375f;
}

/* csum / cdot, one value at a time: s = {0}; loom__csum_add (or _dot) per
 * element in order; loom__csum_total. */
typedef struct loom__csum {
    float t, p;
    int n;   /* values in the open chunk */
    int any; /* a chunk was closed */
} loom__csum;

LOOM__REPRO_FN void loom__csum_close(loom__csum *s) {
    s->t = s->any ? s->t + s->p : s->p;
    s->any = 1, s->p = 0.0f, s->n = 0;
}
LOOM__REPRO_FN void loom__csum_add(loom__csum *s, float v) {
    s->p = s->p + v;
    if (++s->n == LOOM__REPRO_CHUNK) loom__csum_close(s);
}
LOOM__REPRO_FN void loom__csum_dot(loom__csum *s, float a, float b) {
    s->p = s->p + a * b;
    if (++s->n == LOOM__REPRO_CHUNK) loom__csum_close(s);
}
LOOM__REPRO_FN float loom__csum_total(loom__csum *s) {
    if (s->n > 0 || !s->any) loom__csum_close(s);
    return s->t;
}

#endif
