/* backends/opencl/ops/gemm.h — the batched GEMM launcher shared by the
 * matmul and conv2d families (implemented in ops/matmul.c; kernels in
 * kernels/gemm.cl, which documents the tiling and the batch table). */
#ifndef LOOM_OPENCL_GEMM_H
#define LOOM_OPENCL_GEMM_H

#include "../opencl.h"

/* An operand: a buffer and an element offset into it. */
typedef struct loom__cl_mat {
    cl_mem mem;
    uint64_t off;
} loom__cl_mat;

/* C[b] (M, N) = op(A[b]) x op(B[b]) [+ bias], b over batch[0] x batch[1] x
 * batch[2] (unused dims 1) with per-operand element strides sa/sb/sc/sbias
 * (0 = broadcast). A, B, bias: storage dtype dt; C: dt, or float when
 * c_float. bias (mem NULL = none) at bias_rs * row + bias_cs * col. */
typedef struct loom__cl_gemm_desc {
    bool ta, tb, c_float;
    int64_t M, N, K, lda, ldb, ldc;
    int64_t batch[3], sa[3], sb[3], sc[3], sbias[3];
    int64_t bias_rs, bias_cs;
    loom__cl_mat a, b, c, bias;
} loom__cl_gemm_desc;

/* One launch recorded on the node (counts against LOOM__CL_MAX_LAUNCH). */
loom_status loom__cl_gemm(loom__cl_op *o, loom_dtype dt, const loom__cl_gemm_desc *d);

/* A tensor as an operand. */
loom__cl_mat loom__cl_mat_t(const loom__cl_op *o, const loom_tensor *t);

#endif
