/* backends/cpu/gemm512.c — loom's own f32 GEMM for CPUs with AVX-512, for
 * the shapes where it beats OpenBLAS (gemm.c picks it per call or panel):
 * op(A) not transposed, many rows (M >= 256), few columns (32 <= N <= 768).
 * Those are the GPT's linear layers (rows of a batch of tokens) and the
 * convolutions' weight gradients computed as columns^T (K*KH*KW rows, the
 * output channels as columns), where OpenBLAS's packing of A costs as much as
 * its kernel (bench/results/2026-12-06-cpu-attention-gemm512.md: 1.1-1.5x).
 *
 * C = alpha op(A) op(B) + beta C in blocks of KC = 256 k's: op(B)'s block is
 * packed into 32-column slivers (k-major, zero past N); A is read in place,
 * 112 rows at a time across the slivers
 * (14 row pointers, the last valid row repeated past M), so there is no A
 * packing at all; the kernel keeps a 14 x 32 tile of C in 28 registers and
 * per k broadcasts 14 values of A against two vectors of the sliver. The
 * first k block writes alpha acc (+ beta C unless beta is 0: C is then not
 * read, as in BLAS), the later ones add alpha acc to C. Every element is one
 * chain of fused multiply-adds per k block, blocks added in order: its bits
 * depend on K alone, not on M, N, the tile it falls in or the thread count.
 * With an epilogue (loom__cpu_sgemm512_ep: a matmul, the add of its bias
 * and a gelu or a residual add, fused, backends/cpu/fuse.h), the last k
 * block also writes Y = C + bias from the registers, the add's own sum,
 * without reading C back, and the gelu or residual sum of each block of
 * G_MC rows while they are in L2.
 * LOOM_CPU_GEMM512=0 in the environment turns it off (to compare). */
#include "../../core/prefetch.h"
#include "cpu_impl.h"
#include "vmath.h"

#define G_MR 14
#define G_NR 32
#define G_KC 256
#define G_MC (8 * G_MR)

bool loom__cpu_sgemm512_fits(bool ta, int64_t M, int64_t N, int64_t K) {
    if (ta || M < 256 || N < 32 || N > 768 || K < 32) return false;
    return LOOM__X86 && LOOM__HAS("avx512f") && loom__env_switch("LOOM_CPU_GEMM512") != 0;
}

#if LOOM__X86
#include <immintrin.h>

/* op(B)[k0 .. k0 + kc, 0 .. N) into slivers of G_NR columns, k-major */
static void pack_b(bool tb, const float *B, int64_t ldb, int64_t k0, int64_t kc, int64_t N, float *dst) {
    for (int64_t j0 = 0; j0 < N; j0 += G_NR, dst += kc * G_NR) {
        int64_t nr = N - j0 < G_NR ? N - j0 : G_NR;
        if (!tb) {
            for (int64_t k = 0; k < kc; k++) {
                const float *s = B + (k0 + k) * ldb + j0;
                float *d = dst + k * G_NR;
                int64_t j = 0;
                for (; j < nr; j++) d[j] = s[j];
                for (; j < G_NR; j++) d[j] = 0;
            }
        } else if (nr == G_NR) { /* op(B)[k, j] = B[j, k]: 32 rows read side by side */
            const float *s = B + j0 * ldb + k0;
            for (int64_t k = 0; k < kc; k++)
                for (int j = 0; j < G_NR; j++) dst[k * G_NR + j] = s[j * ldb + k];
        } else {
            for (int64_t k = 0; k < kc; k++)
                for (int64_t j = 0; j < G_NR; j++) dst[k * G_NR + j] = j < nr ? B[(j0 + j) * ldb + k0 + k] : 0;
        }
    }
}

/* the mr x nr corner of C (row stride ldc) from rows ar[] of A (k stride 1) and sliver b;
 * mode 0: C = alpha acc, 1: C = alpha acc + beta C, 2: C += alpha acc; with
 * ep (the last k block only, at this corner) and its bias, Y = C + bias as
 * well (C itself written too unless Y is C) */
__attribute__((target("avx512f"))) static void kernel(int64_t kc, const float *const *ar, const float *b, float *C,
                                                      int64_t ldc, int64_t mr, int64_t nr, float alpha, float beta,
                                                      int mode, const loom__cpu_gemm_ep *ep, const float *const *pf) {
    const float *bias = ep ? ep->bias : NULL;
    __m512 c[G_MR][2];
    const float *p[G_MR];
#pragma GCC unroll 14
    for (int r = 0; r < G_MR; r++) c[r][0] = _mm512_setzero_ps(), c[r][1] = _mm512_setzero_ps(), p[r] = ar[r];
    for (int64_t k = 0; k < kc; k++, b += G_NR) {
        /* pf: the next tile's rows, not yet read: one of their lines per k (16 per row, 14 rows) */
        if (pf && k < G_MR * 16) loom__prefetch(pf[k >> 4], (k & 15) * 64);
        __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 14
        for (int r = 0; r < G_MR; r++) {
            __m512 a = _mm512_set1_ps(p[r][k]);
            c[r][0] = _mm512_fmadd_ps(a, b0, c[r][0]);
            c[r][1] = _mm512_fmadd_ps(a, b1, c[r][1]);
        }
    }
    __mmask16 m0 = nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1);
    __mmask16 m1 = nr >= 32 ? 0xFFFF : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
    __m512 al = _mm512_set1_ps(alpha), be = _mm512_set1_ps(beta);
    __m512 bias0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : al, bias1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : al;
#pragma GCC unroll 14
    for (int r = 0; r < G_MR; r++) {
        if (r >= mr) break;
        float *cr = C + r * ldc;
        __m512 v0 = _mm512_mul_ps(al, c[r][0]), v1 = _mm512_mul_ps(al, c[r][1]);
        if (mode == 1) {
            v0 = _mm512_add_ps(v0, _mm512_mul_ps(be, _mm512_maskz_loadu_ps(m0, cr)));
            v1 = _mm512_add_ps(v1, _mm512_mul_ps(be, _mm512_maskz_loadu_ps(m1, cr + 16)));
        } else if (mode == 2) {
            v0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, cr), v0);
            v1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, cr + 16), v1);
        }
        if (bias) { /* Y = C + bias, the same sum as the add after the product */
            float *yr = ep->Y + r * ep->ldy;
            if (yr != cr) _mm512_mask_storeu_ps(cr, m0, v0), _mm512_mask_storeu_ps(cr + 16, m1, v1);
            _mm512_mask_storeu_ps(yr, m0, _mm512_add_ps(v0, bias0));
            _mm512_mask_storeu_ps(yr + 16, m1, _mm512_add_ps(v1, bias1));
            continue;
        }
        _mm512_mask_storeu_ps(cr, m0, v0);
        _mm512_mask_storeu_ps(cr + 16, m1, v1);
    }
}

bool loom__cpu_sgemm512(bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                        const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    return loom__cpu_sgemm512_ep(tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

bool loom__cpu_sgemm512_ep(bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                           const float *B, int64_t ldb, float beta, float *C, int64_t ldc, const loom__cpu_gemm_ep *ep) {
    int64_t np = (N + G_NR - 1) / G_NR * G_NR, kcmax = K < G_KC ? K : G_KC;
    float *bp = NULL;
    if (posix_memalign((void **)&bp, 64, (size_t)(kcmax * np) * sizeof(float)) != 0) return false;
    for (int64_t k0 = 0; k0 < K; k0 += G_KC) {
        int64_t kc = K - k0 < G_KC ? K - k0 : G_KC;
        int mode = k0 > 0 ? 2 : beta == 0 ? 0 : 1;
        const bool last = ep && k0 + G_KC >= K; /* the epilogue's k block */
        pack_b(tb, B, ldb, k0, kc, N, bp);
        for (int64_t i1 = 0; i1 < M; i1 += G_MC) { /* G_MC rows of A stay in L2 across the slivers */
            for (int64_t j0 = 0; j0 < N; j0 += G_NR)
                for (int64_t i0 = i1; i0 < M && i0 < i1 + G_MC; i0 += G_MR) {
                    int64_t mr = M - i0 < G_MR ? M - i0 : G_MR;
                    const float *ar[G_MR], *nx[G_MR];
                    for (int r = 0; r < G_MR; r++) ar[r] = A + (i0 + (r < mr ? r : mr - 1)) * lda + k0;
                    /* the first sliver reads these rows of A from memory: ask for the next tile's
                     * (the next G_MC block's first, after the last tile of this one) while it runs */
                    int64_t n0 = i0 + G_MR < i1 + G_MC ? i0 + G_MR : i1 + G_MC, nm = M - n0 < G_MR ? M - n0 : G_MR;
                    bool pf = j0 == 0 && nm > 0;
                    for (int r = 0; pf && r < G_MR; r++) nx[r] = A + (n0 + (r < nm ? r : nm - 1)) * lda + k0;
                    loom__cpu_gemm_ep at;
                    if (last) at = loom__cpu_gemm_ep_at(ep, i0, j0);
                    kernel(kc, ar, bp + j0 * kc, C + i0 * ldc + j0, ldc, mr, N - j0 < G_NR ? N - j0 : G_NR, alpha,
                           beta, mode, last ? &at : NULL, pf ? nx : NULL);
                }
            if (last) /* the gelu or residual add of these rows, in L2 */
                loom__cpu_gemm_ep_after(ep, i1, M < i1 + G_MC ? M : i1 + G_MC, N, C, ldc);
        }
    }
    free(bp);
    return true;
}
#else
bool loom__cpu_sgemm512(bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                        const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    return loom__cpu_sgemm512_ep(tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

bool loom__cpu_sgemm512_ep(bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                           const float *B, int64_t ldb, float beta, float *C, int64_t ldc, const loom__cpu_gemm_ep *ep) {
    (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta, (void)C,
        (void)ldc, (void)ep;
    return false;
}
#endif
