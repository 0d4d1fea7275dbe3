/* shaders/conv2d.comp — the data-movement kernels of the conv2d family
 * (backends/vulkan/ops/conv2d.c runs the products on gemm.comp):
 *   K_IM2COL      x (N,C,H,W) -> columns (N, G, K, P) in the storage type,
 *                 one invocation per element (GPUs: adjacent invocations
 *                 write adjacent elements); with push ld != 0 (one group
 *                 only) the columns are (K, N*P) with row stride ld: every
 *                 image side by side, one GEMM for the batch
 *   K_COL2IM      float columns (N, G, K, P) -> dx (N,C,H,W), a gather: each
 *                 dx element sums its contributions (no atomics)
 *   K_IM2COL_ROWS, K_COL2IM_ROWS  the same, one invocation per row (CPU
 *                 devices such as lavapipe, which run integer divisions lane
 *                 by lane: a row's indices are computed once)
 *   K_IM2COL_PLANES  the flat columns, one invocation per (image, row k),
 *                 four elements per store (CPU devices, texel view of x)
 *   K_WFLIP       w (O,C,KH,KW) -> (C,O,KH,KW) with both kernel axes reversed:
 *                 a stride-1 grad_input as the forward convolution of dy
 *   K_SUM_PARTS   dw = the sum over images of grad_weight's per-image float
 *                 products (N, O*K), in image order
 * Matches backends/opencl/kernels/conv2d.cl.
 *
 * Geometry table g (int32 meta buffer, ops/conv2d.c fills it):
 *   g[0..3] N, C, H, W       g[4..5] KH, KW      g[6..7] OH, OW
 *   g[8..9] stride h, w      g[10..11] pad h, w  g[12..13] dilation h, w
 *   g[14] groups, g[15] C/groups
 * Rows k = (c*KH + kh)*KW + kw, K = C/groups*KH*KW, P = OH*OW, as
 * backends/cpu/ops/conv2d.c; column (n, gr, k, p) at ((n*G + gr)*K + k)*P + p. */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#if defined(K_IM2COL)
/* col[n, gr, k, p] = x[n, gr*Cg + c, i*sh - ph + kh*dh, j*sw - pw + kw*dw], 0 in the padding;
 * one invocation per column element, p fastest */
TENSOR_IN(0, int, g);
TENSOR_IN(1, T, x);
TENSOR_OUT(2, T, col);
PUSH { uint xo, n, ld; } pc;

void main() {
    uint id = loom_gid();
    if (id >= pc.n) return;
    int KH = g[4], KW = g[5], OW = g[7], P = g[6] * OW, K = g[15] * KH * KW;
    int p = int(id % uint(P)), r = int(id / uint(P));
    int k = r % K, r2 = r / K, gr = r2 % g[14], n = r2 / g[14];
    int c = k / (KH * KW), kh = (k / KW) % KH, kw = k % KW, i = p / OW, j = p % OW;
    int ih = i * g[8] - g[10] + kh * g[12], iw = j * g[9] - g[11] + kw * g[13];
    float v = 0.0;
    if (ih >= 0 && ih < g[2] && iw >= 0 && iw < g[3])
        v = LD(x, pc.xo + uint(((n * g[1] + gr * g[15] + c) * g[2] + ih) * g[3] + iw));
    /* ld != 0 (one group): col (K, N*P), row stride ld, column n*P + p */
    ST(col, pc.ld != 0u ? uint(k) * pc.ld + uint(n * P + p) : id, v); /* exact: already in the storage type */
}

#elif defined(K_COL2IM)
/* dx[n, ci, ih, iw] = sum over (kh, kw) with ih = i*sh - ph + kh*dh, iw = j*sw - pw + kw*dw inside the
 * output of col[n, gr, (c*KH + kh)*KW + kw, i*OW + j] (float), gr = ci / Cg, c = ci % Cg;
 * one invocation per dx element */
TENSOR_IN(0, int, g);
TENSOR_IN(1, float, col);
TENSOR_OUT(2, T, dx);
PUSH { uint dxo, n; } pc;

void main() {
    uint id = loom_gid();
    if (id >= pc.n) return;
    int H = g[2], W = g[3], KH = g[4], KW = g[5], OH = g[6], OW = g[7], sh = g[8], sw = g[9];
    int iw = int(id % uint(W)), ih = int((id / uint(W)) % uint(H)), r = int(id / uint(W * H));
    int ci = r % g[1], n = r / g[1];
    int gr = ci / g[15], c = ci % g[15];
    uint cb = uint((n * g[14] + gr) * g[15] * KH * KW) * uint(OH * OW);
    float acc = 0.0;
    for (int kh = 0; kh < KH; kh++) {
        int th = ih + g[10] - kh * g[12];
        if (th < 0 || th % sh != 0) continue;
        int i = th / sh;
        if (i >= OH) continue;
        for (int kw = 0; kw < KW; kw++) {
            int tw = iw + g[11] - kw * g[13];
            if (tw < 0 || tw % sw != 0) continue;
            int j = tw / sw;
            if (j >= OW) continue;
            acc += col[cb + uint((c * KH + kh) * KW + kw) * uint(OH * OW) + uint(i * OW + j)];
        }
    }
    ST(dx, pc.dxo + id, acc);
}

#elif defined(K_IM2COL_ROWS)
/* col[n, gr, k, p] = x[n, gr*Cg + c, i*sh - ph + kh*dh, j*sw - pw + kw*dw], 0 in the padding;
 * one invocation per column row (n, gr, k, i): its OW elements j. The index arithmetic (integer
 * divisions, which a CPU-hosted driver runs lane by lane) is done once per row, not per element. */
TENSOR_IN(0, int, g);
TENSOR_IN(1, T, x);
TENSOR_OUT(2, T, col);
PUSH { uint xo, n, ld; } pc;
#if defined(TEXEL_X)
/* TEXEL_X: x read through a uniform texel buffer (binding 10, a view of
 * binding 1's window, one element per texel: R32_SFLOAT, or R16_UINT widened
 * bit for bit as LD): lavapipe gathers texels where it loads storage
 * buffers lane by lane */
TEXEL_IN(0, xt);
#define LDX(i) LDT(xt, i)
#else
#define LDX(i) LD(x, i)
#endif

void main() {
    uint id = loom_gid();
    if (id >= pc.n) return; /* n: column rows N*G*K*OH */
    int KH = g[4], KW = g[5], OH = g[6], OW = g[7], W = g[3], K = g[15] * KH * KW;
    int i = int(id % uint(OH)), r = int(id / uint(OH));
    int k = r % K, r2 = r / K, gr = r2 % g[14], n = r2 / g[14];
    int c = k / (KH * KW), kh = (k / KW) % KH, kw = k % KW;
    int ih = i * g[8] - g[10] + kh * g[12], sw = g[9], iw0 = kw * g[13] - g[11];
    /* ld != 0 (one group): col (K, N*P), row stride ld, column n*P + p */
    uint dst = pc.ld != 0u ? uint(k) * pc.ld + uint((n * OH + i) * OW) : id * uint(OW);
    if (ih < 0 || ih >= g[2]) {
        for (int j = 0; j < OW; j++) ST(col, dst + uint(j), 0.0);
        return;
    }
    uint row = pc.xo + uint(((n * g[1] + gr * g[15] + c) * g[2] + ih) * W);
    for (int j = 0, iw = iw0; j < OW; j++, iw += sw) {
        float v = 0.0;
        if (iw >= 0 && iw < W) v = LDX(row + uint(iw));
        ST(col, dst + uint(j), v); /* exact: the value is already in the storage type */
    }
}

#elif defined(K_IM2COL_PLANES)
/* The flat columns (K, N*P) (push ld != 0, one group; P and ld multiples of
 * 4), one invocation per (n, k): the row's P elements of image n, four per
 * store (a CPU-hosted driver stores lane by lane: a quarter of the store
 * loops of K_IM2COL_ROWS), x read through a texel view (binding 10, CPU
 * devices). 16-bit types copy the elements' bits, four per uvec2. */
TENSOR_IN(0, int, g);
TENSOR_IN(1, T, x); /* read through xt */
#if defined(T_F32)
TENSOR_OUT(2, vec4, col4);
layout(set = 0, binding = 10) uniform samplerBuffer xt;
#define RAW float
#define RAW0 0.0
#define PACK4(v) vec4(v[0], v[1], v[2], v[3])
#else
TENSOR_OUT(2, uvec2, col4);
layout(set = 0, binding = 10) uniform usamplerBuffer xt;
#define RAW uint
#define RAW0 0u
#define PACK4(v) uvec2(v[0] | (v[1] << 16), v[2] | (v[3] << 16))
#endif
PUSH { uint xo, n, ld; } pc;

void main() {
    uint id = loom_gid();
    if (id >= pc.n) return; /* n: N*K */
    int H = g[2], W = g[3], KH = g[4], KW = g[5], OH = g[6], OW = g[7], sh = g[8], sw = g[9], K = g[15] * KH * KW;
    int k = int(id % uint(K)), n = int(id / uint(K));
    int c = k / (KH * KW), kh = (k / KW) % KH, kw = k % KW;
    int ih0 = kh * g[12] - g[10], iw0 = kw * g[13] - g[11], P = OH * OW;
    uint plane = pc.xo + uint((n * g[1] + c) * H * W);
    uint dst = (uint(k) * pc.ld + uint(n * P)) / 4u;
    int i = 0, j = 0;
    for (int p = 0; p < P; p += 4, dst++) {
        RAW v[4];
        for (int q = 0; q < 4; q++) {
            int ih = i * sh + ih0, iw = j * sw + iw0;
            v[q] = ih >= 0 && ih < H && iw >= 0 && iw < W ? texelFetch(xt, int(plane) + ih * W + iw).x : RAW0;
            if (++j == OW) j = 0, i++;
        }
        col4[dst] = PACK4(v);
    }
}

#elif defined(K_COL2IM_ROWS)
/* dx[n, ci, ih, iw] = sum over (kh, kw) with ih = i*sh - ph + kh*dh, iw = j*sw - pw + kw*dw inside the
 * output of col[n, gr, (c*KH + kh)*KW + kw, i*OW + j] (float), gr = ci / Cg, c = ci % Cg;
 * one invocation per dx row (n, ci, ih): its W elements, each summed in (kh, kw) order. The row's
 * index arithmetic is done once; stride 1 needs no division at all. */
TENSOR_IN(0, int, g);
TENSOR_IN(1, float, col);
TENSOR_OUT(2, T, dx);
PUSH { uint dxo, n; } pc;

void main() {
    uint id = loom_gid();
    if (id >= pc.n) return; /* n: dx rows N*C*H */
    int H = g[2], W = g[3], KH = g[4], KW = g[5], OH = g[6], OW = g[7], sh = g[8], sw = g[9];
    int ih = int(id % uint(H)), r = int(id / uint(H));
    int ci = r % g[1], n = r / g[1];
    int gr = ci / g[15], c = ci % g[15];
    uint cb = uint((n * g[14] + gr) * g[15] * KH * KW) * uint(OH * OW);
    uint dst = pc.dxo + id * uint(W);
    for (int iw = 0; iw < W; iw++) {
        float acc = 0.0;
        for (int kh = 0; kh < KH; kh++) {
            int th = ih + g[10] - kh * g[12];
            if (th < 0 || (sh != 1 && th % sh != 0)) continue;
            int i = sh == 1 ? th : th / sh;
            if (i >= OH) continue;
            for (int kw = 0; kw < KW; kw++) {
                int tw = iw + g[11] - kw * g[13];
                if (tw < 0 || (sw != 1 && tw % sw != 0)) continue;
                int j = sw == 1 ? tw : tw / sw;
                if (j >= OW) continue;
                acc += col[cb + uint((c * KH + kh) * KW + kw) * uint(OH * OW) + uint(i * OW + j)];
            }
        }
        ST(dx, dst + uint(iw), acc);
    }
}

#elif defined(K_WFLIP)
/* wt[c, o, t] = w[o, c, KH*KW - 1 - t] (t = kh*KW + kw: both kernel axes reversed): the weights of a
 * stride-1 convolution's input gradient as a forward convolution of dy; one invocation per element */
TENSOR_IN(0, T, w);
TENSOR_OUT(1, T, wt);
PUSH { uint wo, O, C, KHW, n; } pc;

void main() {
    uint id = loom_gid();
    if (id >= pc.n) return;
    uint t = id % pc.KHW, r = id / pc.KHW, o = r % pc.O, c = r / pc.O;
    ST(wt, id, LD(w, pc.wo + (o * pc.C + c) * pc.KHW + (pc.KHW - 1u - t))); /* exact: a storage-type value */
}

#elif defined(K_SUM_PARTS)
/* dw[i] = sum over s < nparts of part[s*n + i] (float, in order), one invocation per dw element */
TENSOR_IN(0, float, part);
TENSOR_OUT(1, T, dw);
PUSH { uint dwo, nparts, n; } pc;

void main() {
    uint i = loom_gid();
    if (i >= pc.n) return;
    float acc = 0.0;
    for (uint s = 0u; s < pc.nparts; s++) acc += part[s * pc.n + i];
    ST(dw, pc.dwo + i, acc);
}

#else
#error "conv2d.comp: define one of K_IM2COL, K_COL2IM, K_IM2COL_ROWS, K_IM2COL_PLANES, K_COL2IM_ROWS, K_SUM_PARTS"
#endif
