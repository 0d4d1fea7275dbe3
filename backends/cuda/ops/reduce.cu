/* backends/cuda/ops/reduce.cu — sum and mean over an axes mask (p[LOOM_P_REDUCE_MASK]), a
 * port of backends/opencl/kernels/reduce.cl (as backends/cpu/ops/reduce.c
 * but accumulated in float): one block per output element, each thread
 * striding over the reduced elements, then a tree; where each output's
 * values are one contiguous run (the reduced axes are x's trailing ones),
 * the run in chunks instead, one block each with no index arithmetic per
 * element, then each output's chunk sums in order (reduce_flat_k,
 * reduce_parts_k; loom__reduce_chunks, as the OpenCL and Vulkan backends). */
#include "../common.cuh"

/* the offset in x of output o's first reduced element (its kept indices' strides) */
__device__ __forceinline__ int64_t reduce_base(const loom__cu_tab<23> &g, int64_t o) {
    int64_t base = 0, r = o;
    for (int i = (int)g.v[0] - 1; i >= 0; i--) {
        base += (r % g.v[1 + i]) * g.v[6 + i];
        r /= g.v[1 + i];
    }
    return base;
}

/* y (nout) from x; g = {nkeep, kdims[5], kstr[5], nred, rdims[5], rstr[5], rcount}:
 * kept and reduced axes with their element strides in x */
template <typename T>
__global__ void reduce_k(loom__cu_tab<23> g, const T *x, T *y, float div) {
    int64_t o = blockIdx.x;
    int nred = (int)g.v[11];
    int64_t base = reduce_base(g, o);
    int64_t rcount = g.v[22];
    float acc = 0.0f;
    for (int64_t c = threadIdx.x; c < rcount; c += blockDim.x) {
        int64_t off = base, q = c;
        for (int i = nred - 1; i >= 0; i--) {
            off += (q % g.v[12 + i]) * g.v[17 + i];
            q /= g.v[12 + i];
        }
        acc += ldf(x[off]);
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0) st(y, o, acc / div);
}

/* block b = o*S + si sums chunk si (`chunk` values) of output o's contiguous run; S = 1: y[o] = the
 * sum / div, else part[b] = the sum */
template <typename T>
__global__ void reduce_flat_k(loom__cu_tab<23> g, const T *x, float *part, T *y, int64_t S, int64_t chunk, float div) {
    int64_t b = blockIdx.x, o = b / S, si = b % S, base = reduce_base(g, o);
    int64_t lo = si * chunk, hi = lo + chunk < g.v[22] ? lo + chunk : g.v[22];
    float acc = 0.0f;
    for (int64_t c = lo + threadIdx.x; c < hi; c += blockDim.x) acc += ldf(x[base + c]);
    acc = block_sum(acc);
    if (threadIdx.x != 0) return;
    if (S == 1) st(y, o, acc / div);
    else part[b] = acc;
}

/* y[o] = (the sum in order of part[o*S ..], S of them) / div; one thread per output */
template <typename T>
__global__ void reduce_parts_k(const float *part, T *y, int64_t S, int64_t nout, float div) {
    int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= nout) return;
    float t = 0.0f;
    for (int64_t si = 0; si < S; si++) t += part[o * S + si];
    st(y, o, t / div);
}

template <typename T>
static loom_status run_reduce(loom__cu_op *o, bool mean) {
    const loom_tensor *y = o->t, *x = y->src[0];
    loom__cu_tab<23> g = {};
    int64_t rcount = loom__reduce_table(y, g.v);
    int64_t nout = loom_tensor_numel(y);
    if (nout <= 0) return LOOM_OK;
    float div = mean ? (float)rcount : 1.0f;
    int64_t chunk, S = loom__reduce_chunks(g.v, &chunk);
    if (S > 0) {
        float *part = NULL;
        loom_status s;
        if (S > 1 && (s = loom__cu_scratch(o, (size_t)(nout * S) * sizeof(float), (void **)&part)) != LOOM_OK) return s;
        unsigned th = loom__cu_reduce_threads(chunk);
        if ((s = loom__cu_launch(o, reduce_flat_k<T>, dim3((unsigned)(nout * S)), th, loom__cu_smem(th), g,
                                 loom__cu_ptr<T>(o, x), part, loom__cu_ptr<T>(o, y), S, chunk, div)) != LOOM_OK ||
            S == 1)
            return s;
        return loom__cu_launch(o, reduce_parts_k<T>, dim3((unsigned)((nout + 255) / 256)), 256, 0, (const float *)part,
                               loom__cu_ptr<T>(o, y), S, nout, div);
    }
    unsigned th = loom__cu_reduce_threads(rcount);
    return loom__cu_launch(o, reduce_k<T>, dim3((unsigned)nout), th, loom__cu_smem(th), g, loom__cu_ptr<T>(o, x),
                           loom__cu_ptr<T>(o, y), div);
}

loom_status loom__cu_sum(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_reduce, o, false); }
loom_status loom__cu_mean(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_reduce, o, true); }
