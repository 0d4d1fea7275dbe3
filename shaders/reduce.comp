/* shaders/reduce.comp — sum and mean over an axes mask, as
 * backends/opencl/kernels/reduce.cl (backends/cpu/ops/reduce.c accumulates
 * in double; here float): one work-group per output element, each invocation
 * striding over the reduced elements, then a work-group tree (group_sum); or
 * (K_REDUCE_ROWS) one invocation per output element.
 * Parameters: core/ops/reduce.c. */
#version 450
#extension GL_GOOGLE_include_directive : require
#define LOOM_GROUP_REDUCE
#include "common.glsl"

#if defined(K_REDUCE)
/* y (nout) from x; g = {nkeep, kdims[5], kstr[5], nred, rdims[5], rstr[5], rcount}
 * (int32 meta table): kept and reduced axes with their element strides in x */
TENSOR_IN(0, int, g);
TENSOR_IN(1, T, x);
TENSOR_OUT(2, T, y);
PUSH { uint xo, yo, nout; float div; } pc;

void main() {
    uint o = loom_group();
    if (o >= pc.nout) return; /* the whole group */
    int nkeep = g[0], nred = g[11];
    uint base = 0u, r = o;
    for (int i = nkeep - 1; i >= 0; i--) {
        uint dim = uint(g[1 + i]);
        base += (r % dim) * uint(g[6 + i]);
        r /= dim;
    }
    uint rcount = uint(g[22]);
    float acc = 0.0;
    for (uint c = gl_LocalInvocationID.x; c < rcount; c += gl_WorkGroupSize.x) {
        uint off = base, q = c;
        for (int i = nred - 1; i >= 0; i--) {
            uint dim = uint(g[12 + i]);
            off += (q % dim) * uint(g[17 + i]);
            q /= dim;
        }
        acc += LD(x, pc.xo + off);
    }
    acc = group_sum(acc);
    if (gl_LocalInvocationID.x == 0u) ST(y, pc.yo + o, acc / pc.div);
}

#elif defined(K_REDUCE_ROWS)
/* one invocation per output element (CPU devices, ops/reduce.c): the reduced
 * elements walked in order with an odometer over the reduced axes (no
 * division per element); the same table and push constants as K_REDUCE */
TENSOR_IN(0, int, g);
TENSOR_IN(1, T, x);
TENSOR_OUT(2, T, y);
PUSH { uint xo, yo, nout; float div; } pc;

void main() {
    uint o = loom_gid();
    if (o >= pc.nout) return;
    int nkeep = g[0], nred = g[11];
    uint off = 0u, r = o;
    for (int i = nkeep - 1; i >= 0; i--) {
        uint dim = uint(g[1 + i]);
        off += (r % dim) * uint(g[6 + i]);
        r /= dim;
    }
    uint rcount = uint(g[22]), idx[5] = uint[5](0u, 0u, 0u, 0u, 0u);
    float acc = 0.0;
    for (uint c = 0u; c < rcount; c++) {
        acc += LD(x, pc.xo + off);
        int i = nred - 1; /* the innermost reduced axis steps; carries move outwards */
        off += uint(g[17 + i]), idx[i]++;
        while (i > 0 && idx[i] == uint(g[12 + i])) {
            off -= idx[i] * uint(g[17 + i]), idx[i] = 0u;
            i--;
            off += uint(g[17 + i]), idx[i]++;
        }
    }
    ST(y, pc.yo + o, acc / pc.div);
}

#else
#error "reduce.comp: define K_REDUCE or K_REDUCE_ROWS"
#endif
