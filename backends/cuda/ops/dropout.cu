/* backends/cuda/ops/dropout.cu — inverted dropout with the mask of
 * core/ops/dropout.c (a port of backends/opencl/kernels/dropout.cl): element
 * i is kept iff (w[i % 4] >> 8) >= thr, w = Philox(seed, stream, ctr_hi |
 * i / 4), ctr_hi = (step mod 2^24) << 40. The step changes every run, so the
 * kernel reads it from the plan's device step value (loom__cu_step_value),
 * never from its arguments (the CUDA graph replays those). One thread per
 * block of 4 elements. May run in place. */
#include <math.h>

#include "../common.cuh"

/* x, y (n) flat */
template <typename T>
__global__ void dropout_k(const T *x, T *y, int64_t n, uint64_t seed, uint64_t stream, const uint64_t *step,
                          unsigned thr, float scale) {
    int64_t b = gid1();
    if (4 * b >= n) return;
    uint64_t ctr_hi = (*step & ((1ull << 24) - 1)) << 40;
    uint4 w4 = philox(seed, stream, ctr_hi | (uint64_t)b);
    unsigned w[4] = {w4.x, w4.y, w4.z, w4.w};
    int64_t i0 = 4 * b, m = n - i0 < 4 ? n - i0 : 4;
    for (int64_t k = 0; k < m; k++) st(y, i0 + k, (w[k] >> 8) >= thr ? ldf(x[i0 + k]) * scale : 0.0f);
}

template <typename T>
static loom_status run(loom__cu_op *o) {
    const loom_tensor *t = o->t;
    double p = t->f[LOOM_F_DROP_P];
    int64_t n = loom_tensor_numel(t), blocks = (n + 3) / 4;
    return loom__cu_launch(o, dropout_k<T>, loom__cu_grid1d(blocks), LOOM__CU_THREADS, 0, loom__cu_ptr<T>(o, t->src[0]),
                           loom__cu_ptr<T>(o, t), n, (uint64_t)o->plan->g->seed, (uint64_t)t->p[LOOM_P_DROP_STREAM],
                           loom__cu_step_value(o), (unsigned)ceil(p * 16777216.0), (float)(1.0 / (1.0 - p)));
}

loom_status loom__cu_dropout(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run, o); }
