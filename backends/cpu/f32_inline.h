/* backends/cpu/f32_inline.h — f32 loops that a single-op kernel (ops/norm.c,
 * ops/pool2d.c) and the fused passes (fuse_kernels.c) share, inline so that
 * the fused passes can compile them for wider vector units too: every lane
 * does the same operations in the same order whatever the vector width (no
 * reassociation, no contraction), so each variant gives the same bits. */
#ifndef LOOM_CPU_F32_INLINE_H
#define LOOM_CPU_F32_INLINE_H

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/prefetch.h"
#include "cpu_impl.h"

#define LOOM__F32_INLINE static inline __attribute__((always_inline))

/* A batch-norm channel is N planes of S floats, stride floats apart: while
 * plane n is summed or written, ask for the first (up to) 4 KB of plane n + 1
 * (prefetch.h: the planes are too short for a stride prefetcher to find) */
LOOM__F32_INLINE void loom__bn_pf_next(const float *plane, int64_t n, int64_t N, int64_t stride, int64_t S) {
    if (n + 1 < N) loom__prefetch_span(plane + stride, (size_t)(S < 1024 ? S : 1024) * sizeof(float));
}

/* the f32 running-statistics update of channel c (unbiased variance) */
LOOM__F32_INLINE void loom__bn_running_f32(const loom__bn_job *j, int64_t c, double mean, double var) {
    double m = (double)(j->N * j->S), mo = j->momentum;
    float *rm = j->rmean, *rv = j->rvar;
    rm[c] = (float)((1 - mo) * rm[c] + mo * mean);
    rv[c] = (float)((1 - mo) * rv[c] + mo * var * m / (m - 1));
}

/* One-pass sums are taken of x - K, K a value of the channel (its first), so
 * the variance E[(x-K)^2] - E[x-K]^2 does not cancel when |mean| >> std.
 * Sums run in float over blocks of LOOM__BN_STAT_BLOCK elements (8
 * independent lanes, so the loop vectorises without reassociation: each lane
 * adds at most 32 values) and the block sums are added in double. Float lanes
 * need no conversions and fill a vector register, at a relative error near
 * 1e-7 for any channel size. */
#define LOOM__BN_STAT_BLOCK 256

/* s += sum(x - K), q += sum((x - K)^2) over n floats */
LOOM__F32_INLINE void loom__bn_sum_sq(const float *x, int64_t n, float K, double *s, double *q) {
    for (int64_t i0 = 0; i0 < n; i0 += LOOM__BN_STAT_BLOCK) {
        int64_t i1 = i0 + LOOM__BN_STAT_BLOCK < n ? i0 + LOOM__BN_STAT_BLOCK : n, i = i0;
        float a[8] = {0}, b[8] = {0};
        for (; i + 8 <= i1; i += 8)
            for (int k = 0; k < 8; k++) {
                float v = x[i + k] - K;
                a[k] += v, b[k] += v * v;
            }
        for (int k = 0; i < i1; i++, k++) a[k] += x[i] - K, b[k] += (x[i] - K) * (x[i] - K);
        double sa = 0, sb = 0;
        for (int k = 0; k < 8; k++) sa += a[k], sb += b[k];
        *s += sa, *q += sb;
    }
}

/* acc[0] += sum(dy), acc[1] += sum(dy (x - K)); with_x: acc[2] += sum(x - K),
 * acc[3] += sum((x - K)^2) */
LOOM__F32_INLINE void loom__bn_sum_dy(const float *x, const float *dy, int64_t n, float K, double acc[4],
                                      bool with_x) {
    for (int64_t i0 = 0; i0 < n; i0 += LOOM__BN_STAT_BLOCK) {
        int64_t i1 = i0 + LOOM__BN_STAT_BLOCK < n ? i0 + LOOM__BN_STAT_BLOCK : n, i = i0;
        float a[8] = {0}, b[8] = {0}, c[8] = {0}, d[8] = {0};
        for (; i + 8 <= i1; i += 8)
            for (int k = 0; k < 8; k++) {
                float v = x[i + k] - K, g = dy[i + k];
                a[k] += g, b[k] += g * v, c[k] += v, d[k] += v * v;
            }
        for (int k = 0; i < i1; i++, k++) {
            float v = x[i] - K;
            a[k] += dy[i], b[k] += dy[i] * v, c[k] += v, d[k] += v * v;
        }
        double sa = 0, sb = 0, sc = 0, sd = 0;
        for (int k = 0; k < 8; k++) sa += a[k], sb += b[k], sc += c[k], sd += d[k];
        acc[0] += sa, acc[1] += sb;
        if (with_x) acc[2] += sc, acc[3] += sd;
    }
}

/* f32 forward of channel c: its statistics (train: and the running-stat
 * update), then y = x * scale + shift */
LOOM__F32_INLINE void loom__bn_coef(const loom__bn_job *j, int64_t c, float *scale, float *shift) {
    const float *x = j->x, *gm = j->gamma, *bt = j->beta;
    double mean, var;
    if (j->train) {
        double s = 0, q = 0, m = (double)(j->N * j->S);
        float K = x[c * j->S];
        for (int64_t n = 0; n < j->N; n++) {
            const float *xr = x + (n * j->C + c) * j->S;
            loom__bn_pf_next(xr, n, j->N, j->C * j->S, j->S);
            loom__bn_sum_sq(xr, j->S, K, &s, &q);
        }
        mean = K + s / m;
        var = q / m - (s / m) * (s / m);
        if (var < 0) var = 0;
        if (j->rmean) loom__bn_running_f32(j, c, mean, var);
    } else {
        mean = ((const float *)j->rmean)[c], var = ((const float *)j->rvar)[c];
    }
    double invstd = 1.0 / sqrt(var + j->eps), g = gm ? gm[c] : 1.0, b = bt ? bt[c] : 0.0;
    *scale = (float)(g * invstd), *shift = (float)(b - mean * g * invstd);
}

/* ---- 2x2 stride-2 unpadded max pooling of one plane: y (OH, OW) from x (H,
 * W); the gradient dx (H, W) from x and dy (OH, OW) ---- */

/* index (0..3) of the first maximum of a, b (top row), c, d (bottom row);
 * a NaN replaces the maximum so far, so with several NaNs the last one wins,
 * as in the generic loop and in torch */
LOOM__F32_INLINE int loom__arg4(float a, float b, float c, float d) {
    int k = 0;
    float m = a;
    if (b > m || isnan(b)) m = b, k = 1;
    if (c > m || isnan(c)) m = c, k = 2;
    if (d > m || isnan(d)) k = 3;
    return k;
}

LOOM__F32_INLINE void loom__max2_plane(const float *x, float *y, int64_t H, int64_t W, int64_t OH, int64_t OW) {
    (void)H;
    for (int64_t i = 0; i < OH; i++) {
        const float *r0 = x + 2 * i * W, *r1 = r0 + W;
        float *yr = y + i * OW;
        int bad = 0;
        for (int64_t j = 0; j < OW; j++) {
            float a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
            float m = a >= b ? a : b, n = c >= d ? c : d;
            bad |= (a != a) | (b != b) | (c != c) | (d != d);
            yr[j] = m >= n ? m : n;
        }
        for (int64_t j = 0; bad && j < OW; j++) { /* a NaN in the row: the generic rule */
            float a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
            int k = loom__arg4(a, b, c, d);
            yr[j] = k == 0 ? a : k == 1 ? b : k == 2 ? c : d;
        }
    }
}

/* Branch-free: the maximum r of the window, then the first position equal
 * to it gets dy (the same choice as arg4 when no value is NaN); a row with a
 * NaN anywhere is redone with arg4. Data-dependent branches per window cost
 * more than the arithmetic here (about one misprediction per window). */
LOOM__F32_INLINE void loom__max2_grad_row(const float *r0, const float *r1, const float *dy, float *d0, float *d1, int64_t OW) {
    int bad = 0;
    for (int64_t j = 0; j < OW; j++) {
        float a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
        float m = a >= b ? a : b, n = c >= d ? c : d;
        float r = m >= n ? m : n, g = dy[j];
        int e0 = a == r, e1 = !e0 & (b == r), e2 = !(e0 | e1) & (c == r), e3 = !(e0 | e1 | e2);
        bad |= (a != a) | (b != b) | (c != c) | (d != d);
        d0[2 * j] = e0 ? g : 0.0f;
        d0[2 * j + 1] = e1 ? g : 0.0f;
        d1[2 * j] = e2 ? g : 0.0f;
        d1[2 * j + 1] = e3 ? g : 0.0f;
    }
    if (!bad) return;
    for (int64_t j = 0; j < OW; j++) {
        int k = loom__arg4(r0[2 * j], r0[2 * j + 1], r1[2 * j], r1[2 * j + 1]);
        float g = dy[j];
        d0[2 * j] = k == 0 ? g : 0.0f;
        d0[2 * j + 1] = k == 1 ? g : 0.0f;
        d1[2 * j] = k == 2 ? g : 0.0f;
        d1[2 * j + 1] = k == 3 ? g : 0.0f;
    }
}

LOOM__F32_INLINE void loom__max2_grad_plane(const float *x, const float *dy, float *dx, int64_t H, int64_t W, int64_t OH,
                               int64_t OW) {
    if ((H & 1) || (W & 1)) memset(dx, 0, (size_t)(H * W) * sizeof *dx);
    for (int64_t i = 0; i < OH; i++)
        loom__max2_grad_row(x + 2 * i * W, x + (2 * i + 1) * W, dy + i * OW, dx + 2 * i * W, dx + (2 * i + 1) * W, OW);
}

/* the same two plane functions with AVX-512 (ops/pool2x2.c), the same bits;
 * loom__max2_avx512_ok: the CPU runs them (LOOM_CPU_POOL_AVX512=0 says no) */
bool loom__max2_avx512_ok(void);
void loom__max2_plane_avx512(const float *x, float *y, int64_t H, int64_t W, int64_t OH, int64_t OW);
void loom__max2_grad_plane_avx512(const float *x, const float *dy, float *dx, int64_t H, int64_t W, int64_t OH,
                                  int64_t OW);

#endif
