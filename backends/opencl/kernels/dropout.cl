/* backends/opencl/kernels/dropout.cl — inverted dropout with the mask of
 * core/ops/dropout.c: element i is kept iff (w[i % 4] >> 8) >= thr, w =
 * Philox(seed, stream, ctr_hi | i / 4), ctr_hi = (step mod 2^24) << 40. One
 * work-item per block of 4 elements. May run in place. */

/* x, y (n) flat */
__kernel void dropout(__global const T *x, ulong xo, __global T *y, ulong yo, long n, ulong seed, ulong stream,
                      ulong ctr_hi, uint thr, float scale) {
    long b = get_global_id(0);
    if (4 * b >= n) return;
    x += xo, y += yo;
    uint4 w4 = philox(seed, stream, ctr_hi | (ulong)b);
    uint w[4] = {w4.x, w4.y, w4.z, w4.w};
    long i0 = 4 * b, m = n - i0 < 4 ? n - i0 : 4;
    for (long k = 0; k < m; k++) ST(y, i0 + k, (w[k] >> 8) >= thr ? LD(x, i0 + k) * scale : 0.0f);
}
