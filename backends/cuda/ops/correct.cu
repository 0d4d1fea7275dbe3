/* backends/cuda/ops/correct.cu — correct_count (semantics in
 * core/ops/correct.c), a port of backends/opencl/kernels/correct.cl (as
 * backends/cpu/ops/correct.c): one block; each thread takes rows l, l + nl,
 * ..., finds the first maximum of the row and compares it with the target;
 * the counts are summed over the block (integers: exact in f32). The logits
 * may be f32, f16 or bf16 (ld_any), the count is f32. */
#include "../common.cuh"

__global__ void correct_count_k(const unsigned char *x, int xdt, const int *tg, float *y, int64_t N, int64_t C) {
    int l = threadIdx.x, nl = blockDim.x;
    float cnt = 0.0f;
    for (int64_t i = l; i < N; i += nl) {
        int64_t best = 0;
        float bv = ld_any(x, xdt, i * C);
        for (int64_t c = 1; c < C; c++) {
            float v = ld_any(x, xdt, i * C + c);
            if (v > bv) bv = v, best = c;
        }
        cnt += tg[i] == best ? 1.0f : 0.0f;
    }
    cnt = block_sum(cnt);
    if (l == 0) y[0] = cnt;
}

loom_status loom__cu_correct_count(loom__cu_op *o) {
    const loom_tensor *t = o->t, *x = t->src[0], *tg = t->src[1];
    if (x->dtype == LOOM_F64)
        return loom__err(o->cu->ctx, LOOM_ERR_UNSUPPORTED, "cuda: correct_count of f64 '%s': no f64 (node '%s')",
                         x->name, t->name);
    int64_t N = x->dims[0], C = x->dims[1];
    unsigned th = loom__cu_reduce_threads(N);
    return loom__cu_launch(o, correct_count_k, 1, th, loom__cu_smem(th), loom__cu_ptr<const unsigned char>(o, x),
                           (int)x->dtype, loom__cu_ptr<const int>(o, tg), loom__cu_ptr<float>(o, t), N, C);
}
