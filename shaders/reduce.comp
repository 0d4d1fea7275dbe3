/* shaders/reduce.comp — sum and mean over an axes mask, as
 * backends/opencl/kernels/reduce.cl (backends/cpu/ops/reduce.c accumulates
 * in double; here float): one work-group per output element, each invocation
 * striding over the reduced elements, then a work-group tree (group_sum); or
 * (K_REDUCE_ROWS) one invocation per output element; or, where each output's
 * values are one contiguous run, K_REDUCE_FLAT + K_REDUCE_PARTS (the run in
 * chunks, one work-group each, then the chunks' sums in order).
 * Parameters: core/ops/reduce.c. */
#version 450
#extension GL_GOOGLE_include_directive : require
#define LOOM_GROUP_REDUCE
#include "common.glsl"

#if defined(K_REDUCE) || defined(K_REDUCE_ROWS) || defined(K_REDUCE_FLAT)
/* g = {nkeep, kdims[5], kstr[5], nred, rdims[5], rstr[5], rcount} (int32 meta
 * table): kept and reduced axes with their element strides in x */
TENSOR_IN(0, int, g);

/* the offset in x of output o's first value: o decoded over the kept axes */
uint kept_base(uint o) {
    uint base = 0u, r = o;
    for (int i = g[0] - 1; i >= 0; i--) {
        uint dim = uint(g[1 + i]);
        base += (r % dim) * uint(g[6 + i]);
        r /= dim;
    }
    return base;
}
#endif

#if defined(K_REDUCE)
/* y (nout) from x and the table g */
TENSOR_IN(1, T, x);
TENSOR_OUT(2, T, y);
PUSH { uint xo, yo, nout; float div; } pc;

void main() {
    uint o = loom_group();
    if (o >= pc.nout) return; /* the whole group */
    int nred = g[11];
    uint base = kept_base(o);
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
TENSOR_IN(1, T, x);
TENSOR_OUT(2, T, y);
PUSH { uint xo, yo, nout; float div; } pc;

void main() {
    uint o = loom_gid();
    if (o >= pc.nout) return;
    int nred = g[11];
    uint off = kept_base(o);
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

#elif defined(K_REDUCE_FLAT)
/* each output's values one contiguous run (the reduced axes are x's trailing
 * ones, ops/reduce.c): group grp = o*S + si sums chunk si of output o's run,
 * invocations striding (no index arithmetic per element), then the tree;
 * S = 1: y[o] = the sum / div, else part[grp] = the sum (K_REDUCE_PARTS adds
 * each output's S parts in order); the same table as K_REDUCE */
TENSOR_IN(1, T, x);
TENSOR_OUT(2, T, y);
TENSOR_OUT(3, float, part);
PUSH { uint xo, yo, nout; float div; uint S, chunk; } pc;

void main() {
    uint grp = loom_group();
    if (grp >= pc.nout * pc.S) return; /* the whole group */
    uint o = grp / pc.S, si = grp % pc.S, base = kept_base(o);
    uint lo = si * pc.chunk, hi = min(lo + pc.chunk, uint(g[22]));
    float acc = 0.0;
    for (uint c = lo + gl_LocalInvocationID.x; c < hi; c += gl_WorkGroupSize.x) acc += LD(x, pc.xo + base + c);
    acc = group_sum(acc);
    if (gl_LocalInvocationID.x != 0u) return;
    if (pc.S == 1u) ST(y, pc.yo + o, acc / pc.div);
    else part[grp] = acc;
}

#elif defined(K_REDUCE_PARTS)
/* y[o] = (the sum in order of part[o*S ..], S of them) / div; one invocation per output */
TENSOR_IN(0, float, part);
TENSOR_OUT(1, T, y);
PUSH { uint yo, nout; float div; uint S; } pc;

void main() {
    uint o = loom_gid();
    if (o >= pc.nout) return;
    float t = 0.0;
    for (uint si = 0u; si < pc.S; si++) t += part[o * pc.S + si];
    ST(y, pc.yo + o, t / pc.div);
}

#else
#error "reduce.comp: define K_REDUCE, K_REDUCE_ROWS, K_REDUCE_FLAT or K_REDUCE_PARTS"
#endif
