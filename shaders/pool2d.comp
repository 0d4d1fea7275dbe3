/* shaders/pool2d.comp — max, average and adaptive average pooling and their
 * gradients, as backends/opencl/kernels/pool2d.cl and backends/cpu/ops/pool2d.c
 * (parameters: core/ops/pool2d.c). One invocation per output element; the
 * gradients are gathers (one invocation per dx element finds the windows
 * covering it, in the CPU's (i, j) order), so there are no atomics. Max-pool's
 * gradient recomputes each covering window's argmax exactly as the forward
 * does: the first maximum wins, NaN propagates.
 *
 * K_MAX2 / K_MAX2_GRAD: 2x2 stride-2 unpadded max pooling of even planes
 * (the common downsampling pool), one invocation per window, geometry in
 * push constants: the forward loads the window's four values once; the
 * gradient writes the window's four dx values (dy at the argmax, 0 at the
 * others) instead of four invocations each recomputing the window. Same
 * rule (loom_arg4, common.glsl = pool_argmax on a 2x2 window), same bits.
 * RELU (f32; ops/pool2d.c, a fused group of core/fuse.h): the gradient
 * first runs relu_grad over the pooled values, rx (relu's input) and dy,
 * writes it (relu_grad's output, rg) and routes it to the argmax, as the
 * relu_grad and max2_grad kernels one after the other.
 *
 * Geometry table g (int32 meta, loom__vk_meta): LOOM_G_POOL_* (core/params.h). */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#if defined(K_POOL2D)
/* x (P, H, W) -> y (P, OH, OW) */
TENSOR_IN(0, T, x);
TENSOR_OUT(1, T, y);
TENSOR_IN(2, int, g);
PUSH { uint xo, yo; int kind; } pc;
#elif defined(K_POOL2D_GRAD)
/* dy (P, OH, OW) [, x (P, H, W) for max] -> dx (P, H, W); avg/adaptive bind
 * dy as x too (not read) */
TENSOR_IN(0, T, x);
TENSOR_IN(1, T, dy);
TENSOR_OUT(2, T, dx);
TENSOR_IN(3, int, g);
PUSH { uint xo, dyo, dxo; int kind; } pc;
#elif defined(K_MAX2) && defined(V2)
/* V2 (f32; W and the offsets of x and dx even): a window row is one vec2 */
TENSOR_IN(0, vec2, x);
TENSOR_OUT(1, T, y);
PUSH { uint xo, yo; uint windows, W, OW; } pc;
#elif defined(K_MAX2)
TENSOR_IN(0, T, x);
TENSOR_OUT(1, T, y);
PUSH { uint xo, yo; uint windows, W, OW; } pc;
#elif defined(K_MAX2_GRAD) && defined(V2) && defined(TEXEL)
/* the RELU form through texel views (CPU devices): x and dy one element per texel (bindings 10
 * and 11: gathers where lavapipe loops over its lanes per storage load), and relu's input not
 * read: the host runs it only where that input is this pool's output, the window's maximum */
TENSOR_IN(0, float, x);
TENSOR_IN(1, T, dy);
TENSOR_OUT(2, vec2, dx);
TENSOR_IN(3, T, rx);
TENSOR_OUT(4, T, rg);
PUSH { uint xo, dyo, dxo, rxo, rgo; uint windows, W, OW; } pc;
layout(set = 0, binding = 10) uniform samplerBuffer x_t;
layout(set = 0, binding = 11) uniform samplerBuffer dy_t;
#elif defined(K_MAX2_GRAD) && defined(V2)
TENSOR_IN(0, vec2, x);
TENSOR_IN(1, T, dy);
TENSOR_OUT(2, vec2, dx);
#if defined(RELU)
TENSOR_IN(3, T, rx);
TENSOR_OUT(4, T, rg);
PUSH { uint xo, dyo, dxo, rxo, rgo; uint windows, W, OW; } pc;
#else
PUSH { uint xo, dyo, dxo; uint windows, W, OW; } pc;
#endif
#elif defined(K_MAX2_GRAD)
TENSOR_IN(0, T, x);
TENSOR_IN(1, T, dy);
TENSOR_OUT(2, T, dx);
#if defined(RELU)
TENSOR_IN(3, T, rx);
TENSOR_OUT(4, T, rg);
PUSH { uint xo, dyo, dxo, rxo, rgo; uint windows, W, OW; } pc;
#else
PUSH { uint xo, dyo, dxo; uint windows, W, OW; } pc;
#endif
#else
#error "pool2d.comp: define K_POOL2D, K_POOL2D_GRAD, K_MAX2 or K_MAX2_GRAD"
#endif

#if defined(K_MAX2) || defined(K_MAX2_GRAD)
#if defined(TEXEL)
#elif defined(K_MAX2_GRAD) && defined(RELU)
/* the pooled gradient: relu_grad of relu's input and dy (activation.comp's rule), written as relu_grad's output */
float pooled_grad(uint k) {
    float v = LD(rx, pc.rxo + k), d = LD(dy, pc.dyo + k), g = v > 0.0 || isnan(v) ? d : 0.0;
    ST(rg, pc.rgo + k, g);
    return g;
}
#elif defined(K_MAX2_GRAD) && defined(V2)
float pooled_grad(uint k) { return LD(dy, pc.dyo + k); }
#elif defined(K_MAX2_GRAD)
float pooled_grad(uint k) { return LD1(dy, pc.dyo + k); }
#endif

void main() {
    uint k = loom_gid();
    if (k >= pc.windows) return;
    uint OW = pc.OW, j = k % OW, r = k / OW; /* r: the window row over all planes (p * OH + i) */
    uint top = r * 2u * pc.W + 2u * j;       /* planes are 2*OH rows of W: row 2i of plane p is row 2r */
#if defined(TEXEL)
    uint t0 = pc.xo + top, t1 = t0 + pc.W;
    float a = texelFetch(x_t, int(t0)).x, b = texelFetch(x_t, int(t0 + 1u)).x;
    float c = texelFetch(x_t, int(t1)).x, d = texelFetch(x_t, int(t1 + 1u)).x;
#elif defined(V2)
    vec2 r0 = x[(pc.xo + top) / 2u], r1 = x[(pc.xo + top + pc.W) / 2u];
    float a = r0.x, b = r0.y, c = r1.x, d = r1.y;
#else
    float a = LD0(x, pc.xo + top), b = LD0(x, pc.xo + top + 1u);
    float c = LD0(x, pc.xo + top + pc.W), d = LD0(x, pc.xo + top + pc.W + 1u);
#endif
    int q = loom_arg4(a, b, c, d);
#if defined(K_MAX2)
    ST(y, pc.yo + k, q == 0 ? a : q == 1 ? b : q == 2 ? c : d);
#elif defined(TEXEL) /* relu_grad of the maximum (activation.comp's rule), written as relu_grad's output */
    float v = q == 0 ? a : q == 1 ? b : q == 2 ? c : d, dv = texelFetch(dy_t, int(pc.dyo + k)).x;
    float g = v > 0.0 || isnan(v) ? dv : 0.0;
    ST(rg, pc.rgo + k, g);
    dx[(pc.dxo + top) / 2u] = vec2(q == 0 ? g : 0.0, q == 1 ? g : 0.0);
    dx[(pc.dxo + top + pc.W) / 2u] = vec2(q == 2 ? g : 0.0, q == 3 ? g : 0.0);
#elif defined(V2)
    float g = pooled_grad(k);
    dx[(pc.dxo + top) / 2u] = vec2(q == 0 ? g : 0.0, q == 1 ? g : 0.0);
    dx[(pc.dxo + top + pc.W) / 2u] = vec2(q == 2 ? g : 0.0, q == 3 ? g : 0.0);
#else
    float g = pooled_grad(k);
    ST(dx, pc.dxo + top, q == 0 ? g : 0.0);
    ST(dx, pc.dxo + top + 1u, q == 1 ? g : 0.0);
    ST(dx, pc.dxo + top + pc.W, q == 2 ? g : 0.0);
    ST(dx, pc.dxo + top + pc.W + 1u, q == 3 ? g : 0.0);
#endif
}
#endif

#if defined(K_POOL2D) || defined(K_POOL2D_GRAD)
/* window of output (i, j) clipped to x: rows [h0, h1), cols [w0, w1);
 * returns torch's avg divisor (as window() in the CPU file) */
int pool_window(int i, int j, out int h0, out int h1, out int w0, out int w1) {
    int H = g[LOOM_G_POOL_H], W = g[LOOM_G_POOL_W];
    int hs = i * g[LOOM_G_POOL_SH] - g[LOOM_G_POOL_PH], ws = j * g[LOOM_G_POOL_SW] - g[LOOM_G_POOL_PW];
    int he = min(hs + g[LOOM_G_POOL_KH], H + g[LOOM_G_POOL_PH]);
    int we = min(ws + g[LOOM_G_POOL_KW], W + g[LOOM_G_POOL_PW]);
    int padded = (he - hs) * (we - ws);
    h0 = max(hs, 0), w0 = max(ws, 0);
    h1 = min(he, H), w1 = min(we, W);
    return g[LOOM_G_POOL_INCL] != 0 ? padded : (h1 - h0) * (w1 - w0);
}

/* index in plane `base` of x (H, W) of window (i, j)'s first maximum; NaN wins */
int pool_argmax(uint base, int i, int j) {
    int h0, h1, w0, w1, W = g[LOOM_G_POOL_W];
    pool_window(i, j, h0, h1, w0, w1);
    int best = h0 * W + w0;
    float m = uintBitsToFloat(0xff800000u); /* -inf */
    for (int h = h0; h < h1; h++)
        for (int w = w0; w < w1; w++) {
            float v = LD(x, base + uint(h * W + w));
            if (v > m || isnan(v)) {
                m = v;
                best = h * W + w;
            }
        }
    return best;
}

/* adaptive bins: [floor(i*in/out), ceil((i+1)*in/out)) */
int pool_bin_start(int i, int n, int o) { return i * n / o; }
int pool_bin_end(int i, int n, int o) { return ((i + 1) * n + o - 1) / o; }

#if defined(K_POOL2D)
void main() {
    int OH = g[LOOM_G_POOL_OH], OW = g[LOOM_G_POOL_OW], H = g[LOOM_G_POOL_H], W = g[LOOM_G_POOL_W];
    uint k = loom_gid();
    if (k >= uint(g[LOOM_G_POOL_PLANES] * OH * OW)) return;
    int j = int(k % uint(OW)), i = int((k / uint(OW)) % uint(OH));
    uint p = k / uint(OH * OW);
    uint base = pc.xo + p * uint(H * W);
    if (pc.kind == LOOM_K_POOL_MAX) {
        ST(y, pc.yo + k, LD(x, base + uint(pool_argmax(base, i, j))));
        return;
    }
    int h0, h1, w0, w1, div;
    if (pc.kind == LOOM_K_POOL_AVG) {
        div = pool_window(i, j, h0, h1, w0, w1);
    } else {
        h0 = pool_bin_start(i, H, OH), h1 = pool_bin_end(i, H, OH);
        w0 = pool_bin_start(j, W, OW), w1 = pool_bin_end(j, W, OW);
        div = (h1 - h0) * (w1 - w0);
    }
    float s = 0.0;
    for (int h = h0; h < h1; h++)
        for (int w = w0; w < w1; w++) s += LD(x, base + uint(h * W + w));
    ST(y, pc.yo + k, div > 0 ? s / float(div) : 0.0);
}

#elif defined(K_POOL2D_GRAD)
/* output rows i (or cols) whose window covers input row h: [i0, i1) */
void pool_cover(int h, int k, int s, int p, int O, out int i0, out int i1) {
    int a = h + p - k + 1; /* i * s >= a */
    i0 = a <= 0 ? 0 : (a + s - 1) / s;
    i1 = min((h + p) / s + 1, O);
}

void main() {
    int OH = g[LOOM_G_POOL_OH], OW = g[LOOM_G_POOL_OW], H = g[LOOM_G_POOL_H], W = g[LOOM_G_POOL_W];
    uint k = loom_gid();
    if (k >= uint(g[LOOM_G_POOL_PLANES] * H * W)) return;
    int w = int(k % uint(W)), h = int((k / uint(W)) % uint(H));
    uint p = k / uint(H * W);
    uint dbase = pc.dyo + p * uint(OH * OW);
    float acc = 0.0;
    if (pc.kind == LOOM_K_POOL_ADAPTIVE) {
        /* bins containing h: i in [floor(h*OH/H), ceil((h+1)*OH/H)), checked */
        int i0 = max(h * OH / H - 1, 0), i1 = min(((h + 1) * OH + H - 1) / H + 1, OH);
        int j0 = max(w * OW / W - 1, 0), j1 = min(((w + 1) * OW + W - 1) / W + 1, OW);
        for (int i = i0; i < i1; i++) {
            int a0 = pool_bin_start(i, H, OH), a1 = pool_bin_end(i, H, OH);
            if (h < a0 || h >= a1) continue;
            for (int j = j0; j < j1; j++) {
                int b0 = pool_bin_start(j, W, OW), b1 = pool_bin_end(j, W, OW);
                if (w < b0 || w >= b1) continue;
                acc += LD(dy, dbase + uint(i * OW + j)) / float((a1 - a0) * (b1 - b0));
            }
        }
    } else {
        int i0, i1, j0, j1;
        pool_cover(h, g[LOOM_G_POOL_KH], g[LOOM_G_POOL_SH], g[LOOM_G_POOL_PH], OH, i0, i1);
        pool_cover(w, g[LOOM_G_POOL_KW], g[LOOM_G_POOL_SW], g[LOOM_G_POOL_PW], OW, j0, j1);
        uint xbase = pc.xo + p * uint(H * W);
        for (int i = i0; i < i1; i++)
            for (int j = j0; j < j1; j++) {
                if (pc.kind == LOOM_K_POOL_MAX) {
                    if (pool_argmax(xbase, i, j) == h * W + w) acc += LD(dy, dbase + uint(i * OW + j));
                } else {
                    int h0, h1, w0, w1, div = pool_window(i, j, h0, h1, w0, w1);
                    if (div > 0 && h >= h0 && h < h1 && w >= w0 && w < w1)
                        acc += LD(dy, dbase + uint(i * OW + j)) / float(div);
                }
            }
    }
    ST(dx, pc.dxo + k, acc);
}
#endif
#endif
