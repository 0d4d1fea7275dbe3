/* backends/cuda/ops/softmax.cu — softmax, log_softmax and their gradient
 * ops over the last axis, a port of backends/opencl/kernels/softmax.cl (as
 * backends/cpu/ops/softmax.c; row sums in float, a tree per row): one block
 * per row of C elements. */
#include "../common.cuh"

/* x, dy, y viewed as (R, C); x is the forward output y for the gradient kinds */
template <typename T>
__global__ void softmax_k(const T *x, const T *dy, T *y, int64_t C, int kind) {
    int64_t r = blockIdx.x;
    int l = threadIdx.x, nl = blockDim.x;
    x += r * C, dy += r * C, y += r * C;
    if (kind == LOOM_K_SOFTMAX || kind == LOOM_K_LOG_SOFTMAX) {
        float m = ldf(x[0]);
        for (int64_t c = l; c < C; c += nl) m = ldf(x[c]) > m ? ldf(x[c]) : m;
        m = block_max(m);
        float se = 0.0f;
        for (int64_t c = l; c < C; c += nl) se += expf(ldf(x[c]) - m);
        se = block_sum(se);
        if (kind == LOOM_K_SOFTMAX) { /* y = exp(x - max) / sum exp(x - max) */
            float inv = 1.0f / se;
            for (int64_t c = l; c < C; c += nl) st(y, c, expf(ldf(x[c]) - m) * inv);
        } else { /* y = x - max - log sum exp(x - max) */
            float lse = m + logf(se);
            for (int64_t c = l; c < C; c += nl) st(y, c, ldf(x[c]) - lse);
        }
    } else if (kind == LOOM_K_SOFTMAX_GRAD) { /* dx = y (dy - sum(dy y)) */
        float d = 0.0f;
        for (int64_t c = l; c < C; c += nl) d += ldf(dy[c]) * ldf(x[c]);
        d = block_sum(d);
        for (int64_t c = l; c < C; c += nl) st(y, c, ldf(x[c]) * (ldf(dy[c]) - d));
    } else { /* dx = dy - exp(y) sum(dy) */
        float d = 0.0f;
        for (int64_t c = l; c < C; c += nl) d += ldf(dy[c]);
        d = block_sum(d);
        for (int64_t c = l; c < C; c += nl) st(y, c, ldf(dy[c]) - expf(ldf(x[c])) * d);
    }
}

template <typename T>
static loom_status run(loom__cu_op *o, int kind) {
    const loom_tensor *t = o->t;
    int64_t C = t->dims[t->ndim - 1], R = C ? loom_tensor_numel(t) / C : 0;
    if (R <= 0 || C <= 0) return LOOM_OK;
    unsigned th = loom__cu_reduce_threads(C);
    return loom__cu_launch(o, softmax_k<T>, dim3((unsigned)R), th, loom__cu_smem(th), loom__cu_ptr<T>(o, t->src[0]),
                           loom__cu_ptr<T>(o, kind >= LOOM_K_SOFTMAX_GRAD ? t->src[1] : t->src[0]),
                           loom__cu_ptr<T>(o, t), C, kind);
}

loom_status loom__cu_softmax(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run, o, LOOM_K_SOFTMAX); }
loom_status loom__cu_log_softmax(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run, o, LOOM_K_LOG_SOFTMAX); }
loom_status loom__cu_softmax_grad(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run, o, LOOM_K_SOFTMAX_GRAD); }
loom_status loom__cu_log_softmax_grad(loom__cu_op *o) {
    return LOOM_CU_DISPATCH(o->t->dtype, run, o, LOOM_K_LOG_SOFTMAX_GRAD);
}
