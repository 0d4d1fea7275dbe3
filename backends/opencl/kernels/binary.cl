/* backends/opencl/kernels/binary.cl — add/sub/mul/div (same shape and
 * broadcast), expand, scale, fill, cast. Matches backends/cpu/ops/binary.c:
 * one float operation per element, one rounding to the storage dtype. */

inline float bin_op(int kind, float a, float b) {
    switch (kind) {
    case LOOM_K_BIN_ADD: return a + b;
    case LOOM_K_BIN_SUB: return a - b;
    case LOOM_K_BIN_MUL: return a * b;
    case LOOM_K_BIN_DIV: return a / b;
    default: return a;
    }
}

/* a, b, y (n) flat, same shape */
__kernel void binary_flat(__global const T *a, ulong ao, __global const T *b, ulong bo, __global T *y, ulong yo,
                          long n, int kind) {
    long i = get_global_id(0);
    if (i >= n) return;
    a += ao, b += bo, y += yo;
    ST(y, i, bin_op(kind, LD(a, i), LD(b, i)));
}

/* the offsets in a and b of index r over y's first `top` axes (the last of them fastest) */
inline void bcast_offsets(__constant long *g, long r, int top, long *oa, long *ob) {
    *oa = 0, *ob = 0;
    for (int d = top - 1; d >= 0; d--) {
        long k = r % g[1 + d];
        r /= g[1 + d];
        *oa += k * g[6 + d];
        *ob += k * g[11 + d];
    }
}

/* y (g[1..nd]) = a op b with broadcasting; g = {nd, dims[5], sa[5], sb[5]}:
 * element strides of a and b per y axis (0 on broadcast axes). For expand
 * (LOOM_K_BIN_COPY) b is a again and unused. */
__kernel void binary_bcast(__constant long *g, __global const T *a, ulong ao, __global const T *b, ulong bo,
                           __global T *y, ulong yo, long n, int kind) {
    long i = get_global_id(0);
    if (i >= n) return;
    a += ao, b += bo, y += yo;
    long oa, ob;
    bcast_offsets(g, i, (int)g[0], &oa, &ob);
    ST(y, i, bin_op(kind, LD(a, oa), kind == LOOM_K_BIN_COPY ? 0.0f : LD(b, ob)));
}

/* binary_bcast one item per row of y's last axis (CPU devices, ops/binary.c:
 * the divisions once per row) */
__kernel void binary_bcast_rows(__constant long *g, __global const T *a, ulong ao, __global const T *b, ulong bo,
                                __global T *y, ulong yo, long rows, int kind) {
    long i = get_global_id(0);
    if (i >= rows) return;
    a += ao, b += bo, y += yo;
    int nd = (int)g[0];
    long L = g[nd], sa = g[5 + nd], sb = g[10 + nd], oa, ob;
    bcast_offsets(g, i, nd - 1, &oa, &ob);
    for (long j = 0; j < L; j++)
        ST(y, i * L + j, bin_op(kind, LD(a, oa + j * sa), kind == LOOM_K_BIN_COPY ? 0.0f : LD(b, ob + j * sb)));
}

/* y (n) = s * x */
__kernel void scale(__global const T *x, ulong xo, __global T *y, ulong yo, long n, float s) {
    long i = get_global_id(0);
    if (i >= n) return;
    x += xo, y += yo;
    ST(y, i, s * LD(x, i));
}

/* y (n) = v */
__kernel void fill(__global T *y, ulong yo, long n, float v) {
    long i = get_global_id(0);
    if (i >= n) return;
    y += yo;
    ST(y, i, v);
}

/* y (n, dtype ddt) = x (n, dtype sdt), as loom_convert: floats round to
 * nearest even; to i32/u8 truncate toward zero and saturate, NaN -> 0. A
 * 16-bit destination from i32 goes through f32 (two roundings), as the CPU's
 * 16-bit wrapper does. Byte pointers, element offsets. */
__kernel void cast(__global const uchar *x, ulong xo, int sdt, __global uchar *y, ulong yo, int ddt, long n) {
    long i = get_global_id(0);
    if (i >= n) return;
    float v = 0.0f;
    int iv = 0;
    bool is_int = sdt == LOOM_K_DT_I32 || sdt == LOOM_K_DT_U8;
    if (sdt == LOOM_K_DT_I32) iv = ((__global const int *)x)[xo + i];
    else if (sdt == LOOM_K_DT_U8) iv = ((__global const uchar *)x)[xo + i];
    else v = ld_any(x + xo * (sdt == LOOM_K_DT_F32 ? 4 : 2), sdt, i);
    if (ddt == LOOM_K_DT_I32 || ddt == LOOM_K_DT_U8) {
        int r;
        if (is_int) {
            r = iv;
        } else if (isnan(v)) {
            r = 0;
        } else if (ddt == LOOM_K_DT_I32) {
            r = v >= 2147483647.0f ? INT_MAX : v <= -2147483648.0f ? INT_MIN : (int)v;
        } else {
            r = v <= 0.0f ? 0 : v >= 255.0f ? 255 : (int)v;
        }
        if (ddt == LOOM_K_DT_U8) ((__global uchar *)y)[yo + i] = (uchar)(r <= 0 ? 0 : r >= 255 ? 255 : r);
        else ((__global int *)y)[yo + i] = r;
        return;
    }
    if (is_int) v = (float)iv;
    switch (ddt) {
    case LOOM_K_DT_F16: ST_F16((__global half *)y + yo, i, v); break;
    case LOOM_K_DT_BF16: ST_BF16((__global ushort *)y + yo, i, v); break;
    default: ST_F32((__global float *)y + yo, i, v); break;
    }
}
