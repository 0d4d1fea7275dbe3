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
 *   conv_flat     a "same"-padded stride-1 convolution with no columns (CPU devices)
 *   conv_flat_gw  its weight gradient's per-chunk parts, likewise
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
#define COL2IM_ROW_MAX LOOM_CL_COL2IM_ROW_MAX
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
#define GI_FUSED_MAX LOOM_CL_GI_FUSED_MAX
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

/* conv_flat: an ungrouped stride-1, dilation-1 convolution whose output plane is its input plane
 * (OH = H, OW = W: "same" padding), for CPU devices (ops/conv2d.c), with no column buffer. Output
 * position p = i*W + j reads each input plane at the flat offset p + (kh - ph)*W + (kw - pw): one shift
 * for every position, so a run of positions reads one run of the plane, loaded as GI_VW-wide vectors
 * (its lanes in the padding set to 0 by a mask). One work-item per (CF_RB output channels, CF_NV
 * vectors of positions, below): y[n, o, p] = sum in k = (c*KH + kh)*KW + kw order of
 * fma(w[o, k], x at the shift, acc) from 0.0f, then + bias: the sums of im2col and the register
 * GEMM (their padding zeros included), the same bits. The weights come packed by conv_wpack:
 * wp[ob][k][r] = the weight of output channel ob*CF_RB + r (float), one run of CF_RB per k. */
#if GI_VW == 16
#define CF_RB LOOM_CL_CF_RB16 /* output channels per work-item (kernel_sizes.h) */
#define CF_NV LOOM_CL_CF_NV16 /* vectors of positions per work-item */
#else
#define CF_RB LOOM_CL_CF_RB8
#define CF_NV LOOM_CL_CF_NV8
#endif
#define CF_TAPS LOOM_CL_CF_TAPS /* KH*KW at most (the host checks) */
#if GI_VW == 16
#define CF_IOTA (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
#else
#define CF_IOTA (int8)(0, 1, 2, 3, 4, 5, 6, 7)
#endif
#define CF_IV LOOM_CAT(int, GI_VW)
/* x where the lane mask m is -1, +0.0f where it is 0 (select's result, as one AND) */
#define CF_MASK(x, m) LOOM_CAT(as_float, GI_VW)(LOOM_CAT(as_int, GI_VW)(x) & (m))

/* wp[ob][k][r] (float) = w[o = ob*CF_RB + r][k] of a weight w (O, Ci*KHW), 0 for o >= O; with flip,
 * the input gradient's forward weights: w (Ci, O, KHW) read as w[ci, o, KHW - 1 - t] at k = ci*KHW + t */
__kernel void conv_wpack(__global const T *w, ulong wo, __global float *wp, long O, long Ci, long KHW, int flip) {
    long id = get_global_id(0), OB = (O + CF_RB - 1) / CF_RB, K = Ci * KHW; /* one item per (ob, k) */
    if (id >= OB * K) return;
    long k = id % K, o0 = id / K * CF_RB, ci = k / KHW, t = k % KHW;
    for (long r = 0, o = o0; r < CF_RB; r++, o++)
        wp[id * CF_RB + r] = o >= O ? 0.0f : flip ? LD(w, wo + (ci * O + o) * KHW + KHW - 1 - t) : LD(w, wo + o * K + k);
}

/* pv / W for 0 <= pv < 2^22 (the host checks P), in float: (pv + 1/2) / W is at least 1/(2W) away from
 * an integer, so one rounding cannot cross one (an integer vector division runs lane by lane) */
inline CF_IV cf_div(CF_IV pv, long W) {
    return LOOM_CAT(convert_int, GI_VW)((LOOM_CAT(convert_float, GI_VW)(pv) + 0.5f) / (float)W);
}

/* GI_VW elements of x from q on, 0 outside [0, total) */
inline GI_FV cf_ld_edge(__global const T *x, long q, long total) {
    float v[GI_VW];
    for (int i = 0; i < GI_VW; i++) v[i] = q + i >= 0 && q + i < total ? LD(x, q + i) : 0.0f;
    return LOOM_CAT(vload, GI_VW)(0, v);
}

/* the GI_VW elements of p (total of them) from q on: CF_LD where they are all inside, CF_LD_EDGE
 * anywhere (0 outside [0, total)) */
#define CF_LD(p, q, total) LDV(GI_VW, (p) + (q))
#define CF_LD_EDGE(p, q, total) \
    ((q) >= 0 && (q) + GI_VW <= (total) ? LDV(GI_VW, (p) + (q)) : cf_ld_edge((p), (q), (total)))

/* the sums over c, kh, kw; LOADB: CF_LD or CF_LD_EDGE; vector v of positions at qv[v] + the tap's shift */
#define CF_LOOP(LOADB)                                                                                 \
    for (long c = 0; c < C; c++, wk += KHW * CF_RB)                                                    \
        for (long kh = 0, t = 0; kh < KH; kh++)                                                        \
            for (long kw = 0, q = c * P + (kh - ph) * W - pw; kw < KW; kw++, t++, q++) {               \
                GI_FV b[CF_NV];                                                                        \
                _Pragma("unroll") for (int v = 0; v < CF_NV; v++)                                      \
                    b[v] = CF_MASK(LOADB(xs, qv[v] + q, total), m[t][v]);                             \
                _Pragma("unroll") for (int r = 0; r < CF_RB; r++) {                                    \
                    GI_FV a = (GI_FV)(wk[t * CF_RB + r]);                                              \
                    _Pragma("unroll") for (int v = 0; v < CF_NV; v++) acc[r][v] = fma(a, b[v], acc[r][v]); \
                }                                                                                      \
            }

/* An item's CF_NV vectors are consecutive in the flat order of every image's vectors (PV per plane, the
 * last one's lanes past P unused), so a plane's last vectors share an item with the next image's first
 * (no item computes more than one vector past a plane's end: P = 196 on 8 lanes, 25 vectors, not 27).
 * Items: chunks of CB blocks of CF_NV vectors (CB about one image's), in a chunk every output-channel
 * block for each of its blocks (an image's input stays in the cache for all its output channels). */
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void conv_flat(
    __global const T *x, ulong xo, __global const float *wp, __global const T *bias, ulong bo, int has_bias,
    __global T *y, ulong yo, long N, long C, long H, long W, long O, long KH, long KW, long ph, long pw) {
    long P = H * W, PV = (P + GI_VW - 1) / GI_VW, NB = (N * PV + CF_NV - 1) / CF_NV, CB = (PV + CF_NV - 1) / CF_NV;
    long OB = (O + CF_RB - 1) / CF_RB, id = get_group_id(0);
    long cb = id % CB, ob = id / CB % OB, blk = id / (CB * OB) * CB + cb;
    if (blk >= NB) return;
    long KHW = KH * KW, total = N * C * P, o0 = ob * CF_RB, rb = min(O - o0, (long)CF_RB);
    /* vector v: image nv[v], positions pv[v].. (past the last vector: the last again, not stored); its
     * lane masks: the lane's input at tap t is inside the plane (lanes past P are never stored) */
    long nv[CF_NV], pv[CF_NV], qv[CF_NV];
    CF_IV m[CF_TAPS][CF_NV];
    for (int v = 0; v < CF_NV; v++) {
        long g = min(blk * CF_NV + v, N * PV - 1);
        nv[v] = g / PV, pv[v] = g % PV * GI_VW, qv[v] = nv[v] * C * P + pv[v];
        CF_IV lp = (CF_IV)((int)pv[v]) + CF_IOTA, iv = cf_div(lp, W), jv = lp - iv * (int)W;
        for (long t = 0; t < KHW; t++) {
            CF_IV ih = iv + (int)(t / KW - ph), jw = jv + (int)(t % KW - pw);
            m[t][v] = (ih >= 0) & (ih < (int)H) & (jw >= 0) & (jw < (int)W);
        }
    }
    __global const T *xs = x + xo;
    __global const float *wk = wp + ob * C * KHW * CF_RB;
    GI_FV acc[CF_RB][CF_NV];
    for (int r = 0; r < CF_RB; r++)
        for (int v = 0; v < CF_NV; v++) acc[r][v] = (GI_FV)(0.0f);
    /* every load inside x (the vectors' images are ascending): no bounds tests */
    if (qv[0] - ph * W - pw >= 0 && qv[CF_NV - 1] + (C - 1) * P + (KH - 1 - ph) * W + KW - 1 - pw + GI_VW <= total) {
        CF_LOOP(CF_LD)
    } else {
        CF_LOOP(CF_LD_EDGE)
    }
    for (int v = 0; v < CF_NV; v++) {
        long p = pv[v];
        if (blk * CF_NV + v >= N * PV) break;
        for (long r = 0; r < rb; r++) {
            __global T *yr = y + yo + (nv[v] * O + o0 + r) * P;
            GI_FV s = has_bias ? acc[r][v] + (GI_FV)(LD(bias + bo, o0 + r)) : acc[r][v];
            if (p + GI_VW <= P) { /* (STV is a block for bf16) */
                STV(GI_VW, s, yr + p);
            } else {
                LOOM_CAT(stv_part, GI_VW)(yr + p, P - p, s);
            }
        }
    }
}

/* conv_flat_c1: conv_flat for an input of few taps in all (C*KH*KW <= CF_C1_TAPS: a first layer,
 * C = 1, 3x3), where conv_flat's per-item tap masks cost more than its sums: one work-item per
 * (n, GI_VW positions), its masked input vectors loaded once for every output channel, CF_RB channels
 * at a time (conv_wpack's blocks). The same sums, in the same order, as conv_flat's. (Two vectors of
 * positions per item, or 8 channels at a time, ran slower on PoCL, AVX2.) */
#define CF_C1_TAPS LOOM_CL_CF_C1_TAPS
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void conv_flat_c1(
    __global const T *x, ulong xo, __global const float *wp, __global const T *bias, ulong bo, int has_bias,
    __global T *y, ulong yo, long N, long C, long H, long W, long O, long KH, long KW, long ph, long pw) {
    long P = H * W, PB = (P + GI_VW - 1) / GI_VW, OB = (O + CF_RB - 1) / CF_RB, KHW = KH * KW, K = C * KHW;
    long id = get_group_id(0);
    if (id >= N * PB) return; /* (b[k] for k >= K: never read) */
    long n = id / PB, p0 = id % PB * GI_VW, total = N * C * P;
    CF_IV pv = (CF_IV)((int)p0) + CF_IOTA, iv = cf_div(pv, W), jv = pv - iv * (int)W;
    __global const T *xs = x + xo;
    GI_FV b[CF_C1_TAPS];
    _Pragma("unroll") for (int k = 0; k < CF_C1_TAPS; k++) {
        long c = k / KHW, t = k % KHW;
        CF_IV ih = iv + (int)(t / KW - ph), jw = jv + (int)(t % KW - pw);
        CF_IV m = (ih >= 0) & (ih < (int)H) & (jw >= 0) & (jw < (int)W);
        long q = (n * C + c) * P + p0 + (t / KW - ph) * W + t % KW - pw;
        b[k] = k < K ? CF_MASK(CF_LD_EDGE(xs, q, total), m) : (GI_FV)(0.0f);
    }
    for (long ob = 0; ob < OB; ob++) {
        __global const float *wk = wp + ob * K * CF_RB;
        GI_FV acc[CF_RB];
        _Pragma("unroll") for (int r = 0; r < CF_RB; r++) acc[r] = (GI_FV)(0.0f);
        _Pragma("unroll") for (int k = 0; k < CF_C1_TAPS; k++) {
            if (k >= K) break;
            _Pragma("unroll") for (int r = 0; r < CF_RB; r++) acc[r] = fma((GI_FV)(wk[k * CF_RB + r]), b[k], acc[r]);
        }
        for (long r = 0; r < min(O - ob * CF_RB, (long)CF_RB); r++) {
            long o = ob * CF_RB + r;
            GI_FV s = has_bias ? acc[r] + (GI_FV)(LD(bias + bo, o)) : acc[r];
            __global T *yr = y + yo + (n * O + o) * P;
            if (p0 + GI_VW <= P) {
                STV(GI_VW, s, yr + p0);
            } else {
                LOOM_CAT(stv_part, GI_VW)(yr + p0, P - p0, s);
            }
        }
    }
}

/* conv_flat_gw: the weight gradient of conv_flat's convolutions, its per-chunk parts
 *   part[s][o][c][kh][kw] = sum over the CH images n of chunk s and the positions p of
 *                           dy[n, o, p] * (x[n, c] at p's shift for (kh, kw), 0 in the padding),
 * one work-item per (s, CF_GO output channels, c, kh, up to CF_GK taps kw of that row): lanes over p,
 * CF_GO x CF_GK vector sums, added across their lanes at the end (ops/conv2d.c then sums the parts in
 * chunk order, conv_sum_parts). The lane masks come from conv_flat_masks. */
#if GI_VW == 16
#define CF_GO LOOM_CL_CF_GO16 /* output channels per work-item (kernel_sizes.h) */
#define CF_GK LOOM_CL_CF_GK16 /* taps of a kernel row per work-item */
#else
#define CF_GO LOOM_CL_CF_GO8
#define CF_GK LOOM_CL_CF_GK8
#endif

/* masks[t][p] = -1 where position p < P reads inside the plane at tap t, else 0 (p < GI_VW * PV) */
__kernel void conv_flat_masks(__global int *masks, long H, long W, long KW, long ph, long pw, long n) {
    long id = get_global_id(0);
    if (id >= n) return;
    long P = H * W, PP = (P + GI_VW - 1) / GI_VW * GI_VW, t = id / PP, p = id % PP, i = p / W, j = p % W;
    long ih = i + t / KW - ph, jw = j + t % KW - pw;
    masks[id] = p < P && ih >= 0 && ih < H && jw >= 0 && jw < W ? -1 : 0;
}

/* one vector v of positions: the CF_GK shifted, masked x vectors, then each dy row (rows past ro repeat
 * the last one, never stored; lanes masked by dm) times them */
#define CF_GW_STEP(LOAD, dm)                                                                        \
    {                                                                                               \
        GI_FV b[CF_GK];                                                                             \
        _Pragma("unroll") for (int k = 0; k < CF_GK; k++) b[k] =                                    \
            select((GI_FV)(0.0f), LOAD(xs, q0 + GI_VW * v + k, xtot), LOOM_CAT(vload, GI_VW)(v + mrow[k], mk)); \
        _Pragma("unroll") for (int r = 0; r < CF_GO; r++) {                                         \
            GI_FV a = select((GI_FV)(0.0f), LOAD(ds, d0 + min((long)r, ro - 1) * P + GI_VW * v, dytot), dm); \
            _Pragma("unroll") for (int k = 0; k < CF_GK; k++) acc[r][k] = fma(a, b[k], acc[r][k]); \
        }                                                                                           \
    }

__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void conv_flat_gw(
    __global const T *dy, ulong dyo, __global const T *x, ulong xo, __global const int *masks, __global float *part,
    long N, long C, long H, long W, long O, long KH, long KW, long ph, long pw, long CH) {
    long P = H * W, PV = (P + GI_VW - 1) / GI_VW, OB = (O + CF_GO - 1) / CF_GO, KB = (KW + CF_GK - 1) / CF_GK;
    long id = get_group_id(0);
    if (id >= N / CH * OB * C * KH * KB) return;
    long kb = id % KB, kh = id / KB % KH, c = id / (KB * KH) % C, ob = id / (KB * KH * C) % OB;
    long s = id / (KB * KH * C * OB), o0 = ob * CF_GO, ro = min(O - o0, (long)CF_GO), kw0 = kb * CF_GK;
    long kn = min(KW - kw0, (long)CF_GK), xtot = N * C * P, dytot = N * O * P;
    /* the row's taps past kn repeat its last one (never stored) */
    __global const int *mk = masks + (kh * KW + kw0) * PV * GI_VW;
    long mrow[CF_GK];
    for (int k = 0; k < CF_GK; k++) mrow[k] = min((long)k, kn - 1) * PV;
    __global const T *xs = x + xo, *ds = dy + dyo;
    CF_IV tail = CF_IOTA < (int)(P - GI_VW * (PV - 1)), all = CF_IOTA >= 0;
    GI_FV acc[CF_GO][CF_GK];
    for (int r = 0; r < CF_GO; r++)
        for (int k = 0; k < CF_GK; k++) acc[r][k] = (GI_FV)(0.0f);
    long n0 = s * CH, n1 = n0 + CH, sh = (kh - ph) * W + kw0 - pw;
    /* every load of the chunk inside x and dy (the last vector's lanes past P included): no bounds tests */
    bool in = (n0 * C + c) * P + sh >= 0 && ((n1 - 1) * C + c) * P + sh + CF_GK - 1 + GI_VW * PV <= xtot &&
              ((n1 - 1) * O + o0 + ro - 1) * P + GI_VW * PV <= dytot && kw0 + CF_GK <= KW;
    for (long n = n0; n < n1; n++) {
        long q0 = (n * C + c) * P + sh, d0 = (n * O + o0) * P;
        /* the last vector: dy's lanes past P set to 0 (the next plane's values: a NaN there must not
         * reach this plane's sums); its loads bounds-tested only where the chunk's are (that step with
         * CF_LD_EDGE everywhere had cost a fifth of the kernel, PoCL, Zen 3) */
        if (in) {
            for (long v = 0; v < PV - 1; v++) CF_GW_STEP(CF_LD, all)
            long v = PV - 1;
            CF_GW_STEP(CF_LD, tail)
        } else {
            for (long v = 0; v < PV - 1; v++) CF_GW_STEP(CF_LD_EDGE, all)
            long v = PV - 1;
            CF_GW_STEP(CF_LD_EDGE, tail)
        }
    }
    for (long r = 0; r < ro; r++)
        for (long k = 0; k < kn; k++)
            part[(((s * O + o0 + r) * C + c) * KH + kh) * KW + kw0 + k] = LOOM_CAT(hsum, GI_VW)(acc[r][k]);
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

#ifndef LOOM_REPRO
/* conv_sum_parts eight elements per item (n a multiple of 8; CPU devices): the same sums */
__kernel void conv_sum_parts8(__global const float *part, ulong po, __global T *dw, ulong dwo, long nparts, long n) {
    long i = 8 * get_global_id(0);
    if (i >= n) return;
    float8 acc = (float8)(0.0f);
    for (long s = 0; s < nparts; s++) acc += vload8(0, part + po + s * n + i);
    STV(8, acc, dw + dwo + i);
}
#endif
