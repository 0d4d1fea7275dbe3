/* backends/cuda/ops/norm.cu — batch norm, layer norm and their gradient
 * ops, a port of backends/opencl/kernels/norm.cl (as backends/cpu/ops/norm.c;
 * parameters in core/ops/norm.c). Statistics are two-pass (mean, then the
 * sum of squared deviations) with float block tree sums: one block per
 * channel (batch norm), per row (layer norm) or per column (layer-norm
 * parameter gradients); batch norm's dx is one thread per element. Running
 * statistics and the (4, C) batch-norm statistics are f32 whatever T is.
 * Optional inputs are found by the src indices in node->p[]; an absent one
 * is bound to x and flagged off (never read). */
#include <math.h>

#include "../common.cuh"

/* ---- batch norm: x (N, C, S), channel c of element (n, i) at (n C + c) S + i ---- */

/* batch mean and biased variance of channel c over its first M (N S, or 0
 * to skip: every thread still reaches every barrier) elements */
template <typename T>
__device__ void bn_stats(const T *x, int64_t M, int64_t C, int64_t S, int64_t c, float *mean, float *var) {
    int l = threadIdx.x, nl = blockDim.x;
    float sum = 0.0f;
    for (int64_t e = l; e < M; e += nl) sum += ldf(x[((e / S) * C + c) * S + e % S]);
    float m = block_sum(sum) / (float)M;
    float q = 0.0f;
    for (int64_t e = l; e < M; e += nl) {
        float d = ldf(x[((e / S) * C + c) * S + e % S]) - m;
        q += d * d;
    }
    *mean = m, *var = block_sum(q) / (float)M;
}

/* y = (x - mean) invstd gamma + beta per channel; train: batch statistics,
 * and (has_run) running = (1 - momentum) running + momentum stat, with the
 * unbiased variance; eval: the running statistics. One block per channel. */
template <typename T>
__global__ void batch_norm_k(const T *x, const T *gm, const T *bt, float *rm, float *rv, T *y, int64_t N, int64_t C,
                             int64_t S, int train, int has_g, int has_b, int has_run, float eps, float momentum) {
    int64_t c = blockIdx.x;
    int l = threadIdx.x, nl = blockDim.x;
    int64_t M = N * S;
    float mean, var;
    bn_stats(x, train ? M : 0, C, S, c, &mean, &var);
    if (train) {
        if (has_run && l == 0) {
            float mf = (float)M;
            rm[c] = (1.0f - momentum) * rm[c] + momentum * mean;
            rv[c] = (1.0f - momentum) * rv[c] + momentum * (var * mf / (mf - 1.0f));
        }
    } else {
        mean = rm[c], var = rv[c];
    }
    float invstd = 1.0f / sqrtf(var + eps);
    float g = has_g ? ldf(gm[c]) : 1.0f, b = has_b ? ldf(bt[c]) : 0.0f;
    for (int64_t e = l; e < M; e += nl) {
        int64_t k = ((e / S) * C + c) * S + e % S;
        st(y, k, (ldf(x[k]) - mean) * invstd * g + b);
    }
}

/* stats (4, C) f32: sum(dy xhat), sum(dy), mean, invstd (batch statistics in
 * train mode, running ones in eval mode). One block per channel. */
template <typename T>
__global__ void batch_norm_grad_params_k(const T *x, const T *dy, const float *rm, const float *rv, float *out,
                                         int64_t N, int64_t C, int64_t S, int train, float eps) {
    int64_t c = blockIdx.x;
    int l = threadIdx.x, nl = blockDim.x;
    int64_t M = N * S;
    float mean, var;
    bn_stats(x, train ? M : 0, C, S, c, &mean, &var);
    if (!train) mean = rm[c], var = rv[c];
    float invstd = 1.0f / sqrtf(var + eps);
    float sd = 0.0f, sdx = 0.0f;
    for (int64_t e = l; e < M; e += nl) {
        int64_t k = ((e / S) * C + c) * S + e % S;
        float g = ldf(dy[k]);
        sd += g;
        sdx += g * (ldf(x[k]) - mean);
    }
    sd = block_sum(sd);
    sdx = block_sum(sdx);
    if (l == 0) out[c] = sdx * invstd, out[C + c] = sd, out[2 * C + c] = mean, out[3 * C + c] = invstd;
}

/* dx, one thread per element: train: g invstd (dy - sum(dy)/M - xhat sum(dy xhat)/M);
 * eval: g invstd dy (stats from batch_norm_grad_params) */
template <typename T>
__global__ void batch_norm_grad_k(const T *x, const T *gm, const T *dy, const float *stt, T *dx, int64_t N, int64_t C,
                                  int64_t S, int train, int has_g) {
    int64_t k = gid1();
    if (k >= N * C * S) return;
    int64_t c = (k / S) % C;
    float M = (float)(N * S);
    float sdx = stt[c] / M, sd = stt[C + c] / M, mean = stt[2 * C + c], invstd = stt[3 * C + c];
    float g = has_g ? ldf(gm[c]) : 1.0f, d = ldf(dy[k]);
    float xh = (ldf(x[k]) - mean) * invstd;
    st(dx, k, train ? g * invstd * (d - sd - xh * sdx) : g * invstd * d);
}

/* ---- layer norm: x (R, D), one block per row ---- */

/* mean and invstd of row x (D) (every thread gets them) */
template <typename T>
__device__ void ln_stats(const T *x, int64_t D, float eps, float *mean, float *invstd) {
    int l = threadIdx.x, nl = blockDim.x;
    float sum = 0.0f;
    for (int64_t i = l; i < D; i += nl) sum += ldf(x[i]);
    float m = block_sum(sum) / (float)D;
    float q = 0.0f;
    for (int64_t i = l; i < D; i += nl) {
        float d = ldf(x[i]) - m;
        q += d * d;
    }
    *mean = m, *invstd = 1.0f / sqrtf(block_sum(q) / (float)D + eps);
}

/* y[r, i] = (x[r, i] - mean_r) invstd_r gamma[i] + beta[i] */
template <typename T>
__global__ void layer_norm_k(const T *x, const T *gm, const T *bt, T *y, int64_t D, int has_g, int has_b, float eps) {
    int64_t r = blockIdx.x;
    int l = threadIdx.x, nl = blockDim.x;
    x += r * D, y += r * D;
    float mean, invstd;
    ln_stats(x, D, eps, &mean, &invstd);
    for (int64_t i = l; i < D; i += nl)
        st(y, i, (ldf(x[i]) - mean) * invstd * (has_g ? ldf(gm[i]) : 1.0f) + (has_b ? ldf(bt[i]) : 0.0f));
}

/* dx = invstd (g dy - mean(g dy) - xhat mean(g dy xhat)) per row */
template <typename T>
__global__ void layer_norm_grad_k(const T *x, const T *gm, const T *dy, T *dx, int64_t D, int has_g, float eps) {
    int64_t r = blockIdx.x;
    int l = threadIdx.x, nl = blockDim.x;
    x += r * D, dy += r * D, dx += r * D;
    float mean, invstd;
    ln_stats(x, D, eps, &mean, &invstd);
    float a = 0.0f, b = 0.0f;
    for (int64_t i = l; i < D; i += nl) {
        float gd = ldf(dy[i]) * (has_g ? ldf(gm[i]) : 1.0f);
        a += gd;
        b += gd * (ldf(x[i]) - mean) * invstd;
    }
    a = block_sum(a) / (float)D;
    b = block_sum(b) / (float)D;
    for (int64_t i = l; i < D; i += nl) {
        float gd = ldf(dy[i]) * (has_g ? ldf(gm[i]) : 1.0f);
        st(dx, i, invstd * (gd - a - (ldf(x[i]) - mean) * invstd * b));
    }
}

/* stt (2, R) f32: mean and invstd of each row (one block per row) */
template <typename T>
__global__ void ln_rowstats(const T *x, float *stt, int64_t R, int64_t D, float eps) {
    int64_t r = blockIdx.x;
    float mean, invstd;
    ln_stats(x + r * D, D, eps, &mean, &invstd);
    if (threadIdx.x == 0) stt[r] = mean, stt[R + r] = invstd;
}

/* out (2, D): out[0, i] = sum_r dy xhat, out[1, i] = sum_r dy; one block per column i */
template <typename T>
__global__ void layer_norm_grad_params_k(const T *x, const T *dy, const float *stt, T *out, int64_t R, int64_t D) {
    int64_t i = blockIdx.x;
    int l = threadIdx.x, nl = blockDim.x;
    float dg = 0.0f, db = 0.0f;
    for (int64_t r = l; r < R; r += nl) {
        int64_t k = r * D + i;
        float g = ldf(dy[k]);
        dg += g * (ldf(x[k]) - stt[r]) * stt[R + r];
        db += g;
    }
    dg = block_sum(dg);
    db = block_sum(db);
    if (l == 0) st(out, i, dg), st(out, D + i, db);
}

/* ---- host side ---- */

/* src[idx], or x when absent (idx < 0) */
static const loom_tensor *opt(const loom_tensor *t, int64_t idx) { return idx >= 0 ? t->src[idx] : t->src[0]; }

/* x (N, C, S): N, C and S = prod(dims[2:]) */
static void bn_dims(const loom_tensor *x, int64_t *N, int64_t *C, int64_t *S) {
    *N = x->dims[0], *C = x->dims[1], *S = 1;
    for (int d = 2; d < x->ndim; d++) *S *= x->dims[d];
}

/* absent optional f32 inputs (running statistics) are bound to x's memory, never read */
static float *fopt(const loom__cu_op *o, const loom_tensor *t, int64_t idx) {
    return (float *)loom__cu_addr(o->plan, opt(t, idx));
}

template <typename T>
static loom_status run_bn(loom__cu_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    if (C <= 0) return LOOM_OK;
    unsigned th = loom__cu_reduce_threads(N * S);
    return loom__cu_launch(
        o, batch_norm_k<T>, dim3((unsigned)C), th, loom__cu_smem(th), loom__cu_ptr<T>(o, x),
        loom__cu_ptr<T>(o, opt(y, y->p[LOOM_P_BN_GAMMA])), loom__cu_ptr<T>(o, opt(y, y->p[LOOM_P_BN_BETA])),
        fopt(o, y, y->p[LOOM_P_BN_RMEAN]), fopt(o, y, y->p[LOOM_P_BN_RVAR]), loom__cu_ptr<T>(o, y), N, C, S,
        (int)(y->p[LOOM_P_BN_TRAIN] != 0), (int)(y->p[LOOM_P_BN_GAMMA] >= 0), (int)(y->p[LOOM_P_BN_BETA] >= 0),
        (int)(y->p[LOOM_P_BN_RMEAN] >= 0), (float)y->f[LOOM_F_BN_EPS], (float)y->f[LOOM_F_BN_MOMENTUM]);
}

template <typename T>
static loom_status run_bn_grad_params(loom__cu_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    if (C <= 0) return LOOM_OK;
    unsigned th = loom__cu_reduce_threads(N * S);
    return loom__cu_launch(o, batch_norm_grad_params_k<T>, dim3((unsigned)C), th, loom__cu_smem(th),
                           loom__cu_ptr<T>(o, x), loom__cu_ptr<T>(o, opt(y, y->p[LOOM_P_BN_DY])),
                           (const float *)fopt(o, y, y->p[LOOM_P_BN_RMEAN]),
                           (const float *)fopt(o, y, y->p[LOOM_P_BN_RVAR]), loom__cu_ptr<float>(o, y), N, C, S,
                           (int)(y->p[LOOM_P_BN_TRAIN] != 0), (float)y->f[LOOM_F_BN_EPS]);
}

template <typename T>
static loom_status run_bn_grad(loom__cu_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    int64_t n = N * C * S;
    return loom__cu_launch(o, batch_norm_grad_k<T>, loom__cu_grid1d(n), LOOM__CU_THREADS, 0, loom__cu_ptr<T>(o, x),
                           loom__cu_ptr<T>(o, opt(y, y->p[LOOM_P_BN_GAMMA])),
                           loom__cu_ptr<T>(o, opt(y, y->p[LOOM_P_BN_DY])),
                           (const float *)fopt(o, y, y->p[LOOM_P_BN_STATS]), loom__cu_ptr<T>(o, y), N, C, S,
                           (int)(y->p[LOOM_P_BN_TRAIN] != 0), (int)(y->p[LOOM_P_BN_GAMMA] >= 0));
}

/* x viewed as (R, D), D = the last norm_dims dims */
static void ln_dims(const loom_tensor *t, int64_t *R, int64_t *D) {
    const loom_tensor *x = t->src[0];
    int nd = (int)t->p[LOOM_P_LN_DIMS];
    *D = 1;
    for (int d = x->ndim - nd; d < x->ndim; d++) *D *= x->dims[d];
    *R = *D ? loom_tensor_numel(x) / *D : 0;
}

template <typename T>
static loom_status run_ln(loom__cu_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t R, D;
    ln_dims(y, &R, &D);
    if (R <= 0) return LOOM_OK;
    unsigned th = loom__cu_reduce_threads(D);
    return loom__cu_launch(o, layer_norm_k<T>, dim3((unsigned)R), th, loom__cu_smem(th), loom__cu_ptr<T>(o, x),
                           loom__cu_ptr<T>(o, opt(y, y->p[LOOM_P_LN_GAMMA])),
                           loom__cu_ptr<T>(o, opt(y, y->p[LOOM_P_LN_BETA])), loom__cu_ptr<T>(o, y), D,
                           (int)(y->p[LOOM_P_LN_GAMMA] >= 0), (int)(y->p[LOOM_P_LN_BETA] >= 0),
                           (float)y->f[LOOM_F_LN_EPS]);
}

template <typename T>
static loom_status run_ln_grad(loom__cu_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t R, D;
    ln_dims(y, &R, &D);
    if (R <= 0) return LOOM_OK;
    unsigned th = loom__cu_reduce_threads(D);
    return loom__cu_launch(o, layer_norm_grad_k<T>, dim3((unsigned)R), th, loom__cu_smem(th), loom__cu_ptr<T>(o, x),
                           loom__cu_ptr<T>(o, opt(y, y->p[LOOM_P_LN_GAMMA])),
                           loom__cu_ptr<T>(o, opt(y, y->p[LOOM_P_LN_DY])), loom__cu_ptr<T>(o, y), D,
                           (int)(y->p[LOOM_P_LN_GAMMA] >= 0), (float)y->f[LOOM_F_LN_EPS]);
}

/* row statistics (2, R) into scratch, then one block per column (zeros when R = 0) */
template <typename T>
static loom_status run_ln_grad_params(loom__cu_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t R, D;
    ln_dims(y, &R, &D);
    if (D <= 0) return LOOM_OK;
    unsigned lrow = loom__cu_reduce_threads(D), lcol = loom__cu_reduce_threads(R);
    float *stats;
    loom_status st = loom__cu_scratch(o, (size_t)(2 * R) * sizeof(float), (void **)&stats);
    if (st != LOOM_OK) return st;
    if (R > 0 && (st = loom__cu_launch(o, ln_rowstats<T>, dim3((unsigned)R), lrow, loom__cu_smem(lrow),
                                       loom__cu_ptr<T>(o, x), stats, R, D, (float)y->f[LOOM_F_LN_EPS])) != LOOM_OK)
        return st;
    return loom__cu_launch(o, layer_norm_grad_params_k<T>, dim3((unsigned)D), lcol, loom__cu_smem(lcol),
                           loom__cu_ptr<T>(o, x), loom__cu_ptr<T>(o, opt(y, y->p[LOOM_P_LN_DY])), (const float *)stats,
                           loom__cu_ptr<T>(o, y), R, D);
}

loom_status loom__cu_batch_norm(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->src[0]->dtype, run_bn, o); }
loom_status loom__cu_batch_norm_grad_params(loom__cu_op *o) {
    return LOOM_CU_DISPATCH(o->t->src[0]->dtype, run_bn_grad_params, o);
}
loom_status loom__cu_batch_norm_grad(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->src[0]->dtype, run_bn_grad, o); }
loom_status loom__cu_layer_norm(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->src[0]->dtype, run_ln, o); }
loom_status loom__cu_layer_norm_grad(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->src[0]->dtype, run_ln_grad, o); }
loom_status loom__cu_layer_norm_grad_params(loom__cu_op *o) {
    return LOOM_CU_DISPATCH(o->t->src[0]->dtype, run_ln_grad_params, o);
}
