/* backends/opencl/kernels/dropout.cl — inverted dropout with the mask of
 * core/ops/dropout.c: element i is kept iff (w[i % 4] >> 8) >= thr, w =
 * Philox(seed, stream, ctr_hi | i / 4), ctr_hi = (step mod 2^24) << 40. One
 * work-item per block of 4 elements (dropout8: 8 blocks). May run in place. */

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

/* dropout with 8 Philox blocks per item in uint8 lanes (CPU devices: PoCL ran the one-block items
 * without vectorizing them); the same mask and values; blocks past n / 4 element by element */
__kernel void dropout8(__global const T *x, ulong xo, __global T *y, ulong yo, long n, ulong seed, ulong stream,
                       ulong ctr_hi, uint thr, float scale) {
    long b0 = 8 * get_global_id(0);
    if (4 * b0 >= n) return;
    x += xo, y += yo;
    uint8 c0 = (uint8)((uint)(ctr_hi | (ulong)b0)) + (uint8)(0, 1, 2, 3, 4, 5, 6, 7);
    uint8 c1 = (uint8)((uint)((ctr_hi | (ulong)b0) >> 32)), c2 = (uint8)((uint)stream), c3 = (uint8)((uint)(stream >> 32));
    uint kx = (uint)seed, ky = (uint)(seed >> 32);
    PHILOX_ROUNDS(uint8, c0, c1, c2, c3, kx, ky)
    uint w[4][8];
    vstore8(c0, 0, w[0]), vstore8(c1, 0, w[1]), vstore8(c2, 0, w[2]), vstore8(c3, 0, w[3]);
    for (int j = 0; j < 8; j++) {
        long i0 = 4 * (b0 + j);
        if (i0 + 4 <= n) {
            float4 v = LD4(x, i0);
            int4 keep = (int4)(w[0][j] >> 8, w[1][j] >> 8, w[2][j] >> 8, w[3][j] >> 8) >= (int4)((int)thr);
            ST4(y, i0, select((float4)(0.0f), v * scale, keep));
        } else {
            for (long k = 0; i0 + k < n; k++) ST(y, i0 + k, (w[k][j] >> 8) >= thr ? LD(x, i0 + k) * scale : 0.0f);
        }
    }
}
