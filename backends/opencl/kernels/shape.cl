/* backends/opencl/kernels/shape.cl — permute, concat, slice, slice_grad:
 * pure data movement by element size (u8, u16, u32 words), so any dtype
 * moves bit-exactly. One work-item per output element, or (the *_rows
 * kernels, CPU devices: ops/shape.c) one per output row, its index
 * divisions once per row. */

/* permute: the offset in x of index r over y's first `top` axes (the last of them fastest);
 * g = {nd, ydims[5], x's strides permuted[5]} */
inline long permute_offset(__constant long *g, long r, int top) {
    long off = 0;
    for (int d = top - 1; d >= 0; d--) {
        off += (r % g[1 + d]) * g[6 + d];
        r /= g[1 + d];
    }
    return off;
}

#define SHAPE_KERNELS(U, SFX)                                                                            \
    /* y (g[1..nd]) reads x at sum(i_k * g[6 + k]) (x's strides permuted); g = {nd, ydims[5], s[5]} */    \
    __kernel void permute_##SFX(__constant long *g, __global const U *x, ulong xo, __global U *y, ulong yo, \
                                long n) {                                                                \
        long i = get_global_id(0);                                                                       \
        if (i >= n) return;                                                                              \
        y[yo + i] = x[xo + permute_offset(g, i, (int)g[0])];                                             \
    }                                                                                                    \
    /* y (outer, L, inner) = concat of x_s (outer, len_s, inner) along the middle axis;                   \
     * g = {nsrc, inner, L, start[0..nsrc]} with start[s] the first row of x_s in y */                   \
    __kernel void concat_##SFX(__constant long *g, __global U *y, ulong yo, long n,                       \
                               __global const U *x0, ulong o0, __global const U *x1, ulong o1,           \
                               __global const U *x2, ulong o2, __global const U *x3, ulong o3,           \
                               __global const U *x4, ulong o4, __global const U *x5, ulong o5,           \
                               __global const U *x6, ulong o6, __global const U *x7, ulong o7) {         \
        long i = get_global_id(0);                                                                       \
        if (i >= n) return;                                                                              \
        long inner = g[1], L = g[2];                                                                     \
        long in = i % inner, c = (i / inner) % L, out = i / (inner * L);                                 \
        int s = 0;                                                                                       \
        while (s + 1 < (int)g[0] && c >= g[4 + s]) s++;                                                  \
        long len = g[4 + s] - g[3 + s], k = (out * len + (c - g[3 + s])) * inner + in;                   \
        U v;                                                                                             \
        switch (s) {                                                                                     \
        case 0: v = x0[o0 + k]; break;                                                                   \
        case 1: v = x1[o1 + k]; break;                                                                   \
        case 2: v = x2[o2 + k]; break;                                                                   \
        case 3: v = x3[o3 + k]; break;                                                                   \
        case 4: v = x4[o4 + k]; break;                                                                   \
        case 5: v = x5[o5 + k]; break;                                                                   \
        case 6: v = x6[o6 + k]; break;                                                                   \
        default: v = x7[o7 + k]; break;                                                                  \
        }                                                                                                \
        y[yo + i] = v;                                                                                   \
    }                                                                                                    \
    /* y (outer, len, inner) = x (outer, xlen, inner)[:, start:start+len, :] */                         \
    __kernel void slice_##SFX(__global const U *x, ulong xo, __global U *y, ulong yo, long n, long inner, \
                              long len, long xlen, long start) {                                         \
        long i = get_global_id(0);                                                                       \
        if (i >= n) return;                                                                              \
        long in = i % inner, c = (i / inner) % len, out = i / (inner * len);                             \
        y[yo + i] = x[xo + (out * xlen + start + c) * inner + in];                                       \
    }                                                                                                    \
    /* y (outer, ylen, inner) = 0 with dy (outer, len, inner) at rows [start, start + len) */            \
    __kernel void slice_grad_##SFX(__global const U *dy, ulong dyo, __global U *y, ulong yo, long n,      \
                                   long inner, long len, long ylen, long start) {                        \
        long i = get_global_id(0);                                                                       \
        if (i >= n) return;                                                                              \
        long in = i % inner, c = (i / inner) % ylen, out = i / (inner * ylen);                           \
        y[yo + i] = c >= start && c < start + len ? dy[dyo + (out * len + c - start) * inner + in] : (U)0; \
    }

#define SHAPE_ROWS_KERNELS(U, SFX)                                                                       \
    /* permute, one item per row of y's last axis (rows of L = g[nd] elements) */                          \
    __kernel void permute_rows_##SFX(__constant long *g, __global const U *x, ulong xo, __global U *y,       \
                                     ulong yo, long rows) {                                               \
        long i = get_global_id(0);                                                                       \
        if (i >= rows) return;                                                                           \
        int nd = (int)g[0];                                                                              \
        long L = g[nd], s = g[5 + nd], off = permute_offset(g, i, nd - 1);                               \
        for (long j = 0; j < L; j++) y[yo + i * L + j] = x[xo + off + j * s];                            \
    }                                                                                                    \
    /* slice, one item per (outer, row) of inner elements, or per outer row of the axis when inner is 1 */ \
    __kernel void slice_rows_##SFX(__global const U *x, ulong xo, __global U *y, ulong yo, long rows,       \
                                   long inner, long len, long xlen, long start) {                        \
        long i = get_global_id(0);                                                                       \
        if (i >= rows) return;                                                                           \
        if (inner == 1) {                                                                                \
            for (long c = 0; c < len; c++) y[yo + i * len + c] = x[xo + i * xlen + start + c];           \
            return;                                                                                      \
        }                                                                                                \
        long c = i % len, out = i / len, src = xo + (out * xlen + start + c) * inner;                    \
        for (long j = 0; j < inner; j++) y[yo + i * inner + j] = x[src + j];                             \
    }                                                                                                    \
    __kernel void slice_grad_rows_##SFX(__global const U *dy, ulong dyo, __global U *y, ulong yo,          \
                                        long rows, long inner, long len, long ylen, long start) {         \
        long i = get_global_id(0);                                                                       \
        if (i >= rows) return;                                                                           \
        if (inner == 1) {                                                                                \
            for (long c = 0; c < ylen; c++)                                                              \
                y[yo + i * ylen + c] = c >= start && c < start + len ? dy[dyo + i * len + c - start] : (U)0; \
            return;                                                                                      \
        }                                                                                                \
        long c = i % ylen, out = i / ylen;                                                               \
        bool in_dy = c >= start && c < start + len;                                                      \
        long src = in_dy ? dyo + (out * len + c - start) * inner : 0;                                    \
        for (long j = 0; j < inner; j++) y[yo + i * inner + j] = in_dy ? dy[src + j] : (U)0;             \
    }

SHAPE_ROWS_KERNELS(uchar, u8)
SHAPE_ROWS_KERNELS(ushort, u16)
SHAPE_ROWS_KERNELS(uint, u32)

SHAPE_KERNELS(uchar, u8)
SHAPE_KERNELS(ushort, u16)
SHAPE_KERNELS(uint, u32)
