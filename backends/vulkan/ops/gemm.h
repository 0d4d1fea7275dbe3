/* backends/vulkan/ops/gemm.h — the batched GEMM launcher shared by the
 * matmul and conv2d families (implemented in ops/matmul.c; the kernel is
 * shaders/gemm.comp, which documents the tiling and the batch layout). */
#ifndef LOOM_VULKAN_GEMM_H
#define LOOM_VULKAN_GEMM_H

#include "../vulkan.h"

/* An operand: a tensor of the plan (t), or a node-owned buffer (buf, at
 * element 0) when t is NULL. */
typedef struct loom__vk_mat {
    const loom_tensor *t;
    loom__buffer *buf;
} loom__vk_mat;

/* C[b] (M, N) = op(A[b]) x op(B[b]) [+ bias], b over batch[0] x batch[1] x
 * batch[2] (unused dims 1) with per-operand element strides sa/sb/sc/sbias
 * (0 = broadcast). A, B, bias: storage dtype dt; C: dt, or float when
 * c_float. bias (t and buf NULL = none) at bias_rs * row + bias_cs * col.
 * cseg > 0: C's columns come in segments of cseg, csegs elements apart
 * (column n at (n / cseg) * csegs + n % cseg of its row): one product over
 * every image of a convolution, (O, N*P), stored as (N, O, P). */
typedef struct loom__vk_gemm_desc {
    bool ta, tb, c_float;
    bool repro; /* f32: reproducible mode's canonical summation order (core/repro.h) */
    int64_t M, N, K, lda, ldb, ldc;
    int64_t batch[3], sa[3], sb[3], sc[3], sbias[3];
    int64_t bias_rs, bias_cs;
    int64_t cseg, csegs;
    loom__vk_mat a, b, c, bias;
    /* set: B is a convolution's input read as its columns (shaders/gemm.comp's
     * gemm*_nc: ta = tb = false, C of the storage type; the forward) or their
     * transpose with A = dy (images, O, P) read as (O, images * P)
     * (gemm*_yx: tb, float C; the weight gradient); the tiled form on any
     * device. conv: loom__conv_implicit_table's (column q is image q / (OH*OW)) */
    const int64_t *conv;
} loom__vk_gemm_desc;

/* One dispatch recorded on the node. */
loom_status loom__vk_gemm(loom__vk_op *o, loom_dtype dt, const loom__vk_gemm_desc *d);

static inline loom__vk_mat loom__vk_mat_t(const loom_tensor *t) { return (loom__vk_mat){t, NULL}; }
static inline loom__vk_mat loom__vk_mat_b(loom__buffer *b) { return (loom__vk_mat){NULL, b}; }

#endif
