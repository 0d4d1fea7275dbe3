/* backends/opencl/kernels/resize.cl — resize_u8 (core/ops/resize.c), as
 * backends/cpu/ops/resize.c bit for bit: integer sums of the table's
 * fixed-point weights (uint, wrapping as the CPU's u32), an arithmetic shift
 * and a clamp to u8. Two kernels, no barriers: resize_u8_w (one work-item
 * per pixel of the width pass, every channel) and resize_u8_h (one per
 * output pixel, every channel). */

/* row i of the table: its first index clamped into [0, n), its count into
 * [0, span] and to the inputs left; returns the row's weights */
inline __global const int *resize_tap_row(__global const int *taps, long i, int span, int n, int *first, int *count) {
    __global const int *r = taps + i * (2 + span);
    int f = clamp(r[0], 0, n - 1), k = clamp(r[1], 0, span);
    *first = f, *count = min(k, n - f);
    return r + 2;
}

/* a sum started at 1 << (F - 1), to u8 */
inline uchar resize_fix_u8(uint acc) { return (uchar)clamp(as_int(acc) >> LOOM_K_RESIZE_FIX_BITS, 0, 255); }

/* x (N, H, W, C) u8, taps (OH + OW, 2 + S) i32 -> tmp (N, H, OW, C) u8; total = N H OW */
__kernel void resize_u8_w(__global const uchar *x, ulong xo, __global const int *taps, ulong to, __global uchar *tmp,
                          long total, int c, int h, int w, int oh, int ow, int span) {
    long i = get_global_id(0);
    if (i >= total) return;
    long r = i / ow;
    int ox = (int)(i % ow), first, count;
    __global const int *wt = resize_tap_row(taps + to, oh + ox, span, w, &first, &count);
    __global const uchar *s = x + xo + (r * w + first) * c;
    for (int k = 0; k < c; k++) {
        uint acc = 1u << (LOOM_K_RESIZE_FIX_BITS - 1);
        for (int t = 0; t < count; t++) acc += (uint)wt[t] * (uint)s[t * c + k];
        tmp[i * c + k] = resize_fix_u8(acc);
    }
}

/* tmp (N, H, OW, C) u8, taps (OH + OW, 2 + S) i32 -> y (N, OH, OW, C) u8; total = N OH OW */
__kernel void resize_u8_h(__global const uchar *tmp, __global const int *taps, ulong to, __global uchar *y, ulong yo,
                          long total, int c, int h, int w, int oh, int ow, int span) {
    long i = get_global_id(0);
    if (i >= total) return;
    long r = i / ow, n = r / oh;
    int ox = (int)(i % ow), oy = (int)(r % oh), first, count;
    __global const int *wt = resize_tap_row(taps + to, oy, span, h, &first, &count);
    __global const uchar *s = tmp + ((n * h + first) * ow + ox) * c;
    long stride = (long)ow * c;
    for (int k = 0; k < c; k++) {
        uint acc = 1u << (LOOM_K_RESIZE_FIX_BITS - 1);
        for (int t = 0; t < count; t++) acc += (uint)wt[t] * (uint)s[t * stride + k];
        y[yo + i * c + k] = resize_fix_u8(acc);
    }
}
