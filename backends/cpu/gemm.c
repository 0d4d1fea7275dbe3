/* backends/cpu/gemm.c — GEMM for the CPU backend: f32 fast path (OpenBLAS
 * sgemm, or loom's AVX-512 kernel (gemm512.c) for the shapes it does better,
 * or a threaded blocked loop when built without OpenBLAS) and the f64
 * reference loops. Row-major throughout. */
#include "cpu_impl.h"

#ifdef LOOM_HAVE_OPENBLAS
#include <cblas.h>
#endif

#define AT(M, ld, r, c, tr) ((tr) ? (M)[(int64_t)(c) * (ld) + (r)] : (M)[(int64_t)(r) * (ld) + (c)])

void loom__cpu_dgemm_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double *A,
                         int64_t lda, const double *B, int64_t ldb, double beta, double *C, int64_t ldc) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0;
            for (int64_t k = 0; k < K; k++) acc += AT(A, lda, i, k, ta) * AT(B, ldb, k, j, tb);
            C[i * ldc + j] = alpha * acc + (beta == 0 ? 0 : beta * C[i * ldc + j]);
        }
}

#ifndef LOOM_HAVE_OPENBLAS
typedef struct sg {
    bool ta, tb;
    int64_t N, K;
    float alpha, beta;
    const float *A, *B;
    int64_t lda, ldb, ldc;
    float *C;
} sg;

/* rows [b, e) of C; the k loop is outermost per row so B is read in rows */
static void sgemm_rows(void *v, int64_t b, int64_t e) {
    const sg *s = v;
    for (int64_t i = b; i < e; i++) {
        float *c = s->C + i * s->ldc;
        for (int64_t j = 0; j < s->N; j++) c[j] = s->beta == 0 ? 0 : s->beta * c[j];
        for (int64_t k = 0; k < s->K; k++) {
            float a = s->alpha * AT(s->A, s->lda, i, k, s->ta);
            if (!s->tb) {
                const float *bk = s->B + k * s->ldb;
                for (int64_t j = 0; j < s->N; j++) c[j] += a * bk[j];
            } else {
                for (int64_t j = 0; j < s->N; j++) c[j] += a * s->B[j * s->ldb + k];
            }
        }
    }
}
#endif

#ifdef LOOM_HAVE_OPENBLAS
/* One thread pool for everything: OpenBLAS runs single-threaded (set when the
 * backend starts) and large products are split into column or row panels
 * across loom's pool, so OpenBLAS's spinning workers never compete with
 * loom's for the cores.
 *
 * An element's bits depend on the panel it falls in: OpenBLAS (0.3.21,
 * Haswell kernels, measured) computes edge tiles differently, so the same
 * product split into 2 panels instead of 1 differs in the last bit of a few
 * percent of the elements (2-9% for the cnn's shapes), even for K = 9. Panels are one per thread by default; in
 * deterministic mode they are fixed by the size alone (LOOM__CPU_DET_PARTS
 * panels, whatever the thread count, also with one thread). */
typedef struct panel {
    bool ta, tb, by_cols;
    int64_t M, N, K, lda, ldb, ldc, step;
    float alpha, beta;
    const float *A, *B;
    float *C;
    const loom__cpu_gemm_ep *ep; /* loom__cpu_sgemm_ep (else NULL) */
} panel;

/* one single-threaded product: loom's AVX-512 kernel where it takes the sizes, else OpenBLAS */
static void one_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                      const float *B, int64_t ldb, float beta, float *C, int64_t ldc, const loom__cpu_gemm_ep *ep) {
    if (loom__cpu_sgemm512_fits(ta, M, N, K) &&
        loom__cpu_sgemm512_ep(tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ep))
        return;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N,
                (blasint)K, alpha, A, (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);
    if (ep) loom__cpu_gemm_ep_run(ep, M, N, C, ldc);
}

static void panel_run(void *v, int64_t p0, int64_t p1) {
    const panel *q = v;
    for (int64_t p = p0; p < p1; p++) {
        int64_t b = p * q->step, len = q->by_cols ? q->N : q->M;
        int64_t e = b + q->step < len ? b + q->step : len;
        if (b >= e) continue;
        const float *A = q->A, *B = q->B;
        float *C = q->C;
        int64_t m = q->M, n = q->N;
        loom__cpu_gemm_ep ep;
        if (q->by_cols) { /* C[:, b:e] = op(A) op(B)[:, b:e] */
            B += q->tb ? b * q->ldb : b;
            C += b;
            n = e - b;
            if (q->ep) ep = loom__cpu_gemm_ep_at(q->ep, 0, b);
        } else { /* C[b:e, :] = op(A)[b:e, :] op(B) */
            A += q->ta ? b : b * q->lda;
            C += b * q->ldc;
            m = e - b;
            if (q->ep) ep = loom__cpu_gemm_ep_at(q->ep, b, 0);
        }
        one_sgemm(q->ta, q->tb, m, n, q->K, q->alpha, A, q->lda, B, q->ldb, q->beta, C, q->ldc, q->ep ? &ep : NULL);
    }
}
#endif

/* loom__cpu_sgemm, and with ep its epilogue after it (loom__cpu_sgemm_ep) */
static void sgemm_any(loom__cpu *cpu, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                      int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc,
                      const loom__cpu_gemm_ep *ep) {
    if (M <= 0 || N <= 0) return;
#ifdef LOOM_HAVE_OPENBLAS
    if (K <= 0) {
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) C[i * ldc + j] = beta == 0 ? 0 : beta * C[i * ldc + j];
        if (ep) loom__cpu_gemm_ep_run(ep, M, N, C, ldc);
        return;
    }
    int parts = !cpu ? 1 : cpu->deterministic ? LOOM__CPU_DET_PARTS : loom__cpu_threads(cpu);
    if (parts > 1 && (double)M * (double)N * (double)K >= 262144.0) {
        /* panels of whole 16-column (or 16-row) blocks, one per thread (or per fixed part) */
        bool by_cols = N >= M;
        int64_t len = by_cols ? N : M, step = (len + parts - 1) / parts;
        step = (step + 15) / 16 * 16;
        panel q = {ta, tb, by_cols, M, N, K, lda, ldb, ldc, step, alpha, beta, A, B, C, ep};
        loom__cpu_parallel(cpu, (len + step - 1) / step, 1, panel_run, &q);
        return;
    }
    one_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ep);
#else
    sg s = {ta, tb, N, K, alpha, beta, A, B, lda, ldb, ldc, C};
    loom__cpu_parallel(cpu, M, 4, sgemm_rows, &s);
    if (ep) loom__cpu_gemm_ep_run(ep, M, N, C, ldc);
#endif
}

void loom__cpu_sgemm(loom__cpu *cpu, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                     int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    sgemm_any(cpu, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

void loom__cpu_sgemm_ep(loom__cpu *cpu, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                        const float *B, int64_t ldb, float *C, int64_t ldc, const loom__cpu_gemm_ep *ep) {
    sgemm_any(cpu, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc, ep);
}

/* ---- reproducible mode: the canonical f32 GEMM (core/repro.h) ----
 * C[i,j] = (acc ? C[i,j] + s : s), s = cdot over k of op(A)[i,k] op(B)[k,j]:
 * chains s = s + a*b (two roundings, never fused) of LOOM__REPRO_CHUNK k's
 * from 0, the chunk sums added in order. Every element's chain is computed whole by one thread, so the bits
 * depend on nothing but the inputs. op(B) is packed into 16-column panels
 * (k-major); a tile is 4 rows x 16 columns: per k, 4 broadcasts x 2 vectors
 * of 8 multiplies and 8 adds (AVX2 where the CPU has it; elsewhere the same
 * scalar steps, slower, same bits). */
#include "../../core/repro.h"

#define RP_MR 4
#define RP_NR 16

typedef struct rgemm {
    bool ta, acc;
    int64_t M, N, K, lda, ldc, nbj;
    const float *A;
    const float *Bp; /* nbj panels of K x RP_NR */
    float *C;
} rgemm;

static inline __attribute__((always_inline)) void rp_tile(const rgemm *g, int64_t i0, int64_t jb) {
    float acc[RP_MR][RP_NR], tot[RP_MR][RP_NR];
    const float *Bp = g->Bp + jb * g->K * RP_NR;
    int64_t mr = g->M - i0 < RP_MR ? g->M - i0 : RP_MR;
    for (int64_t kc = 0; kc < g->K || kc == 0; kc += LOOM__REPRO_CHUNK) {
        int64_t ke = kc + LOOM__REPRO_CHUNK < g->K ? kc + LOOM__REPRO_CHUNK : g->K;
        for (int r = 0; r < RP_MR; r++)
            for (int j = 0; j < RP_NR; j++) acc[r][j] = 0.0f;
        for (int64_t k = kc; k < ke; k++) {
            float a[RP_MR];
            for (int r = 0; r < RP_MR; r++) {
                int64_t i = i0 + (r < mr ? r : 0);
                a[r] = g->ta ? g->A[k * g->lda + i] : g->A[i * g->lda + k];
            }
            const float *b = Bp + k * RP_NR;
            for (int r = 0; r < RP_MR; r++)
                for (int j = 0; j < RP_NR; j++) acc[r][j] = acc[r][j] + a[r] * b[j];
        }
        for (int r = 0; r < RP_MR; r++)
            for (int j = 0; j < RP_NR; j++) tot[r][j] = kc == 0 ? acc[r][j] : tot[r][j] + acc[r][j];
    }
    int64_t j0 = jb * RP_NR, nr = g->N - j0 < RP_NR ? g->N - j0 : RP_NR;
    for (int64_t r = 0; r < mr; r++) {
        float *c = g->C + (i0 + r) * g->ldc + j0;
        for (int64_t j = 0; j < nr; j++) c[j] = g->acc ? c[j] + tot[r][j] : tot[r][j];
    }
}

static void rp_tiles_generic(void *v, int64_t t0, int64_t t1) {
    const rgemm *g = v;
    for (int64_t t = t0; t < t1; t++) rp_tile(g, (t / g->nbj) * RP_MR, t % g->nbj);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define RP_HAVE_AVX2_PATH 1
/* rp_tile with AVX2 intrinsics: the same chains, 8 columns per instruction */
__attribute__((target("avx2"))) static void rp_tile_avx2(const rgemm *g, int64_t i0, int64_t jb) {
    const float *Bp = g->Bp + jb * g->K * RP_NR;
    int64_t mr = g->M - i0 < RP_MR ? g->M - i0 : RP_MR, as = g->ta ? g->lda : 1;
    const float *ap[RP_MR];
    for (int r = 0; r < RP_MR; r++) {
        int64_t i = i0 + (r < mr ? r : 0);
        ap[r] = g->ta ? g->A + i : g->A + i * g->lda;
    }
    __m256 t0[RP_MR], t1[RP_MR];
    for (int64_t kc = 0; kc < g->K || kc == 0; kc += LOOM__REPRO_CHUNK) {
        int64_t ke = kc + LOOM__REPRO_CHUNK < g->K ? kc + LOOM__REPRO_CHUNK : g->K;
        __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
        for (int64_t k = kc; k < ke; k++) {
            __m256 b0 = _mm256_load_ps(Bp + k * RP_NR), b1 = _mm256_load_ps(Bp + k * RP_NR + 8);
            __m256 a0 = _mm256_broadcast_ss(ap[0] + k * as), a1 = _mm256_broadcast_ss(ap[1] + k * as);
            __m256 a2 = _mm256_broadcast_ss(ap[2] + k * as), a3 = _mm256_broadcast_ss(ap[3] + k * as);
            c00 = _mm256_add_ps(c00, _mm256_mul_ps(a0, b0)), c01 = _mm256_add_ps(c01, _mm256_mul_ps(a0, b1));
            c10 = _mm256_add_ps(c10, _mm256_mul_ps(a1, b0)), c11 = _mm256_add_ps(c11, _mm256_mul_ps(a1, b1));
            c20 = _mm256_add_ps(c20, _mm256_mul_ps(a2, b0)), c21 = _mm256_add_ps(c21, _mm256_mul_ps(a2, b1));
            c30 = _mm256_add_ps(c30, _mm256_mul_ps(a3, b0)), c31 = _mm256_add_ps(c31, _mm256_mul_ps(a3, b1));
        }
        __m256 c0[RP_MR] = {c00, c10, c20, c30}, c1[RP_MR] = {c01, c11, c21, c31};
        for (int r = 0; r < RP_MR; r++) {
            t0[r] = kc == 0 ? c0[r] : _mm256_add_ps(t0[r], c0[r]);
            t1[r] = kc == 0 ? c1[r] : _mm256_add_ps(t1[r], c1[r]);
        }
    }
    int64_t j0 = jb * RP_NR, nr = g->N - j0 < RP_NR ? g->N - j0 : RP_NR;
    for (int64_t r = 0; r < mr; r++) {
        float tot[RP_NR], *c = g->C + (i0 + r) * g->ldc + j0;
        _mm256_storeu_ps(tot, t0[r]);
        _mm256_storeu_ps(tot + 8, t1[r]);
        for (int64_t j = 0; j < nr; j++) c[j] = g->acc ? c[j] + tot[j] : tot[j];
    }
}
__attribute__((target("avx2"))) static void rp_tiles_avx2(void *v, int64_t t0, int64_t t1) {
    const rgemm *g = v;
    for (int64_t t = t0; t < t1; t++) rp_tile_avx2(g, (t / g->nbj) * RP_MR, t % g->nbj);
}
#endif

typedef struct rpack {
    bool tb;
    int64_t N, K, ldb;
    const float *B;
    float *Bp;
} rpack;

/* panel jb: Bp[jb][k][j] = op(B)[k, jb*16 + j], zero past N */
static void rp_pack(void *v, int64_t p0, int64_t p1) {
    const rpack *q = v;
    for (int64_t jb = p0; jb < p1; jb++) {
        float *dst = q->Bp + jb * q->K * RP_NR;
        for (int64_t k = 0; k < q->K; k++)
            for (int64_t j = 0; j < RP_NR; j++) {
                int64_t n = jb * RP_NR + j;
                dst[k * RP_NR + j] = n >= q->N ? 0.0f : q->tb ? q->B[n * q->ldb + k] : q->B[k * q->ldb + n];
            }
    }
}

loom_status loom__cpu_sgemm_repro(loom__cpu *cpu, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A,
                                  int64_t lda, const float *B, int64_t ldb, bool accumulate, float *C, int64_t ldc) {
    if (M <= 0 || N <= 0) return LOOM_OK;
    int64_t nbj = (N + RP_NR - 1) / RP_NR;
    float *Bp = NULL;
    size_t bytes = (size_t)(nbj * (K > 0 ? K : 1) * RP_NR) * sizeof(float);
    if (posix_memalign((void **)&Bp, 64, bytes) != 0) return LOOM_ERR_OOM;
    rpack pk = {tb, N, K, ldb, B, Bp};
    loom__cpu_parallel(cpu, nbj, 1, rp_pack, &pk);
    rgemm g = {ta, accumulate, M, N, K, lda, ldc, nbj, A, Bp, C};
    int64_t tiles = (M + RP_MR - 1) / RP_MR * nbj, grain = 1 + 8192 / (K + 1);
    loom__cpu_range_fn fn = rp_tiles_generic;
#ifdef RP_HAVE_AVX2_PATH
    if (__builtin_cpu_supports("avx2")) fn = rp_tiles_avx2;
#endif
    loom__cpu_parallel(cpu, tiles, grain, fn, &g);
    free(Bp);
    return LOOM_OK;
}
