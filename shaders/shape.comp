/* shaders/shape.comp — permute, concat, slice, slice_grad: pure data movement
 * by element size (u8, u16, u32 words), so any dtype (f32, f16, bf16, i32,
 * u8) moves bit-exactly, as backends/opencl/kernels/shape.cl and
 * backends/cpu/ops/shape.c. One invocation per output element. One kernel
 * per K_* define, one element size per E_U8 / E_U16 / E_U32 (variants.txt:
 * <kernel>_u8, _u16, _u32). Parameters: core/ops/shape.c. */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#if defined(E_U8)
#define U uint8_t
#elif defined(E_U16)
#define U uint16_t
#else
#define U uint
#endif

#if defined(K_PERMUTE)
/* y (g[1..nd]) reads x at sum(i_k * g[6 + k]) (x's strides permuted);
 * g = {nd, ydims[5], s[5]} (int32 meta table) */
TENSOR_IN(0, int, g);
TENSOR_IN(1, U, x);
TENSOR_OUT(2, U, y);
PUSH { uint xo, yo, n; } pc;

/* the offset in x of index r over y's first `top` axes (the last of them fastest) */
uint permute_offset(uint r, int top) {
    uint off = 0u;
    for (int d = top - 1; d >= 0; d--) {
        uint dim = uint(g[1 + d]);
        off += (r % dim) * uint(g[6 + d]);
        r /= dim;
    }
    return off;
}

#if defined(ROWS)
/* one invocation per row of y's last axis (CPU devices: the divisions once
 * per row, not per element; pc.n counts rows) */
void main() {
    uint i = loom_gid();
    if (i >= pc.n) return;
    int nd = g[0];
    uint L = uint(g[nd]), s = uint(g[5 + nd]), off = permute_offset(i, nd - 1);
    for (uint j = 0u; j < L; j++) y[pc.yo + i * L + j] = x[pc.xo + off + j * s];
}
#else
void main() {
    uint i = loom_gid();
    if (i >= pc.n) return;
    y[pc.yo + i] = x[pc.xo + permute_offset(i, g[0])];
}
#endif

#elif defined(K_CONCAT)
/* y (outer, L, inner) = concat of x_s (outer, len_s, inner) along the middle
 * axis; g = {nsrc, inner, L, start[0..nsrc]} with start[s] the first row of
 * x_s in y (start[nsrc] = L). Unused x bindings repeat x0 and are not read. */
TENSOR_IN(0, int, g);
TENSOR_OUT(1, U, y);
TENSOR_IN(2, U, x0);
TENSOR_IN(3, U, x1);
TENSOR_IN(4, U, x2);
TENSOR_IN(5, U, x3);
TENSOR_IN(6, U, x4);
TENSOR_IN(7, U, x5);
TENSOR_IN(8, U, x6);
TENSOR_IN(9, U, x7);
PUSH { uint yo, o0, o1, o2, o3, o4, o5, o6, o7, n; } pc;

void main() {
    uint i = loom_gid();
    if (i >= pc.n) return;
    uint inner = uint(g[1]), L = uint(g[2]);
    uint in_ = i % inner, c = (i / inner) % L, out_ = i / (inner * L);
    int s = 0;
    while (s + 1 < g[0] && int(c) >= g[4 + s]) s++;
    uint start = uint(g[3 + s]), len = uint(g[4 + s]) - start;
    uint k = (out_ * len + (c - start)) * inner + in_;
    uint v; /* 8/16-bit values only in storage: move through a uint */
    switch (s) {
    case 0: v = uint(x0[pc.o0 + k]); break;
    case 1: v = uint(x1[pc.o1 + k]); break;
    case 2: v = uint(x2[pc.o2 + k]); break;
    case 3: v = uint(x3[pc.o3 + k]); break;
    case 4: v = uint(x4[pc.o4 + k]); break;
    case 5: v = uint(x5[pc.o5 + k]); break;
    case 6: v = uint(x6[pc.o6 + k]); break;
    default: v = uint(x7[pc.o7 + k]); break;
    }
    y[pc.yo + i] = U(v);
}

#elif defined(K_SLICE)
/* y (outer, len, inner) = x (outer, xlen, inner)[:, start:start+len, :] */
TENSOR_IN(0, U, x);
TENSOR_OUT(1, U, y);
PUSH { uint xo, yo, n, inner, len, xlen, start; } pc;

void main() {
    uint i = loom_gid();
    if (i >= pc.n) return;
#if defined(ROWS) /* one invocation per (outer, row) of inner elements, or per outer when inner is 1; pc.n counts them */
    if (pc.inner == 1u) {
        for (uint c = 0u; c < pc.len; c++) y[pc.yo + i * pc.len + c] = x[pc.xo + i * pc.xlen + pc.start + c];
        return;
    }
    uint c = i % pc.len, out_ = i / pc.len, src = pc.xo + (out_ * pc.xlen + pc.start + c) * pc.inner;
    for (uint j = 0u; j < pc.inner; j++) y[pc.yo + i * pc.inner + j] = x[src + j];
#else
    uint in_ = i % pc.inner, c = (i / pc.inner) % pc.len, out_ = i / (pc.inner * pc.len);
    y[pc.yo + i] = x[pc.xo + (out_ * pc.xlen + pc.start + c) * pc.inner + in_];
#endif
}

#elif defined(K_SLICE_GRAD)
/* y (outer, ylen, inner) = 0 with dy (outer, len, inner) at rows [start, start + len) */
TENSOR_IN(0, U, dy);
TENSOR_OUT(1, U, y);
PUSH { uint dyo, yo, n, inner, len, ylen, start; } pc;

void main() {
    uint i = loom_gid();
    if (i >= pc.n) return;
#if defined(ROWS) /* one invocation per (outer, row) of inner elements, or per outer when inner is 1; pc.n counts them */
    if (pc.inner == 1u) {
        for (uint c = 0u; c < pc.ylen; c++)
            y[pc.yo + i * pc.ylen + c] = c >= pc.start && c < pc.start + pc.len ? dy[pc.dyo + i * pc.len + c - pc.start] : U(0u);
        return;
    }
    uint c = i % pc.ylen, out_ = i / pc.ylen;
    bool in_dy = c >= pc.start && c < pc.start + pc.len;
    uint src = in_dy ? pc.dyo + (out_ * pc.len + c - pc.start) * pc.inner : 0u;
    for (uint j = 0u; j < pc.inner; j++) y[pc.yo + i * pc.inner + j] = in_dy ? dy[src + j] : U(0u);
#else
    uint in_ = i % pc.inner, c = (i / pc.inner) % pc.ylen, out_ = i / (pc.inner * pc.ylen);
    uint v = c >= pc.start && c < pc.start + pc.len ? uint(dy[pc.dyo + (out_ * pc.len + c - pc.start) * pc.inner + in_])
                                                    : 0u;
    y[pc.yo + i] = U(v);
#endif
}

#else
#error "shape.comp: define one of K_PERMUTE, K_CONCAT, K_SLICE, K_SLICE_GRAD"
#endif
