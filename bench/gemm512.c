/* bench/gemm512.c — the CPU backend's AVX-512 GEMM (backends/cpu/gemm512.c)
 * against OpenBLAS's sgemm called directly, one thread each, on the shapes
 * loom's training steps hand them: a GPT's linear layers per thread panel
 * (1024 rows x 128..512, forward and input gradient), the weight
 * gradient's (K*KH*KW x output channels, a block of ~1000 columns of
 * im2col) and, for the record, shapes it does not take (few rows).
 * Interleaved rounds; the best of each side per shape, GFLOP/s.
 *   bench-gemm512 [--rounds N]   (default 5; unset OPENBLAS_CORETYPE for
 *                                 OpenBLAS's own choice of kernels) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu.h"

#ifdef LOOM_HAVE_OPENBLAS
#include <cblas.h>
#endif

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct shape {
    int64_t M, N, K;
    int tb;
    const char *what;
} shape;

int main(int argc, char **argv) {
    int rounds = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: bench-gemm512 [--rounds N]\n");
            return 2;
        }
    }
    if (rounds < 1) rounds = 1;
#ifndef LOOM_HAVE_OPENBLAS
    printf("built without OpenBLAS: nothing to compare against\n");
    return 0;
#else
    openblas_set_num_threads(1);
    static const shape sh[] = {
        {1024, 384, 128, 0, "gpt qkv, forward"},      {1024, 128, 128, 0, "gpt attn proj, forward"},
        {1024, 512, 128, 0, "gpt fc, forward"},       {1024, 128, 512, 0, "gpt mlp proj, forward"},
        {1024, 128, 384, 1, "gpt qkv, input grad"},   {1024, 128, 512, 1, "gpt fc, input grad"},
        {288, 32, 980, 1, "dw 32x32x3x3 on 14x14"},  {576, 64, 980, 1, "dw 64x64x3x3 on 7x7"},
        {32, 288, 980, 1, "the same, as (O, K)"},    {144, 16, 1568, 1, "dw 16x16x3x3 (not taken)"},
    };
    int n = (int)(sizeof sh / sizeof *sh);
    printf("one thread each; GFLOP/s, best of %d interleaved rounds\n", rounds);
    printf("| shape (M x N x K, op(B)) | what | OpenBLAS | loom gemm512 | ratio |\n|---|---|---|---|---|\n");
    for (int s = 0; s < n; s++) {
        const shape *q = &sh[s];
        int64_t ldb = q->tb ? q->K : q->N, brows = q->tb ? q->N : q->K;
        float *A = malloc((size_t)(q->M * q->K) * sizeof(float)), *B = malloc((size_t)(brows * ldb) * sizeof(float));
        float *C = malloc((size_t)(q->M * q->N) * sizeof(float));
        if (!A || !B || !C) return 1;
        for (int64_t i = 0; i < q->M * q->K; i++) A[i] = (float)(i % 13) * 0.01f - 0.06f;
        for (int64_t i = 0; i < brows * ldb; i++) B[i] = (float)(i % 7) * 0.02f - 0.06f;
        double flop = 2.0 * (double)q->M * (double)q->N * (double)q->K, best[2] = {1e9, 1e9};
        int reps = (int)(2e8 / flop) + 1;
        bool fits = loom__cpu_sgemm512_fits(false, q->M, q->N, q->K);
        for (int r = 0; r < rounds; r++)
            for (int side = 0; side < 2; side++) {
                if (side && !fits) continue;
                double t = now();
                for (int k = 0; k < reps; k++) {
                    if (side)
                        loom__cpu_sgemm512(q->tb, q->M, q->N, q->K, 1.0f, A, q->K, B, ldb, 0.0f, C, q->N);
                    else
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, q->tb ? CblasTrans : CblasNoTrans, (blasint)q->M,
                                    (blasint)q->N, (blasint)q->K, 1.0f, A, (blasint)q->K, B, (blasint)ldb, 0.0f, C,
                                    (blasint)q->N);
                }
                t = (now() - t) / reps;
                if (t < best[side]) best[side] = t;
            }
        if (fits)
            printf("| %lld x %lld x %lld%s | %s | %.1f | %.1f | %.2fx |\n", (long long)q->M, (long long)q->N,
                   (long long)q->K, q->tb ? ", B^T" : "", q->what, flop / best[0] * 1e-9, flop / best[1] * 1e-9,
                   best[0] / best[1]);
        else
            printf("| %lld x %lld x %lld%s | %s | %.1f | (not taken) | |\n", (long long)q->M, (long long)q->N,
                   (long long)q->K, q->tb ? ", B^T" : "", q->what, flop / best[0] * 1e-9);
        free(A), free(B), free(C);
    }
    return 0;
#endif
}
