/* backends/cuda/ops/embedding.cu — embedding lookup and its scatter-add
 * gradient, a port of backends/opencl/kernels/embedding.cl (as
 * backends/cpu/ops/embedding.c). An index outside [0, V) is reported through
 * the error slot (first bad position, atomicMin), with the CPU's message, and
 * never read or written. The gradient runs one thread per column d, summing
 * the positions in order: deterministic, no atomics; 16-bit outputs
 * accumulate in an f32 scratch first, as the CPU's 16-bit wrapper does. */
#include "../common.cuh"

/* y (n, D) = w (V, D) rows idx (n) */
template <typename T>
__global__ void embedding_k(const T *w, const int *idx, T *y, int64_t n, int64_t D, int64_t V, int32_t *err) {
    int64_t i = gid1();
    if (i >= n * D) return;
    int64_t k = i / D, d = i % D;
    int v = idx[k];
    if (v < 0 || v >= V) {
        if (d == 0) atomicMin(err, (int)k);
        st(y, i, 0.0f);
        return;
    }
    y[i] = w[(int64_t)v * D + d];
}

/* acc (V, D) f32 = 0, then acc[idx[k], d] += dy[k, d] for k in order; column d per thread */
template <typename T>
__global__ void embedding_grad_k(const T *dy, const int *idx, float *acc, int64_t n, int64_t D, int64_t V,
                                 int32_t *err) {
    int64_t d = gid1();
    if (d >= D) return;
    for (int64_t v = 0; v < V; v++) acc[v * D + d] = 0.0f;
    for (int64_t k = 0; k < n; k++) {
        int v = idx[k];
        if (v < 0 || v >= V) {
            if (d == 0) atomicMin(err, (int)k);
            continue;
        }
        acc[(int64_t)v * D + d] += ldf(dy[k * D + d]);
    }
}

/* y (n) = acc (n) rounded to the storage dtype */
template <typename T>
__global__ void embedding_grad_store(const float *acc, T *y, int64_t n) {
    int64_t i = gid1();
    if (i >= n) return;
    st(y, i, acc[i]);
}

/* the first bad position k: read its index back, name it as a multi-index */
static loom_status idx_check(loom__cu *cu, const loom_plan *p, const loom_tensor *t, int32_t k) {
    const loom_tensor *it = t->src[1];
    int64_t V = t->op == LOOM_OP_EMBEDDING ? t->src[0]->dims[0] : t->p[LOOM_P_EMB_V];
    int32_t v = 0;
    cudaError_t e = cudaMemcpy(&v, (const int32_t *)loom__cu_addr(p, it) + k, sizeof v, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) return loom__cu_fail(cu->ctx, e, "cudaMemcpy(bad index)", __FILE__, __LINE__);
    int64_t c[LOOM_MAX_DIMS], r = k;
    for (int d = it->ndim - 1; d >= 0; d--) c[d] = r % it->dims[d], r /= it->dims[d];
    char pos[96];
    loom__shape_str(it->ndim, c, pos, sizeof pos);
    return loom__err(cu->ctx, LOOM_ERR_INVALID_ARG, "%s: index %d at position %s of '%s' is out of range [0, %lld) (node '%s')",
                     loom_op_name(t->op), v, pos, it->name, (long long)V, t->name);
}

template <typename T>
static loom_status run(loom__cu_op *o) {
    const loom_tensor *y = o->t, *w = y->src[0], *it = y->src[1];
    int64_t n = loom_tensor_numel(it), D = w->dims[1];
    int32_t *err = loom__cu_err_slot(o);
    o->node->check = idx_check;
    return loom__cu_launch(o, embedding_k<T>, loom__cu_grid1d(n * D), LOOM__CU_THREADS, 0, loom__cu_ptr<T>(o, w),
                           loom__cu_ptr<int>(o, it), loom__cu_ptr<T>(o, y), n, D, w->dims[0], err);
}

template <typename T>
static loom_status run_grad(loom__cu_op *o) {
    const loom_tensor *y = o->t, *dy = y->src[0], *it = y->src[1];
    int64_t n = loom_tensor_numel(it), V = y->p[LOOM_P_EMB_V], D = y->dims[1];
    bool f32 = y->dtype == LOOM_F32;
    int32_t *err = loom__cu_err_slot(o);
    o->node->check = idx_check;
    float *acc = (float *)loom__cu_addr(o->plan, y); /* f32: accumulate straight into y */
    loom_status st;
    if (!f32 && (st = loom__cu_scratch(o, (size_t)(V * D) * sizeof(float), (void **)&acc)) != LOOM_OK) return st;
    if ((st = loom__cu_launch(o, embedding_grad_k<T>, loom__cu_grid1d(D), LOOM__CU_THREADS, 0, loom__cu_ptr<T>(o, dy),
                              loom__cu_ptr<int>(o, it), acc, n, D, V, err)) != LOOM_OK ||
        f32)
        return st;
    return loom__cu_launch(o, embedding_grad_store<T>, loom__cu_grid1d(V * D), LOOM__CU_THREADS, 0, (const float *)acc,
                           loom__cu_ptr<T>(o, y), V * D);
}

loom_status loom__cu_embedding(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run, o); }
loom_status loom__cu_embedding_grad(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_grad, o); }
