/* shaders/gemm.comp — the batched GEMM every product of the Vulkan backend
 * runs on (matmul, linear, the conv2d family; host: backends/vulkan/ops/matmul.c):
 *
 *   C[b] (M, N) = op(A[b]) (M, K) x op(B[b]) (K, N) [+ bias]
 *
 * op(X) = X or X^T, fixed per variant: TA / TB = 0 (n, as stored) or 1 (t,
 * transposed). A is stored (M, K) row-major with leading dimension lda for
 * n, (K, M) for t; B (K, N) for n, (N, K) for t. A, B and bias are storage
 * T; C is T, or float with C_F32 (the _cf variants: conv2d's gradient
 * columns and per-image weight gradients). Accumulation is float (fma).
 *
 * Tiling: a work-group of NT = (BM/RM) * (BN/RN) invocations (the host
 * dispatches local = NT) computes a BM x BN tile of C; invocation l a
 * register block of RM x RN outputs at rows ty*RM .. ty*RM+RM-1 and columns
 * tx*RN .. tx*RN+RN-1 of the tile (tx = l % (BN/RN), ty = l / (BN/RN)). The
 * K loop steps BK at a time through two shared tiles As[k][m], Bs[k][n]
 * (float, stored as vec4 runs so that the inner loop reads RM/4 + RN/4 vec4s
 * per k for RM*RN fmas). Tiles are loaded as 4-element runs along the
 * operand's contiguous axis, scalar loads with zero fill at the edges: any M,
 * N, K. Variants: gemm_* BM = BN = 128, BK = 16, RM = RN = 8 (256
 * invocations); gemm64_* BM = BN = 64 (64 invocations) for small products.
 * This is the form for GPUs; CPU-hosted drivers run shaders/gemm_wide.comp
 * (the host picks per device: backends/vulkan/ops/matmul.c).
 * Every loop over the register block has a constant trip count and no break
 * (a dynamically indexed acc[] would live in scratch memory on some drivers).
 *
 * Measured (lavapipe / Mesa 22.3, 2 cores shared with other jobs, square f32
 * C = A B, bench-gemm_conv; GFLOP/s of CPU time in parentheses, the wall
 * figure moves 2x with the load): n = 256: 5-8 (4.5), 512: 5-6 (5.5),
 * 1024: 3-5 (4.5). For reference the scalar 4 x 4 / 64 x 64 form: 256: 4.9
 * (3.8), 512: 2.4-5.3 (4.5). Lavapipe 22.3 runs every load or store whose
 * address differs between invocations as a loop over the 8 SIMD lanes (with
 * a bounds check each), which is what bounds this kernel there; vec4 loads
 * gain nothing on it (one lane loop per component), they serve GPUs.
 *
 * TB = 2 (gemm*_nc) / TA = 2, TB = 3 (gemm*_yx): B is a convolution's
 * input read as its columns, or their transpose with A read from dy
 * (implicit GEMM; conv_col below, table cg at binding 4).
 *
 * Batch: b in [0, nb), nb = g0*g1*g2, splits into (i0, i1, i2); each
 * operand's element offset is i0*s0 + i1*s1 + i2*s2 with its strides (push
 * constants; 0 = broadcast). The bias (when has_bias) is read at
 * bias[biaso + batch offset + m*brs + n*bcs] (linear: brs 0, bcs 1; conv2d:
 * brs 1, bcs 0).
 *
 * Grid: x = column tiles, y = row tiles, z = batch; each is walked with a
 * grid stride (uniform per work-group), so any count fits the device's
 * maxComputeWorkGroupCount.
 *
 * REPRO (reproducible mode's gemm*_r_f32 variants, core/repro.h): the k
 * loop runs the canonical chain acc = acc + a*b (two roundings, `precise`,
 * in k order from 0; the zero fill past K adds 0) plus the chunk fold: after every LOOM__REPRO_CHUNK k's the chain's value goes into tot
 * (t = p0, then t = t + pc) and acc restarts from 0. BK divides the chunk. */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
#endif
#ifndef RM
#define RM 8
#endif
#ifndef RN
#define RN 8
#endif
#define NT ((BM / RM) * (BN / RN))
#define REPRO_CHUNK uint(LOOM_K_REPRO_CHUNK) /* core/params.h, as core/repro.h */
#define RM4 (RM / 4)
#define RN4 (RN / 4)

#if defined(C_F32)
#define TC float
#define STC ST_F32
#else
#define TC T
#define STC ST
#endif

TENSOR_IN(0, T, A);
TENSOR_IN(1, T, B);
TENSOR_OUT(2, TC, C);
TENSOR_IN(3, T, bias);
#if TB >= 2
/* A convolution's input read as its columns (implicit GEMM): element (row
 * kk, column q) of the column matrix is, with (c, kh, kw) = (kk / (KH KW),
 * kk / KW % KH, kk % KW), image q / P's output position p = q % P = (i, j)
 * = (p / OW, p % OW), the input value x[image, c, i sh - ph + kh dh,
 * j sw - pw + kw dw] at B's offset + image * xs, 0 in the padding: what
 * conv_im2col writes, so the sums (and bits) are the same. TB = 2 (gemm*_nc,
 * the forward): B (K, N) is that matrix; TB = 3 with TA = 2 (gemm*_yx, the
 * weight gradient over a chunk of images): B (N, K) is, read transposed, and
 * A (M, K) is dy (images, O, P) read as rows o and columns q (image q / P,
 * position q % P, image stride ys). cg: H, W, KH, KW, OW, sh, sw, ph, pw, dh,
 * dw, P, xs, ys (ops/conv2d.c) */
TENSOR_IN(4, int, cg);
float conv_col(uint bo, int kk, int q) {
    int H = cg[0], W = cg[1], KH = cg[2], KW = cg[3], OW = cg[4], P = cg[11];
    int c = kk / (KH * KW), kh = kk / KW % KH, kw = kk % KW, img = q / P, p = q % P, i = p / OW, j = p % OW;
    int ih = i * cg[5] - cg[7] + kh * cg[9], iw = j * cg[6] - cg[8] + kw * cg[10];
    return ih >= 0 && ih < H && iw >= 0 && iw < W ? LD(B, bo + uint(img * cg[12] + (c * H + ih) * W + iw)) : 0.0;
}
#endif
PUSH {
    uint ao, bo, co, biaso;
    uint M, N, K, lda, ldb, ldc;
    uint has_bias, brs, bcs;
    uint g0, g1, g2;
    uint sa0, sa1, sa2, sb0, sb1, sb2, sc0, sc1, sc2, sbias0, sbias1, sbias2;
    uint cseg, csegs; /* cseg != 0: C's columns in segments of cseg, csegs elements apart (ops/gemm.h) */
} pc;

shared vec4 As[BK][BM / 4];
shared vec4 Bs[BK][BN / 4];

/* elements (r, c .. c+3) of a row-major X (rows x cols, leading dimension ld,
 * element offset o) as a vec4, zero outside */
#define RUN4(X, o, ld, r, c, rows, cols, out)                                   \
    {                                                                           \
        out = vec4(0.0);                                                        \
        if ((r) < (rows)) {                                                     \
            uint p_ = (o) + (r) * (ld) + (c);                                   \
            if ((c) + 3u < (cols)) {                                            \
                out = vec4(LD(X, p_), LD(X, p_ + 1u), LD(X, p_ + 2u), LD(X, p_ + 3u)); \
            } else {                                                            \
                if ((c) < (cols)) out.x = LD(X, p_);                            \
                if ((c) + 1u < (cols)) out.y = LD(X, p_ + 1u);                  \
                if ((c) + 2u < (cols)) out.z = LD(X, p_ + 2u);                  \
            }                                                                   \
        }                                                                       \
    }

void main() {
    uint l = gl_LocalInvocationID.x;
    uint tx = l % uint(BN / RN), ty = l / uint(BN / RN);
    uint M = pc.M, N = pc.N, K = pc.K;
    uint mtiles = (M + BM - 1u) / BM, ntiles = (N + BN - 1u) / BN, nb = pc.g0 * pc.g1 * pc.g2;
    for (uint b = gl_WorkGroupID.z; b < nb; b += gl_NumWorkGroups.z) {
        uint i2 = b % pc.g2, i1 = (b / pc.g2) % pc.g1, i0 = b / (pc.g2 * pc.g1);
        uint ao = pc.ao + i0 * pc.sa0 + i1 * pc.sa1 + i2 * pc.sa2;
        uint bo = pc.bo + i0 * pc.sb0 + i1 * pc.sb1 + i2 * pc.sb2;
        uint co = pc.co + i0 * pc.sc0 + i1 * pc.sc1 + i2 * pc.sc2;
        for (uint mt = gl_WorkGroupID.y; mt < mtiles; mt += gl_NumWorkGroups.y) {
            for (uint nt = gl_WorkGroupID.x; nt < ntiles; nt += gl_NumWorkGroups.x) {
                uint m0 = mt * BM, n0 = nt * BN;
#ifdef REPRO
                precise vec4 acc[RM][RN4];
#else
                vec4 acc[RM][RN4];
#endif
                for (int i = 0; i < RM; i++)
                    for (int j = 0; j < RN4; j++) acc[i][j] = vec4(0.0);
#ifdef REPRO
                precise vec4 tot[RM][RN4];
                for (int i = 0; i < RM; i++)
                    for (int j = 0; j < RN4; j++) tot[i][j] = vec4(0.0);
#endif
                for (uint k0 = 0u; k0 < K; k0 += BK) {
                    /* A's tile (rows m0.., columns k0..) into As[k][m] */
                    for (int q = 0; q < BM * BK / 4 / NT; q++) {
                        uint r = l + uint(q * NT);
                        vec4 v;
#if TA == 2
                        uint m = r / uint(BK / 4), k4 = (r % uint(BK / 4)) * 4u;
                        v = vec4(0.0);
                        for (int e = 0; e < 4; e++) { /* column kq: image kq / P, position kq % P */
                            int kq = int(k0 + k4) + e, img = kq / cg[11];
                            if (m0 + m < M && uint(kq) < K)
                                v[e] = LD(A, ao + uint(img * cg[13] + int(m0 + m) * cg[11] + kq - img * cg[11]));
                        }
                        As[k4][m >> 2][m & 3u] = v.x;
                        As[k4 + 1u][m >> 2][m & 3u] = v.y;
                        As[k4 + 2u][m >> 2][m & 3u] = v.z;
                        As[k4 + 3u][m >> 2][m & 3u] = v.w;
#elif TA == 0
                        uint m = r / uint(BK / 4), k4 = (r % uint(BK / 4)) * 4u;
                        RUN4(A, ao, pc.lda, m0 + m, k0 + k4, M, K, v);
                        As[k4][m >> 2][m & 3u] = v.x;
                        As[k4 + 1u][m >> 2][m & 3u] = v.y;
                        As[k4 + 2u][m >> 2][m & 3u] = v.z;
                        As[k4 + 3u][m >> 2][m & 3u] = v.w;
#else
                        uint k = r / uint(BM / 4), m4 = r % uint(BM / 4);
                        RUN4(A, ao, pc.lda, k0 + k, m0 + m4 * 4u, K, M, v);
                        As[k][m4] = v;
#endif
                    }
                    /* B's tile (rows k0.., columns n0..) into Bs[k][n] */
                    for (int q = 0; q < BN * BK / 4 / NT; q++) {
                        uint r = l + uint(q * NT);
                        vec4 v;
#if TB == 0
                        uint k = r / uint(BN / 4), n4 = r % uint(BN / 4);
                        RUN4(B, bo, pc.ldb, k0 + k, n0 + n4 * 4u, K, N, v);
                        Bs[k][n4] = v;
#elif TB == 2
                        uint k = r / uint(BN / 4), n4 = r % uint(BN / 4);
                        v = vec4(0.0);
                        for (int e = 0; e < 4; e++)
                            if (k0 + k < K && n0 + n4 * 4u + uint(e) < N) v[e] = conv_col(bo, int(k0 + k), int(n0 + n4 * 4u) + e);
                        Bs[k][n4] = v;
#elif TB == 3
                        uint n = r / uint(BK / 4), k4 = (r % uint(BK / 4)) * 4u;
                        v = vec4(0.0);
                        for (int e = 0; e < 4; e++)
                            if (n0 + n < N && k0 + k4 + uint(e) < K) v[e] = conv_col(bo, int(n0 + n), int(k0 + k4) + e);
                        Bs[k4][n >> 2][n & 3u] = v.x;
                        Bs[k4 + 1u][n >> 2][n & 3u] = v.y;
                        Bs[k4 + 2u][n >> 2][n & 3u] = v.z;
                        Bs[k4 + 3u][n >> 2][n & 3u] = v.w;
#else
                        uint n = r / uint(BK / 4), k4 = (r % uint(BK / 4)) * 4u;
                        RUN4(B, bo, pc.ldb, n0 + n, k0 + k4, N, K, v);
                        Bs[k4][n >> 2][n & 3u] = v.x;
                        Bs[k4 + 1u][n >> 2][n & 3u] = v.y;
                        Bs[k4 + 2u][n >> 2][n & 3u] = v.z;
                        Bs[k4 + 3u][n >> 2][n & 3u] = v.w;
#endif
                    }
                    barrier();
                    for (int k = 0; k < BK; k++) {
                        vec4 a[RM4], bv[RN4];
                        for (int i = 0; i < RM4; i++) a[i] = As[k][ty * RM4 + i];
                        for (int j = 0; j < RN4; j++) bv[j] = Bs[k][tx * RN4 + j];
                        for (int i = 0; i < RM; i++)
                            for (int j = 0; j < RN4; j++) {
#ifdef REPRO /* two roundings, never fused (core/repro.h) */
                                precise vec4 pr = vec4(a[i >> 2][i & 3]) * bv[j];
                                acc[i][j] = acc[i][j] + pr;
#else
                                acc[i][j] = fma(vec4(a[i >> 2][i & 3]), bv[j], acc[i][j]);
#endif
                            }
                    }
                    barrier();
#ifdef REPRO
                    if ((k0 + BK) % REPRO_CHUNK == 0u || k0 + BK >= K) { /* uniform: the chunk's last tile */
                        bool first = k0 < REPRO_CHUNK;
                        for (int i = 0; i < RM; i++)
                            for (int j = 0; j < RN4; j++) {
                                tot[i][j] = first ? acc[i][j] : tot[i][j] + acc[i][j];
                                acc[i][j] = vec4(0.0);
                            }
                    }
#endif
                }
                /* epilogue: bias, one rounding to C's storage type */
                uint bio = pc.biaso + i0 * pc.sbias0 + i1 * pc.sbias1 + i2 * pc.sbias2;
                for (int i = 0; i < RM; i++) {
                    for (int j = 0; j < RN; j++) { /* constant trip counts, no break: acc stays in registers */
                        uint m = m0 + ty * RM + uint(i), n = n0 + tx * RN + uint(j);
                        if (m < M && n < N) {
#ifdef REPRO
                            precise float v = tot[i][j >> 2][j & 3];
#else
                            float v = acc[i][j >> 2][j & 3];
#endif
                            if (pc.has_bias != 0u) v += LD(bias, bio + m * pc.brs + n * pc.bcs);
                            STC(C, co + m * pc.ldc + (pc.cseg != 0u ? n / pc.cseg * pc.csegs + n % pc.cseg : n), v);
                        }
                    }
                }
            }
        }
    }
}
