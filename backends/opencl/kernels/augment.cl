/* backends/opencl/kernels/augment.cl — augment_u8 (core/ops/augment.c), as
 * backends/cpu/ops/augment.c bit for bit: integer indexing, one f32 product
 * (brightness; contraction is off) and the table lookup. One work-item per
 * output element (n, k, y, x). */

/* x (N, H, W, C) u8, prm (N, LOOM_G_AUG_COUNT) i32, lut (C, 256) f32, y (N, C, OH, OW) */
__kernel void augment_u8(__global const uchar *x, ulong xo, __global const int *prm, ulong po,
                         __global const float *lut, ulong lo, __global T *y, ulong yo, long total, int c, int h, int w,
                         int oh, int ow, int fill) {
    long i = get_global_id(0);
    if (i >= total) return;
    int ox = (int)(i % ow), oy = (int)((i / ow) % oh), k = (int)((i / ((long)ow * oh)) % c);
    long n = i / ((long)ow * oh * c);
    __global const int *p = prm + po + n * LOOM_G_AUG_COUNT;
    int sy = p[LOOM_G_AUG_ROW0] + p[LOOM_G_AUG_RSTEP] * oy, sx = p[LOOM_G_AUG_COL0] + p[LOOM_G_AUG_CSTEP] * ox;
    uint u = (uint)fill;
    int y0 = max(p[LOOM_G_AUG_Y0], 0), y1 = min(p[LOOM_G_AUG_Y1], h);
    int x0 = max(p[LOOM_G_AUG_X0], 0), x1 = min(p[LOOM_G_AUG_X1], w);
    if (sy >= y0 && sy < y1 && sx >= x0 && sx < x1) u = x[xo + (((n * h + sy) * w + sx) * c + k)];
    if (p[LOOM_G_AUG_BRIGHT] != 0) {
        float r = (float)u * as_float(p[LOOM_G_AUG_BFACTOR]);
        r = r > 0.0f ? r : 0.0f;
        r = r < 255.0f ? r : 255.0f;
        u = (uint)r;
    }
    ST(y + yo, i, lut[lo + k * 256 + u]);
}
