/* backends/cuda/ops/amp.cu — the loss-scaling ops (semantics in
 * core/ops/amp.c), a port of backends/opencl/kernels/amp.cl (as
 * backends/cpu/ops/amp.c). The scaler's state is f32; the scanned gradient
 * may be f32, f16 or bf16. Non-finite means all exponent bits set (inf or
 * NaN), tested on the bits so no compiler option can assume finite math. */
#include "../common.cuh"

/* the hyper layout (core/optim_impl.h; ops/optim.cu uses the same) */

__device__ __forceinline__ bool nonfinite(float v) { return (__float_as_uint(v) & 0x7f800000u) == 0x7f800000u; }

/* y () = prev (or 0): the start of amp_found_inf, before amp_found_scan */
__global__ void amp_found_init(const float *prev, int has_prev, float *y) {
    if (gid1() == 0) y[0] = has_prev ? prev[0] : 0.0f;
}

/* x (n) of dtype xdt: a thread holding a non-finite element raises y to
 * prev + 1 (atomicMax on the bits: positive floats order as their bits) */
__global__ void amp_found_scan(const unsigned char *x, int xdt, int64_t n, const float *prev, int has_prev, float *y) {
    int64_t i = gid1();
    if (i >= n) return;
    float v = ld_any(x, xdt, i);
    if (!nonfinite(v)) return;
    float raised = (has_prev ? prev[0] : 0.0f) + 1.0f;
    atomicMax((int *)y, __float_as_int(raised));
}

/* y (8) = hyper with gmult / scale; apply -> -1 when found on an applying step */
__global__ void amp_unscale_k(const float *hy, const float *scale, const float *found, float *y) {
    int64_t i = gid1();
    if (i >= 8) return;
    float v = hy[i];
    if (i == LOOM_G_HYPER_GMULT) v = v / scale[0];
    if (i == LOOM_G_HYPER_APPLY && found[0] != 0.0f && v != 0.0f) v = -1.0f;
    y[i] = v;
}

/* on applying steps: back off after a non-finite step, grow after `interval` finite ones */
__global__ void amp_scaler_update_k(float *scale, float *tracker, float *skipped, const float *found, const float *hy,
                                    float *y, float growth, float backoff, float interval) {
    if (gid1() != 0) return;
    y[0] = 0.0f;
    if (hy[LOOM_G_HYPER_APPLY] == 0.0f) return;
    if (found[0] != 0.0f) {
        scale[0] = scale[0] * backoff;
        tracker[0] = 0.0f;
        skipped[0] = skipped[0] + 1.0f;
    } else {
        float t = tracker[0] + 1.0f;
        if (t >= interval) {
            float grown = scale[0] * growth;
            if (!nonfinite(grown)) scale[0] = grown;
            t = 0.0f;
        }
        tracker[0] = t;
    }
}

static float *F(const loom__cu_op *o, const loom_tensor *t) { return loom__cu_ptr<float>(o, t); }

loom_status loom__cu_amp_found_inf(loom__cu_op *o) {
    const loom_tensor *t = o->t, *x = t->src[0];
    if (x->dtype == LOOM_F64)
        return loom__err(o->cu->ctx, LOOM_ERR_UNSUPPORTED, "cuda: amp_found_inf of f64 '%s': no f64 (node '%s')",
                         x->name, t->name);
    int has_prev = t->nsrc > 1;
    const loom_tensor *prev = has_prev ? t->src[1] : t; /* unused when absent */
    loom_status st = loom__cu_launch(o, amp_found_init, 1, 32, 0, (const float *)F(o, prev), has_prev, F(o, t));
    int64_t n = loom_tensor_numel(x);
    if (st != LOOM_OK || n <= 0) return st;
    return loom__cu_launch(o, amp_found_scan, loom__cu_grid1d(n), LOOM__CU_THREADS, 0,
                           loom__cu_ptr<const unsigned char>(o, x), (int)x->dtype, n, (const float *)F(o, prev),
                           has_prev, F(o, t));
}

loom_status loom__cu_amp_unscale(loom__cu_op *o) {
    const loom_tensor *t = o->t;
    return loom__cu_launch(o, amp_unscale_k, 1, 32, 0, (const float *)F(o, t->src[0]), (const float *)F(o, t->src[1]),
                           (const float *)F(o, t->src[2]), F(o, t));
}

loom_status loom__cu_amp_scaler_update(loom__cu_op *o) {
    const loom_tensor *t = o->t;
    return loom__cu_launch(o, amp_scaler_update_k, 1, 32, 0, F(o, t->src[0]), F(o, t->src[1]), F(o, t->src[2]),
                           (const float *)F(o, t->src[3]), (const float *)F(o, t->src[4]), F(o, t),
                           (float)t->f[LOOM_F_AMP_GROWTH], (float)t->f[LOOM_F_AMP_BACKOFF],
                           (float)t->p[LOOM_P_AMP_INTERVAL]);
}
