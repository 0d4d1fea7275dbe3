/* backends/cuda/ops/loss.cu — cross_entropy (fused log-softmax, label
 * smoothing, ignore_index: per-row losses into scratch, then one block sums
 * them), cross_entropy_grad (the dloss / count factor, then one block per
 * row) and mse (one block). A port of backends/opencl/kernels/loss.cl (as
 * backends/cpu/ops/loss.c, float sums as trees; parameters in
 * core/ops/loss.c). A target outside [0, C) that is not ignore_index is
 * reported through the error slot (first bad row, atomicMin), with the CPU's
 * message, and its row is skipped: nothing is read out of bounds. */
#include "../common.cuh"

/* whether row i counts: false if ignored or bad (thread 0 flags a bad row in *err) */
__device__ __forceinline__ bool ce_valid(int t, int ignore, int64_t C, int64_t i, int32_t *err, int l) {
    if (t == ignore) return false;
    if (t < 0 || t >= C) {
        if (l == 0) atomicMin(err, (int)i);
        return false;
    }
    return true;
}

/* logits x (N, C), targets (N) -> part (N): loss_i (0 for skipped rows);
 * loss_i = -(1 - eps) logp[t] - eps (mean_c x - lse), lse = m + log sum exp(x - m) */
template <typename T>
__global__ void ce_rows(const T *x, const int *tg, float *part, int64_t C, int ignore, float eps, int32_t *err) {
    int64_t i = blockIdx.x;
    int l = threadIdx.x, nl = blockDim.x;
    int t = tg[i];
    bool ok = ce_valid(t, ignore, C, i, err, l);
    int64_t n = ok ? C : 0; /* skipped rows still reach every barrier */
    x += i * C;
    float m = ok ? ldf(x[0]) : 0.0f;
    for (int64_t c = l; c < n; c += nl) m = ldf(x[c]) > m ? ldf(x[c]) : m;
    m = block_max(m);
    float se = 0.0f, sx = 0.0f;
    for (int64_t c = l; c < n; c += nl) se += expf(ldf(x[c]) - m), sx += ldf(x[c]);
    se = block_sum(se);
    sx = block_sum(sx);
    if (l == 0) {
        float lse = m + logf(se);
        part[i] = ok ? -(1.0f - eps) * (ldf(x[t]) - lse) - eps * (sx / (float)C - lse) : 0.0f;
    }
}

/* y () = sum(part) / count of the rows that count (0 if none) */
template <typename T>
__global__ void ce_final(const float *part, const int *tg, T *y, int64_t N, int64_t C, int ignore) {
    int l = threadIdx.x, nl = blockDim.x;
    float sum = 0.0f, cnt = 0.0f;
    for (int64_t i = l; i < N; i += nl) {
        int t = tg[i];
        sum += part[i];
        cnt += t != ignore && t >= 0 && t < C ? 1.0f : 0.0f;
    }
    sum = block_sum(sum);
    cnt = block_sum(cnt);
    if (l == 0) st(y, 0, cnt > 0.0f ? sum / cnt : 0.0f);
}

/* scale[0] = dloss / count (0 if no row counts) */
template <typename T>
__global__ void ce_scale(const int *tg, const T *dl, float *scale, int64_t N, int64_t C, int ignore) {
    int l = threadIdx.x, nl = blockDim.x;
    float cnt = 0.0f;
    for (int64_t i = l; i < N; i += nl) {
        int t = tg[i];
        cnt += t != ignore && t >= 0 && t < C ? 1.0f : 0.0f;
    }
    cnt = block_sum(cnt);
    if (l == 0) scale[0] = cnt > 0.0f ? ldf(dl[0]) / cnt : 0.0f;
}

/* dx (N, C) = (softmax(x) - q) * scale, q the smoothed one-hot (on at t, off
 * elsewhere); 0 on skipped rows */
template <typename T>
__global__ void ce_grad_rows(const T *x, const int *tg, const float *scale, T *dx, int64_t C, int ignore, float on,
                             float off, int32_t *err) {
    int64_t i = blockIdx.x;
    int l = threadIdx.x, nl = blockDim.x;
    int t = tg[i];
    x += i * C, dx += i * C;
    bool ok = ce_valid(t, ignore, C, i, err, l);
    int64_t n = ok ? C : 0; /* skipped rows still reach every barrier */
    float m = ok ? ldf(x[0]) : 0.0f;
    for (int64_t c = l; c < n; c += nl) m = ldf(x[c]) > m ? ldf(x[c]) : m;
    m = block_max(m);
    float se = 0.0f;
    for (int64_t c = l; c < n; c += nl) se += expf(ldf(x[c]) - m);
    se = block_sum(se);
    float inv = 1.0f / se, k = scale[0];
    for (int64_t c = l; c < C; c += nl) st(dx, c, ok ? (expf(ldf(x[c]) - m) * inv - (c == t ? on : off)) * k : 0.0f);
}

/* y () = mean((a - b)^2) over n elements, one block */
template <typename T>
__global__ void mse_k(const T *a, const T *b, T *y, int64_t n) {
    int l = threadIdx.x, nl = blockDim.x;
    float sum = 0.0f;
    for (int64_t i = l; i < n; i += nl) {
        float d = ldf(a[i]) - ldf(b[i]);
        sum += d * d;
    }
    sum = block_sum(sum);
    if (l == 0) st(y, 0, sum / (float)n);
}

/* the first bad row: read its target back and say what is wrong */
static loom_status ce_check(loom__cu *cu, const loom_plan *p, const loom_tensor *t, int32_t row) {
    const loom_tensor *tg = t->src[1];
    int32_t v = 0;
    cudaError_t e = cudaMemcpy(&v, (const int32_t *)loom__cu_addr(p, tg) + row, sizeof v, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) return loom__cu_fail(cu->ctx, e, "cudaMemcpy(bad target)", __FILE__, __LINE__);
    return loom__err(cu->ctx, LOOM_ERR_INVALID_ARG,
                     "%s (node '%s'): target %d at row %lld is outside [0, %lld) and is not ignore_index %d",
                     loom_op_name(t->op), t->name, (int)v, (long long)row, (long long)t->src[0]->dims[1],
                     (int)t->p[LOOM_P_CE_IGNORE]);
}

template <typename T>
static loom_status run_ce(loom__cu_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0], *tg = y->src[1];
    int64_t N = x->dims[0], C = x->dims[1];
    int32_t *err = loom__cu_err_slot(o);
    o->node->check = ce_check;
    float *part;
    loom_status st = loom__cu_scratch(o, (size_t)N * sizeof(float), (void **)&part);
    if (st != LOOM_OK) return st;
    unsigned lr = loom__cu_reduce_threads(C), lf = loom__cu_reduce_threads(N);
    if (N > 0 && (st = loom__cu_launch(o, ce_rows<T>, dim3((unsigned)N), lr, loom__cu_smem(lr), loom__cu_ptr<T>(o, x),
                                       loom__cu_ptr<int>(o, tg), part, C, (int)y->p[LOOM_P_CE_IGNORE],
                                       (float)y->f[LOOM_F_CE_EPS], err)) != LOOM_OK)
        return st;
    return loom__cu_launch(o, ce_final<T>, 1, lf, loom__cu_smem(lf), (const float *)part, loom__cu_ptr<int>(o, tg),
                           loom__cu_ptr<T>(o, y), N, C, (int)y->p[LOOM_P_CE_IGNORE]); /* N == 0 writes 0 */
}

template <typename T>
static loom_status run_ce_grad(loom__cu_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0], *tg = y->src[1], *dl = y->src[2];
    int64_t N = x->dims[0], C = x->dims[1];
    double eps = y->f[LOOM_F_CE_EPS];
    int32_t *err = loom__cu_err_slot(o);
    o->node->check = ce_check;
    float *scale;
    loom_status st = loom__cu_scratch(o, sizeof(float), (void **)&scale);
    if (st != LOOM_OK) return st;
    unsigned lr = loom__cu_reduce_threads(C), lf = loom__cu_reduce_threads(N);
    if ((st = loom__cu_launch(o, ce_scale<T>, 1, lf, loom__cu_smem(lf), loom__cu_ptr<int>(o, tg),
                              loom__cu_ptr<T>(o, dl), scale, N, C, (int)y->p[LOOM_P_CE_IGNORE])) != LOOM_OK)
        return st;
    if (N <= 0) return LOOM_OK;
    /* the smoothed one-hot, formed in double and rounded once, as the CPU does */
    return loom__cu_launch(o, ce_grad_rows<T>, dim3((unsigned)N), lr, loom__cu_smem(lr), loom__cu_ptr<T>(o, x),
                           loom__cu_ptr<int>(o, tg), (const float *)scale, loom__cu_ptr<T>(o, y), C,
                           (int)y->p[LOOM_P_CE_IGNORE], (float)(1.0 - eps + eps / (double)C), (float)(eps / (double)C),
                           err);
}

template <typename T>
static loom_status run_mse(loom__cu_op *o) {
    const loom_tensor *y = o->t;
    int64_t n = loom_tensor_numel(y->src[0]);
    unsigned th = loom__cu_reduce_threads(n);
    return loom__cu_launch(o, mse_k<T>, 1, th, loom__cu_smem(th), loom__cu_ptr<T>(o, y->src[0]),
                           loom__cu_ptr<T>(o, y->src[1]), loom__cu_ptr<T>(o, y), n);
}

loom_status loom__cu_cross_entropy(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_ce, o); }
loom_status loom__cu_cross_entropy_grad(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_ce_grad, o); }
loom_status loom__cu_mse(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_mse, o); }
