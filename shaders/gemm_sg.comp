/* shaders/gemm_sg.comp — the subgroup form of the batched GEMM (same
 * product, operands, batch layout, bias and push constants as
 * shaders/gemm.comp; host: backends/vulkan/ops/matmul.c):
 *
 *   C[b] (M, N) = op(A[b]) (M, K) x op(B[b]) (K, N) [+ bias]
 *
 * For drivers that run a subgroup as SIMD lanes of a CPU (lavapipe): there
 * every load from a storage buffer or shared memory whose address may differ
 * between invocations is a loop over the lanes, one loop per load
 * instruction whatever its width (its components are fetched in the same
 * lane iteration). This kernel therefore issues few and wide loads: no
 * shared memory, no barriers, every operand load a vec4 (four consecutive
 * elements), and the values that every lane needs reach it through
 * subgroupBroadcast with a constant lane (one register shuffle), not through
 * memory.
 *
 * Layout: a work-group is one subgroup of SG invocations (the host dispatches
 * local = SG and uses this kernel only where the device's subgroup size is
 * SG). It computes an RM x (SG * 4 * CN) tile of C: lane l owns the columns
 * n0 + (c*SG + l)*4 .. +3 for c < CN (CN vec4 accumulators per row) of all
 * RM rows. The k loop steps 4 at a time; per step each lane loads
 *   B: the 4 x 4*CN values of its own columns (TB = 0: one vec4 per k and c,
 *      along a row of B; TB = 1: one vec4 per column, along k, transposed in
 *      registers),
 *   A: RM/SG vec4s holding RM x 4 values of the tile's rows for everyone
 *      (TA = 0: lane l reads row q*SG + l, k .. k+3; TA = 1: lane l reads
 *      rows (q*SG + l)*4 .. +3 at one k),
 * then broadcasts each A value from the lane that holds it and runs
 * RM * CN * 4 vec4 fmas per k.
 *
 * Requirements (the host checks them and otherwise runs gemm.comp): K, the
 * leading dimensions lda and ldb, the offsets ao and bo and the batch
 * strides of A and B are multiples of 4 (every vec4 is aligned and inside
 * its row). M and N are free: rows and columns past the edge are read at a
 * clamped index (valid memory) and never stored. C and the bias are read and
 * written as scalars, any layout.
 *
 * Not reproducible mode: the canonical kernels stay gemm*_r_f32. */
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

#ifndef SG
#define SG 8
#endif
#ifndef RM
#define RM 32
#endif
#ifndef CN
#define CN 1
#endif
#define TN (SG * 4 * CN) /* columns per tile */

#if defined(C_F32)
#define TC float
#define STC ST_F32
#else
#define TC T
#define STC ST
#endif

/* vec4 views of A and B (element offset / 4) and their load as vec4 */
#if defined(T_F32)
#define T4 vec4
#define LD4(X, i) (X[i])
#elif defined(T_F16)
#define T4 u16vec4
#define LD4(X, i) f16x4(uvec4(X[i])) /* one 8-byte load, widened */
vec4 f16x4(uvec4 h) { return vec4(f16_to_f32(h.x), f16_to_f32(h.y), f16_to_f32(h.z), f16_to_f32(h.w)); }
#elif defined(T_BF16)
#define T4 u16vec4
#define LD4(X, i) uintBitsToFloat(uvec4(X[i]) << 16)
#endif

TENSOR_IN(0, T4, A4);
TENSOR_IN(1, T4, B4);
TENSOR_OUT(2, TC, C);
TENSOR_IN(3, T, bias);
PUSH {
    uint ao, bo, co, biaso;
    uint M, N, K, lda, ldb, ldc;
    uint has_bias, brs, bcs;
    uint g0, g1, g2;
    uint sa0, sa1, sa2, sb0, sb1, sb2, sc0, sc1, sc2, sbias0, sbias1, sbias2;
} pc;

void main() {
    uint lane = gl_SubgroupInvocationID;
    uint M = pc.M, N = pc.N, K = pc.K;
    uint mtiles = (M + RM - 1u) / RM, ntiles = (N + TN - 1u) / TN, nb = pc.g0 * pc.g1 * pc.g2;
    for (uint b = gl_WorkGroupID.z; b < nb; b += gl_NumWorkGroups.z) {
        uint i2 = b % pc.g2, i1 = (b / pc.g2) % pc.g1, i0 = b / (pc.g2 * pc.g1);
        uint ao = pc.ao + i0 * pc.sa0 + i1 * pc.sa1 + i2 * pc.sa2;
        uint bo = pc.bo + i0 * pc.sb0 + i1 * pc.sb1 + i2 * pc.sb2;
        uint co = pc.co + i0 * pc.sc0 + i1 * pc.sc1 + i2 * pc.sc2;
        for (uint mt = gl_WorkGroupID.y; mt < mtiles; mt += gl_NumWorkGroups.y) {
            for (uint nt = gl_WorkGroupID.x; nt < ntiles; nt += gl_NumWorkGroups.x) {
                uint m0 = mt * RM, n0 = nt * TN;
                /* this lane's vec4 indices (element offset / 4) at k = 0 */
                uint ai[RM / SG], bi[CN * 4];
                [[unroll]] for (int q = 0; q < RM / SG; q++) {
#if TA == 0
                    uint m = min(m0 + uint(q * SG) + lane, M - 1u); /* row m, k .. k+3 */
                    ai[q] = (ao + m * pc.lda) / 4u;
#else
                    uint m = min(m0 + (uint(q * SG) + lane) * 4u, (M - 1u) & ~3u); /* rows m .. m+3 at k */
                    ai[q] = (ao + m) / 4u;
#endif
                }
                [[unroll]] for (int c = 0; c < CN; c++) {
                    uint n = min(n0 + (uint(c * SG) + lane) * 4u, (N - 1u) & ~3u);
#if TB == 0
                    bi[c] = (bo + n) / 4u; /* row k, columns n .. n+3 */
#else
                    [[unroll]] for (int j = 0; j < 4; j++) /* column n + j, k .. k+3 */
                        bi[c * 4 + j] = (bo + min(n + uint(j), N - 1u) * pc.ldb) / 4u;
#endif
                }
                vec4 acc[RM][CN];
                [[unroll]] for (int i = 0; i < RM; i++)
                    [[unroll]] for (int c = 0; c < CN; c++) acc[i][c] = vec4(0.0);
                for (uint k = 0u; k < K; k += 4u) {
                    /* this lane's columns: bv[kk][c] = B[k + kk][n .. n+3] */
                    vec4 bv[4][CN];
                    [[unroll]] for (int c = 0; c < CN; c++) {
#if TB == 0
                        [[unroll]] for (int kk = 0; kk < 4; kk++) bv[kk][c] = LD4(B4, bi[c] + (k + uint(kk)) * (pc.ldb / 4u));
#else
                        vec4 t[4];
                        [[unroll]] for (int j = 0; j < 4; j++) t[j] = LD4(B4, bi[c * 4 + j] + k / 4u);
                        [[unroll]] for (int kk = 0; kk < 4; kk++) bv[kk][c] = vec4(t[0][kk], t[1][kk], t[2][kk], t[3][kk]);
#endif
                    }
#if TA == 0
                    /* av[q] = A[row q*SG + lane][k .. k+3]; row i of the tile is lane i % SG of av[i / SG] */
                    [[unroll]] for (int q = 0; q < RM / SG; q++) {
                        vec4 av = LD4(A4, ai[q] + k / 4u);
                        [[unroll]] for (int r = 0; r < SG; r++) {
                            vec4 a = subgroupBroadcast(av, uint(r));
                            [[unroll]] for (int kk = 0; kk < 4; kk++)
                                [[unroll]] for (int c = 0; c < CN; c++)
                                    acc[q * SG + r][c] = fma(vec4(a[kk]), bv[kk][c], acc[q * SG + r][c]);
                        }
                    }
#else
                    /* av = A^T[k + kk][rows (q*SG + lane)*4 .. +3]; row i is component i % 4 of lane (i / 4) % SG */
                    [[unroll]] for (int kk = 0; kk < 4; kk++) {
                        [[unroll]] for (int q = 0; q < RM / (4 * SG); q++) {
                            vec4 av = LD4(A4, ai[q] + (k + uint(kk)) * (pc.lda / 4u));
                            [[unroll]] for (int r = 0; r < SG; r++) {
                                vec4 a = subgroupBroadcast(av, uint(r));
                                [[unroll]] for (int e = 0; e < 4; e++)
                                    [[unroll]] for (int c = 0; c < CN; c++)
                                        acc[(q * SG + r) * 4 + e][c] = fma(vec4(a[e]), bv[kk][c], acc[(q * SG + r) * 4 + e][c]);
                            }
                        }
                    }
#endif
                }
                /* epilogue: bias, one rounding to C's storage type */
                uint bio = pc.biaso + i0 * pc.sbias0 + i1 * pc.sbias1 + i2 * pc.sbias2;
                [[unroll]] for (int i = 0; i < RM; i++) {
                    uint m = m0 + uint(i);
                    [[unroll]] for (int c = 0; c < CN; c++) {
                        [[unroll]] for (int j = 0; j < 4; j++) {
                            uint n = n0 + (uint(c * SG) + lane) * 4u + uint(j);
                            if (m < M && n < N) {
                                float v = acc[i][c][j];
                                if (pc.has_bias != 0u) v += LD(bias, bio + m * pc.brs + n * pc.bcs);
                                STC(C, co + m * pc.ldc + n, v);
                            }
                        }
                    }
                }
            }
        }
    }
}
