/* shaders/augment.comp — augment_u8 (core/ops/augment.c), as
 * backends/cpu/ops/augment.c bit for bit: integer indexing, one f32 product
 * (brightness, `precise`: one rounding) and the table lookup. One invocation
 * per output element (n, k, y, x). */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

/* x (N, H, W, C) u8, prm (N, LOOM_G_AUG_COUNT) i32, lut (C, 256) f32, y (N, C, OH, OW) */
TENSOR_IN(0, uint8_t, x);
TENSOR_IN(1, int, prm);
TENSOR_IN(2, float, lut);
TENSOR_OUT(3, T, y);
PUSH { uint xo, po, lo, yo, total, c, h, w, oh, ow, fill; } pc;

void main() {
    uint i = loom_gid();
    if (i >= pc.total) return;
    uint ox = i % pc.ow, oy = (i / pc.ow) % pc.oh, k = (i / (pc.ow * pc.oh)) % pc.c, n = i / (pc.ow * pc.oh * pc.c);
    uint pb = pc.po + n * uint(LOOM_G_AUG_COUNT);
    int sy = prm[pb + uint(LOOM_G_AUG_ROW0)] + prm[pb + uint(LOOM_G_AUG_RSTEP)] * int(oy);
    int sx = prm[pb + uint(LOOM_G_AUG_COL0)] + prm[pb + uint(LOOM_G_AUG_CSTEP)] * int(ox);
    uint u = pc.fill;
    int y0 = max(prm[pb + uint(LOOM_G_AUG_Y0)], 0), y1 = min(prm[pb + uint(LOOM_G_AUG_Y1)], int(pc.h));
    int x0 = max(prm[pb + uint(LOOM_G_AUG_X0)], 0), x1 = min(prm[pb + uint(LOOM_G_AUG_X1)], int(pc.w));
    if (sy >= y0 && sy < y1 && sx >= x0 && sx < x1)
        u = uint(x[pc.xo + ((n * pc.h + uint(sy)) * pc.w + uint(sx)) * pc.c + k]);
    if (prm[pb + uint(LOOM_G_AUG_BRIGHT)] != 0) {
        precise float r = float(u) * intBitsToFloat(prm[pb + uint(LOOM_G_AUG_BFACTOR)]);
        r = r > 0.0 ? r : 0.0;
        r = r < 255.0 ? r : 255.0;
        u = uint(r);
    }
    ST(y, pc.yo + i, lut[pc.lo + k * 256u + u]);
}
