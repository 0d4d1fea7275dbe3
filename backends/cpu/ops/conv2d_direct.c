/* backends/cpu/ops/conv2d_direct.c — direct f32 convolution for stride 1,
 * dilation 1, one group, on CPUs with AVX-512 or AVX2 + FMA: conv2d, conv2d_grad_input
 * (a stride-1 convolution of dy with the flipped, transposed weights and
 * padding KH-1-ph, KW-1-pw) and conv2d_grad_weight. The im2col path (conv2d.c) copies every input
 * value KH*KW times and hands OpenBLAS GEMMs with as few rows as the layer
 * has output channels; here each image is copied once into a zero-padded
 * plane per channel (width Wp = W + 2pw), and output position q = i*Wp + j
 * of that padded grid reads input q + kh*Wp + kw: a contiguous 16-float
 * load for 16 consecutive outputs, whatever the row boundaries (the
 * positions j >= OW of each row are computed and dropped). A register
 * block is 8 output channels x 48 positions (24 registers): per (c, kh, kw)
 * three input vectors and the 8 weights of that tap, broadcast from a
 * repacked weight table (K, O), give 24 FMAs (one input vector per channel
 * blocks made the loop load-bound). Threads take whole images; every output sums its
 * K = C*KH*KW terms in the same order (c, kh, kw) for any thread count.
 *
 * The weight gradient dw[o, c, kh, kw] = sum over images and positions q of
 * dy[o, q] x[c, q + kh*Wp + kw], with dy laid on the same padded grid (zero
 * in the dropped positions): for three output channels and one input
 * channel, 3 x KH*KW accumulators (3x3 kernels: 27 registers) over the
 * images of a chunk held in cache, lane sums kept as vectors per part,
 * reduced in double at the end; parts (one per thread, or fixed by the size
 * in deterministic mode) added in order.
 *
 * The AVX2 kernels are the same loops at 8 lanes with 16 registers: 4
 * output channels x 3 vectors per block (weights repacked per block of 4
 * channels), and for the weight gradient of 3x3 kernels one kernel row (3
 * taps) x 4 output channels; AVX-512 kernels where the CPU has them.
 *
 * LOOM_CPU_DIRECT_CONV=0 in the environment turns the path off, =avx2 picks
 * the AVX2 kernels on an AVX-512 CPU (tests compare both with the im2col
 * path). */
#include <stdlib.h>
#include <string.h>

#include "../../../core/prefetch.h"
#include "../cpu_impl.h"
#include "../vmath.h"
#include "conv2d_direct.h"

#if LOOM__X86
#include <immintrin.h>

#define OB 8    /* output channels per register block */
#define PB 3    /* vectors of 16 output positions per register block */
#define GB 3    /* weight gradient: output channels per register block */
#define GKK 9   /* weight gradient: the kernel size (KH*KW) of the register-blocked loop */
#define SLACK 32 /* floats past the last plane: the last vector may read beyond it */
/* keep a loaded vector in a register: an empty asm that "changes" it stops the compiler from
 * folding the load into every instruction that uses it */
#define LOOM__IN_REGISTER(v) __asm__("" : "+v"(v))

typedef struct djob {
    int64_t N, Ci, Hi, Wi, Co, Ho, Wo, KH, KW, ph, pw;
    int64_t Hp, Wp, S, Q, Qv; /* padded plane, its stride, outputs on the padded grid, their vectors * 16 */
    int parts, isa;
    const float *src, *wp, *bias; /* wp: (Ci*KH*KW, Co); AVX2: (Co / OB2, Ci*KH*KW, OB2) */
    float *dst;
    char *ws; /* per part: the padded image (Ci*S + SLACK floats), then (Co, Qv) outputs */
    size_t per_part;
} djob;

/* 3: AVX-512 kernels, 2: AVX2 + FMA kernels, 0: none (or LOOM_CPU_DIRECT_CONV=0; =avx2 picks the AVX2
 * kernels on an AVX-512 CPU, so that tests cover both) */
static int direct_isa(void) {
    const char *e = getenv("LOOM_CPU_DIRECT_CONV");
    if (e && !strcmp(e, "0")) return 0;
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (__builtin_cpu_supports("avx512f") && !(e && !strcmp(e, "avx2"))) return 3;
    return avx2 ? 2 : 0;
}

bool loom__cpu_conv_direct_ok(const loom__cpu *cpu, const loom__conv_geom *q) {
    (void)cpu;
    return direct_isa() && q->KH * q->KW <= 32 && q->KH * q->KW > 1 && q->sh == 1 && q->sw == 1 && q->dh == 1 &&
           q->dw == 1 && q->G == 1 && q->ph < q->KH && q->pw < q->KW;
}

bool loom__cpu_conv_direct_gw_ok(const loom__cpu *cpu, const loom__conv_geom *q) {
    /* on small planes the lane sums (O*C*KH*KW vectors per part) outweigh a chunk's work: im2col does
     * better below 256 positions on the padded grid with the AVX-512 kernels, below 128 with the AVX2
     * ones (Zen 3, batch 32-128: 14x14 planes (222 positions) 1.2-1.5x faster direct, 7x7 (61) even
     * at batch 64, slower at 32) */
    int64_t grid = (q->OH - 1) * (q->W + 2 * q->pw) + q->OW;
    return loom__cpu_conv_direct_ok(cpu, q) && grid >= (direct_isa() == 3 ? 256 : 128);
}

/* outputs [q0, q0 + 16 pv) of channels [o0, o0 + ob) on the padded grid of one image: pv vectors of
 * 16 positions x ob channels in registers, so each tap loads pv input vectors and ob weights (kept in
 * a register across the pv FMAs) for pv x ob FMAs. ob and pv are constants in the full-block call,
 * so the accumulators stay in registers. Every output sums its taps in (c, kh, kw) order. */
__attribute__((target("avx512f"), always_inline)) static inline void block512(const djob *j, const float *xp,
                                                                             int64_t o0, int ob, int64_t q0, int pv,
                                                                             float *out) {
    __m512 acc[PB][OB];
#pragma GCC unroll 3
    for (int p = 0; p < PB; p++)
#pragma GCC unroll 8
        for (int b = 0; b < OB; b++) acc[p][b] = _mm512_setzero_ps();
    const int64_t KW = j->KW, KH = j->KH, Co = j->Co, Wp = j->Wp;
    for (int64_t c = 0; c < j->Ci; c++)
        for (int64_t kh = 0; kh < KH; kh++) {
            const float *xr = xp + c * j->S + q0 + kh * Wp;
            const float *w = j->wp + ((c * KH + kh) * KW) * Co + o0;
            for (int64_t kw = 0; kw < KW; kw++, w += Co) {
                __m512 xv[PB];
#pragma GCC unroll 3
                for (int p = 0; p < pv; p++) xv[p] = _mm512_loadu_ps(xr + kw + 16 * p);
#pragma GCC unroll 8
                for (int b = 0; b < ob; b++) {
                    __m512 wb = _mm512_set1_ps(w[b]);
                    LOOM__IN_REGISTER(wb);
#pragma GCC unroll 3
                    for (int p = 0; p < pv; p++) acc[p][b] = _mm512_fmadd_ps(xv[p], wb, acc[p][b]);
                }
            }
        }
#pragma GCC unroll 8
    for (int b = 0; b < ob; b++)
#pragma GCC unroll 3
        for (int p = 0; p < pv; p++) _mm512_storeu_ps(out + (o0 + b) * j->Qv + q0 + 16 * p, acc[p][b]);
}

/* every output of one image: (Co, Qv) */
__attribute__((target("avx512f"))) static void grid512(const djob *j, const float *xp, float *out) {
    for (int64_t o0 = 0; o0 < j->Co; o0 += OB) {
        int ob = j->Co - o0 < OB ? (int)(j->Co - o0) : OB;
        for (int64_t q0 = 0; q0 < j->Qv; q0 += 16 * PB) {
            int pv = (j->Qv - q0) / 16 < PB ? (int)((j->Qv - q0) / 16) : PB;
            if (ob == OB && pv == PB)
                block512(j, xp, o0, OB, q0, PB, out);
            else if (ob == OB && pv == 1)
                block512(j, xp, o0, OB, q0, 1, out);
            else if (ob == OB && pv == 2)
                block512(j, xp, o0, OB, q0, 2, out);
            else
                block512(j, xp, o0, ob, q0, pv, out);
        }
    }
}

/* AVX2: 8 outputs per vector; a block of 4 output channels x 3 vectors (12 accumulators, 3 input
 * vectors and one broadcast weight: the 16 registers), so a tap's 7 loads feed 12 FMAs (8 channels
 * x 1 vector took 9 loads for 8 FMAs: load-bound on Zen 3) */
#define OB2 4
#define PB2 3
__attribute__((target("avx2,fma"), always_inline)) static inline void block256(const djob *j, const float *xp,
                                                                              int64_t o0, int ob, int64_t q0, int pv,
                                                                              float *out) {
    __m256 acc[PB2][OB2];
#pragma GCC unroll 3
    for (int p = 0; p < PB2; p++)
#pragma GCC unroll 4
        for (int b = 0; b < OB2; b++) acc[p][b] = _mm256_setzero_ps();
    const int64_t KW = j->KW, KH = j->KH, Wp = j->Wp;
    const float *w = j->wp + o0 * j->Ci * KH * KW; /* (Co / OB2, Ci*KH*KW, OB2): this block's taps in a row */
    for (int64_t c = 0; c < j->Ci; c++)
        for (int64_t kh = 0; kh < KH; kh++) {
            const float *xr = xp + c * j->S + q0 + kh * Wp;
            for (int64_t kw = 0; kw < KW; kw++, w += OB2) {
                __m256 xv[PB2];
#pragma GCC unroll 3
                for (int p = 0; p < pv; p++) {
                    xv[p] = _mm256_loadu_ps(xr + kw + 8 * p);
                    LOOM__IN_REGISTER(xv[p]);
                }
#pragma GCC unroll 4
                for (int b = 0; b < ob; b++) {
                    __m256 wb = _mm256_broadcast_ss(w + b);
#pragma GCC unroll 3
                    for (int p = 0; p < pv; p++) acc[p][b] = _mm256_fmadd_ps(xv[p], wb, acc[p][b]);
                }
            }
        }
#pragma GCC unroll 4
    for (int b = 0; b < ob; b++)
#pragma GCC unroll 3
        for (int p = 0; p < pv; p++) _mm256_storeu_ps(out + (o0 + b) * j->Qv + q0 + 8 * p, acc[p][b]);
}

__attribute__((target("avx2,fma"))) static void grid256(const djob *j, const float *xp, float *out) {
    for (int64_t o0 = 0; o0 < j->Co; o0 += OB2) {
        int ob = j->Co - o0 < OB2 ? (int)(j->Co - o0) : OB2;
        for (int64_t q0 = 0; q0 < j->Q; q0 += 8 * PB2) {
            int pv = (int)((j->Q - q0 + 7) / 8);
            if (pv > PB2) pv = PB2;
            if (ob == OB2 && pv == PB2)
                block256(j, xp, o0, OB2, q0, PB2, out);
            else if (ob == OB2 && pv == 2)
                block256(j, xp, o0, OB2, q0, 2, out);
            else if (ob == OB2 && pv == 1)
                block256(j, xp, o0, OB2, q0, 1, out);
            else
                block256(j, xp, o0, ob, q0, pv, out);
        }
    }
}

/* n floats from s to d, 8 at a time, the last 8 (or 4) again where n is not
 * a multiple (overlapping stores that stay inside the row): the rows these
 * kernels copy are 7 to 56 floats, where a memcpy call per row cost more than
 * the copy (perf: ~9% of a ResNet-20 step in memmove). A masked store
 * (vmaskmovps) is microcoded on AMD's cores: on Zen 3 the tail stores took
 * most of this copy's time. This file's drivers run on AVX2 CPUs only
 * (direct_isa). */
#define AVX2_FN __attribute__((target("avx2,fma")))
AVX2_FN static inline void copy_row(float *d, const float *s, int64_t n) {
    if (n >= 8) {
        int64_t k = 0;
        for (; k + 8 <= n; k += 8) _mm256_storeu_ps(d + k, _mm256_loadu_ps(s + k));
        if (k < n) _mm256_storeu_ps(d + n - 8, _mm256_loadu_ps(s + n - 8));
    } else if (n >= 4) {
        _mm_storeu_ps(d, _mm_loadu_ps(s));
        _mm_storeu_ps(d + n - 4, _mm_loadu_ps(s + n - 4));
    } else {
        for (int64_t k = 0; k < n; k++) d[k] = s[k];
    }
}

/* planes of h x w floats (src, packed) into planes of stride `plane` on a grid of row stride wp, at row
 * top, column left; the rest of dst is left as it is (zero: the padding) */
AVX2_FN static void to_grid(float *dst, int64_t plane, int64_t wp, int64_t top, int64_t left, const float *src,
                            int64_t planes, int64_t h, int64_t w) {
    for (int64_t c = 0; c < planes; c++)
        for (int64_t i = 0; i < h; i++) {
            const float *r = src + (c * h + i) * w;
            loom__prefetch_span((const char *)r + LOOM__PF_AHEAD, (size_t)w * sizeof *r); /* (prefetch.h) */
            copy_row(dst + c * plane + (i + top) * wp + left, r, w);
        }
}

AVX2_FN static void images(void *v, int64_t p0, int64_t p1) {
    const djob *j = v;
    for (int64_t p = p0; p < p1; p++) {
        float *xp = (float *)(j->ws + (size_t)p * j->per_part), *out = xp + j->Ci * j->S + SLACK;
        memset(xp, 0, (size_t)(j->Ci * j->S + SLACK) * sizeof *xp);
        for (int64_t n = j->N * p / j->parts; n < j->N * (p + 1) / j->parts; n++) {
            to_grid(xp, j->S, j->Wp, j->ph, j->pw, j->src + n * j->Ci * j->Hi * j->Wi, j->Ci, j->Hi, j->Wi);
            if (j->isa == 3)
                grid512(j, xp, out);
            else
                grid256(j, xp, out);
            float *y = j->dst + n * j->Co * j->Ho * j->Wo;
            for (int64_t o = 0; o < j->Co; o++) {
                float bo = j->bias ? j->bias[o] : 0.0f;
                for (int64_t i = 0; i < j->Ho; i++) {
                    const float *s = out + o * j->Qv + i * j->Wp;
                    float *d = y + (o * j->Ho + i) * j->Wo;
                    if (j->bias)
                        for (int64_t k = 0; k < j->Wo; k++) d[k] = s[k] + bo;
                    else
                        copy_row(d, s, j->Wo);
                }
            }
        }
    }
}

/* dst (N, Co, Ho, Wo) = stride-1 convolution of src (N, Ci, Hi, Wi) with wp, padding ph, pw (+ bias) */
static loom_status run(const loom__cpu_args *a, djob *j) {
    j->Hp = j->Hi + 2 * j->ph, j->Wp = j->Wi + 2 * j->pw, j->S = j->Hp * j->Wp;
    j->Q = (j->Ho - 1) * j->Wp + j->Wo, j->Qv = (j->Q + 15) / 16 * 16;
    j->isa = direct_isa();
    int threads = loom__cpu_threads(a->cpu);
    j->parts = (int)(j->N < threads ? j->N : threads);
    if (a->cpu->deterministic) j->parts = (int)(j->N < LOOM__CPU_DET_PARTS ? j->N : LOOM__CPU_DET_PARTS);
    j->per_part = ((size_t)(j->Ci * j->S + SLACK + j->Co * j->Qv) * sizeof(float) + 63) / 64 * 64;
    int64_t K = j->Ci * j->KH * j->KW, Cop = (j->Co + OB2 - 1) / OB2 * OB2;
    size_t wbytes = ((size_t)(K * Cop) * sizeof(float) + 63) / 64 * 64;
    char *ws = loom__cpu_scratch(a->cpu, wbytes + j->per_part * (size_t)j->parts);
    if (!ws)
        return loom__err(a->node->g->ctx, LOOM_ERR_OOM, "%s: cannot allocate the direct convolution's workspace "
                         "(node '%s')", loom_op_name(a->node->op), a->node->name);
    j->ws = ws + wbytes;
    float *wp = (float *)ws;
    const float *w = a->x[1]; /* (O, C, KH, KW) */
    bool gi = a->node->op == LOOM_OP_CONV2D_GRAD_INPUT;
    for (int64_t co = 0; co < j->Co; co++)
        for (int64_t ci = 0; ci < j->Ci; ci++)
            for (int64_t kh = 0; kh < j->KH; kh++)
                for (int64_t kw = 0; kw < j->KW; kw++) {
                    /* forward: w[co, ci, kh, kw]; grad_input: w[ci, co, KH-1-kh, KW-1-kw] */
                    float v = gi ? w[((ci * j->Co + co) * j->KH + j->KH - 1 - kh) * j->KW + j->KW - 1 - kw]
                                 : w[((co * j->Ci + ci) * j->KH + kh) * j->KW + kw];
                    int64_t k = (ci * j->KH + kh) * j->KW + kw;
                    /* AVX-512: (K, Co); AVX2: blocks of OB2 channels, (Co / OB2, K, OB2), of which a last
                     * partial block's block256 reads only its channels */
                    if (j->isa == 3)
                        wp[k * j->Co + co] = v;
                    else
                        wp[((co / OB2) * K + k) * OB2 + co % OB2] = v;
                }
    j->wp = wp;
    loom__cpu_parallel(a->cpu, j->parts, 1, images, j);
    return LOOM_OK;
}

loom_status loom__cpu_conv_direct_fwd(const loom__cpu_args *a, const loom__conv_geom *q) {
    djob j = {.N = q->N, .Ci = q->C, .Hi = q->H, .Wi = q->W, .Co = q->O, .Ho = q->OH, .Wo = q->OW, .KH = q->KH,
              .KW = q->KW, .ph = q->ph, .pw = q->pw, .src = a->x[0], .bias = a->node->nsrc > 2 ? a->x[2] : NULL,
              .dst = a->y};
    return run(a, &j);
}

loom_status loom__cpu_conv_direct_gi(const loom__cpu_args *a, const loom__conv_geom *q) {
    djob j = {.N = q->N, .Ci = q->O, .Hi = q->OH, .Wi = q->OW, .Co = q->C, .Ho = q->H, .Wo = q->W, .KH = q->KH,
              .KW = q->KW, .ph = q->KH - 1 - q->ph, .pw = q->KW - 1 - q->pw, .src = a->x[0], .dst = a->y};
    return run(a, &j);
}

/* ---- the weight gradient ---- */

typedef struct gjob {
    int64_t N, C, O, H, W, OH, OW, KH, KW, ph, pw;
    int64_t Wp, S, XS, Q, Qv, NB; /* plane stride S, image stride XS, images per chunk NB */
    int parts, isa;
    const float *x, *dy;
    float *dw;
    char *ws; /* per part: lane sums (O*C*KH*KW*16), then NB padded images and NB dy grids */
    size_t per_part;
} gjob;

/* lane sums of dw[o0 .. o0+ob, c, :, :] over the m images of a chunk; KK and ob are
 * constants in the register-blocked call (the accumulators stay in registers) */
__attribute__((target("avx512f"), always_inline)) static inline void gw_block512(const gjob *j, const float *xc,
                                                                             const float *dc, int64_t m, int ob,
                                                                             int KK, float *sums) {
    __m512 acc[GB * 32];
    for (int k = 0; k < GB * 32; k++) acc[k] = _mm512_setzero_ps();
    const int64_t Qv = j->Qv;
    int64_t off[32]; /* tap k reads x at q + off[k] */
    for (int k = 0; k < KK; k++) off[k] = (k / j->KW) * j->Wp + k % j->KW;
    for (int64_t mi = 0; mi < m; mi++, xc += j->XS, dc += j->O * Qv)
        for (int64_t q0 = 0; q0 < Qv; q0 += 16) {
            __m512 dv[GB] = {0};
#pragma GCC unroll 4
            for (int b = 0; b < ob; b++) dv[b] = _mm512_loadu_ps(dc + b * Qv + q0);
#pragma GCC unroll 32
            for (int k = 0; k < KK; k++) {
                __m512 xv = _mm512_loadu_ps(xc + q0 + off[k]);
                LOOM__IN_REGISTER(xv); /* one load for the ob FMAs (GCC folds it into each: ob x the loads) */
#pragma GCC unroll 4
                for (int b = 0; b < ob; b++) acc[b * KK + k] = _mm512_fmadd_ps(dv[b], xv, acc[b * KK + k]);
            }
        }
    for (int b = 0; b < ob; b++)
        for (int k = 0; k < KK; k++) {
            float *s = sums + ((size_t)b * j->C * KK + k) * 16;
            _mm512_storeu_ps(s, _mm512_add_ps(_mm512_loadu_ps(s), acc[b * KK + k]));
        }
}

/* every (c, block of output channels) of a chunk of m images */
__attribute__((target("avx512f"))) static void gw_chunk512(const gjob *j, const float *xp, const float *dg, int64_t m,
                                                            float *sums) {
    const int KK = (int)(j->KH * j->KW);
    for (int64_t c = 0; c < j->C; c++)
        for (int64_t o0 = 0; o0 < j->O; o0 += GB) {
            int ob = j->O - o0 < GB ? (int)(j->O - o0) : GB;
            float *s = sums + ((o0 * j->C + c) * KK) * 16;
            if (KK == GKK && ob == GB)
                gw_block512(j, xp + c * j->S, dg + o0 * j->Qv, m, GB, GKK, s);
            else
                gw_block512(j, xp + c * j->S, dg + o0 * j->Qv, m, ob, KK, s);
        }
}

/* AVX2: one output channel and KK taps per block (16 registers), lane sums in the first 8 of the 16 */
__attribute__((target("avx2,fma"), always_inline)) static inline void gw_block256(const gjob *j, const float *xc,
                                                                                 const float *dc, int64_t m, int KK,
                                                                                 float *sums) {
    __m256 acc[32];
    for (int k = 0; k < 32; k++) acc[k] = _mm256_setzero_ps();
    const int64_t Qv = j->Qv;
    int64_t off[32];
    for (int k = 0; k < KK; k++) off[k] = (k / j->KW) * j->Wp + k % j->KW;
    for (int64_t mi = 0; mi < m; mi++, xc += j->XS, dc += j->O * Qv)
        for (int64_t q0 = 0; q0 < Qv; q0 += 8) {
            __m256 dv = _mm256_loadu_ps(dc + q0);
#pragma GCC unroll 32
            for (int k = 0; k < KK; k++) acc[k] = _mm256_fmadd_ps(dv, _mm256_loadu_ps(xc + q0 + off[k]), acc[k]);
        }
    for (int k = 0; k < KK; k++) _mm256_storeu_ps(sums + k * 16, _mm256_add_ps(_mm256_loadu_ps(sums + k * 16), acc[k]));
}

/* AVX2, one kernel row of 3 taps x 4 output channels (12 accumulators, the 3 shifted input vectors
 * and one dy vector: the 16 registers), so 7 loads feed 12 FMAs (a whole 3x3 kernel for one channel:
 * 10 loads for 9). Each accumulator takes the same terms in the same order as gw_block256's. */
#define GB2 4
__attribute__((target("avx2,fma"), always_inline)) static inline void gw_row256(const gjob *j, const float *xc,
                                                                               const float *dc, int64_t m,
                                                                               float *sums) {
    __m256 acc[GB2][3];
#pragma GCC unroll 4
    for (int b = 0; b < GB2; b++)
#pragma GCC unroll 3
        for (int k = 0; k < 3; k++) acc[b][k] = _mm256_setzero_ps();
    const int64_t Qv = j->Qv;
    for (int64_t mi = 0; mi < m; mi++, xc += j->XS, dc += j->O * Qv)
        for (int64_t q0 = 0; q0 < Qv; q0 += 8) {
            __m256 x0 = _mm256_loadu_ps(xc + q0), x1 = _mm256_loadu_ps(xc + q0 + 1), x2 = _mm256_loadu_ps(xc + q0 + 2);
            LOOM__IN_REGISTER(x0);
            LOOM__IN_REGISTER(x1);
            LOOM__IN_REGISTER(x2);
#pragma GCC unroll 4
            for (int b = 0; b < GB2; b++) {
                __m256 dv = _mm256_loadu_ps(dc + b * Qv + q0);
                acc[b][0] = _mm256_fmadd_ps(dv, x0, acc[b][0]);
                acc[b][1] = _mm256_fmadd_ps(dv, x1, acc[b][1]);
                acc[b][2] = _mm256_fmadd_ps(dv, x2, acc[b][2]);
            }
        }
    for (int b = 0; b < GB2; b++)
        for (int k = 0; k < 3; k++) {
            float *s = sums + ((size_t)b * j->C * GKK + k) * 16;
            _mm256_storeu_ps(s, _mm256_add_ps(_mm256_loadu_ps(s), acc[b][k]));
        }
}

__attribute__((target("avx2,fma"))) static void gw_chunk256(const gjob *j, const float *xp, const float *dg, int64_t m,
                                                            float *sums) {
    const int KK = (int)(j->KH * j->KW);
    int64_t o_rows = KK == GKK && j->KW == 3 ? j->O / GB2 * GB2 : 0; /* channels the row kernel takes */
    for (int64_t c = 0; c < j->C; c++)
        for (int64_t o0 = 0; o0 < o_rows; o0 += GB2)
            for (int64_t kh = 0; kh < 3; kh++)
                gw_row256(j, xp + c * j->S + kh * j->Wp, dg + o0 * j->Qv, m, sums + ((o0 * j->C + c) * KK + kh * 3) * 16);
    for (int64_t c = 0; c < j->C; c++)
        for (int64_t o = o_rows; o < j->O; o++) {
            float *s = sums + ((o * j->C + c) * KK) * 16;
            if (KK == GKK)
                gw_block256(j, xp + c * j->S, dg + o * j->Qv, m, GKK, s);
            else
                gw_block256(j, xp + c * j->S, dg + o * j->Qv, m, KK, s);
        }
}

AVX2_FN static void gw_parts(void *v, int64_t p0, int64_t p1) {
    const gjob *j = v;
    const int KK = (int)(j->KH * j->KW);
    for (int64_t p = p0; p < p1; p++) {
        float *sums = (float *)(j->ws + (size_t)p * j->per_part);
        float *xp = sums + j->O * j->C * KK * 16, *dg = xp + j->NB * j->XS;
        memset(sums, 0, (size_t)(j->O * j->C * KK * 16) * sizeof *sums);
        int64_t n1 = j->N * (p + 1) / j->parts;
        /* the grids' padding (and dy's dropped positions) once: to_grid writes the same cells of
         * every chunk and never these */
        memset(xp, 0, (size_t)(j->NB * j->XS) * sizeof *xp);
        memset(dg, 0, (size_t)(j->NB * j->O * j->Qv) * sizeof *dg);
        for (int64_t n0 = j->N * p / j->parts; n0 < n1; n0 += j->NB) {
            int64_t m = n1 - n0 < j->NB ? n1 - n0 : j->NB;
            for (int64_t mi = 0; mi < m; mi++) {
                int64_t n = n0 + mi;
                to_grid(xp + mi * j->XS, j->S, j->Wp, j->ph, j->pw, j->x + n * j->C * j->H * j->W, j->C, j->H, j->W);
                to_grid(dg + mi * j->O * j->Qv, j->Qv, j->Wp, 0, 0, j->dy + n * j->O * j->OH * j->OW, j->O, j->OH,
                        j->OW);
            }
            if (j->isa == 3)
                gw_chunk512(j, xp, dg, m, sums);
            else
                gw_chunk256(j, xp, dg, m, sums);
        }
    }
}

/* dw rows o: the parts' lane sums, added in double in part and lane order */
static void gw_reduce(void *v, int64_t o0, int64_t o1) {
    const gjob *j = v;
    int64_t row = j->C * j->KH * j->KW;
    for (int64_t o = o0; o < o1; o++)
        for (int64_t e = o * row; e < (o + 1) * row; e++) {
            double s = 0;
            for (int p = 0; p < j->parts; p++) {
                const float *l = (const float *)(j->ws + (size_t)p * j->per_part) + e * 16;
                for (int k = 0; k < 16; k++) s += l[k];
            }
            j->dw[e] = (float)s;
        }
}

loom_status loom__cpu_conv_direct_gw(const loom__cpu_args *a, const loom__conv_geom *q) {
    gjob j = {.N = q->N, .C = q->C, .O = q->O, .H = q->H, .W = q->W, .OH = q->OH, .OW = q->OW, .KH = q->KH,
              .KW = q->KW, .ph = q->ph, .pw = q->pw, .dy = a->x[0], .x = a->x[1], .dw = a->y};
    j.Wp = q->W + 2 * q->pw, j.S = (q->H + 2 * q->ph) * j.Wp, j.XS = q->C * j.S + SLACK;
    j.Q = (q->OH - 1) * j.Wp + q->OW, j.Qv = (j.Q + 15) / 16 * 16;
    j.isa = direct_isa();
    int64_t per_image = j.XS + q->O * j.Qv; /* floats */
    j.NB = ((int64_t)256 << 10) / (per_image * (int64_t)sizeof(float)); /* a chunk of images in the L2 cache */
    if (j.NB < 1) j.NB = 1;
    int threads = loom__cpu_threads(a->cpu);
    j.parts = (int)(q->N < threads ? q->N : threads);
    if (a->cpu->deterministic) j.parts = (int)(q->N < LOOM__CPU_DET_PARTS ? q->N : LOOM__CPU_DET_PARTS);
    j.per_part = ((size_t)(q->O * q->C * q->KH * q->KW * 16 + j.NB * per_image) * sizeof(float) + 63) / 64 * 64;
    j.ws = loom__cpu_scratch(a->cpu, j.per_part * (size_t)j.parts);
    if (!j.ws)
        return loom__err(a->node->g->ctx, LOOM_ERR_OOM, "%s: cannot allocate the direct convolution's workspace "
                         "(node '%s')", loom_op_name(a->node->op), a->node->name);
    loom__cpu_parallel(a->cpu, j.parts, 1, gw_parts, &j);
    loom__cpu_parallel(a->cpu, q->O, 1, gw_reduce, &j);
    return LOOM_OK;
}

#else /* not x86-64: no direct kernels; conv2d.c keeps im2col */

bool loom__cpu_conv_direct_ok(const loom__cpu *cpu, const loom__conv_geom *q) {
    (void)cpu, (void)q;
    return false;
}

bool loom__cpu_conv_direct_gw_ok(const loom__cpu *cpu, const loom__conv_geom *q) {
    (void)cpu, (void)q;
    return false;
}

static loom_status none(const loom__cpu_args *a) {
    return loom__err(a->node->g->ctx, LOOM_ERR_UNSUPPORTED, "%s: no direct convolution on this CPU (node '%s')",
                     loom_op_name(a->node->op), a->node->name);
}

loom_status loom__cpu_conv_direct_fwd(const loom__cpu_args *a, const loom__conv_geom *q) { return (void)q, none(a); }
loom_status loom__cpu_conv_direct_gi(const loom__cpu_args *a, const loom__conv_geom *q) { return (void)q, none(a); }
loom_status loom__cpu_conv_direct_gw(const loom__cpu_args *a, const loom__conv_geom *q) { return (void)q, none(a); }

#endif
