/* backends/cpu/gemm.c — GEMM for the CPU backend: f32 fast path (OpenBLAS
 * sgemm, or a threaded blocked loop when built without it) and the f64
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
} panel;

static void panel_run(void *v, int64_t p0, int64_t p1) {
    const panel *q = v;
    for (int64_t p = p0; p < p1; p++) {
        int64_t b = p * q->step, len = q->by_cols ? q->N : q->M;
        int64_t e = b + q->step < len ? b + q->step : len;
        if (b >= e) continue;
        const float *A = q->A, *B = q->B;
        float *C = q->C;
        int64_t m = q->M, n = q->N;
        if (q->by_cols) { /* C[:, b:e] = op(A) op(B)[:, b:e] */
            B += q->tb ? b * q->ldb : b;
            C += b;
            n = e - b;
        } else { /* C[b:e, :] = op(A)[b:e, :] op(B) */
            A += q->ta ? b : b * q->lda;
            C += b * q->ldc;
            m = e - b;
        }
        cblas_sgemm(CblasRowMajor, q->ta ? CblasTrans : CblasNoTrans, q->tb ? CblasTrans : CblasNoTrans, (blasint)m,
                    (blasint)n, (blasint)q->K, q->alpha, A, (blasint)q->lda, B, (blasint)q->ldb, q->beta, C,
                    (blasint)q->ldc);
    }
}
#endif

void loom__cpu_sgemm(loom__cpu *cpu, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                     int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    if (M <= 0 || N <= 0) return;
#ifdef LOOM_HAVE_OPENBLAS
    if (K <= 0) {
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) C[i * ldc + j] = beta == 0 ? 0 : beta * C[i * ldc + j];
        return;
    }
    int parts = !cpu ? 1 : cpu->deterministic ? LOOM__CPU_DET_PARTS : loom__cpu_threads(cpu);
    if (parts > 1 && (double)M * (double)N * (double)K >= 262144.0) {
        /* panels of whole 16-column (or 16-row) blocks, one per thread (or per fixed part) */
        bool by_cols = N >= M;
        int64_t len = by_cols ? N : M, step = (len + parts - 1) / parts;
        step = (step + 15) / 16 * 16;
        panel q = {ta, tb, by_cols, M, N, K, lda, ldb, ldc, step, alpha, beta, A, B, C};
        loom__cpu_parallel(cpu, (len + step - 1) / step, 1, panel_run, &q);
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N,
                (blasint)K, alpha, A, (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);
#else
    sg s = {ta, tb, N, K, alpha, beta, A, B, lda, ldb, ldc, C};
    loom__cpu_parallel(cpu, M, 4, sgemm_rows, &s);
#endif
}
