/* shaders/softmax.comp — softmax, log_softmax and their gradient ops over the
 * last axis, as backends/cpu/ops/softmax.c and
 * backends/opencl/kernels/softmax.cl (row sums in float, a tree per row): one
 * work-group per row of C elements. Needs LOOM_GROUP_REDUCE. */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

/* x, dy, y viewed as (R, C); x is the forward output y for the gradient kinds */
TENSOR_IN(0, T, x);
TENSOR_IN(1, T, dy); /* forward kinds: x again, unused */
TENSOR_OUT(2, T, y);
PUSH { uint xo, dyo, yo, R, C; int kind; } pc;

void main() {
    uint r = loom_group();
    if (r >= pc.R) return; /* the whole group */
    uint l = gl_LocalInvocationID.x, nl = gl_WorkGroupSize.x, C = pc.C;
    uint xb = pc.xo + r * C, db = pc.dyo + r * C, yb = pc.yo + r * C;
    if (pc.kind == LOOM_K_SOFTMAX || pc.kind == LOOM_K_LOG_SOFTMAX) {
        float m = LD(x, xb);
        for (uint c = l; c < C; c += nl) m = LD(x, xb + c) > m ? LD(x, xb + c) : m;
        m = group_max(m);
        float se = 0.0;
        for (uint c = l; c < C; c += nl) se += exp(LD(x, xb + c) - m);
        se = group_sum(se);
        if (pc.kind == LOOM_K_SOFTMAX) { /* y = exp(x - max) / sum exp(x - max) */
            float inv = 1.0 / se;
            for (uint c = l; c < C; c += nl) ST(y, yb + c, exp(LD(x, xb + c) - m) * inv);
        } else { /* y = x - max - log sum exp(x - max) */
            precise float lse = m + log(se);
            for (uint c = l; c < C; c += nl) ST(y, yb + c, LD(x, xb + c) - lse);
        }
    } else if (pc.kind == LOOM_K_SOFTMAX_GRAD) { /* dx = y (dy - sum(dy y)) */
        precise float d = 0.0;
        for (uint c = l; c < C; c += nl) d += LD(dy, db + c) * LD(x, xb + c);
        d = group_sum(d);
        for (uint c = l; c < C; c += nl) ST(y, yb + c, LD(x, xb + c) * (LD(dy, db + c) - d));
    } else { /* dx = dy - exp(y) sum(dy) */
        float d = 0.0;
        for (uint c = l; c < C; c += nl) d += LD(dy, db + c);
        d = group_sum(d);
        for (uint c = l; c < C; c += nl) {
            precise float v = LD(dy, db + c) - exp(LD(x, xb + c)) * d;
            ST(y, yb + c, v);
        }
    }
}
