/* backends/opencl/kernels/reduce.cl — sum and mean over an axes mask, as
 * backends/cpu/ops/reduce.c but accumulated in float: one work-group per
 * output element, each item striding over the reduced elements, then a tree.
 * Where each output's values are one contiguous run (the reduced axes are
 * the trailing ones), reduce_flat / reduce_parts instead: the run split into
 * S chunks, one work-group each, with no index arithmetic per element, then
 * each output's S partial sums added in order (ops/reduce.c). */

/* y (nout) from x; g = {nkeep, kdims[5], kstr[5], nred, rdims[5], rstr[5], rcount}:
 * kept and reduced axes with their element strides in x */

/* the offset in x of output o's first reduced element (its kept indices' strides) */
inline long reduce_base(__constant long *g, long o) {
    long base = 0, r = o;
    for (int i = (int)g[0] - 1; i >= 0; i--) {
        base += (r % g[1 + i]) * g[6 + i];
        r /= g[1 + i];
    }
    return base;
}

__kernel void reduce(__constant long *g, __global const T *x, ulong xo, __global T *y, ulong yo, float div,
                     __local float *s) {
    long o = get_group_id(0);
    x += xo, y += yo;
    int nred = (int)g[11];
    long base = reduce_base(g, o);
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

/* reduce_flat: group grp = o*S + si sums chunk si (`chunk` values) of output o's run of g[22] values;
 * a group of one item (CPU devices) in eight partial sums, else each item striding, then a tree. S = 1:
 * y[o] = the sum / div; else part[grp] = the sum */
__kernel void reduce_flat(__constant long *g, __global const T *x, ulong xo, __global float *part, __global T *y,
                          ulong yo, long S, long chunk, float div, __local float *s) {
    long grp = get_group_id(0), o = grp / S, si = grp % S, base = reduce_base(g, o);
    long lo = si * chunk, hi = min(lo + chunk, g[22]), l = get_local_id(0), n = get_local_size(0);
    __global const T *p = x + xo + base;
    float acc = 0.0f;
    if (n == 1) {
        float8 a = (float8)(0.0f);
        long c = lo;
        for (; c + 8 <= hi; c += 8) a += LDV(8, p + c);
        acc = ((a.s0 + a.s1) + (a.s2 + a.s3)) + ((a.s4 + a.s5) + (a.s6 + a.s7));
        for (; c < hi; c++) acc += LD(p, c);
    } else {
        for (long c = lo + l; c < hi; c += n) acc += LD(p, c);
        acc = group_sum(s, acc);
    }
    if (l != 0) return;
    if (S == 1) ST(y, yo + o, acc / div);
    else part[grp] = acc;
}

/* y[o] = (the sum in order of part[o*S ..], S of them) / div; one item per output */
__kernel void reduce_parts(__global const float *part, __global T *y, ulong yo, long S, long nout, float div) {
    long o = get_global_id(0);
    if (o >= nout) return;
    float t = 0.0f;
    for (long si = 0; si < S; si++) t += part[o * S + si];
    ST(y, yo + o, t / div);
}
