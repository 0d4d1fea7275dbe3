/* backends/cuda/ops/matmul.cu — host side of matmul (batched, broadcast,
 * transposes) and linear (x w^T + bias), and the cuBLAS GEMM (ops/gemm.cuh)
 * the conv2d family shares.
 *
 * cuBLAS is column-major: the row-major C (M, N) = op(A) op(B) is the
 * column-major C^T (N, M) = op(B)^T op(A)^T, so each call passes B first
 * (transposed iff tb), then A (iff ta), with m = N, n = M. */
#include <limits.h>

#include "gemm.cuh"

/* one cuBLAS call: cublasGemmStridedBatchedEx's arguments */
typedef struct blas_call {
    cublasOperation_t opa, opb;
    int m, n, k, lda, ldb, ldc, count;
    long long sa, sb, sc;
    const void *a, *b;
    void *c;
    cudaDataType_t at, ct;
    cublasComputeType_t compute;
    float beta;
} blas_call;

static loom_status run_blas(const loom__cu_exec *x, const void *args) {
    const blas_call *c = (const blas_call *)args;
    const float one = 1.0f;
    LOOM_CUBLAS_CHECK(x->cu->ctx, cublasGemmStridedBatchedEx(x->cu->blas, c->opa, c->opb, c->m, c->n, c->k, &one, c->a,
                                                             c->at, c->lda, c->sa, c->b, c->at, c->ldb, c->sb, &c->beta,
                                                             c->c, c->ct, c->ldc, c->sc, c->count, c->compute,
                                                             CUBLAS_GEMM_DEFAULT));
    return LOOM_OK;
}

/* idx (nb * M * N) -> (i0, i1, i2, m, n); dst[C offset] = bias (as float).
 * g = {b0, b1, b2, sc0..2, sbias0..2, ldc, bias_rs, bias_cs, M, N} */
template <typename T>
__global__ void gemm_bias_fill(loom__cu_tab<14> g, const T *bias, float *dst, int64_t total) {
    int64_t id = gid1();
    if (id >= total) return;
    int64_t N = g.v[13], M = g.v[12];
    int64_t n = id % N, m = id / N % M, b = id / (N * M);
    int64_t i2 = b % g.v[2], i1 = b / g.v[2] % g.v[1], i0 = b / (g.v[2] * g.v[1]);
    int64_t oc = i0 * g.v[3] + i1 * g.v[4] + i2 * g.v[5] + m * g.v[9] + n;
    int64_t ob = i0 * g.v[6] + i1 * g.v[7] + i2 * g.v[8] + m * g.v[10] + n * g.v[11];
    dst[oc] = ldf(bias[ob]);
}

/* c[C offset] = src[C offset] rounded to T (same table) */
template <typename T>
__global__ void gemm_store(loom__cu_tab<14> g, const float *src, T *c, int64_t total) {
    int64_t id = gid1();
    if (id >= total) return;
    int64_t N = g.v[13], M = g.v[12];
    int64_t n = id % N, m = id / N % M, b = id / (N * M);
    int64_t i2 = b % g.v[2], i1 = b / g.v[2] % g.v[1], i0 = b / (g.v[2] * g.v[1]);
    int64_t oc = i0 * g.v[3] + i1 * g.v[4] + i2 * g.v[5] + m * g.v[9] + n;
    st(c, oc, src[oc]);
}

static cudaDataType_t cuda_type(loom_dtype dt) {
    return dt == LOOM_F16 ? CUDA_R_16F : dt == LOOM_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

static bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* the bias fill / store launches over every element of C */
template <typename T>
static loom_status bias_fill(loom__cu_op *o, const loom__cu_gemm_desc *d, float *dst) {
    loom__cu_tab<14> g = {{d->batch[0], d->batch[1], d->batch[2], d->sc[0], d->sc[1], d->sc[2], d->sbias[0],
                           d->sbias[1], d->sbias[2], d->ldc, d->bias_rs, d->bias_cs, d->M, d->N}};
    int64_t total = d->batch[0] * d->batch[1] * d->batch[2] * d->M * d->N;
    return loom__cu_launch(o, gemm_bias_fill<T>, loom__cu_grid1d(total), LOOM__CU_THREADS, 0, g, (const T *)d->bias,
                           dst, total);
}

template <typename T>
static loom_status store(loom__cu_op *o, const loom__cu_gemm_desc *d, const float *src) {
    loom__cu_tab<14> g = {{d->batch[0], d->batch[1], d->batch[2], d->sc[0], d->sc[1], d->sc[2], d->sbias[0],
                           d->sbias[1], d->sbias[2], d->ldc, d->bias_rs, d->bias_cs, d->M, d->N}};
    int64_t total = d->batch[0] * d->batch[1] * d->batch[2] * d->M * d->N;
    return loom__cu_launch(o, gemm_store<T>, loom__cu_grid1d(total), LOOM__CU_THREADS, 0, g, src, (T *)d->c, total);
}

loom_status loom__cu_gemm(loom__cu_op *o, loom_dtype dt, const loom__cu_gemm_desc *d) {
    int64_t nb = d->batch[0] * d->batch[1] * d->batch[2];
    if (d->M <= 0 || d->N <= 0 || nb <= 0) return LOOM_OK;
    bool has_bias = d->bias != NULL, is16 = dt == LOOM_F16 || dt == LOOM_BF16;
    size_t es = loom_dtype_size(dt), ces = d->c_float ? sizeof(float) : es;
    loom_status st;

    /* the destination cuBLAS writes: C, or an f32 mirror of C (same element
     * offsets) when a 16-bit C gets a bias */
    void *dst = d->c;
    bool via_f32 = has_bias && is16 && !d->c_float;
    if (via_f32) {
        int64_t extent = (d->M - 1) * d->ldc + d->N;
        for (int i = 0; i < 3; i++) extent += (d->batch[i] - 1) * d->sc[i];
        if ((st = loom__cu_scratch(o, (size_t)extent * sizeof(float), &dst)) != LOOM_OK) return st;
    }
    if (has_bias) {
        LOOM__ASSERT(d->c_float || via_f32 || dt == LOOM_F32);
        if ((st = LOOM_CU_DISPATCH(dt, bias_fill, o, d, (float *)dst)) != LOOM_OK) return st;
    }

    /* batch dims of size > 1, outer to inner, merged where the strides allow */
    int nd = 0;
    int64_t bs[3], s_a[3], s_b[3], s_c[3], s_bias[3];
    for (int i = 0; i < 3; i++) {
        if (d->batch[i] == 1) continue;
        if (nd > 0) {
            int j = nd - 1; /* merge into the previous (outer) one? */
            if (s_a[j] == d->sa[i] * d->batch[i] && s_b[j] == d->sb[i] * d->batch[i] &&
                s_c[j] == d->sc[i] * d->batch[i] && s_bias[j] == d->sbias[i] * d->batch[i]) {
                bs[j] *= d->batch[i], s_a[j] = d->sa[i], s_b[j] = d->sb[i], s_c[j] = d->sc[i], s_bias[j] = d->sbias[i];
                continue;
            }
        }
        bs[nd] = d->batch[i], s_a[nd] = d->sa[i], s_b[nd] = d->sb[i], s_c[nd] = d->sc[i], s_bias[nd] = d->sbias[i];
        nd++;
    }
    int64_t count = nd ? bs[nd - 1] : 1, inner_sa = nd ? s_a[nd - 1] : 0, inner_sb = nd ? s_b[nd - 1] : 0,
            inner_sc = nd ? s_c[nd - 1] : 0;
    if (!fits_int(d->M) || !fits_int(d->N) || !fits_int(d->K) || !fits_int(d->lda) || !fits_int(d->ldb) ||
        !fits_int(d->ldc) || !fits_int(count))
        return loom__err(o->cu->ctx, LOOM_ERR_UNSUPPORTED,
                         "cuda: %s (node '%s'): a GEMM size exceeds INT_MAX (M %lld, N %lld, K %lld, batch %lld)",
                         loom_op_name(o->t->op), o->t->name, (long long)d->M, (long long)d->N, (long long)d->K,
                         (long long)count);

    blas_call c = {};
    c.opa = d->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    c.opb = d->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    c.m = (int)d->N, c.n = (int)d->M, c.k = (int)d->K;
    c.lda = (int)d->ldb, c.ldb = (int)d->lda, c.ldc = (int)d->ldc;
    c.sa = inner_sb, c.sb = inner_sa, c.sc = inner_sc, c.count = (int)count;
    c.at = cuda_type(dt);
    c.ct = d->c_float || via_f32 || (has_bias && dt == LOOM_F32) ? CUDA_R_32F : cuda_type(dt);
    c.compute = dt == LOOM_F32 && o->cu->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    c.beta = has_bias ? 1.0f : 0.0f;
    size_t cs = (c.ct == CUDA_R_32F) ? sizeof(float) : ces;
    /* the outer dims (all but the innermost): one call each */
    int64_t outer = 1;
    for (int i = 0; i + 1 < nd; i++) outer *= bs[i];
    for (int64_t ob = 0; ob < outer; ob++) {
        int64_t r = ob, oa = 0, obb = 0, oc = 0;
        for (int i = nd - 2; i >= 0; i--) {
            int64_t k = r % bs[i];
            r /= bs[i];
            oa += k * s_a[i], obb += k * s_b[i], oc += k * s_c[i];
        }
        c.a = (const char *)d->b + (size_t)obb * es;
        c.b = (const char *)d->a + (size_t)oa * es;
        c.c = (char *)dst + (size_t)oc * cs;
        if ((st = loom__cu_call(o, run_blas, &c, sizeof c)) != LOOM_OK) return st;
    }
    if (via_f32) return LOOM_CU_DISPATCH(dt, store, o, d, (const float *)dst);
    return LOOM_OK;
}

/* y (batch..., M, N) = op(a) (batch_a..., M, K) x op(b) (batch_b..., K, N);
 * up to 3 batch dims (LOOM_MAX_DIMS = 5), broadcast strides as the CPU backend */
loom_status loom__cu_matmul(loom__cu_op *o) {
    const loom_tensor *y = o->t, *A = y->src[0], *B = y->src[1];
    loom__mm_geom q = loom__matmul_geom_of(y);
    loom__cu_gemm_desc d = {};
    d.ta = y->p[LOOM_P_MATMUL_TRANS_A], d.tb = y->p[LOOM_P_MATMUL_TRANS_B];
    d.M = q.M, d.N = q.N, d.K = q.K, d.lda = q.lda, d.ldb = q.ldb, d.ldc = q.ldc;
    for (int i = 0; i < 3; i++) d.batch[i] = q.batch[i], d.sa[i] = q.sa[i], d.sb[i] = q.sb[i], d.sc[i] = q.sc[i];
    d.a = loom__cu_addr(o->plan, A), d.b = loom__cu_addr(o->plan, B), d.c = loom__cu_addr(o->plan, y);
    return loom__cu_gemm(o, y->dtype, &d);
}

/* y (R, OUT) = x (R, IN) w^T (IN, OUT) + bias (OUT) per column */
loom_status loom__cu_linear(loom__cu_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0], *w = y->src[1];
    int64_t out = w->dims[0], in = w->dims[1];
    loom__cu_gemm_desc d = {};
    d.tb = true, d.batch[0] = d.batch[1] = d.batch[2] = 1;
    d.M = loom_tensor_numel(y) / (out ? out : 1), d.N = out, d.K = in;
    d.lda = in, d.ldb = in, d.ldc = out;
    d.a = loom__cu_addr(o->plan, x), d.b = loom__cu_addr(o->plan, w), d.c = loom__cu_addr(o->plan, y);
    if (y->p[LOOM_P_LINEAR_BIAS]) d.bias = loom__cu_addr(o->plan, y->src[2]), d.bias_rs = 0, d.bias_cs = 1;
    return loom__cu_gemm(o, y->dtype, &d);
}
