/* shaders/correct.comp — correct_count (semantics in core/ops/correct.c;
 * host: backends/vulkan/ops/correct.c), as backends/cpu/ops/correct.c and
 * backends/opencl/kernels/correct.cl: one work-group; each invocation takes
 * rows l, l + nl, ..., finds the first maximum of the row and compares it
 * with the target; the counts are summed over the group (integers: exact in
 * f32). Logits of the variant's storage dtype T, the count f32. */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

TENSOR_IN(0, T, x);
TENSOR_IN(1, int, tg);
TENSOR_OUT(2, float, y);
PUSH { uint xo, to, yo, N, C; } pc;

void main() {
    uint l = gl_LocalInvocationID.x, nl = gl_WorkGroupSize.x;
    float cnt = 0.0;
    for (uint i = l; i < pc.N; i += nl) {
        uint row = pc.xo + i * pc.C;
        int best = 0;
        float bv = LD(x, row);
        for (uint c = 1u; c < pc.C; c++) {
            float v = LD(x, row + c);
            if (v > bv) {
                bv = v;
                best = int(c);
            }
        }
        cnt += tg[pc.to + i] == best ? 1.0 : 0.0;
    }
    cnt = group_sum(cnt);
    if (l == 0u) y[pc.yo] = cnt;
}
