/* shaders/gemm_wide.comp — the wide-load form of the batched GEMM (same
 * product, operands, batch layout, bias and push constants as
 * shaders/gemm.comp; host: backends/vulkan/ops/matmul.c):
 *
 *   C[b] (M, N) = op(A[b]) (M, K) x op(B[b]) (K, N) [+ bias]
 *
 * For drivers that run invocations as SIMD lanes of a CPU (lavapipe). There
 * every load from a storage buffer or shared memory is a loop over the
 * lanes, one loop per load instruction whatever its width (all components
 * are fetched in the same lane iteration), and subgroup broadcasts are lane
 * loops too. So this kernel has no shared memory, no barriers and no
 * cross-lane operations: each invocation loads its own operands, W
 * consecutive elements per load instruction (W = 4: vec4, or 4 x 16-bit in
 * a uvec2; W = 8: four 64-bit words, or 8 x 16-bit in a uvec4), and keeps
 * an RM x RN block of C in registers.
 *
 * Layout: a work-group of WX x WY invocations (the host dispatches local =
 * WX * WY) computes a (WY*RM) x (WX*RN) tile of C; invocation l the rows
 * m0 + ty*RM .. +RM-1 and columns n0 + tx*RN .. +RN-1 (tx = l % WX, ty =
 * l / WX). The k loop steps W at a time; per step an invocation loads
 *   A: RM words (TA = 0: row i, k .. k+W-1; TA = 1: rows i .. i+W-1 at one
 *      k, RM/W of them per k),
 *   B: RN words (TB = 0: row k, columns j .. j+W-1, RN/W per k; TB = 1:
 *      column j, k .. k+W-1),
 * and runs W * RM * RN fmas.
 *
 * Grid: x = row tiles, y = column tiles (rows fastest: the work-groups that
 * run together share B's column panel, which stays in the cache while A's
 * few rows stream), z = batch; each walked with a grid stride.
 *
 * Requirements (the host checks them and otherwise runs gemm.comp): K, the
 * leading dimensions lda and ldb, A's and B's element offsets and batch
 * strides are multiples of W, and RM, RN of W. M and N are free: rows and
 * columns past the edge are read at a clamped index (valid memory: a word
 * never crosses a row) and never stored. C and the bias are scalars, any
 * layout.
 *
 * Not reproducible mode: the canonical kernels stay gemm*_r_f32. */
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifndef W
#define W 8
#endif
#if W == 8 && defined(T_F32)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#include "common.glsl"

#ifndef RM
#define RM 8
#endif
#ifndef RN
#define RN 8
#endif
#ifndef WX
#define WX 8
#endif
#ifndef WY
#define WY 1
#endif
#define TM (WY * RM) /* rows per tile */
#define TN (WX * RN) /* columns per tile */

#if defined(C_F32)
#define TC float
#define STC ST_F32
#else
#define TC T
#define STC ST
#endif

/* the word type of W elements, and WLD(X, i, out): word i of X into float out[W] */
#if defined(T_F32) && W == 4
#define TW vec4
#define WLD(X, i, out) { vec4 v_ = X[i]; out[0] = v_.x; out[1] = v_.y; out[2] = v_.z; out[3] = v_.w; }
#elif defined(T_F32) && W == 8
#define TW u64vec4
#define WLD(X, i, out)                                                                   \
    {                                                                                    \
        u64vec4 v_ = X[i];                                                               \
        uvec2 p0_ = unpackUint2x32(v_.x), p1_ = unpackUint2x32(v_.y);                    \
        uvec2 p2_ = unpackUint2x32(v_.z), p3_ = unpackUint2x32(v_.w);                    \
        out[0] = uintBitsToFloat(p0_.x); out[1] = uintBitsToFloat(p0_.y);                \
        out[2] = uintBitsToFloat(p1_.x); out[3] = uintBitsToFloat(p1_.y);                \
        out[4] = uintBitsToFloat(p2_.x); out[5] = uintBitsToFloat(p2_.y);                \
        out[6] = uintBitsToFloat(p3_.x); out[7] = uintBitsToFloat(p3_.y);                \
    }
#else /* 16-bit storage: W/2 uints, two elements each (low half first) */
#if W == 4
#define TW uvec2
#else
#define TW uvec4
#endif
#if defined(T_F16)
#define CV16(h) f16_to_f32(h)
#else
#define CV16(h) bf16_to_f32(h)
#endif
#if defined(T_F16)
/* f16: the driver's conversion (unpackHalf2x16), not common.glsl's exact
 * integer widening: the two differ only in quieting a signalling NaN, and a
 * product with a NaN input is a quiet NaN with that payload either way, so
 * the GEMM's results keep their bits (f16 inputs 16.9 -> 19.7 GFLOP/s at
 * n = 1024 on lavapipe 22.3, bench/results/2026-12-04-gemm-amd-all-backends.md) */
#define WLD(X, i, out)                                                                   \
    {                                                                                    \
        TW v_ = X[i];                                                                    \
        [[unroll]] for (int h_ = 0; h_ < W / 2; h_++) {                                  \
            vec2 f_ = unpackHalf2x16(v_[h_]);                                            \
            out[2 * h_] = f_.x;                                                          \
            out[2 * h_ + 1] = f_.y;                                                      \
        }                                                                                \
    }
#else
#define WLD(X, i, out)                                                                   \
    {                                                                                    \
        TW v_ = X[i];                                                                    \
        [[unroll]] for (int h_ = 0; h_ < W / 2; h_++) {                                  \
            out[2 * h_] = CV16(v_[h_] & 0xffffu);                                        \
            out[2 * h_ + 1] = CV16(v_[h_] >> 16);                                        \
        }                                                                                \
    }
#endif
#endif

#if defined(TEXEL)
/* TEXEL (W = 4): A and B read through uniform texel buffers (bindings 10 and
 * 11, views of the same windows as bindings 0 and 1, one texel = one word of
 * 4 elements): R32G32B32A32_SFLOAT for f32, R32G32_UINT for f16 (two
 * unpackHalf2x16, as the storage form: 0.89x f32 on lavapipe, where an
 * R16G16B16A16_SFLOAT view ran at 0.83x), R16G16B16A16_UINT for bf16 (a
 * shift widens it). lavapipe fetches texels with vector gathers where it
 * loads storage buffers lane by lane: 2-3.7x the GEMM's speed
 * (bench/results/2026-12-05-vulkan-texel-gemm-probe.md).
 * TEXEL with W = 8 (16-bit types): 8 elements per R32G32B32A32_UINT texel,
 * half the fetches of W = 4. bf16 (one shift or mask per element, RM = 16):
 * lavapipe n = 1024 37-43 -> 45-46 GFLOP/s. f16 (unpackHalf2x16) only in
 * 8 x 8 blocks (gemmt8*_f16, RM = 8): its conversions and the registers of
 * a 16 x 8 block ran it at 34-35, the 8 x 8 block at 48-49 (with VSTORE),
 * against 44-45 for W = 4 (2026-12-05-vulkan-16bit-stores.md). */
#if W != 4 && !(W == 8 && (defined(T_BF16) || defined(T_F16)))
#error "gemm_wide.comp: TEXEL needs W = 4, or W = 8 for f16 / bf16"
#endif
#undef WLD
#if W == 8 && defined(T_F16) /* R32G32B32A32_UINT: two elements per component, low half first */
layout(set = 0, binding = 10) uniform usamplerBuffer AW;
layout(set = 0, binding = 11) uniform usamplerBuffer BW;
#define WLD(X, i, out)                                                                   \
    {                                                                                    \
        uvec4 v_ = texelFetch(X, int(i));                                                \
        [[unroll]] for (int h_ = 0; h_ < 4; h_++) {                                      \
            vec2 f_ = unpackHalf2x16(v_[h_]);                                            \
            out[2 * h_] = f_.x;                                                          \
            out[2 * h_ + 1] = f_.y;                                                      \
        }                                                                                \
    }
#elif W == 8 /* bf16, R32G32B32A32_UINT: two elements per component, low half first */
layout(set = 0, binding = 10) uniform usamplerBuffer AW;
layout(set = 0, binding = 11) uniform usamplerBuffer BW;
#define WLD(X, i, out)                                                                   \
    {                                                                                    \
        uvec4 v_ = texelFetch(X, int(i));                                                \
        [[unroll]] for (int h_ = 0; h_ < 4; h_++) {                                      \
            out[2 * h_] = uintBitsToFloat(v_[h_] << 16);                                 \
            out[2 * h_ + 1] = uintBitsToFloat(v_[h_] & 0xffff0000u);                     \
        }                                                                                \
    }
#elif defined(T_BF16)
layout(set = 0, binding = 10) uniform usamplerBuffer AW;
layout(set = 0, binding = 11) uniform usamplerBuffer BW;
#define WLD(X, i, out)                                                                   \
    {                                                                                    \
        uvec4 v_ = texelFetch(X, int(i)) << 16;                                          \
        out[0] = uintBitsToFloat(v_.x); out[1] = uintBitsToFloat(v_.y);                  \
        out[2] = uintBitsToFloat(v_.z); out[3] = uintBitsToFloat(v_.w);                  \
    }
#elif defined(T_F16)
layout(set = 0, binding = 10) uniform usamplerBuffer AW;
layout(set = 0, binding = 11) uniform usamplerBuffer BW;
#define WLD(X, i, out)                                                                   \
    {                                                                                    \
        uvec2 v_ = texelFetch(X, int(i)).xy;                                             \
        vec2 f0_ = unpackHalf2x16(v_.x), f1_ = unpackHalf2x16(v_.y);                     \
        out[0] = f0_.x; out[1] = f0_.y; out[2] = f1_.x; out[3] = f1_.y;                  \
    }
#else
layout(set = 0, binding = 10) uniform samplerBuffer AW;
layout(set = 0, binding = 11) uniform samplerBuffer BW;
#define WLD(X, i, out)                                                                   \
    {                                                                                    \
        vec4 v_ = texelFetch(X, int(i));                                                 \
        out[0] = v_.x; out[1] = v_.y; out[2] = v_.z; out[3] = v_.w;                      \
    }
#endif
#else
TENSOR_IN(0, TW, AW);
TENSOR_IN(1, TW, BW);
#endif
#if defined(VSTORE)
/* VSTORE: four columns of C per store instruction (the host checks that N,
 * ldc, C's offset, its batch strides and segments are multiples of 4, so a
 * group of four columns n0 + 4q .. +3 is one whole aligned word inside one
 * segment): a vec4 for float C, a uvec2 of four 16-bit values (each rounded
 * as ST rounds it, low half first) for f16 / bf16 C. lavapipe stores lane by
 * lane, one loop per store instruction: f32 n = 1024 43.5 -> 48-52 GFLOP/s. */
#if defined(C_F32) || defined(T_F32)
TENSOR_OUT(2, vec4, C4);
#define ST4(i, v) (C4[i] = (v))
#else
TENSOR_OUT(2, uvec2, C4);
#if defined(T_F16)
#define CV4(x) f32_to_f16(x)
#else
#define CV4(x) f32_to_bf16(x)
#endif
#define ST4(i, v) (C4[i] = uvec2(CV4((v).x) | (CV4((v).y) << 16), CV4((v).z) | (CV4((v).w) << 16)))
#endif
#else
TENSOR_OUT(2, TC, C);
#endif
TENSOR_IN(3, T, bias);
PUSH {
    uint ao, bo, co, biaso;
    uint M, N, K, lda, ldb, ldc;
    uint has_bias, brs, bcs;
    uint g0, g1, g2;
    uint sa0, sa1, sa2, sb0, sb1, sb2, sc0, sc1, sc2, sbias0, sbias1, sbias2;
    uint cseg, csegs; /* cseg != 0: C's columns in segments of cseg, csegs elements apart (ops/gemm.h) */
} pc;

void main() {
    uint l = gl_LocalInvocationID.x;
    uint tx = l % uint(WX), ty = l / uint(WX);
    uint M = pc.M, N = pc.N, K = pc.K;
    uint mtiles = (M + TM - 1u) / TM, ntiles = (N + TN - 1u) / TN, nb = pc.g0 * pc.g1 * pc.g2;
    uint ldaw = pc.lda / uint(W), ldbw = pc.ldb / uint(W);
    for (uint b = gl_WorkGroupID.z; b < nb; b += gl_NumWorkGroups.z) {
        uint i2 = b % pc.g2, i1 = (b / pc.g2) % pc.g1, i0 = b / (pc.g2 * pc.g1);
        uint ao = pc.ao + i0 * pc.sa0 + i1 * pc.sa1 + i2 * pc.sa2;
        uint bo = pc.bo + i0 * pc.sb0 + i1 * pc.sb1 + i2 * pc.sb2;
        uint co = pc.co + i0 * pc.sc0 + i1 * pc.sc1 + i2 * pc.sc2;
        for (uint nt = gl_WorkGroupID.y; nt < ntiles; nt += gl_NumWorkGroups.y) {
            for (uint mt = gl_WorkGroupID.x; mt < mtiles; mt += gl_NumWorkGroups.x) {
                uint m0 = mt * TM + ty * RM, n0 = nt * TN + tx * RN; /* this invocation's block */
                /* word indices at k = 0, clamped inside the operand */
#if TA == 0
                uint ai[RM]; /* row m0 + i */
                [[unroll]] for (int i = 0; i < RM; i++) ai[i] = (ao + min(m0 + uint(i), M - 1u) * pc.lda) / uint(W);
#else
                uint ai[RM / W]; /* rows m0 + q*W .. +W-1 */
                [[unroll]] for (int q = 0; q < RM / W; q++)
                    ai[q] = (ao + min(m0 + uint(q * W), (M - 1u) / uint(W) * uint(W))) / uint(W);
#endif
#if TB == 0
                uint bi[RN / W]; /* columns n0 + q*W .. +W-1 */
                [[unroll]] for (int q = 0; q < RN / W; q++)
                    bi[q] = (bo + min(n0 + uint(q * W), (N - 1u) / uint(W) * uint(W))) / uint(W);
#else
                uint bi[RN]; /* column n0 + j */
                [[unroll]] for (int j = 0; j < RN; j++) bi[j] = (bo + min(n0 + uint(j), N - 1u) * pc.ldb) / uint(W);
#endif
                float acc[RM][RN];
                [[unroll]] for (int i = 0; i < RM; i++)
                    [[unroll]] for (int j = 0; j < RN; j++) acc[i][j] = 0.0;
                for (uint kw = 0u; kw < K / uint(W); kw++) {
                    /* a[i][kk] = op(A)[m0 + i][k + kk], bb[kk][j] = op(B)[k + kk][n0 + j] */
                    float a[RM][W], bb[W][RN];
#if TA == 0
                    [[unroll]] for (int i = 0; i < RM; i++) WLD(AW, ai[i] + kw, a[i]);
#else
                    [[unroll]] for (int kk = 0; kk < W; kk++)
                        [[unroll]] for (int q = 0; q < RM / W; q++) {
                            float t[W];
                            WLD(AW, ai[q] + (kw * uint(W) + uint(kk)) * ldaw, t);
                            [[unroll]] for (int e = 0; e < W; e++) a[q * W + e][kk] = t[e];
                        }
#endif
#if TB == 0
                    [[unroll]] for (int kk = 0; kk < W; kk++)
                        [[unroll]] for (int q = 0; q < RN / W; q++) {
                            float t[W];
                            WLD(BW, bi[q] + (kw * uint(W) + uint(kk)) * ldbw, t);
                            [[unroll]] for (int e = 0; e < W; e++) bb[kk][q * W + e] = t[e];
                        }
#else
                    [[unroll]] for (int j = 0; j < RN; j++) {
                        float t[W];
                        WLD(BW, bi[j] + kw, t);
                        [[unroll]] for (int kk = 0; kk < W; kk++) bb[kk][j] = t[kk];
                    }
#endif
                    [[unroll]] for (int kk = 0; kk < W; kk++)
                        [[unroll]] for (int i = 0; i < RM; i++)
                            [[unroll]] for (int j = 0; j < RN; j++) acc[i][j] = fma(a[i][kk], bb[kk][j], acc[i][j]);
                }
                /* epilogue: bias, one rounding to C's storage type; column j's
                 * offset in C (segmented: one division per column, not per element) */
                uint bio = pc.biaso + i0 * pc.sbias0 + i1 * pc.sbias1 + i2 * pc.sbias2;
                uint cn[RN];
                [[unroll]] for (int j = 0; j < RN; j++) {
                    uint n = n0 + uint(j);
                    cn[j] = pc.cseg != 0u ? n / pc.cseg * pc.csegs + n % pc.cseg : n;
                }
#if defined(VSTORE)
                [[unroll]] for (int i = 0; i < RM; i++) {
                    uint m = m0 + uint(i);
                    if (m >= M) continue;
                    [[unroll]] for (int q = 0; q < RN / 4; q++) {
                        uint n = n0 + uint(4 * q), at = co + m * pc.ldc + cn[4 * q];
                        vec4 v = vec4(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]);
                        if (pc.has_bias != 0u)
                            [[unroll]] for (int e = 0; e < 4; e++) v[e] += LD(bias, bio + m * pc.brs + (n + uint(e)) * pc.bcs);
                        if (n < N) ST4(at / 4u, v); /* N is a multiple of 4: the group is whole */
                    }
                }
#else
                [[unroll]] for (int i = 0; i < RM; i++) {
                    uint m = m0 + uint(i);
                    [[unroll]] for (int j = 0; j < RN; j++) {
                        uint n = n0 + uint(j);
                        if (m < M && n < N) {
                            float v = acc[i][j];
                            if (pc.has_bias != 0u) v += LD(bias, bio + m * pc.brs + n * pc.bcs);
                            STC(C, co + m * pc.ldc + cn[j], v);
                        }
                    }
                }
#endif
            }
        }
    }
}
