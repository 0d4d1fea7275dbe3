/* backends/opencl/kernels/gemm_reg.cl — the register-tile GEMM variants,
 * for devices that run a work-item as one SIMD thread (CPU drivers such as
 * PoCL): the same products, arguments and batch table as kernels/gemm.cl
 * (which documents them), without barriers.
 *
 * A work-group is one item; it computes tiles of C in explicit vectors of
 * VW floats (reg16: float16 for AVX-512, reg8: float8 for AVX2), reading the
 * operands from global memory and relying on the CPU caches. Two forms, by
 * where the operands are contiguous:
 *
 * - outer (nn, tn, tt): one operand V is contiguous along the columns j of
 *   the output tile, the other S gives one scalar per row i and k. Per k:
 *   RN vector loads of V (row k, columns j0..) and RM scalars of S,
 *   broadcast into RM x RN vector multiply-adds into the
 *   accumulators. nn and tn: V = B, S = A (rows of A for nn, columns for
 *   tn), tile rows are C's rows. tt computes C^T = B A: V = A (stored (K, M),
 *   contiguous along m), S = B, tile rows are C's columns (stores strided).
 * - dot (nt: A (M, K), B (N, K), both contiguous along k): a DI x DJ tile
 *   of dot products, each a vector accumulator over runs of VW k's, summed
 *   across its lanes at the end; the K % VW tail in scalars.
 *
 * Edges: rows past the matrix repeat the last row (results discarded at the
 * store), so the loops have no conditions; columns past J load as zeros.
 * A work-group computes NT tiles down the rows, which share the
 * column operand: the outer form packs V's column panel into local memory
 * first (when K <= GEMM_KPACK), the dot form keeps B's rows in the cache.
 * Stores: where C's row is contiguous (nn, tn) a vector of VW outputs inside
 * the matrix (and inside one column segment, g[17]) is stored at once
 * (vstore, vstore_half_rte; bf16 element by element), the bias added as a
 * vector; the rest element by element. Scalar stores had cost as much as
 * the products when K is short (PoCL, 64 x (288 x 64 @ 64 x 196), tn:
 * 5.6 -> 3.2 ms). Work-group grid: dimension 0 = row blocks (NT tiles),
 * dimension 1 = batch x column tiles. Accumulation is float, with fma(). These kernels are not part of reproducible mode (the host always
 * runs gemm.cl's canonical kernels there), so the programs built with
 * -DLOOM_REPRO leave them out. Tile sizes are build-time constants: each
 * instantiation below is one variant (ops/gemm_select.c names them). */
#ifndef LOOM_REPRO


/* C's vector stores: STV (common.cl) or, for a float C, vstore */
#define GEMM_STV_F32(n, x, p) vstore##n((x), 0, (p))
#define GEMM_STV STV

/* The batch offsets of work-group column index q (dimension 1 = batch x jtiles
 * column tiles): moves A, B, C (and bias when has_bias) to batch bt. */
#define GEMM_REG_BATCH(jtiles)                                                    \
    long jt = (long)get_group_id(1) % (jtiles), bt = (long)get_group_id(1) / (jtiles); \
    long b2 = bt % g[2], b1 = bt / g[2] % g[1], b0 = bt / (g[2] * g[1]);         \
    A += ao + b0 * g[3] + b1 * g[4] + b2 * g[5];                                  \
    B += bo + b0 * g[6] + b1 * g[7] + b2 * g[8];                                  \
    C += co + b0 * g[9] + b1 * g[10] + b2 * g[11];                                \
    if (has_bias) bias += biaso + b0 * g[12] + b1 * g[13] + b2 * g[14];

#define GEMM_REG_ARGS(TC)                                                                              \
    __global const T *A, ulong ao, __global const T *B, ulong bo, __global TC *C, ulong co,            \
        __global const T *bias, ulong biaso, __constant long *g, long M, long N, long K, long lda, long ldb, \
        long ldc, int has_bias

/* The outer form's K loop: LOADV(p, have) loads one vector of V */
#define GEMM_OUTER_LOOP(VW, RM, RN, LOADV)                                                  \
    for (long k = 0; k < K; k++, vp += ldv, sp += sk) {                                     \
        float##VW b[RN];                                                                    \
        _Pragma("unroll") for (int c = 0; c < RN; c++) b[c] = LOADV(vp + VW * c, J - j0 - VW * c); \
        _Pragma("unroll") for (int r = 0; r < RM; r++) {                                    \
            float##VW a = (float##VW)(LD(sp, soff[r]));                                     \
            _Pragma("unroll") for (int c = 0; c < RN; c++) acc[r][c] = fma(a, b[c], acc[r][c]); \
        }                                                                                   \
    }
#define GEMM_LDV_FULL(VW) GEMM_LDV_FULL_##VW
#define GEMM_LDV_FULL_8(p, have) LDV(8, p)
#define GEMM_LDV_FULL_16(p, have) LDV(16, p)

/* Per form: the tile's rows i over I, columns j over J; V (vector operand,
 * leading dimension ldv), S (scalars: element (i, k) at i * si + k * sk);
 * C's element (i, j) at i * ci + j * cj, the bias's at i * bi + j * bj. */
#define GEMM_OUTER_nn                                                      \
    long I = M, J = N, ldv = ldb, si = lda, sk = 1, ci = ldc, cj = 1;      \
    long bi = g[15], bj = g[16];                                           \
    __global const T *V = B, *S = A;
#define GEMM_OUTER_tn                                                      \
    long I = M, J = N, ldv = ldb, si = 1, sk = lda, ci = ldc, cj = 1;      \
    long bi = g[15], bj = g[16];                                           \
    __global const T *V = B, *S = A;
#define GEMM_OUTER_tt                                                      \
    long I = N, J = M, ldv = lda, si = ldb, sk = 1, ci = 1, cj = ldc;      \
    long bi = g[16], bj = g[15];                                           \
    __global const T *V = A, *S = B;

/* The outer form's tile at rows i0.. (RM of them): accumulate over K into
 * acc, V from the packed panel Vp when packed, else from global memory */
#define GEMM_OUTER_TILE(VW, RM, RN)                                                              \
    long soff[RM];                                                                               \
    for (int r = 0; r < RM; r++) soff[r] = min(i0 + r, I - 1) * si;                             \
    float##VW acc[RM][RN];                                                                       \
    for (int r = 0; r < RM; r++)                                                                 \
        for (int c = 0; c < RN; c++) acc[r][c] = (float##VW)(0.0f);                              \
    if (packed) {                                                                                \
        __global const T *sp = S;                                                                \
        for (long k = 0; k < K; k++, sp += sk) {                                                 \
            float##VW b[RN];                                                                     \
            _Pragma("unroll") for (int c = 0; c < RN; c++) b[c] = Vp[k * RN + c];                \
            _Pragma("unroll") for (int r = 0; r < RM; r++) {                                     \
                float##VW a = (float##VW)(LD(sp, soff[r]));                                      \
                _Pragma("unroll") for (int c = 0; c < RN; c++) acc[r][c] = fma(a, b[c], acc[r][c]); \
            }                                                                                    \
        }                                                                                        \
    } else {                                                                                     \
        __global const T *vp = V + j0, *sp = S;                                                  \
        if (j0 + VW * RN <= J) {                                                                 \
            GEMM_OUTER_LOOP(VW, RM, RN, GEMM_LDV_FULL(VW))                                       \
        } else {                                                                                 \
            GEMM_OUTER_LOOP(VW, RM, RN, ldv_edge##VW)                                       \
        }                                                                                        \
    }

/* NAME: kernel; FORM: nn, tn or tt; VW: vector width; RM x RN vectors: the
 * tile (RM rows, RN * VW columns); NT: tiles per work-group, down the rows;
 * TC, STC: C's type and store. When K <= GEMM_KPACK the group first copies
 * V's column panel (K x RN vectors, zero past J) into local memory as float:
 * contiguous, converted once, and free of the page and cache-set conflicts
 * of walking a large matrix down its rows, for the NT tiles that share it. */
#define GEMM_REG_OUTER(NAME, FORM, VW, RM, RN, NT, TC, STC, STV)                                      \
    __kernel __attribute__((reqd_work_group_size(1, 1, 1))) void NAME(GEMM_REG_ARGS(TC)) {          \
        __local float##VW Vp[GEMM_KPACK * RN];                                                   \
        long jtiles_ = ((FORM##_J_OF(M, N)) + VW * RN - 1) / (VW * RN);                          \
        GEMM_REG_BATCH(jtiles_)                                                                  \
        GEMM_OUTER_##FORM                                                                        \
        long j0 = jt * VW * RN;                                                                  \
        bool packed = K <= GEMM_KPACK;                                                           \
        if (packed)                                                                              \
            for (long k = 0; k < K; k++)                                                         \
                for (int c = 0; c < RN; c++) {                                                   \
                    __global const T *p = V + k * ldv + j0 + VW * c;                             \
                    long have = J - j0 - VW * c;                                                 \
                    Vp[k * RN + c] = have >= VW ? LDV(VW, p) : ldv_edge##VW(p, have);  \
                }                                                                                \
        /* C's rows contiguous and a bias per row or per column: whole vectors   \
         * stored at once, where vector c's VW columns are inside J and inside    \
         * one segment (cs: C's columns in segments of cs, segment s at s * css;  \
         * cb[c]: the offset of its first column) */                             \
        const bool vrow = cj == 1 && (!has_bias || bj == 0 || (bj == 1 && bi == 0));      \
        const long cs = g[17], css = g[18];                                                      \
        long cb[RN];                                                                             \
        bool cv[RN];                                                                             \
        for (int c = 0; c < RN; c++) {                                                           \
            long j = j0 + VW * c;                                                                \
            cb[c] = cs ? j / cs * css + j % cs : j;                                              \
            cv[c] = vrow && j + VW <= J && (!cs || j % cs + VW <= cs);                           \
        }                                                                                        \
        for (int t = 0; t < NT; t++) {                                                           \
            long i0 = ((long)get_group_id(0) * NT + t) * RM;                                     \
            if (i0 >= I) break;                                                                  \
            GEMM_OUTER_TILE(VW, RM, RN)                                                          \
            for (int r = 0; r < RM; r++) {                                                       \
                long i = i0 + r;                                                                 \
                if (i >= I) break;                                                               \
                for (int c = 0; c < RN; c++) {                                                   \
                    if (cv[c]) {                                                                 \
                        float##VW x = acc[r][c];                                                 \
                        if (has_bias) x += bj ? LDV(VW, bias + i * bi + j0 + VW * c)        \
                                              : (float##VW)(LD(bias, i * bi));                   \
                        STV(VW, x, C + i * ci + cb[c]);                                          \
                        continue;                                                                \
                    }                                                                            \
                    float v[VW];                                                                 \
                    vstore##VW(acc[r][c], 0, v);                                                 \
                    for (int q = 0; q < VW; q++) {                                               \
                        long j = j0 + VW * c + q;                                                \
                        if (j >= J) break;                                                       \
                        float x = v[q];                                                          \
                        if (has_bias) x += LD(bias, i * bi + j * bj);                            \
                        STC(C, i * ci + (cs ? j / cs * css + j % cs : j) * cj, x);               \
                    }                                                                            \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }
/* J (the tile's column extent) per form, for the grid decode */
#define nn_J_OF(M, N) (N)
#define tn_J_OF(M, N) (N)
#define tt_J_OF(M, N) (M)

/* NAME: kernel (nt); VW: vector width along k; DI x DJ: the tile; NT: tiles
 * per work-group, down the rows (B's DJ rows stay in the cache) */
#define GEMM_REG_DOT(NAME, VW, DI, DJ, NT, TC, STC)                                              \
    __kernel __attribute__((reqd_work_group_size(1, 1, 1))) void NAME(GEMM_REG_ARGS(TC)) {          \
        long jtiles_ = (N + DJ - 1) / DJ;                                                        \
        GEMM_REG_BATCH(jtiles_)                                                                  \
        for (int t = 0; t < NT; t++) {                                                           \
        long i0 = ((long)get_group_id(0) * NT + t) * DI, j0 = jt * DJ;                           \
        if (i0 >= M) break;                                                                      \
        __global const T *ap[DI], *bp[DJ];                                                       \
        for (int r = 0; r < DI; r++) ap[r] = A + min(i0 + r, M - 1) * lda;                       \
        for (int c = 0; c < DJ; c++) bp[c] = B + min(j0 + c, N - 1) * ldb;                       \
        float##VW acc[DI][DJ];                                                                   \
        for (int r = 0; r < DI; r++)                                                             \
            for (int c = 0; c < DJ; c++) acc[r][c] = (float##VW)(0.0f);                          \
        long kv = K - K % VW;                                                                    \
        for (long k = 0; k < kv; k += VW) {                                                      \
            float##VW b[DJ];                                                                     \
            _Pragma("unroll") for (int c = 0; c < DJ; c++) b[c] = LDV(VW, bp[c] + k);       \
            _Pragma("unroll") for (int r = 0; r < DI; r++) {                                     \
                float##VW a = LDV(VW, ap[r] + k);                                           \
                _Pragma("unroll") for (int c = 0; c < DJ; c++) acc[r][c] = fma(a, b[c], acc[r][c]); \
            }                                                                                    \
        }                                                                                        \
        for (int r = 0; r < DI; r++) {                                                           \
            long i = i0 + r;                                                                     \
            if (i >= M) break;                                                                   \
            for (int c = 0; c < DJ; c++) {                                                       \
                long j = j0 + c;                                                                 \
                if (j >= N) break;                                                               \
                float x = hsum##VW(acc[r][c]);                                              \
                for (long k = kv; k < K; k++) x = fma(LD(ap[r], k), LD(bp[c], k), x);            \
                if (has_bias) x += LD(bias, i * g[15] + j * g[16]);                              \
                STC(C, i * ldc + j, x);                                                          \
            }                                                                                    \
        }                                                                                        \
        }                                                                                        \
    }

/* one variant: the six kernels of gemm.cl under the suffix SFX */
#define GEMM_REG_VARIANT(SFX, VW, RM, RN, DI, DJ, NT)                   \
    GEMM_REG_OUTER(gemm_nn_##SFX, nn, VW, RM, RN, NT, T, ST, GEMM_STV)       \
    GEMM_REG_OUTER(gemm_tn_##SFX, tn, VW, RM, RN, NT, T, ST, GEMM_STV)       \
    GEMM_REG_OUTER(gemm_tt_##SFX, tt, VW, RM, RN, NT, T, ST, GEMM_STV)       \
    GEMM_REG_DOT(gemm_nt_##SFX, VW, DI, DJ, NT, T, ST)                  \
    GEMM_REG_OUTER(gemm_tn_cf_##SFX, tn, VW, RM, RN, NT, float, ST_F32, GEMM_STV_F32) \
    GEMM_REG_DOT(gemm_nt_cf_##SFX, VW, DI, DJ, NT, float, ST_F32)

/* The tile sizes come as build options from the host, which launches with
 * the same numbers (ops/gemm_select.c): GEMM_R16_* for reg16 (float16),
 * GEMM_R8_* for reg8 (float8); RM, RN: the outer tile, DI, DJ: the dot tile,
 * NT: tiles per work-group; GEMM_KPACK: the largest K packed into local
 * memory (sized by the host from the device's local memory). */
#if !defined(GEMM_R16_RM) || !defined(GEMM_R16_RN) || !defined(GEMM_R16_DI) || !defined(GEMM_R16_DJ) || \
    !defined(GEMM_R16_NT) || !defined(GEMM_R8_RM) || !defined(GEMM_R8_RN) || !defined(GEMM_R8_DI) ||     \
    !defined(GEMM_R8_DJ) || !defined(GEMM_R8_NT) || !defined(GEMM_KPACK)
#error "build with the GEMM tile sizes (-DGEMM_R16_RM=... from ops/gemm_select.c)"
#endif
GEMM_REG_VARIANT(r16, 16, GEMM_R16_RM, GEMM_R16_RN, GEMM_R16_DI, GEMM_R16_DJ, GEMM_R16_NT)
GEMM_REG_VARIANT(r8, 8, GEMM_R8_RM, GEMM_R8_RN, GEMM_R8_DI, GEMM_R8_DJ, GEMM_R8_NT)

#endif /* LOOM_REPRO */
