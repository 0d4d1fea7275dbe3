/* backends/opencl/kernels/conv2d.cl — the data-movement kernels of the conv2d
 * family (ops/conv2d.c runs the products on gemm.cl):
 *   conv_im2col   x (N,C,H,W) -> columns, layout chosen by strides
 *   conv_col2im   float columns -> dx (N,C,H,W), a gather: each dx element
 *                 sums its contributions (no atomics)
 *   conv_im2col_rows, conv_col2im_rows  the same, one work-item per plane
 *                 (a column plane, a dx plane; col2im sums a dx row in
 *                 private memory, tap by tap) (CPU devices such as
 *                 PoCL: the 64-bit index divisions once per plane,
 *                 not per element; GPUs keep the per-element kernels, whose
 *                 neighbouring work-items write neighbouring elements)
 *   conv_dy_perm  dy (N,O,P) -> (O,N,P) for grad_weight's chunked GEMMs
 *                 (conv_dy_perm_rows: one work-item per row, CPU devices)
 *   conv_sum_parts  dw = the sum of grad_weight's per-image float products
 *   conv_gw_dot   grad_weight's per-image products as dot products, for a
 *                 small O x K (ops/conv2d.c)
 *   conv_gi_fused grad_input's product and col2im in one pass per dx plane,
 *                 its columns in private memory (CPU devices; ungrouped)
 *
 * Geometry table (`__constant long *g`), as ops/conv2d.c fills it:
 *   g[0..3] N, C, H, W       g[4..5] KH, KW      g[6..7] OH, OW
 *   g[8..9] stride h, w      g[10..11] pad h, w  g[12..13] dilation h, w
 *   g[14] groups, g[15] C/groups
 *   g[16..18] column strides of image n, group g, row k (the position
 *             p = i*OW + j has stride 1)
 * Rows k = (c*KH + kh)*KW + kw, K = C/groups*KH*KW, as backends/cpu/ops/conv2d.c. */

/* col[n*g16 + gr*g17 + k*g18 + p] = x[n, gr*Cg + c, i*sh - ph + kh*dh, j*sw - pw + kw*dw] or 0 in the padding;
 * one item per (n, gr, k, p), p fastest (conv_im2col_rows: one item per (n, gr, k), its OH x OW plane) */
__kernel void conv_im2col(__global const T *x, ulong xo, __global T *col, ulong colo, __constant long *g, long total) {
    long id = get_global_id(0);
    if (id >= total) return;
    long KH = g[4], KW = g[5], OW = g[7], P = g[6] * OW, K = g[15] * KH * KW;
    long p = id % P, r = id / P, k = r % K, r2 = r / K, gr = r2 % g[14], n = r2 / g[14];
    long c = k / (KH * KW), kh = k / KW % KH, kw = k % KW, i = p / OW, j = p % OW;
    long ih = i * g[8] - g[10] + kh * g[12], iw = j * g[9] - g[11] + kw * g[13];
    float v = 0.0f;
    if (ih >= 0 && ih < g[2] && iw >= 0 && iw < g[3])
        v = LD(x, xo + ((n * g[1] + gr * g[15] + c) * g[2] + ih) * g[3] + iw);
    ST(col, colo + n * g[16] + gr * g[17] + k * g[18] + p, v);
}

/* dx[n, ci, ih, iw] = sum over (kh, kw) with ih = i*sh - ph + kh*dh, iw = j*sw - pw + kw*dw inside the output
 * of col[n*g16 + gr*g17 + k*g18 + i*OW + j] (float), k from (ci % Cg, kh, kw), gr = ci / Cg;
 * one item per dx element */
__kernel void conv_col2im(__global const float *col, ulong colo, __global T *dx, ulong dxo, __constant long *g,
                          long total) {
    long id = get_global_id(0);
    if (id >= total) return;
    long H = g[2], W = g[3], KH = g[4], KW = g[5], OH = g[6], OW = g[7], sh = g[8], sw = g[9];
    long iw = id % W, ih = id / W % H, r = id / (W * H), ci = r % g[1], n = r / g[1];
    long gr = ci / g[15], c = ci % g[15];
    __global const float *cp = col + colo + n * g[16] + gr * g[17];
    float acc = 0.0f;
    for (long kh = 0; kh < KH; kh++) {
        long th = ih + g[10] - kh * g[12];
        if (th < 0 || th % sh) continue;
        long i = th / sh;
        if (i >= OH) continue;
        for (long kw = 0; kw < KW; kw++) {
            long tw = iw + g[11] - kw * g[13];
            if (tw < 0 || tw % sw) continue;
            long j = tw / sw;
            if (j >= OW) continue;
            acc += cp[((c * KH + kh) * KW + kw) * g[18] + i * OW + j];
        }
    }
    ST(dx, dxo + id, acc);
}

/* col[n*g16 + gr*g17 + k*g18 + p] = x[n, gr*Cg + c, i*sh - ph + kh*dh, j*sw - pw + kw*dw] or 0 in the padding;
 * one item per column plane (n, gr, k): its OH rows of OW positions. The index arithmetic (64-bit divisions)
 * is done once per plane: per row (14 elements in the cnn's second layer) it cost PoCL more than the copy. */
__kernel void conv_im2col_rows(__global const T *x, ulong xo, __global T *col, ulong colo, __constant long *g,
                               long planes) {
    long id = get_global_id(0);
    if (id >= planes) return; /* planes: N*G*K, each OH rows of OW */
    long KH = g[4], KW = g[5], OH = g[6], OW = g[7], H = g[2], W = g[3], K = g[15] * KH * KW;
    long k = id % K, r2 = id / K, gr = r2 % g[14], n = r2 / g[14];
    long c = k / (KH * KW), kh = k / KW % KH, kw = k % KW;
    long sh = g[8], sw = g[9], ih = kh * g[12] - g[10], iw0 = kw * g[13] - g[11];
    long dst = colo + n * g[16] + gr * g[17] + k * g[18];
    __global const T *plane = x + xo + (n * g[1] + gr * g[15] + c) * H * W;
    for (long i = 0; i < OH; i++, ih += sh, dst += OW) {
        if (ih < 0 || ih >= H) {
            for (long j = 0; j < OW; j++) ST(col, dst + j, 0.0f);
            continue;
        }
        __global const T *row = plane + ih * W;
        long iw = iw0;
        for (long j = 0; j < OW; j++, iw += sw) ST(col, dst + j, iw >= 0 && iw < W ? LD(row, iw) : 0.0f);
    }
}

/* dx[n, ci, ih, iw] = sum over (kh, kw) with ih = i*sh - ph + kh*dh, iw = j*sw - pw + kw*dw inside the output
 * of col[n*g16 + gr*g17 + k*g18 + i*OW + j] (float), k from (ci % Cg, kh, kw), gr = ci / Cg;
 * one item per dx plane (n, ci), a row at a time: the row's sums in acc (W <= COL2IM_ROW_MAX, ops/conv2d.c
 * checks), each tap (kh, kw) added over the row's run of positions in turn. For one dx element the taps come
 * in (kh, kw) order onto 0.0f, as in conv_col2im: the same sums, without a per-element test of each tap */
#define COL2IM_ROW_MAX 256
/* dx plane id (H x W) from its columns cp (SPACE float: row (kh, kw) at (kh*KW + kw) * RS, then the OH x OW
 * positions), a row at a time in acc; the geometry's names in scope (conv_col2im_rows, conv_gi_fused) */
#define COL2IM_PLANE(SPACE, cp, RS)                                                                            \
    float acc[COL2IM_ROW_MAX];                                                                                 \
    for (long ih = 0; ih < H; ih++) {                                                                          \
        for (long iw = 0; iw < W; iw++) acc[iw] = 0.0f;                                                        \
        for (long kh = 0; kh < KH; kh++) {                                                                     \
            long th = ih + ph - kh * dh;                                                                       \
            if (th < 0 || (sh != 1 && th % sh)) continue;                                                      \
            long i = sh == 1 ? th : th / sh;                                                                   \
            if (i >= OH) continue;                                                                             \
            for (long kw = 0; kw < KW; kw++) {                                                                 \
                /* positions j with iw = j sw + off in [0, W): j in [j0, j1) */                               \
                long off = kw * dw - pw;                                                                       \
                if (off > W - 1) continue;                                                                     \
                long j0 = off >= 0 ? 0 : (-off + sw - 1) / sw, j1 = min((W - 1 - off) / sw + 1, OW);           \
                SPACE const float *cr = (cp) + (kh * KW + kw) * (RS) + i * OW;                                 \
                for (long j = j0; j < j1; j++) acc[j * sw + off] += cr[j];                                     \
            }                                                                                                  \
        }                                                                                                      \
        for (long iw = 0; iw < W; iw++) ST(dx, dxo + (id * H + ih) * W + iw, acc[iw]);                         \
    }
__kernel void conv_col2im_rows(__global const float *col, ulong colo, __global T *dx, ulong dxo, __constant long *g,
                               long planes) {
    long id = get_global_id(0);
    if (id >= planes) return; /* planes: N*C */
    long H = g[2], W = g[3], KH = g[4], KW = g[5], OH = g[6], OW = g[7], sh = g[8], sw = g[9];
    long ph = g[10], pw = g[11], dh = g[12], dw = g[13];
    long ci = id % g[1], n = id / g[1];
    long gr = ci / g[15], c = ci % g[15];
    __global const float *cp = col + colo + n * g[16] + gr * g[17] + c * KH * KW * g[18];
    COL2IM_PLANE(__global, cp, g[18])
}

#ifndef LOOM_REPRO
/* conv_gi_fused: conv2d_grad_input of an ungrouped convolution in one pass per dx plane (n, c), for CPU
 * devices (ops/conv2d.c), one work-item per plane: its KH*KW rows of columns,
 *   colb[r][p] = sum over o in order of w[o, c, r] * dy[n, o, p]   (fma from 0.0f, as the register GEMM),
 * in private memory (GI_FUSED_MAX floats; the host checks KH*KW*OH*OW), GI_RB rows x GI_NV vectors of
 * positions at a time in registers, then conv_col2im_rows' sums from colb into the dx plane: the same values as
 * the product into the column buffer and its gather, without that buffer (N*K*P floats written, then read) */
#define GI_FUSED_MAX 8192
#define GI_RB 9 /* rows per register block, of GI_NV vectors of positions */
/* GI_VW floats per vector (LOOM_VW: the host's build option, the device's native width) */
#if defined(LOOM_VW) && LOOM_VW == 16
#define GI_VW 16
#define GI_NV 2
#else
#define GI_VW 8
#define GI_NV 1 /* (AVX2's 16 registers) */
#endif
#define GI_FV LOOM_CAT(float, GI_VW)
#define GI_VST LOOM_CAT(vstore, GI_VW)
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void conv_gi_fused(
    __global const T *dy, ulong dyo, __global const T *w, ulong wo, __global T *dx, ulong dxo, __constant long *g, long O,
    long planes) {
    long id = get_group_id(0);
    if (id >= planes) return; /* planes: N*C */
    long C = g[1], H = g[2], W = g[3], KH = g[4], KW = g[5], OH = g[6], OW = g[7], sh = g[8], sw = g[9];
    long ph = g[10], pw = g[11], dh = g[12], dw = g[13];
    long P = OH * OW, KHW = KH * KW, c = id % C, n = id / C, pv = P - P % (GI_VW * GI_NV);
    __global const T *dyn = dy + dyo + n * O * P, *wc = w + wo + c * KHW;
    float colb[GI_FUSED_MAX];
    for (long r0 = 0; r0 < KHW; r0 += GI_RB) {
        long rb = min(KHW - r0, (long)GI_RB);
        for (long p0 = 0; p0 < pv; p0 += GI_VW * GI_NV) {
            GI_FV acc[GI_RB][GI_NV];
            for (int r = 0; r < GI_RB; r++)
                for (int v = 0; v < GI_NV; v++) acc[r][v] = (GI_FV)(0.0f);
            for (long o = 0; o < O; o++) {
                __global const T *dr = dyn + o * P + p0, *wr = wc + o * C * KHW + r0;
                GI_FV b[GI_NV];
#pragma unroll
                for (int v = 0; v < GI_NV; v++) b[v] = LDV(GI_VW, dr + GI_VW * v);
#pragma unroll
                for (int r = 0; r < GI_RB; r++) {
                    GI_FV a = (GI_FV)(LD(wr, min((long)r, rb - 1)));
#pragma unroll
                    for (int v = 0; v < GI_NV; v++) acc[r][v] = fma(a, b[v], acc[r][v]);
                }
            }
            for (int r = 0; r < rb; r++)
                for (int v = 0; v < GI_NV; v++) GI_VST(acc[r][v], 0, colb + (r0 + r) * P + p0 + GI_VW * v);
        }
        for (long r = 0; r < rb; r++) /* the last positions */
            for (long p = pv; p < P; p++) {
                float a = 0.0f;
                for (long o = 0; o < O; o++) a = fma(LD(wc, o * C * KHW + r0 + r), LD(dyn, o * P + p), a);
                colb[(r0 + r) * P + p] = a;
            }
    }
    COL2IM_PLANE(__private, colb, P)
}
#endif

/* wt[c, o, t] = w[o, c, KHW - 1 - t] (t = kh*KW + kw: both kernel axes reversed): the weights of a
 * stride-1 convolution's input gradient as a forward convolution of dy (a copy in the storage type) */
__kernel void conv_wflip(__global const T *w, ulong wo, __global T *wt, ulong wto, long O, long C, long KHW) {
    long id = get_global_id(0);
    if (id >= O * C * KHW) return;
    long t = id % KHW, r = id / KHW, o = r % O, c = r / O;
    ST(wt, wto + id, LD(w, wo + (o * C + c) * KHW + (KHW - 1 - t)));
}

/* dyp (O, N, P) = dy (N, O, P) permuted (a copy in the storage type) */
__kernel void conv_dy_perm(__global const T *dy, ulong dyo, __global T *dyp, ulong dypo, long N, long O, long P) {
    long id = get_global_id(0);
    if (id >= N * O * P) return;
    long p = id % P, n = id / P % N, o = id / (P * N);
    ST(dyp, dypo + id, LD(dy, dyo + (n * O + o) * P + p)); /* exact: a float holds every storage value */
}

/* conv_dy_perm one item per row (o, n) of P elements (CPU devices: the index divisions once per row) */
__kernel void conv_dy_perm_rows(__global const T *dy, ulong dyo, __global T *dyp, ulong dypo, long N, long O,
                                long P) {
    long id = get_global_id(0);
    if (id >= N * O) return;
    long n = id % N, o = id / N;
    __global const T *src = dy + dyo + (n * O + o) * P;
    for (long p = 0; p < P; p++) ST(dyp, dypo + id * P + p, LD(src, p));
}

/* part[n, o, k] (float) = sum over p < P of dy[n, o, p] col[k, n P + p]: the
 * per-image products of an ungrouped grad_weight whose O x K is too small
 * for the GEMM's tiles (a first layer: K = 9, O = 32 fills 9 of a tile's 64
 * columns), one item per (o K + k, n), eight products per step in eight
 * float lanes (P a multiple of 8), the lanes added pairwise */
__kernel void conv_gw_dot(__global const T *dy, ulong dyo, __global const T *col, __global float *part, long N,
                          long O, long K, long P) {
    long ok = get_global_id(0), n = get_global_id(1);
    if (ok >= O * K || n >= N) return;
    long o = ok / K, k = ok % K, a = dyo + (n * O + o) * P, b = k * N * P + n * P;
    float8 acc = (float8)(0.0f);
    for (long p = 0; p < P; p += 8) {
        float8 u = (float8)(LD(dy, a + p), LD(dy, a + p + 1), LD(dy, a + p + 2), LD(dy, a + p + 3), LD(dy, a + p + 4),
                            LD(dy, a + p + 5), LD(dy, a + p + 6), LD(dy, a + p + 7));
        float8 v = (float8)(LD(col, b + p), LD(col, b + p + 1), LD(col, b + p + 2), LD(col, b + p + 3),
                            LD(col, b + p + 4), LD(col, b + p + 5), LD(col, b + p + 6), LD(col, b + p + 7));
        acc += u * v;
    }
    part[(n * O + o) * K + k] = ((acc.s0 + acc.s1) + (acc.s2 + acc.s3)) + ((acc.s4 + acc.s5) + (acc.s6 + acc.s7));
}

/* dw[i] = sum over s < nparts of part[s*n + i] (float), one item per dw element;
 * reproducible mode: part 0 + part 1 + ... (core/repro.h), no leading 0 + */
__kernel void conv_sum_parts(__global const float *part, ulong po, __global T *dw, ulong dwo, long nparts, long n) {
    long i = get_global_id(0);
    if (i >= n) return;
#ifdef LOOM_REPRO
    float acc = nparts > 0 ? part[po + i] : 0.0f;
    for (long s = 1; s < nparts; s++) acc += part[po + s * n + i];
#else
    float acc = 0.0f;
    for (long s = 0; s < nparts; s++) acc += part[po + s * n + i];
#endif
    ST(dw, dwo + i, acc);
}
