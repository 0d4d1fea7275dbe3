/* backends/opencl/kernels/embedding.cl — embedding lookup and its scatter-add
 * gradient, as backends/cpu/ops/embedding.c. An index outside [0, V) is
 * reported through the error slot (first bad position, atomic_min) and never
 * read or written. The gradient runs one work-item per column d, summing the
 * positions in order: deterministic, no atomics; 16-bit outputs accumulate in
 * an f32 scratch first, as the CPU's 16-bit wrapper does. */

/* y (n, D) = w (V, D) rows idx (n) */
__kernel void embedding(__global const T *w, ulong wo, __global const int *idx, ulong io, __global T *y, ulong yo,
                        long n, long D, long V, __global int *err, int slot) {
    long i = get_global_id(0);
    if (i >= n * D) return;
    long k = i / D, d = i % D;
    int v = idx[io + k];
    if (v < 0 || v >= V) {
        if (d == 0) atomic_min(err + slot, (int)k);
        ST(y + yo, i, 0.0f);
        return;
    }
    ST(y + yo, i, LD(w + wo, (long)v * D + d));
}

/* acc (V, D) f32 = 0, then acc[idx[k], d] += dy[k, d] for k in order; column d per item */
__kernel void embedding_grad(__global const T *dy, ulong dyo, __global const int *idx, ulong io, __global float *acc,
                             ulong ao, long n, long D, long V, __global int *err, int slot) {
    long d = get_global_id(0);
    if (d >= D) return;
    dy += dyo, idx += io, acc += ao;
    for (long v = 0; v < V; v++) acc[v * D + d] = 0.0f;
    for (long k = 0; k < n; k++) {
        int v = idx[k];
        if (v < 0 || v >= V) {
            if (d == 0) atomic_min(err + slot, (int)k);
            continue;
        }
        acc[(long)v * D + d] += LD(dy, k * D + d);
    }
}

/* y (n) = acc (n) rounded to the storage dtype */
__kernel void embedding_grad_store(__global const float *acc, __global T *y, ulong yo, long n) {
    long i = get_global_id(0);
    if (i >= n) return;
    ST(y + yo, i, acc[i]);
}
