/* backends/opencl/kernels/reduce.cl — sum and mean over an axes mask, as
 * backends/cpu/ops/reduce.c but accumulated in float: one work-group per
 * output element, each item striding over the reduced elements, then a tree.
 * Simple path: a reduction into few outputs (e.g. everything into a scalar)
 * runs on few work-groups. */

/* y (nout) from x; g = {nkeep, kdims[5], kstr[5], nred, rdims[5], rstr[5], rcount}:
 * kept and reduced axes with their element strides in x */
__kernel void reduce(__constant long *g, __global const T *x, ulong xo, __global T *y, ulong yo, float div,
                     __local float *s) {
    long o = get_group_id(0);
    x += xo, y += yo;
    int nkeep = (int)g[0], nred = (int)g[11];
    long base = 0, r = o;
    for (int i = nkeep - 1; i >= 0; i--) {
        base += (r % g[1 + i]) * g[6 + i];
        r /= g[1 + i];
    }
    long rcount = g[22];
    float acc = 0.0f;
    for (long c = get_local_id(0); c < rcount; c += get_local_size(0)) {
        long off = base, q = c;
        for (int i = nred - 1; i >= 0; i--) {
            off += (q % g[12 + i]) * g[17 + i];
            q /= g[12 + i];
        }
        acc += LD(x, off);
    }
    acc = group_sum(s, acc);
    if (get_local_id(0) == 0) ST(y, o, acc / div);
}
