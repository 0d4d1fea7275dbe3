/* backends/opencl/kernels/amp.cl — the loss-scaling ops (core/ops/amp.c),
 * as backends/cpu/ops/amp.c. Non-finite means all exponent bits set (inf or
 * NaN), tested on the bits so no compiler option can assume finite math. */

/* the hyper layout (core/optim_impl.h; optim.cl defines the same) */

inline bool nonfinite(float v) { return (as_uint(v) & 0x7f800000u) == 0x7f800000u; }

/* y () = prev (or 0): the start of amp_found_inf, before amp_found_scan */
__kernel void amp_found_init(__global const float *prev, ulong po, int has_prev, __global float *y, ulong yo) {
    if (get_global_id(0) == 0) y[yo] = has_prev ? prev[po] : 0.0f;
}

/* x (n) of dtype xdt: an item holding a non-finite element raises y to
 * prev + 1 (atomic_max on the bits: positive floats order as their bits) */
__kernel void amp_found_scan(__global const uchar *x, ulong xo, int xdt, long n, __global const float *prev, ulong po,
                             int has_prev, __global float *y, ulong yo) {
    long i = get_global_id(0);
    if (i >= n) return;
    float v = ld_any(x + xo * (xdt == LOOM_K_DT_F32 ? 4 : 2), xdt, i);
    if (!nonfinite(v)) return;
    float raised = (has_prev ? prev[po] : 0.0f) + 1.0f;
    atomic_max((__global volatile int *)(y + yo), as_int(raised));
}

/* y (8) = hyper with gmult / scale; apply -> -1 when found on an applying step */
__kernel void amp_unscale(__global const float *hy, ulong ho, __global const float *scale, ulong so,
                          __global const float *found, ulong fo, __global float *y, ulong yo) {
    int i = get_global_id(0);
    if (i >= 8) return;
    float v = hy[ho + i];
    if (i == LOOM_G_HYPER_GMULT) v = v / scale[so];
    if (i == LOOM_G_HYPER_APPLY && found[fo] != 0.0f && v != 0.0f) v = -1.0f;
    y[yo + i] = v;
}

/* on applying steps: back off after a non-finite step, grow after `interval` finite ones */
__kernel void amp_scaler_update(__global float *scale, ulong so, __global float *tracker, ulong to,
                                __global float *skipped, ulong ko, __global const float *found, ulong fo,
                                __global const float *hy, ulong ho, __global float *y, ulong yo, float growth,
                                float backoff, float interval) {
    if (get_global_id(0) != 0) return;
    y[yo] = 0.0f;
    if (hy[ho + LOOM_G_HYPER_APPLY] == 0.0f) return;
    if (found[fo] != 0.0f) {
        scale[so] = scale[so] * backoff;
        tracker[to] = 0.0f;
        skipped[ko] = skipped[ko] + 1.0f;
    } else {
        float t = tracker[to] + 1.0f;
        if (t >= interval) {
            float grown = scale[so] * growth;
            if (!nonfinite(grown)) scale[so] = grown;
            t = 0.0f;
        }
        tracker[to] = t;
    }
}
