/* tests/test-gemm512.c — the CPU backend's AVX-512 f32 GEMM
 * (backends/cpu/gemm512.c) against a double reference: rows and columns
 * that are and are not multiples of its 14 x 32 tile, reductions shorter
 * and longer than its 256-deep k blocks, op(B) plain and transposed, alpha
 * and beta (beta 0 over a C full of NaN: C must not be read), leading
 * dimensions wider than the matrices (the padding between rows must stay
 * untouched). Each element within 4 ulp-scale units of the sum of |a b| it
 * reduces. Its bits depend on the reduction alone: the same rows computed
 * as part of a taller product, from another first row, and the same columns
 * from a narrower product, are identical. Also which sizes it takes. On a
 * CPU without AVX-512 the test skips. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backends/cpu/cpu.h"
#include "testutil.h"

static uint32_t rs = 777;
static float rnd(void) {
    rs = rs * 1664525u + 1013904223u;
    return (float)(rs >> 8) / 16777216.0f * 2.0f - 1.0f;
}

typedef struct prob {
    int64_t M, N, K, lda, ldb, ldc;
    bool tb;
    float alpha, beta;
} prob;

/* run p on fresh data; *ok false when an element or the padding is wrong */
static void check(const prob *p) {
    int64_t brows = p->tb ? p->N : p->K;
    float *A = malloc((size_t)(p->M * p->lda) * sizeof(float)), *B = malloc((size_t)(brows * p->ldb) * sizeof(float));
    float *C = malloc((size_t)(p->M * p->ldc) * sizeof(float)), *C0 = malloc((size_t)(p->M * p->ldc) * sizeof(float));
    if (!A || !B || !C || !C0) {
        CHECK(false, "out of memory");
        free(A), free(B), free(C), free(C0);
        return;
    }
    for (int64_t i = 0; i < p->M * p->lda; i++) A[i] = rnd();
    for (int64_t i = 0; i < brows * p->ldb; i++) B[i] = rnd();
    for (int64_t i = 0; i < p->M * p->ldc; i++) C0[i] = C[i] = p->beta == 0 ? NAN : rnd();
    CHECK(loom__cpu_sgemm512(p->tb, p->M, p->N, p->K, p->alpha, A, p->lda, B, p->ldb, p->beta, C, p->ldc),
          "M %lld N %lld K %lld: not computed", (long long)p->M, (long long)p->N, (long long)p->K);
    int bad = 0, pad = 0;
    double worst = 0;
    for (int64_t i = 0; i < p->M; i++) {
        for (int64_t j = 0; j < p->N; j++) {
            double s = 0, mag = 0;
            for (int64_t k = 0; k < p->K; k++) {
                double ab = (double)A[i * p->lda + k] * (p->tb ? B[j * p->ldb + k] : B[k * p->ldb + j]);
                s += ab, mag += fabs(ab);
            }
            double c0 = C0[i * p->ldc + j], ref = p->alpha * s + (p->beta == 0 ? 0 : p->beta * c0);
            double tol = 4 * 1.2e-7 * (fabs(p->alpha) * mag + (p->beta == 0 ? 0 : fabs(p->beta * c0))) + 1e-30;
            double err = fabs(C[i * p->ldc + j] - ref) / tol;
            if (!(err <= 1)) bad++;
            if (err > worst || err != err) worst = err;
        }
        for (int64_t j = p->N; j < p->ldc; j++) {
            float x = C[i * p->ldc + j], y = C0[i * p->ldc + j];
            pad += memcmp(&x, &y, sizeof x) != 0;
        }
    }
    CHECK(bad == 0 && pad == 0, "M %lld N %lld K %lld tb %d alpha %g beta %g: %d elements off (worst %.2f of the bound), %d padding values written",
          (long long)p->M, (long long)p->N, (long long)p->K, p->tb, p->alpha, p->beta, bad, worst, pad);
    free(A), free(B), free(C), free(C0);
}

/* rows [r0, M) of an (M, N) product equal the (M - r0, N) product of those rows, and columns
 * [0, n) the (M, n) product, bit for bit */
static void same_bits(bool tb, int64_t M, int64_t N, int64_t K, int64_t r0, int64_t n) {
    int64_t brows = tb ? N : K, ldb = tb ? K : N;
    float *A = malloc((size_t)(M * K) * sizeof(float)), *B = malloc((size_t)(brows * ldb) * sizeof(float));
    float *C = malloc((size_t)(M * N) * sizeof(float)), *R = malloc((size_t)(M * N) * sizeof(float));
    if (!A || !B || !C || !R) {
        CHECK(false, "out of memory");
        free(A), free(B), free(C), free(R);
        return;
    }
    for (int64_t i = 0; i < M * K; i++) A[i] = rnd();
    for (int64_t i = 0; i < brows * ldb; i++) B[i] = rnd();
    loom__cpu_sgemm512(tb, M, N, K, 1.0f, A, K, B, ldb, 0.0f, C, N);
    loom__cpu_sgemm512(tb, M - r0, N, K, 1.0f, A + r0 * K, K, B, ldb, 0.0f, R, N);
    CHECK(memcmp(C + r0 * N, R, (size_t)((M - r0) * N) * sizeof(float)) == 0,
          "tb %d: rows from %lld of (%lld, %lld, %lld) differ from the same rows alone", tb, (long long)r0,
          (long long)M, (long long)N, (long long)K);
    loom__cpu_sgemm512(tb, M, n, K, 1.0f, A, K, B, ldb, 0.0f, R, n);
    int diff = 0;
    for (int64_t i = 0; i < M; i++) diff += memcmp(C + i * N, R + i * n, (size_t)n * sizeof(float)) != 0;
    CHECK(diff == 0, "tb %d: %d rows of columns [0, %lld) differ from the narrower product", tb, diff, (long long)n);
    free(A), free(B), free(C), free(R);
}

int main(void) {
    if (!loom__cpu_sgemm512_fits(false, 256, 32, 32)) return tu_skip("no AVX-512 on this CPU (or LOOM_CPU_GEMM512=0)");
    CHECK(!loom__cpu_sgemm512_fits(true, 1024, 128, 128), "takes a transposed A");
    CHECK(!loom__cpu_sgemm512_fits(false, 255, 128, 128), "takes fewer than 256 rows");
    CHECK(!loom__cpu_sgemm512_fits(false, 1024, 769, 128), "takes more than 768 columns");
    static const int64_t Ms[] = {256, 257, 270}, Ns[] = {32, 33, 47, 50, 64, 100, 127}, Ks[] = {32, 100, 256, 257, 600};
    int n = 0;
    for (int tb = 0; tb < 2; tb++)
        for (size_t a = 0; a < sizeof Ms / sizeof *Ms; a++)
            for (size_t b = 0; b < sizeof Ns / sizeof *Ns; b++)
                for (size_t c = 0; c < sizeof Ks / sizeof *Ks; c++, n++) {
                    int64_t M = Ms[a], N = Ns[b], K = Ks[c];
                    float alpha = n % 3 == 0 ? 1.0f : n % 3 == 1 ? 0.5f : -1.25f, beta = n % 4 == 0 ? 0.0f
                                                                                         : n % 4 == 1 ? 1.0f
                                                                                                      : 0.75f;
                    int64_t wide = n % 2; /* leading dimensions wider than the rows */
                    prob p = {M, N, K, K + 3 * wide, (tb ? K : N) + 5 * wide, N + 7 * wide, tb, alpha, beta};
                    check(&p);
                }
    check(&(prob){300, 768, 130, 130, 768, 768, false, 1.0f, 0.0f});
    same_bits(false, 300, 100, 600, 5, 64);
    same_bits(true, 290, 70, 300, 17, 33);
    printf("%d products checked\n", n + 1);
    return tu_summary();
}
