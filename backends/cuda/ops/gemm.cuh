/* backends/cuda/ops/gemm.cuh — the batched GEMM every product in the
 * backend runs on (matmul, linear, the conv2d family), through cuBLAS
 * (implemented in ops/matmul.cu):
 *
 *   C[b] (M, N) = op(A[b]) (M, K) x op(B[b]) (K, N) [+ bias]
 *
 * Row-major operands as the OpenCL backend's loom__cl_gemm_desc: op(X) = X
 * or X^T (ta, tb), A stored (M, K) with leading dimension lda (or (K, M)
 * when ta), B (K, N) (or (N, K) when tb). A, B, bias: storage dtype dt; C:
 * dt, or f32 when c_float. Accumulation is f32 (f16/bf16 on tensor cores;
 * f32 GEMMs are full f32 unless LOOM_CUDA_TF32=1).
 *
 * Batch: b over batch[0] x batch[1] x batch[2] (unused dims 1) with
 * per-operand element strides sa/sb/sc/sbias (0 = broadcast). Dims that
 * merge (stride of the outer = stride x size of the inner, for every
 * operand) are merged; the innermost remaining dim becomes one strided
 * batched cuBLAS call, the others a loop of calls recorded at plan_prepare.
 *
 * Bias (pointer NULL = none) at bias_rs * row + bias_cs * col: the f32
 * destination (C, or an f32 scratch when C is 16-bit) is first filled with
 * the broadcast bias, the GEMM adds the product to it (beta = 1: one
 * rounding of acc + bias, as the CPU and OpenCL backends), and a 16-bit C
 * gets the scratch rounded once. */
#ifndef LOOM_CUDA_GEMM_CUH
#define LOOM_CUDA_GEMM_CUH

#include "../common.cuh"

typedef struct loom__cu_gemm_desc {
    bool ta, tb, c_float;
    int64_t M, N, K, lda, ldb, ldc;
    int64_t batch[3], sa[3], sb[3], sc[3], sbias[3];
    int64_t bias_rs, bias_cs;
    const void *a, *b, *bias;
    void *c;
} loom__cu_gemm_desc;

/* Record the GEMM's steps on the node. */
loom_status loom__cu_gemm(loom__cu_op *o, loom_dtype dt, const loom__cu_gemm_desc *d);

#endif
