/* shaders/resize.comp — resize_u8 (core/ops/resize.c), as
 * backends/cpu/ops/resize.c bit for bit: integer sums of the table's
 * fixed-point weights (uint, wrapping as the CPU's u32), an arithmetic shift
 * and a clamp to u8. Two kernels, no barriers: K_RESIZE_W (one invocation
 * per pixel of the width pass, every channel) and K_RESIZE_H (one per output
 * pixel, every channel). */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#if defined(K_RESIZE_W)
/* x (N, H, W, C) u8, taps (OH + OW, 2 + S) i32 -> tmp (N, H, OW, C) u8;
 * total = N H OW */
TENSOR_IN(0, uint8_t, x);
TENSOR_IN(1, int, taps);
TENSOR_OUT(2, uint8_t, tmp);
PUSH { uint xo, to, total, c, h, w, oh, ow, span; } pc;
#else
/* tmp (N, H, OW, C) u8, taps (OH + OW, 2 + S) i32 -> y (N, OH, OW, C) u8;
 * total = N OH OW */
TENSOR_IN(0, uint8_t, tmp);
TENSOR_IN(1, int, taps);
TENSOR_OUT(2, uint8_t, y);
PUSH { uint to, yo, total, c, h, w, oh, ow, span; } pc;
#endif

/* row i of the table: its first index clamped into [0, n), its count into
 * [0, span] and to the inputs left; returns the row's first weight index */
uint tap_row(uint i, uint n, out uint first, out uint count) {
    uint r = pc.to + i * (2u + pc.span);
    int f = taps[r], k = taps[r + 1u];
    first = uint(clamp(f, 0, int(n) - 1));
    count = uint(clamp(k, 0, int(pc.span)));
    count = min(count, n - first);
    return r + 2u;
}

/* a sum started at 1 << (F - 1), to u8 */
uint fix_u8(uint acc) { return uint(clamp(int(acc) >> LOOM_K_RESIZE_FIX_BITS, 0, 255)); }

void main() {
    uint i = loom_gid();
    if (i >= pc.total) return;
    uint ox = i % pc.ow, r = i / pc.ow, first, count;
#if defined(K_RESIZE_W)
    uint wt = tap_row(pc.oh + ox, pc.w, first, count);
    uint s = pc.xo + (r * pc.w + first) * pc.c;
    for (uint k = 0u; k < pc.c; k++) {
        uint acc = 1u << (LOOM_K_RESIZE_FIX_BITS - 1);
        for (uint t = 0u; t < count; t++) acc += uint(taps[wt + t]) * uint(x[s + t * pc.c + k]);
        tmp[i * pc.c + k] = uint8_t(fix_u8(acc));
    }
#else
    uint n = r / pc.oh, oy = r % pc.oh;
    uint wt = tap_row(oy, pc.h, first, count);
    uint s = ((n * pc.h + first) * pc.ow + ox) * pc.c, stride = pc.ow * pc.c;
    for (uint k = 0u; k < pc.c; k++) {
        uint acc = 1u << (LOOM_K_RESIZE_FIX_BITS - 1);
        for (uint t = 0u; t < count; t++) acc += uint(taps[wt + t]) * uint(tmp[s + t * stride + k]);
        y[pc.yo + i * pc.c + k] = uint8_t(fix_u8(acc));
    }
#endif
}
