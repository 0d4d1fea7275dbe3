/* backends/cuda/ops/reduce.cu — sum and mean over an axes mask (p[LOOM_P_REDUCE_MASK]), a
 * port of backends/opencl/kernels/reduce.cl (as backends/cpu/ops/reduce.c
 * but accumulated in float): one block per output element, each thread
 * striding over the reduced elements, then a tree. */
#include "../common.cuh"

/* y (nout) from x; g = {nkeep, kdims[5], kstr[5], nred, rdims[5], rstr[5], rcount}:
 * kept and reduced axes with their element strides in x */
template <typename T>
__global__ void reduce_k(loom__cu_tab<23> g, const T *x, T *y, float div) {
    int64_t o = blockIdx.x;
    int nkeep = (int)g.v[0], nred = (int)g.v[11];
    int64_t base = 0, r = o;
    for (int i = nkeep - 1; i >= 0; i--) {
        base += (r % g.v[1 + i]) * g.v[6 + i];
        r /= g.v[1 + i];
    }
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

template <typename T>
static loom_status run_reduce(loom__cu_op *o, bool mean) {
    const loom_tensor *y = o->t, *x = y->src[0];
    loom__cu_tab<23> g = {};
    int64_t rcount = loom__reduce_table(y, g.v);
    int64_t nout = loom_tensor_numel(y);
    if (nout <= 0) return LOOM_OK;
    unsigned th = loom__cu_reduce_threads(rcount);
    return loom__cu_launch(o, reduce_k<T>, dim3((unsigned)nout), th, loom__cu_smem(th), g, loom__cu_ptr<T>(o, x),
                           loom__cu_ptr<T>(o, y), mean ? (float)rcount : 1.0f);
}

loom_status loom__cu_sum(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_reduce, o, false); }
loom_status loom__cu_mean(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_reduce, o, true); }
