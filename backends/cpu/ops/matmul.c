/* backends/cpu/ops/matmul.c — CPU kernels for matmul (batched, broadcast,
 * transposes) and linear. f32: OpenBLAS sgemm (fast path); f64: reference
 * loops. */
#include "../cpu_impl.h"
#include "../fuse.h"

static void gemm(const loom__cpu_args *a, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void *A,
                 int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
    if (a->dt == LOOM_F64)
        loom__cpu_dgemm_ref(ta, tb, M, N, K, 1.0, A, lda, B, ldb, beta, C, ldc);
    else
        loom__cpu_sgemm(a->cpu, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, (float)beta, C, ldc);
}

/* f32, b 2-D, a not transposed: a's batch folded into its rows, one product,
 * then epilogue ep (NULL: none; the bias group's, fuse.h) */
loom_status loom__cpu_matmul_ep(const loom__cpu_args *a, const loom__cpu_gemm_ep *ep) {
    const loom_tensor *y = a->node, *A = y->src[0], *B = y->src[1];
    int64_t N = y->dims[y->ndim - 1], K = A->dims[A->ndim - 1];
    loom__cpu_sgemm_ep(a->cpu, false, y->p[LOOM_P_MATMUL_TRANS_B] != 0, loom_tensor_numel(y) / N, N, K, a->x[0], K,
                       a->x[1], B->dims[1], a->y, N, ep);
    return LOOM_OK;
}

/* y (batch..., M, N) = op(a) (batch_a..., M, K) x op(b) (batch_b..., K, N) */
loom_status loom__cpu_matmul(const loom__cpu_args *a) {
    const loom_tensor *y = a->node, *A = y->src[0], *B = y->src[1];
    bool ta = y->p[LOOM_P_MATMUL_TRANS_A], tb = y->p[LOOM_P_MATMUL_TRANS_B];
    int nd = y->ndim, nb = nd - 2;
    int64_t M = y->dims[nd - 2], N = y->dims[nd - 1];
    int64_t K = A->dims[A->ndim - (ta ? 2 : 1)];
    int64_t lda = A->dims[A->ndim - 1], ldb = B->dims[B->ndim - 1];
    size_t es = loom_dtype_size(a->dt);
    int64_t sa_mat = A->dims[A->ndim - 1] * A->dims[A->ndim - 2], sb_mat = B->dims[B->ndim - 1] * B->dims[B->ndim - 2];
    int64_t batch = loom__numel(nb, y->dims);
    /* b shared by every batch and a not transposed: fold the batch into M */
    if (B->ndim == 2 && !ta) {
        if (a->dt == LOOM_F32) return loom__cpu_matmul_ep(a, NULL);
        gemm(a, false, tb, batch * M, N, K, a->x[0], lda, a->x[1], ldb, 0.0, a->y, N);
        return LOOM_OK;
    }
    /* broadcast strides (in matrices) of a and b over y's batch dims */
    int64_t sa[LOOM_MAX_DIMS] = {0}, sb[LOOM_MAX_DIMS] = {0}, st;
    st = 1;
    for (int i = nb - 1, j = A->ndim - 3; i >= 0; i--, j--)
        if (j >= 0 && A->dims[j] != 1) sa[i] = st, st *= A->dims[j];
        else if (j >= 0) sa[i] = 0;
    st = 1;
    for (int i = nb - 1, j = B->ndim - 3; i >= 0; i--, j--)
        if (j >= 0 && B->dims[j] != 1) sb[i] = st, st *= B->dims[j];
        else if (j >= 0) sb[i] = 0;
    for (int64_t bi = 0; bi < batch; bi++) {
        int64_t r = bi, oa = 0, ob = 0;
        for (int i = nb - 1; i >= 0; i--) {
            int64_t k = r % y->dims[i];
            r /= y->dims[i];
            oa += k * sa[i], ob += k * sb[i];
        }
        gemm(a, ta, tb, M, N, K, (const char *)a->x[0] + (size_t)(oa * sa_mat) * es, lda,
             (const char *)a->x[1] + (size_t)(ob * sb_mat) * es, ldb, 0.0, (char *)a->y + (size_t)(bi * M * N) * es, N);
    }
    return LOOM_OK;
}

/* y (R, OUT) = x (R, IN) w^T (IN, OUT) + bias (OUT): bias rows are written
 * first and the product accumulated onto them (beta = 1). */
loom_status loom__cpu_linear(const loom__cpu_args *a) {
    const loom_tensor *y = a->node, *w = y->src[1];
    int64_t out = w->dims[0], in = w->dims[1], rows = loom_tensor_numel(y) / out;
    bool bias = y->p[LOOM_P_LINEAR_BIAS];
    if (bias) {
        size_t es = loom_dtype_size(a->dt);
        for (int64_t r = 0; r < rows; r++) memcpy((char *)a->y + (size_t)(r * out) * es, a->x[2], (size_t)out * es);
    }
    gemm(a, false, true, rows, out, in, a->x[0], in, a->x[1], in, bias ? 1.0 : 0.0, a->y, out);
    return LOOM_OK;
}

/* ---- reproducible mode (core/repro.h): the canonical GEMM ---- */

loom_status loom__cpu_repro_oom(const loom__cpu_args *a) {
    return loom__err(a->node->g->ctx, LOOM_ERR_OOM, "cpu: out of memory in the reproducible kernel of %s (node '%s')",
                     loom_op_name(a->node->op), a->node->name);
}

loom_status loom__cpu_matmul_repro(const loom__cpu_args *a) {
    loom__mm_geom m = loom__matmul_geom_of(a->node);
    const loom_tensor *y = a->node;
    bool ta = y->p[LOOM_P_MATMUL_TRANS_A], tb = y->p[LOOM_P_MATMUL_TRANS_B];
    for (int64_t b0 = 0; b0 < m.batch[0]; b0++)
        for (int64_t b1 = 0; b1 < m.batch[1]; b1++)
            for (int64_t b2 = 0; b2 < m.batch[2]; b2++) {
                const float *A = (const float *)a->x[0] + b0 * m.sa[0] + b1 * m.sa[1] + b2 * m.sa[2];
                const float *B = (const float *)a->x[1] + b0 * m.sb[0] + b1 * m.sb[1] + b2 * m.sb[2];
                float *C = (float *)a->y + b0 * m.sc[0] + b1 * m.sc[1] + b2 * m.sc[2];
                if (loom__cpu_sgemm_repro(a->cpu, ta, tb, m.M, m.N, m.K, A, m.lda, B, m.ldb, false, C, m.ldc))
                    return loom__cpu_repro_oom(a);
            }
    return LOOM_OK;
}

/* y (R, OUT) = cdot(x row, w row) + bias: the product first, the bias added after (accumulate) */
loom_status loom__cpu_linear_repro(const loom__cpu_args *a) {
    const loom_tensor *y = a->node, *w = y->src[1];
    int64_t out = w->dims[0], in = w->dims[1], rows = loom_tensor_numel(y) / out;
    bool bias = y->p[LOOM_P_LINEAR_BIAS];
    float *Y = a->y;
    if (bias)
        for (int64_t r = 0; r < rows; r++) memcpy(Y + r * out, a->x[2], (size_t)out * sizeof *Y);
    if (loom__cpu_sgemm_repro(a->cpu, false, true, rows, out, in, a->x[0], in, a->x[1], in, bias, Y, out))
        return loom__cpu_repro_oom(a);
    return LOOM_OK;
}
