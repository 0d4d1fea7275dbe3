/* backends/cuda/ops/resize.cu — resize_u8 (core/ops/resize.c), a port of
 * backends/opencl/kernels/resize.cl (as backends/cpu/ops/resize.c bit for
 * bit: integer sums of the table's fixed-point weights, wrapping as the
 * CPU's u32, an arithmetic shift and a clamp to u8). The width pass into a
 * u8 scratch (one thread per pixel of it), then the height pass (one per
 * output pixel). */
#include "../common.cuh"

/* row i of the table: its first index clamped into [0, n), its count into
 * [0, span] and to the inputs left; returns the row's weights */
__device__ static const int *resize_tap_row(const int *taps, int64_t i, int span, int n, int *first, int *count) {
    const int *r = taps + i * (2 + span);
    int f = min(max(r[0], 0), n - 1), k = min(max(r[1], 0), span);
    *first = f, *count = min(k, n - f);
    return r + 2;
}

/* a sum started at 1 << (F - 1), to u8 */
__device__ static uint8_t resize_fix_u8(unsigned acc) {
    int a = (int)acc >> LOOM_K_RESIZE_FIX_BITS;
    return (uint8_t)(a < 0 ? 0 : a > 255 ? 255 : a);
}

/* x (N, H, W, C) u8, taps (OH + OW, 2 + S) i32 -> tmp (N, H, OW, C) u8; total = N H OW */
__global__ void resize_w_k(const uint8_t *x, const int *taps, uint8_t *tmp, int64_t total, int c, int w, int oh,
                           int ow, int span) {
    int64_t i = gid1();
    if (i >= total) return;
    int64_t r = i / ow;
    int ox = (int)(i % ow), first, count;
    const int *wt = resize_tap_row(taps, oh + ox, span, w, &first, &count);
    const uint8_t *s = x + (r * w + first) * c;
    for (int k = 0; k < c; k++) {
        unsigned acc = 1u << (LOOM_K_RESIZE_FIX_BITS - 1);
        for (int t = 0; t < count; t++) acc += (unsigned)wt[t] * (unsigned)s[t * c + k];
        tmp[i * c + k] = resize_fix_u8(acc);
    }
}

/* tmp (N, H, OW, C) u8, taps (OH + OW, 2 + S) i32 -> y (N, OH, OW, C) u8; total = N OH OW */
__global__ void resize_h_k(const uint8_t *tmp, const int *taps, uint8_t *y, int64_t total, int c, int h, int oh, int ow,
                           int span) {
    int64_t i = gid1();
    if (i >= total) return;
    int64_t r = i / ow, n = r / oh;
    int ox = (int)(i % ow), oy = (int)(r % oh), first, count;
    const int *wt = resize_tap_row(taps, oy, span, h, &first, &count);
    const uint8_t *s = tmp + ((n * h + first) * ow + ox) * c;
    int64_t stride = (int64_t)ow * c;
    for (int k = 0; k < c; k++) {
        unsigned acc = 1u << (LOOM_K_RESIZE_FIX_BITS - 1);
        for (int t = 0; t < count; t++) acc += (unsigned)wt[t] * (unsigned)s[t * stride + k];
        y[i * c + k] = resize_fix_u8(acc);
    }
}

loom_status loom__cu_resize_u8(loom__cu_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0], *taps = y->src[1];
    int64_t n = x->dims[0], h = x->dims[1], w = x->dims[2], c = x->dims[3], oh = y->dims[1], ow = y->dims[2];
    int64_t tmp_n = n * h * ow * c;
    int span = (int)(taps->dims[1] - 2);
    uint8_t *tmp;
    loom_status st = loom__cu_scratch(o, (size_t)(tmp_n > 0 ? tmp_n : 1), (void **)&tmp);
    if (st != LOOM_OK) return st;
    const int *tp = loom__cu_ptr<int>(o, taps);
    if ((st = loom__cu_launch(o, resize_w_k, loom__cu_grid1d(n * h * ow), LOOM__CU_THREADS, 0,
                              loom__cu_ptr<uint8_t>(o, x), tp, tmp, n * h * ow, (int)c, (int)w, (int)oh, (int)ow,
                              span)) != LOOM_OK)
        return st;
    return loom__cu_launch(o, resize_h_k, loom__cu_grid1d(n * oh * ow), LOOM__CU_THREADS, 0, (const uint8_t *)tmp, tp,
                           loom__cu_ptr<uint8_t>(o, y), n * oh * ow, (int)c, (int)h, (int)oh, (int)ow, span);
}
