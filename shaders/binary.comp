/* shaders/binary.comp — add/sub/mul/div (same shape and broadcast), expand,
 * scale, fill, cast. Matches backends/cpu/ops/binary.c: one float operation
 * per element, one rounding to the storage dtype. One kernel per K_* define
 * (variants.txt); the storage dtype is T (common.glsl). */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

float bin_op(int kind, float a, float b) {
    switch (kind) {
    case LOOM_K_BIN_ADD: return a + b;
    case LOOM_K_BIN_SUB: return a - b;
    case LOOM_K_BIN_MUL: return a * b;
    case LOOM_K_BIN_DIV: return a / b;
    default: return a;
    }
}

#if defined(K_BINARY_FLAT)
/* a, b, y (n) flat, same shape */
TENSOR_IN(0, T, a);
TENSOR_IN(1, T, b);
TENSOR_OUT(2, T, y);
PUSH { uint ao, bo, yo, n; int kind; } pc;

void main() {
    uint i = loom_gid();
    if (i >= pc.n) return;
    ST(y, pc.yo + i, bin_op(pc.kind, LD(a, pc.ao + i), LD(b, pc.bo + i)));
}

#elif defined(K_BINARY_BCAST)
/* y (g[1..nd]) = a op b with broadcasting; g = {nd, dims[5], sa[5], sb[5]}
 * (int32 meta table): element strides of a and b per y axis (0 on broadcast
 * axes). For expand (LOOM_K_BIN_COPY) b is a again and unused. */
TENSOR_IN(0, int, g);
TENSOR_IN(1, T, a);
TENSOR_IN(2, T, b);
TENSOR_OUT(3, T, y);
PUSH { uint ao, bo, yo, n; int kind; } pc;

/* the offsets in a and b of index r over y's first `top` axes (the last of them fastest) */
void bcast_offsets(uint r, int top, out uint oa, out uint ob) {
    oa = 0u, ob = 0u;
    for (int d = top - 1; d >= 0; d--) {
        uint dim = uint(g[1 + d]), k = r % dim;
        r /= dim;
        oa += k * uint(g[6 + d]);
        ob += k * uint(g[11 + d]);
    }
}

#if defined(ROWS)
/* one invocation per row of y's last axis (CPU devices: the divisions once
 * per row, not per element; pc.n counts rows) */
void main() {
    uint i = loom_gid();
    if (i >= pc.n) return;
    int nd = g[0];
    uint L = uint(g[nd]), sa = uint(g[5 + nd]), sb = uint(g[10 + nd]), oa, ob;
    bcast_offsets(i, nd - 1, oa, ob);
    for (uint j = 0u; j < L; j++)
        ST(y, pc.yo + i * L + j,
           bin_op(pc.kind, LD(a, pc.ao + oa + j * sa), pc.kind == LOOM_K_BIN_COPY ? 0.0 : LD(b, pc.bo + ob + j * sb)));
}
#else
void main() {
    uint i = loom_gid();
    if (i >= pc.n) return;
    uint oa, ob;
    bcast_offsets(i, g[0], oa, ob);
    ST(y, pc.yo + i, bin_op(pc.kind, LD(a, pc.ao + oa), pc.kind == LOOM_K_BIN_COPY ? 0.0 : LD(b, pc.bo + ob)));
}
#endif

#elif defined(K_SCALE)
/* y (n) = s * x */
TENSOR_IN(0, T, x);
TENSOR_OUT(1, T, y);
PUSH { uint xo, yo, n; float s; } pc;

void main() {
    uint i = loom_gid();
    if (i >= pc.n) return;
    ST(y, pc.yo + i, pc.s * LD(x, pc.xo + i));
}

#elif defined(K_FILL)
/* y (n) = v */
TENSOR_OUT(0, T, y);
PUSH { uint yo, n; float v; } pc;

void main() {
    uint i = loom_gid();
    if (i >= pc.n) return;
    ST(y, pc.yo + i, pc.v);
}

#elif defined(K_CAST)
/* y (n, dtype D_*) = x (n, dtype S_*), as loom_convert: floats round to
 * nearest even; to i32/u8 truncate toward zero and saturate, NaN -> 0. A
 * 16-bit destination from i32 goes through f32 (two roundings), as the CPU's
 * 16-bit wrapper does. One variant per (source, destination) pair. */
#if defined(S_F32)
#define SRC_T float
#define SRC_LD(i) LD_F32(x, i)
#elif defined(S_F16)
#define SRC_T uint16_t
#define SRC_LD(i) LD_F16(x, i)
#elif defined(S_BF16)
#define SRC_T uint16_t
#define SRC_LD(i) LD_BF16(x, i)
#elif defined(S_I32)
#define SRC_T int
#define SRC_INT(i) x[i]
#elif defined(S_U8)
#define SRC_T uint8_t
#define SRC_INT(i) int(uint(x[i]))
#endif
#if defined(D_F32)
#define DST_T float
#define DST_ST(i, v) ST_F32(y, i, v)
#elif defined(D_F16)
#define DST_T uint16_t
#define DST_ST(i, v) ST_F16(y, i, v)
#elif defined(D_BF16)
#define DST_T uint16_t
#define DST_ST(i, v) ST_BF16(y, i, v)
#elif defined(D_I32)
#define DST_T int
#define DST_INT(i, v) (y[i] = (v))
#elif defined(D_U8)
#define DST_T uint8_t
#define DST_INT(i, v) (y[i] = uint8_t(uint(clamp(v, 0, 255))))
#endif

TENSOR_IN(0, SRC_T, x);
TENSOR_OUT(1, DST_T, y);
PUSH { uint xo, yo, n; } pc;

void main() {
    uint i = loom_gid();
    if (i >= pc.n) return;
#if defined(SRC_INT) && defined(DST_INT)
    DST_INT(pc.yo + i, SRC_INT(pc.xo + i));
#elif defined(SRC_INT)
    DST_ST(pc.yo + i, float(SRC_INT(pc.xo + i)));
#elif defined(DST_INT)
    float v = SRC_LD(pc.xo + i);
    int r;
    if (isnan(v)) r = 0;
#if defined(D_I32)
    else if (v >= 2147483647.0) r = 2147483647;
    else if (v <= -2147483648.0) r = -2147483647 - 1;
#else
    else if (v <= 0.0) r = 0;
    else if (v >= 255.0) r = 255;
#endif
    else r = int(v);
    DST_INT(pc.yo + i, r);
#else
    DST_ST(pc.yo + i, SRC_LD(pc.xo + i));
#endif
}

#else
#error "binary.comp: define one of K_BINARY_FLAT, K_BINARY_BCAST, K_SCALE, K_FILL, K_CAST"
#endif
