/* shaders/dropout.comp — inverted dropout with the mask of core/ops/dropout.c,
 * as backends/cpu/ops/dropout.c bit for bit: element i is kept iff
 * (w[i % 4] >> 8) >= thr, w = Philox(seed, stream, ctr_hi | i / 4), ctr_hi =
 * (step mod 2^24) << 40. The step changes every run without re-recording: its
 * counter word comes from the plan's params buffer (params[po] = the high
 * word of ctr_hi, written by before_run). One invocation per block of 4
 * elements. May run in place. */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

/* x, y (n) flat */
TENSOR_IN(0, T, x);
TENSOR_OUT(1, T, y);
PARAMS(2);
PUSH { uint xo, yo, n, seed_lo, seed_hi, stream_lo, stream_hi, thr; float scale; uint po; } pc;

void main() {
    uint b = loom_gid();
    uint i0 = 4u * b;
    if (b >= (pc.n + 3u) / 4u) return;
    /* the block index is < 2^30 (numel < 2^31): it lives in the low word */
    uvec4 w4 = philox(uvec2(pc.seed_lo, pc.seed_hi), uvec2(pc.stream_lo, pc.stream_hi), uvec2(b, params[pc.po]));
    uint w[4] = uint[4](w4.x, w4.y, w4.z, w4.w);
    uint m = min(pc.n - i0, 4u);
    for (uint k = 0u; k < m; k++) {
        precise float v = (w[k] >> 8) >= pc.thr ? LD(x, pc.xo + i0 + k) * pc.scale : 0.0;
        ST(y, pc.yo + i0 + k, v);
    }
}
