/* backends/opencl/kernels/gemm.cl — the batched GEMM every product in the
 * backend runs on (matmul, linear, the conv2d family):
 *
 *   C[b] (M, N) = op(A[b]) (M, K) x op(B[b]) (K, N) [+ bias]
 *
 * and gemm_nn_conv / gemm_nt_cf_conv, the same with a convolution's
 * columns computed from its input as they are loaded (implicit GEMM: the
 * forward, and the weight gradient with A read from dy; conv_col below).
 *
 * op(X) = X or X^T: one kernel per transpose pair, gemm_<ta><tb> with
 * n = as stored, t = transposed (A stored (M, K) row-major with leading
 * dimension lda for n, (K, M) for t; B (K, N) for n, (N, K) for t). A and B
 * are storage T; C is T, or float for the _cf variants (conv2d_grad_input's
 * columns). Accumulation is float.
 *
 * Tiling: a work-group of GEMM_WG x GEMM_WG (16 x 16) items computes a
 * GEMM_TM x GEMM_TN (64 x 64) tile of C; each item a 4 x 4 register block at
 * rows ly + 16 i, columns 4 lx .. 4 lx + 3, as four float4 accumulators (one
 * float4 read of Bs and four broadcasts of As per k: explicit SIMD, which
 * PoCL's CPU device needs — the scalar 4 x 4 form ran at half the speed). The K loop steps GEMM_TK (16) at a time through two local tiles
 * As[k][m], Bs[k][n] (float), each loaded by the 256 items as 4-element runs
 * along the operand's contiguous axis: a vector load (vload4 / vload_half4 /
 * ushort4) when the run is inside the matrix, scalar loads with zero fill at
 * the edges. Any M, N, K.
 *
 * Batch (grid dimension 1 = batch * row tiles): b in [0, g[0]*g[1]*g[2])
 * splits into (i0, i1, i2) over dims g[0..2]; each operand's element offset
 * is i0*s0 + i1*s1 + i2*s2 with its strides from the table
 * (`__constant long *g`):
 *   g[0..2]   batch dims          g[3..5]   A strides    g[6..8]  B strides
 *   g[9..11]  C strides           g[12..14] bias strides
 *   g[15]     bias stride per row of C, g[16] per column (linear: 0, 1;
 *             conv2d: 1, 0); read only when has_bias.
 *   g[17]     > 0: C's columns in segments of g[17], segment s starting
 *             s * g[18] elements into each row's span (column n at
 *             n / g[17] * g[18] + n % g[17]): conv2d's (O, N*P) product
 *             stored as (N, O, P); 0: plain columns
 * Broadcast batch dims have stride 0.
 *
 * Reproducible mode (built with -DLOOM_REPRO, core/repro.h): each output's
 * sum is the canonical cdot: s = s + a * b (two roundings, never fused) over
 * k from 0 (every item walks k in order; the zero padding past K adds
 * nothing), folded every LOOM__REPRO_CHUNK k's (a multiple of GEMM_TK) into a
 * running total (t = p0; t = t + p1 ...); the bias is added after. Otherwise
 * mad() (which may fuse), one chain. */

#define GEMM_WG 16
#define GEMM_TM 64
#define GEMM_TN 64
#define GEMM_TK 16

#ifdef LOOM_REPRO
#pragma OPENCL FP_CONTRACT OFF
#define GEMM_MAC(a, b, c) ((a) * (b) + (c))
/* before the tile at k0: close the chunk that ends there */
#define GEMM_FOLD                                                                                        \
    if (k0 > 0 && k0 % LOOM__REPRO_CHUNK == 0) {                                                         \
        for (int i = 0; i < 4; i++) tot[i] = folded ? tot[i] + acc[i] : acc[i], acc[i] = (float4)(0.0f); \
        folded = 1;                                                                                      \
    }
#define GEMM_TOTAL for (int i = 0; i < 4; i++) tot[i] = folded ? tot[i] + acc[i] : acc[i];
#else
#define GEMM_MAC(a, b, c) mad((a), (b), (c))
#define GEMM_FOLD
#define GEMM_TOTAL for (int i = 0; i < 4; i++) tot[i] = acc[i];
#endif


/* A run of 4 starting at (r, c) of a row-major matrix X (rows x cols, leading
 * dimension ld) along its columns, as float4: zero outside. */
inline float4 run4(__global const T *X, long ld, long r, long c, long rows, long cols) {
    if (r >= rows) return (float4)(0.0f);
    __global const T *p = X + r * ld;
    if (c + 3 < cols) return LD4(p, c);
    float4 v = (float4)(0.0f);
    if (c < cols) v.s0 = LD(p, c);
    if (c + 1 < cols) v.s1 = LD(p, c + 1);
    if (c + 2 < cols) v.s2 = LD(p, c + 2);
    return v;
}

/* A's tile rows m0.., columns k0.. into As[k][m] (item t of 256) */
#define GEMM_LOAD_A_n                                                                       \
    {                                                                                       \
        int m = t >> 2, k4 = (t & 3) << 2;                                                  \
        float4 v = run4(A, lda, m0 + m, k0 + k4, M, K);                                     \
        As[k4][m] = v.s0, As[k4 + 1][m] = v.s1, As[k4 + 2][m] = v.s2, As[k4 + 3][m] = v.s3; \
    }
#define GEMM_LOAD_A_t                                                \
    {                                                                \
        int k = t >> 4, m4 = (t & 15) << 2;                          \
        vstore4(run4(A, lda, k0 + k, m0 + m4, K, M), 0, &As[k][m4]); \
    }
/* B's tile rows k0.., columns n0.. into Bs[k][n] */
#define GEMM_LOAD_B_n                                                \
    {                                                                \
        int k = t >> 4, n4 = (t & 15) << 2;                          \
        vstore4(run4(B, ldb, k0 + k, n0 + n4, K, N), 0, &Bs[k][n4]); \
    }
#define GEMM_LOAD_B_t                                                                       \
    {                                                                                       \
        int n = t >> 2, k4 = (t & 3) << 2;                                                  \
        float4 v = run4(B, ldb, n0 + n, k0 + k4, N, K);                                     \
        Bs[k4][n] = v.s0, Bs[k4 + 1][n] = v.s1, Bs[k4 + 2][n] = v.s2, Bs[k4 + 3][n] = v.s3; \
    }

/* A convolution's input read as its columns, never stored (implicit GEMM):
 * element (row kk, column q) of the column matrix is, with (c, kh, kw) =
 * (kk / (KH KW), kk / KW % KH, kk % KW), image q / P's output position
 * p = q % P = (i, j) = (p / OW, p % OW), the input value
 * x[image, c, i sh - ph + kh dh, j sw - pw + kw dw] at X + image * xs, 0 in
 * the padding: what conv_im2col writes, so the sums (and bits) are the same.
 * cg (__constant long): H, W, KH, KW, OW, sh, sw, ph, pw, dh, dw, P, xs, ys. */
inline float conv_col(__global const T *X, __constant long *cg, long kk, long q) {
    long H = cg[0], W = cg[1], KH = cg[2], KW = cg[3], OW = cg[4], P = cg[11];
    long c = kk / (KH * KW), kh = kk / KW % KH, kw = kk % KW, img = q / P, p = q - img * P;
    long i = p / OW, j = p - i * OW;
    long ih = i * cg[5] - cg[7] + kh * cg[9], iw = j * cg[6] - cg[8] + kw * cg[10];
    return ih >= 0 && ih < H && iw >= 0 && iw < W ? LD(X, img * cg[12] + (c * H + ih) * W + iw) : 0.0f;
}

/* gemm_nn_conv (the forward): B (K, N) = the columns of x, rows k0.., columns n0.. */
#define GEMM_LOAD_B_cv                                                                      \
    {                                                                                       \
        int k = t >> 4, n4 = (t & 15) << 2;                                                 \
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};                                              \
        for (int e = 0; e < 4; e++)                                                         \
            if (k0 + k < K && n0 + n4 + e < N) v[e] = conv_col(B, cg, k0 + k, n0 + n4 + e); \
        vstore4(vload4(0, v), 0, &Bs[k][n4]);                                               \
    }
/* gemm_nt_cf_conv (the weight gradient): A (M, K) = dy (images, O, P) as
 * rows o and columns q (image q / P, position q % P, image stride ys);
 * B^T with B (N, K) = the columns of x (rows kk, columns q) */
#define GEMM_LOAD_A_dy                                                                   \
    {                                                                                    \
        int m = t >> 2, k4 = (t & 3) << 2;                                               \
        long P = cg[11];                                                                 \
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};                                           \
        for (int e = 0; e < 4; e++) {                                                    \
            long q = k0 + k4 + e, img = q / P;                                           \
            if (m0 + m < M && q < K) v[e] = LD(A, img * cg[13] + (m0 + m) * P + q - img * P); \
        }                                                                                \
        As[k4][m] = v[0], As[k4 + 1][m] = v[1], As[k4 + 2][m] = v[2], As[k4 + 3][m] = v[3]; \
    }
#define GEMM_LOAD_B_tx                                                                      \
    {                                                                                       \
        int n = t >> 2, k4 = (t & 3) << 2;                                                  \
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};                                              \
        for (int e = 0; e < 4; e++)                                                         \
            if (n0 + n < N && k0 + k4 + e < K) v[e] = conv_col(B, cg, n0 + n, k0 + k4 + e); \
        Bs[k4][n] = v[0], Bs[k4 + 1][n] = v[1], Bs[k4 + 2][n] = v[2], Bs[k4 + 3][n] = v[3]; \
    }

/* NAME: kernel name; TA, TB: n or t; TC: C's element type; STC: its store;
 * XARG: further arguments after has_bias, with their leading comma */
#define GEMM_KERNEL(NAME, TA, TB, TC, STC) GEMM_KERNEL_X(NAME, TA, TB, TC, STC, )
#define GEMM_KERNEL_X(NAME, TA, TB, TC, STC, XARG)                                                           \
    __kernel __attribute__((reqd_work_group_size(GEMM_WG, GEMM_WG, 1))) void NAME(                           \
        __global const T *A, ulong ao, __global const T *B, ulong bo, __global TC *C, ulong co,              \
        __global const T *bias, ulong biaso, __constant long *g, long M, long N, long K, long lda, long ldb, \
        long ldc, int has_bias XARG) {                                                                       \
        __local float As[GEMM_TK][GEMM_TM];                                                                  \
        __local float Bs[GEMM_TK][GEMM_TN];                                                                  \
        int lx = get_local_id(0), ly = get_local_id(1), t = ly * GEMM_WG + lx;                               \
        long mt = (M + GEMM_TM - 1) / GEMM_TM;                                                               \
        long bt = get_group_id(1) / mt;                                                                      \
        long m0 = (get_group_id(1) % mt) * GEMM_TM, n0 = (long)get_group_id(0) * GEMM_TN;                    \
        long i2 = bt % g[2], i1 = bt / g[2] % g[1], i0 = bt / (g[2] * g[1]);                                 \
        A += ao + i0 * g[3] + i1 * g[4] + i2 * g[5];                                                         \
        B += bo + i0 * g[6] + i1 * g[7] + i2 * g[8];                                                         \
        C += co + i0 * g[9] + i1 * g[10] + i2 * g[11];                                                       \
        float4 acc[4], tot[4];                                                                               \
        int folded = 0;                                                                                      \
        for (int i = 0; i < 4; i++) acc[i] = (float4)(0.0f);                                                 \
        for (long k0 = 0; k0 < K; k0 += GEMM_TK) {                                                           \
            GEMM_FOLD                                                                                        \
            GEMM_LOAD_A_##TA GEMM_LOAD_B_##TB barrier(CLK_LOCAL_MEM_FENCE);                                  \
            for (int k = 0; k < GEMM_TK; k++) {                                                              \
                float4 b = vload4(0, &Bs[k][lx * 4]);                                                        \
                for (int i = 0; i < 4; i++) acc[i] = GEMM_MAC((float4)(As[k][ly + GEMM_WG * i]), b, acc[i]); \
            }                                                                                                \
            barrier(CLK_LOCAL_MEM_FENCE);                                                                    \
        }                                                                                                    \
        GEMM_TOTAL                                                                                           \
        (void)folded;                                                                                        \
        if (has_bias) bias += biaso + i0 * g[12] + i1 * g[13] + i2 * g[14];                                  \
        for (int i = 0; i < 4; i++) {                                                                        \
            long m = m0 + ly + GEMM_WG * i;                                                                  \
            if (m >= M) break;                                                                               \
            for (int j = 0; j < 4; j++) {                                                                    \
                long n = n0 + lx * 4 + j;                                                                    \
                if (n >= N) break;                                                                           \
                float v = ((float *)&tot[i])[j];                                                             \
                if (has_bias) v += LD(bias, m * g[15] + n * g[16]);                                          \
                STC(C, m * ldc + (g[17] ? n / g[17] * g[18] + n % g[17] : n), v);                        \
            }                                                                                                \
        }                                                                                                    \
    }

GEMM_KERNEL(gemm_nn, n, n, T, ST)
GEMM_KERNEL(gemm_nt, n, t, T, ST)
GEMM_KERNEL(gemm_tn, t, n, T, ST)
GEMM_KERNEL(gemm_tt, t, t, T, ST)
GEMM_KERNEL(gemm_tn_cf, t, n, float, ST_F32)
GEMM_KERNEL(gemm_nt_cf, n, t, float, ST_F32)
#define GEMM_CONV_ARG , __constant long *cg
GEMM_KERNEL_X(gemm_nn_conv, n, cv, T, ST, GEMM_CONV_ARG)
GEMM_KERNEL_X(gemm_nt_cf_conv, dy, tx, float, ST_F32, GEMM_CONV_ARG)
