/* backends/cuda/ops/attention.cu — attention, attention_grad and
 * causal_mask, a port of backends/opencl/kernels/attention.cl (as
 * backends/cpu/ops/attention.c; formulas in core/ops/attention.c): one block
 * per query row (attention, dq) or key row (dk, dv), keys or query rows in
 * chunks of the block's size, an online softmax with block reductions. The
 * dynamic shared memory holds the reduction tree (blockDim.x floats, used by
 * block_sum / block_max), coef (blockDim.x: p or ds of each key or query row
 * of the chunk), then acc, row and row2 (D floats each).
 * q (BH, Tq, D), k and v (BH, Tk, D); lse (BH, Tq) f32 whatever T is. */
#include "../common.cuh"

#define ATTN_MAX_D 2048 /* three shared rows of D floats (and two of the block) within 48 KiB */

template <typename T>
__device__ __forceinline__ float attn_dot(const T *x, const float *row, int64_t D) {
    float s = 0.0f;
    for (int64_t d = 0; d < D; d++) s += ldf(x[d]) * row[d];
    return s;
}

/* y (BH, Tq, D) and lse (BH, Tq): one block per query row */
template <typename T>
__global__ void attention_k(const T *q, const T *k, const T *v, float *lse, T *y, int64_t Tq, int64_t Tk, int64_t D,
                            int causal, float scale) {
    int64_t r = blockIdx.x, bh = r / Tq, i = r % Tq;
    int l = threadIdx.x, nl = blockDim.x;
    float *coef = loom_smem + nl, *acc = coef + nl, *row = acc + D;
    q += r * D, k += bh * Tk * D, v += bh * Tk * D, y += r * D;
    for (int64_t d = l; d < D; d += nl) row[d] = ldf(q[d]), acc[d] = 0.0f;
    __syncthreads();
    int64_t kend = causal && i + 1 < Tk ? i + 1 : Tk;
    float m = -INFINITY, s = 0.0f;
    for (int64_t j0 = 0; j0 < kend; j0 += nl) {
        int64_t j = j0 + l;
        float sc = j < kend ? attn_dot(k + j * D, row, D) * scale : -INFINITY;
        float mn = fmaxf(m, block_max(sc));
        float p = j < kend ? expf(sc - mn) : 0.0f;
        float corr = expf(m - mn); /* 0 on the first chunk */
        s = s * corr + block_sum(p);
        m = mn;
        coef[l] = p;
        __syncthreads();
        int64_t nc = kend - j0 < nl ? kend - j0 : nl;
        for (int64_t d = l; d < D; d += nl) {
            float a = acc[d] * corr;
            for (int64_t c = 0; c < nc; c++) a += coef[c] * ldf(v[(j0 + c) * D + d]);
            acc[d] = a;
        }
        __syncthreads();
    }
    float inv = 1.0f / s;
    for (int64_t d = l; d < D; d += nl) st(y, d, acc[d] * inv);
    if (l == 0) lse[r] = m + logf(s);
}

/* dq (BH, Tq, D): one block per query row */
template <typename T>
__global__ void attention_grad_q_k(const T *q, const T *k, const T *v, const T *o, const T *dy, const float *lse,
                                   T *dq, int64_t Tq, int64_t Tk, int64_t D, int causal, float scale) {
    int64_t r = blockIdx.x, bh = r / Tq, i = r % Tq;
    int l = threadIdx.x, nl = blockDim.x;
    float *coef = loom_smem + nl, *acc = coef + nl, *row = acc + D, *row2 = row + D;
    q += r * D, o += r * D, dy += r * D, dq += r * D, k += bh * Tk * D, v += bh * Tk * D;
    float part = 0.0f;
    for (int64_t d = l; d < D; d += nl) {
        row[d] = ldf(q[d]), row2[d] = ldf(dy[d]), acc[d] = 0.0f;
        part += ldf(dy[d]) * ldf(o[d]);
    }
    float delta = block_sum(part); /* its barriers publish row and row2 */
    float ls = lse[r];
    int64_t kend = causal && i + 1 < Tk ? i + 1 : Tk;
    for (int64_t j0 = 0; j0 < kend; j0 += nl) {
        int64_t j = j0 + l;
        float ds = 0.0f;
        if (j < kend) {
            float p = expf(attn_dot(k + j * D, row, D) * scale - ls);
            ds = p * (attn_dot(v + j * D, row2, D) - delta);
        }
        coef[l] = ds;
        __syncthreads();
        int64_t nc = kend - j0 < nl ? kend - j0 : nl;
        for (int64_t d = l; d < D; d += nl) {
            float a = acc[d];
            for (int64_t c = 0; c < nc; c++) a += coef[c] * ldf(k[(j0 + c) * D + d]);
            acc[d] = a;
        }
        __syncthreads();
    }
    for (int64_t d = l; d < D; d += nl) st(dq, d, acc[d] * scale);
}

/* dk (dk != 0) or dv (BH, Tk, D): one block per key row */
template <typename T>
__global__ void attention_grad_kv_k(const T *q, const T *k, const T *v, const T *o, const T *dy, const float *lse,
                                    T *dx, int64_t Tq, int64_t Tk, int64_t D, int causal, int dk, float scale) {
    int64_t r = blockIdx.x, bh = r / Tk, j = r % Tk;
    int l = threadIdx.x, nl = blockDim.x;
    float *coef = loom_smem + nl, *acc = coef + nl, *row = acc + D, *row2 = row + D;
    q += bh * Tq * D, o += bh * Tq * D, dy += bh * Tq * D, lse += bh * Tq, dx += r * D;
    for (int64_t d = l; d < D; d += nl) row[d] = ldf(k[r * D + d]), row2[d] = ldf(v[r * D + d]), acc[d] = 0.0f;
    __syncthreads();
    const T *src = dk ? q : dy;
    for (int64_t c0 = causal ? j : 0; c0 < Tq; c0 += nl) { /* the query rows that see key j */
        int64_t i = c0 + l;
        float cf = 0.0f;
        if (i < Tq) {
            float p = expf(attn_dot(q + i * D, row, D) * scale - lse[i]);
            if (dk) {
                float dp = 0.0f, delta = 0.0f;
                for (int64_t d = 0; d < D; d++) {
                    float g = ldf(dy[i * D + d]);
                    dp += g * row2[d];
                    delta += g * ldf(o[i * D + d]);
                }
                cf = p * (dp - delta);
            } else {
                cf = p;
            }
        }
        coef[l] = cf;
        __syncthreads();
        int64_t nc = Tq - c0 < nl ? Tq - c0 : nl;
        for (int64_t d = l; d < D; d += nl) {
            float a = acc[d];
            for (int64_t c = 0; c < nc; c++) a += coef[c] * ldf(src[(c0 + c) * D + d]);
            acc[d] = a;
        }
        __syncthreads();
    }
    float sc = dk ? scale : 1.0f;
    for (int64_t d = l; d < D; d += nl) st(dx, d, acc[d] * sc);
}

/* y = x with value where key c > query i; x (R, Tq, Tk) */
template <typename T>
__global__ void causal_mask_k(const T *x, T *y, int64_t n, int64_t Tq, int64_t Tk, float value) {
    int64_t e = gid1();
    if (e >= n) return;
    int64_t c = e % Tk, i = (e / Tk) % Tq;
    st(y, e, c > i ? value : ldf(x[e]));
}

static loom_status check_d(loom__cu_op *o) {
    int64_t D = o->t->src[0]->dims[3];
    if (D <= ATTN_MAX_D) return LOOM_OK;
    return loom__err(o->cu->ctx, LOOM_ERR_UNSUPPORTED, "cuda: %s (node '%s'): head dim D = %lld; this backend supports D <= %d",
                     loom_op_name(o->t->op), o->t->name, (long long)D, ATTN_MAX_D);
}

static size_t attn_smem(unsigned th, int64_t D) { return (2 * (size_t)th + 3 * (size_t)D) * sizeof(float); }

template <typename T>
static loom_status run_fwd(loom__cu_op *o) {
    const loom_tensor *t = o->t, *q = t->src[0];
    int64_t BH = q->dims[0] * q->dims[1], Tq = q->dims[2], Tk = t->src[1]->dims[2], D = q->dims[3];
    if (BH * Tq <= 0) return LOOM_OK;
    unsigned th = loom__cu_reduce_threads(Tk);
    return loom__cu_launch(o, attention_k<T>, dim3((unsigned)(BH * Tq)), th, attn_smem(th, D),
                           loom__cu_ptr<T>(o, q), loom__cu_ptr<T>(o, t->src[1]), loom__cu_ptr<T>(o, t->src[2]),
                           loom__cu_ptr<float>(o, t->src[3]), loom__cu_ptr<T>(o, t), Tq, Tk, D,
                           (int)t->p[LOOM_P_ATTN_CAUSAL], (float)t->f[LOOM_F_ATTN_SCALE]);
}

template <typename T>
static loom_status run_grad(loom__cu_op *o) {
    const loom_tensor *t = o->t, *q = t->src[0];
    int64_t BH = q->dims[0] * q->dims[1], Tq = q->dims[2], Tk = t->src[1]->dims[2], D = q->dims[3];
    int which = (int)t->p[LOOM_P_ATTN_WHICH], causal = (int)t->p[LOOM_P_ATTN_CAUSAL];
    float scale = (float)t->f[LOOM_F_ATTN_SCALE];
    const T *pq = loom__cu_ptr<T>(o, q), *pk = loom__cu_ptr<T>(o, t->src[1]), *pv = loom__cu_ptr<T>(o, t->src[2]);
    const T *po = loom__cu_ptr<T>(o, t->src[3]), *pdy = loom__cu_ptr<T>(o, t->src[4]);
    const float *plse = loom__cu_ptr<float>(o, t->src[5]);
    if (which == LOOM_K_ATTN_DQ) {
        if (BH * Tq <= 0) return LOOM_OK;
        unsigned th = loom__cu_reduce_threads(Tk);
        return loom__cu_launch(o, attention_grad_q_k<T>, dim3((unsigned)(BH * Tq)), th, attn_smem(th, D), pq, pk,
                               pv, po, pdy, plse, loom__cu_ptr<T>(o, t), Tq, Tk, D, causal, scale);
    }
    if (BH * Tk <= 0) return LOOM_OK;
    unsigned th = loom__cu_reduce_threads(Tq);
    return loom__cu_launch(o, attention_grad_kv_k<T>, dim3((unsigned)(BH * Tk)), th, attn_smem(th, D), pq, pk, pv,
                           po, pdy, plse, loom__cu_ptr<T>(o, t), Tq, Tk, D, causal, (int)(which == LOOM_K_ATTN_DK),
                           scale);
}

template <typename T>
static loom_status run_mask(loom__cu_op *o) {
    const loom_tensor *y = o->t;
    int64_t n = loom_tensor_numel(y);
    if (n <= 0) return LOOM_OK;
    return loom__cu_launch(o, causal_mask_k<T>, loom__cu_grid1d(n), LOOM__CU_THREADS, 0,
                           loom__cu_ptr<T>(o, y->src[0]), loom__cu_ptr<T>(o, y), n, y->dims[y->ndim - 2],
                           y->dims[y->ndim - 1], (float)y->f[LOOM_F_CAUSAL_VALUE]);
}

loom_status loom__cu_attention(loom__cu_op *o) {
    loom_status st = check_d(o);
    return st != LOOM_OK ? st : LOOM_CU_DISPATCH(o->t->dtype, run_fwd, o);
}
loom_status loom__cu_attention_grad(loom__cu_op *o) {
    loom_status st = check_d(o);
    return st != LOOM_OK ? st : LOOM_CU_DISPATCH(o->t->dtype, run_grad, o);
}
loom_status loom__cu_causal_mask(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_mask, o); }
