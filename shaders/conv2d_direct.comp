/* shaders/conv2d_direct.comp — direct conv2d kernels for a small reduction
 * K = C/groups*KH*KW (backends/vulkan/ops/conv2d.c picks them when K is at
 * most LOOM__VK_CONV_DIRECT_K; larger K runs im2col + gemm.comp):
 *   K_FWD   y[n,o,i,j] = sum_{c,kh,kw} x[n, g*Cg+c, i*sh-ph+kh*dh, j*sw-pw+kw*dw] * w[o,c,kh,kw]
 *           (+ bias[o], added at the end); one invocation per 4 output
 *           positions and block of OB output channels (K <= MAXK); with KFIX
 *           (f32, texel views, vec4 stores) the window's shape CGF x KHF x KWF is
 *           compiled in and every loop unrolled (blocks of up to OBF channels)
 *   K_GI    dx[n,ci,ih,iw] = sum over (kh, kw) with ih = i*sh-ph+kh*dh, iw = j*sw-pw+kw*dw
 *           inside the output, and o in ci's group, of dy[n,o,i,j] * w[o,c,kh,kw];
 *           a gather (no atomics), one invocation per 4 dx elements of a row
 *   K_GW    dw[o,c,kh,kw] = sum over n, i, j (inside the input) of dy[n,o,i,j] * x[n, g*Cg+c, ih, iw];
 *           one work-group per (block of OBW = 4 output channels, c, block of EB = 9 taps (kh, kw)): each
 *           invocation sums every L-th (n, i, j) (L = the group size) for
 *           each tap of the block, in blocks of 32 positions (f32 block sums
 *           added into an f32 total), then a tree over the group per tap
 *   K_GWF   the same sums with the window's shape compiled in (KFIX): per (image,
 *           chunk of positions) float parts, summed by conv2d.comp's K_SUM_PARTS
 * All arithmetic in float; the storage type T for x, w, bias, y, dy, dx, dw.
 * Same loops and formulas as the F64 reference in backends/cpu/ops/conv2d.c.
 * The geometry comes in the push constants (G: the group count is C/Cg). */
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

/* LD0 / LD1 (common.glsl): bindings 0 and 1 (x and w, dy and w, dy and x),
 * through texel views in the TEXEL01 variants (CPU devices: lavapipe gathers
 * texels where it loads storage buffers lane by lane) */

#define MAXK 32 /* = LOOM__VK_CONV_DIRECT_K in ops/conv2d.c: K_FWD holds a window in registers */
#define GEOM int N, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, Cg, Og

#if defined(K_FWD)
/* one invocation per (n, group, block of OB output channels, RP consecutive
 * output positions p): the K inputs of each position's window (0 in the
 * padding, as im2col) are loaded once, then per output channel of the block
 * each weight is loaded once for the RP positions; p fastest */
#define RP 4
TENSOR_IN(0, T, x);     // x (N, C, H, W)
TENSOR_IN(1, T, w);     // w (O, Cg, KH, KW)
TENSOR_IN(2, T, bias);  // bias (O), or w again when hb == 0
#if defined(VSTORE)
/* VSTORE (f32, P and yo multiples of 4): the RP = 4 positions of a channel in one vec4 store */
TENSOR_OUT(3, vec4, y4); // y (N, O, OH, OW)
#else
TENSOR_OUT(3, T, y);    // y (N, O, OH, OW)
#endif
PUSH { uint xo, wo, bo, yo; GEOM; int hb, OB; uint n; } pc;

void main() {
    uint id = loom_gid();
    if (id >= pc.n) return;
    int OW = pc.OW, KH = pc.KH, KW = pc.KW, H = pc.H, W = pc.W, P = pc.OH * OW, K = pc.Cg * KH * KW;
    int nob = (pc.Og + pc.OB - 1) / pc.OB, G = pc.C / pc.Cg, np = (P + RP - 1) / RP;
    int t = int(id % uint(np)), r = int(id / uint(np));
    int ob = r % nob, r2 = r / nob, gr = r2 % G, n = r2 / G;
    uint xb = pc.xo + uint((n * pc.C + gr * pc.Cg) * H * W);
#if defined(KFIX)
    /* the window's shape fixed at compile time (CGF x KHF x KWF = KFIX, the
     * host picks it): every loop unrolled, so the RP windows stay in
     * registers (lavapipe keeps an array indexed at run time in memory and
     * reaches it lane by lane); same products and order as below */
    float xv[RP * KFIX];
    [[unroll]] for (int q = 0; q < RP; q++) {
        int p = min(t * RP + q, P - 1); /* past the end: a copy of the last position, not stored */
        int i = p / OW, j = p - i * OW;
        int ih0 = i * pc.sh - pc.ph, iw0 = j * pc.sw - pc.pw;
        [[unroll]] for (int c = 0; c < CGF; c++)
            [[unroll]] for (int kh = 0; kh < KHF; kh++) {
                int ih = ih0 + kh * pc.dh;
                bool rowin = ih >= 0 && ih < H;
                uint xr = xb + uint((c * H + ih) * W);
                [[unroll]] for (int kw = 0; kw < KWF; kw++) {
                    int iw = iw0 + kw * pc.dw;
                    xv[q * KFIX + (c * KHF + kh) * KWF + kw] = rowin && iw >= 0 && iw < W ? LD0(x, xr + uint(iw)) : 0.0;
                }
            }
    }
    int o0 = gr * pc.Og + ob * pc.OB, o1 = min(o0 + pc.OB, (gr + 1) * pc.Og);
    [[unroll]] for (int oo = 0; oo < OBF; oo++) {
        int o = o0 + oo;
        if (o >= o1) break;
        float acc[RP];
        [[unroll]] for (int q = 0; q < RP; q++) acc[q] = 0.0;
        [[unroll]] for (int k = 0; k < KFIX; k++) {
            float wv = LD1(w, pc.wo + uint(o * KFIX + k));
            [[unroll]] for (int q = 0; q < RP; q++) acc[q] += xv[q * KFIX + k] * wv;
        }
        float bv = pc.hb != 0 ? LD(bias, pc.bo + uint(o)) : 0.0;
        [[unroll]] for (int q = 0; q < RP; q += 4) { /* P % 4 == 0: a vec4 is wholly in or out */
            vec4 v = vec4(acc[q], acc[q + 1], acc[q + 2], acc[q + 3]);
            if (t * RP + q < P) y4[(pc.yo + uint((n * pc.O + o) * P + t * RP + q)) / 4u] = pc.hb != 0 ? v + bv : v;
        }
    }
#else
    float xv[RP * MAXK];
    for (int q = 0; q < RP; q++) {
        int p = min(t * RP + q, P - 1); /* past the end: a copy of the last position, not stored */
        int i = p / OW, j = p - i * OW;
        int ih0 = i * pc.sh - pc.ph, iw0 = j * pc.sw - pc.pw, k = q * MAXK;
        for (int c = 0; c < pc.Cg; c++)
            for (int kh = 0; kh < KH; kh++) {
                int ih = ih0 + kh * pc.dh;
                bool rowin = ih >= 0 && ih < H;
                uint xr = xb + uint((c * H + ih) * W);
                for (int kw = 0; kw < KW; kw++, k++) {
                    int iw = iw0 + kw * pc.dw;
                    xv[k] = rowin && iw >= 0 && iw < W ? LD0(x, xr + uint(iw)) : 0.0;
                }
            }
    }
    int o0 = gr * pc.Og + ob * pc.OB, o1 = min(o0 + pc.OB, (gr + 1) * pc.Og);
    for (int o = o0; o < o1; o++) {
        uint wp = pc.wo + uint(o * K);
        float acc[RP];
        for (int q = 0; q < RP; q++) acc[q] = 0.0;
        for (int k = 0; k < K; k++) {
            float wv = LD1(w, wp + uint(k));
            for (int q = 0; q < RP; q++) acc[q] += xv[q * MAXK + k] * wv;
        }
        float bv = pc.hb != 0 ? LD(bias, pc.bo + uint(o)) : 0.0;
#if defined(VSTORE)
        vec4 v = vec4(acc[0], acc[1], acc[2], acc[3]);
        y4[(pc.yo + uint((n * pc.O + o) * P + t * RP)) / 4u] = pc.hb != 0 ? v + bv : v;
#else
        for (int q = 0; q < RP; q++) {
            int p = t * RP + q;
            if (p < P) ST(y, pc.yo + uint((n * pc.O + o) * P + p), pc.hb != 0 ? acc[q] + bv : acc[q]);
        }
#endif
    }
#endif
}

#elif defined(K_GI)
/* one invocation per RQ consecutive dx elements of a row (n, ci, ih, iw0..):
 * each weight is loaded once for the RQ elements */
#define RQ 4
TENSOR_IN(0, T, dy);    // dy (N, O, OH, OW)
TENSOR_IN(1, T, w);     // w (O, Cg, KH, KW)
TENSOR_OUT(2, T, dx);   // dx (N, C, H, W)
PUSH { uint dyo, wo, dxo; GEOM; uint n; } pc;

void main() {
    uint id = loom_gid();
    if (id >= pc.n) return;
    int H = pc.H, W = pc.W, KH = pc.KH, KW = pc.KW, OH = pc.OH, OW = pc.OW, sh = pc.sh, sw = pc.sw;
    int nwb = (W + RQ - 1) / RQ;
    int iw0 = int(id % uint(nwb)) * RQ, r = int(id / uint(nwb));
    int ih = r % H, r2 = r / H, ci = r2 % pc.C, n = r2 / pc.C;
    int gr = ci / pc.Cg, c = ci % pc.Cg;
    int o0 = gr * pc.Og, P = OH * OW, wstep = pc.Cg * KH * KW;
    uint dyb = pc.dyo + uint((n * pc.O + o0) * P);
    float acc[RQ];
    for (int q = 0; q < RQ; q++) acc[q] = 0.0;
    for (int kh = 0; kh < KH; kh++) {
        int i = ih + pc.ph - kh * pc.dh;
        if (i < 0) continue;
        if (sh != 1) {
            if (i % sh != 0) continue;
            i /= sh;
        }
        if (i >= OH) continue;
        for (int kw = 0; kw < KW; kw++) {
            int jj[RQ];
            bool ok[RQ], any = false;
            for (int q = 0; q < RQ; q++) {
                int j = iw0 + q + pc.pw - kw * pc.dw;
                ok[q] = iw0 + q < W && j >= 0;
                if (sw != 1) {
                    ok[q] = ok[q] && j % sw == 0;
                    j /= sw;
                }
                ok[q] = ok[q] && j < OW;
                jj[q] = i * OW + j;
                any = any || ok[q];
            }
            if (!any) continue;
            uint dp = dyb, wp = pc.wo + uint(((o0 * pc.Cg + c) * KH + kh) * KW + kw);
            for (int o = 0; o < pc.Og; o++, dp += uint(P), wp += uint(wstep)) {
                float wv = LD1(w, wp);
                for (int q = 0; q < RQ; q++)
                    if (ok[q]) acc[q] += LD0(dy, dp + uint(jj[q])) * wv;
            }
        }
    }
    uint xb = pc.dxo + uint(((n * pc.C + ci) * H + ih) * W);
    for (int q = 0; q < RQ; q++)
        if (iw0 + q < W) ST(dx, xb + uint(iw0 + q), acc[q]);
}

#elif defined(K_GW)
/* one work-group per (block of OBW output channels of one group, c, block
 * of EB kernel taps): e < EB (unrolled, registers) are the flat taps
 * k = kb*EB + e < KH*KW; each x value is loaded once for the block's
 * channels and each dy value once for the block's taps (on a CPU-hosted
 * driver every load is a loop over the lanes: OBW = 4 loads 13 values per
 * position for 36 products where one channel per group loaded 40) */
#define EB 9
#define OBW 4
TENSOR_IN(0, T, dy);    // dy (N, O, OH, OW)
TENSOR_IN(1, T, x);     // x (N, C, H, W)
TENSOR_OUT(2, T, dwt);  // dw (O, Cg, KH, KW)
PUSH { uint dyo, xo, dwo; GEOM; uint n; } pc;

void main() {
    uint r = loom_group();
    if (r >= pc.n) return; /* the whole group */
    int KH = pc.KH, KW = pc.KW, OH = pc.OH, OW = pc.OW, H = pc.H, W = pc.W, N = pc.N, KK = KH * KW;
    int nkb = (KK + EB - 1) / EB, nob = (pc.Og + OBW - 1) / OBW;
    int kb = int(r % uint(nkb)), t = int(r / uint(nkb));
    int c = t % pc.Cg, t2 = t / pc.Cg, ob = t2 % nob, gr = t2 / nob;
    int o0 = gr * pc.Og + ob * OBW, no = min(OBW, pc.Og - ob * OBW);
    int P = OH * OW, k0 = kb * EB, ne = min(EB, KK - k0);
    int offh[EB], offw[EB];
    for (int e = 0; e < EB; e++) {
        int k = min(k0 + e, KK - 1);
        offh[e] = (k / KW) * pc.dh - pc.ph, offw[e] = (k % KW) * pc.dw - pc.pw;
    }
    int L = int(gl_WorkGroupSize.x), l = int(gl_LocalInvocationID.x);
    /* (n, i, j) of flat position l of (N, OH, OW), stepped by L without divisions */
    int di = L / OW, dj = L % OW;
    int j = l % OW, i = l / OW, n = 0;
    while (i >= OH) { i -= OH; n++; }
    uint dyb = pc.dyo + uint(o0 * P), xb = pc.xo + uint((gr * pc.Cg + c) * H * W);
    uint dyn = uint(pc.O * P), xn = uint(pc.C * H * W);
    float tot[OBW][EB], blk[OBW][EB];
    for (int u = 0; u < OBW; u++)
        for (int e = 0; e < EB; e++) tot[u][e] = 0.0, blk[u][e] = 0.0;
    int cnt = 0;
    while (n < N) {
        float d[OBW];
        uint dp = dyb + uint(n) * dyn + uint(i * OW + j);
        for (int u = 0; u < OBW; u++) d[u] = u < no ? LD0(dy, dp + uint(u * P)) : 0.0;
        uint xr = xb + uint(n) * xn;
        int ihb = i * pc.sh, iwb = j * pc.sw;
        for (int e = 0; e < EB; e++) {
            int ih = ihb + offh[e], iw = iwb + offw[e];
            if (e < ne && ih >= 0 && ih < H && iw >= 0 && iw < W) {
                float xv = LD1(x, xr + uint(ih * W + iw));
                for (int u = 0; u < OBW; u++) blk[u][e] += d[u] * xv;
            }
        }
        if (++cnt == 32) {
            for (int u = 0; u < OBW; u++)
                for (int e = 0; e < EB; e++) tot[u][e] += blk[u][e], blk[u][e] = 0.0;
            cnt = 0;
        }
        j += dj, i += di;
        if (j >= OW) j -= OW, i++;
        while (i >= OH) { i -= OH; n++; }
    }
    for (int u = 0; u < OBW; u++)
        for (int e = 0; e < EB; e++) {
            float s = group_sum(tot[u][e] + blk[u][e]);
            if (l == 0 && e < ne && u < no) ST(dwt, pc.dwo + uint(((o0 + u) * pc.Cg + c) * KK + k0 + e), s);
        }
}

#elif defined(K_GWF)
/* the weight gradient with the window's shape fixed at compile time (CGF x
 * KHF x KWF = KFIX taps; f32, texel views: the host picks it on CPU
 * devices): one invocation per (image n, group, block of OBG output
 * channels, chunk of CP positions) keeps the block's OBG x KFIX sums in
 * registers, reads each position's window once for the block's channels
 * and each dy value once for the window's taps, and writes its sums to
 * part[n * nch + chunk] (O, KFIX) f32; conv_sum_parts adds the N nch parts
 * in order. Within a chunk the positions are summed in order. */
#define RP 4
TENSOR_IN(0, T, dy);    // dy (N, O, OH, OW)
TENSOR_IN(1, T, x);     // x (N, C, H, W)
TENSOR_OUT(2, float, part);
PUSH { uint dyo, xo; GEOM; int CP, nch; uint n; } pc;

void main() {
    uint id = loom_gid();
    if (id >= pc.n) return;
    int OW = pc.OW, H = pc.H, W = pc.W, P = pc.OH * OW, G = pc.C / pc.Cg, nob = (pc.Og + OBG - 1) / OBG;
    int chunk = int(id % uint(pc.nch)), r = int(id / uint(pc.nch));
    int ob = r % nob, r2 = r / nob, gr = r2 % G, n = r2 / G;
    int o0 = gr * pc.Og + ob * OBG, no = min(OBG, (gr + 1) * pc.Og - o0);
    uint xb = pc.xo + uint((n * pc.C + gr * pc.Cg) * H * W), dyb = pc.dyo + uint((n * pc.O + o0) * P);
    float acc[OBG * KFIX];
    [[unroll]] for (int e = 0; e < OBG * KFIX; e++) acc[e] = 0.0;
    int p0 = chunk * pc.CP, p1 = min(p0 + pc.CP, P);
    int i = p0 / OW, j = p0 - i * OW; /* the position p's (i, j), carried along */
    for (int pb = p0; pb < p1; pb += RP) {
        float xv[RP * KFIX], dv[RP * OBG];
        [[unroll]] for (int q = 0; q < RP; q++) {
            int p = pb + q;
            bool live = p < p1;
            int ih0 = i * pc.sh - pc.ph, iw0 = j * pc.sw - pc.pw;
            [[unroll]] for (int c = 0; c < CGF; c++)
                [[unroll]] for (int kh = 0; kh < KHF; kh++) {
                    int ih = ih0 + kh * pc.dh;
                    bool rowin = live && ih >= 0 && ih < H;
                    uint xr = xb + uint((c * H + ih) * W);
                    [[unroll]] for (int kw = 0; kw < KWF; kw++) {
                        int iw = iw0 + kw * pc.dw;
                        xv[q * KFIX + (c * KHF + kh) * KWF + kw] = rowin && iw >= 0 && iw < W ? LD1(x, xr + uint(iw)) : 0.0;
                    }
                }
            [[unroll]] for (int oo = 0; oo < OBG; oo++)
                dv[q * OBG + oo] = live && oo < no ? LD0(dy, dyb + uint(oo * P + p)) : 0.0;
            if (++j == OW) j = 0, i++;
        }
        [[unroll]] for (int oo = 0; oo < OBG; oo++)
            [[unroll]] for (int k = 0; k < KFIX; k++)
                [[unroll]] for (int q = 0; q < RP; q++) acc[oo * KFIX + k] += dv[q * OBG + oo] * xv[q * KFIX + k];
    }
    uint base = uint((n * pc.nch + chunk) * pc.O + o0) * uint(KFIX);
    [[unroll]] for (int oo = 0; oo < OBG; oo++)
        if (oo < no)
            [[unroll]] for (int k = 0; k < KFIX; k++) part[base + uint(oo * KFIX + k)] = acc[oo * KFIX + k];
}

#else
#error "conv2d_direct.comp: define one of K_FWD, K_GI, K_GW, K_GWF"
#endif
