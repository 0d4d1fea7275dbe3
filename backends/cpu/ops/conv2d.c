/* backends/cpu/ops/conv2d.c — CPU kernels of the conv2d family: conv2d,
 * conv2d_grad_input, conv2d_grad_weight (parameters: core/ops/conv2d.c).
 *
 * F64: reference loops straight from the definition (the numerics oracle),
 *      split across the thread pool by output rows.
 * F32: FAST PATH. Stride-1 convolutions on CPUs with AVX-512 run the direct
 *      kernels of conv2d_direct.c (the weight gradient there on larger
 *      planes only); the rest, two ways.
 *      Per image (used whenever there are at least as many images as threads):
 *      each thread takes a range of images; per image and group, im2col into
 *      the thread's own (K, OH*OW) columns and one single-threaded sgemm
 *      writing y / reading dy in place; col2im for grad_input. See the
 *      per-image section below.
 *      Chunked (fewer images than threads, e.g. one large image): batched
 *      im2col + one sgemm per group and chunk of images:
 *      the columns of a chunk of nb images are laid side by side in one
 *      (K = C/groups*KH*KW, nb*OH*OW) matrix, so small images still give one
 *      large GEMM (split into panels over loom's pool). grad_input: sgemm to
 *      columns + col2im; grad_weight:
 *      im2col + sgemm accumulated over the chunks. 1x1 stride-1 unpadded
 *      convolutions skip im2col (one sgemm per image and group on x itself).
 *
 *      Workspace (the backend's kept scratch buffer, LOOM_ERR_OOM if it cannot grow):
 *        (K + O/groups) * nb * OH*OW floats, nb = min(N, max(1, 4M / ((K + O/groups) * OH*OW)))
 *      i.e. at most ~16 MB unless one image alone needs more; none for 1x1.
 *
 *      Per image keeps each image's columns in the caches while its GEMM reads
 *      them; a layer with a tiny reduction (K = 9) is bound by memory traffic,
 *      not by the GEMM (bench/gemm_conv.c times the conv ops; figures in
 *      bench/results/).
 *      Depthwise convolutions (C/groups = 1) run one tiny GEMM per group here:
 *      correct but slow; a direct loop would serve them better.
 *
 *      Thread count and bits: by default the path (per image when N >= threads)
 *      and the weight gradient's split (one image range per thread) follow the
 *      thread count, and so do the last bits of the results. In deterministic
 *      mode (loom__cpu.deterministic) the per-image path runs whenever N > 1
 *      and the weight gradient sums min(N, LOOM__CPU_DET_PARTS) image ranges,
 *      added in order: the same bits for any thread count (GEMMs: gemm.c).
 */
#include "../cpu_impl.h"
#include "conv2d_direct.h"

/* sizes of one convolution (core/impl.h) */
typedef loom__conv_geom geom;

/* Output positions j in [0, n) whose input index j*s + off lies in [0, lim): [*lo, *hi). */
static void valid_range(int64_t off, int64_t s, int64_t lim, int64_t n, int64_t *lo, int64_t *hi) {
    int64_t a, b;
    if (s == 1) /* (no divisions: im2col asks this per column row) */
        a = off >= 0 ? 0 : -off, b = lim - off <= 0 ? 0 : lim - off;
    else
        a = off >= 0 ? 0 : (-off + s - 1) / s, b = lim - off <= 0 ? 0 : (lim - off - 1) / s + 1;
    if (a > n) a = n;
    if (b > n) b = n;
    if (b < a) b = a;
    *lo = a, *hi = b;
}

/* ======================= F64 reference loops ======================= */

typedef struct rjob {
    const geom *q;
    const double *a, *b, *c; /* op-specific inputs */
    double *y;
} rjob;

/* y (N,O,OH,OW) rows r = n*O + o:
 * y[n,o,i,j] = bias[o] + sum_{c,kh,kw} x[n, g*Cg+c, i*sh-ph+kh*dh, j*sw-pw+kw*dw] * w[o,c,kh,kw] */
static void fwd_ref(void *v, int64_t r0, int64_t r1) {
    const rjob *jb = v;
    const geom *q = jb->q;
    const double *x = jb->a, *w = jb->b, *bias = jb->c;
    for (int64_t r = r0; r < r1; r++) {
        int64_t n = r / q->O, o = r % q->O, g = o / q->Og;
        for (int64_t i = 0; i < q->OH; i++)
            for (int64_t j = 0; j < q->OW; j++) {
                double acc = bias ? bias[o] : 0.0;
                for (int64_t c = 0; c < q->Cg; c++)
                    for (int64_t kh = 0; kh < q->KH; kh++) {
                        int64_t ih = i * q->sh - q->ph + kh * q->dh;
                        if (ih < 0 || ih >= q->H) continue;
                        for (int64_t kw = 0; kw < q->KW; kw++) {
                            int64_t iw = j * q->sw - q->pw + kw * q->dw;
                            if (iw < 0 || iw >= q->W) continue;
                            acc += x[((n * q->C + g * q->Cg + c) * q->H + ih) * q->W + iw] *
                                   w[((o * q->Cg + c) * q->KH + kh) * q->KW + kw];
                        }
                    }
                jb->y[(r * q->OH + i) * q->OW + j] = acc;
            }
    }
}

/* dx (N,C,H,W) rows r = n*C + ci: dx[n,ci,ih,iw] = sum over o in ci's group and
 * (kh,kw) with ih = i*sh-ph+kh*dh, iw = j*sw-pw+kw*dw of dy[n,o,i,j] * w[o,c,kh,kw] */
static void gi_ref(void *v, int64_t r0, int64_t r1) {
    const rjob *jb = v;
    const geom *q = jb->q;
    const double *dy = jb->a, *w = jb->b;
    for (int64_t r = r0; r < r1; r++) {
        int64_t n = r / q->C, ci = r % q->C, g = ci / q->Cg, c = ci % q->Cg;
        for (int64_t ih = 0; ih < q->H; ih++)
            for (int64_t iw = 0; iw < q->W; iw++) {
                double acc = 0.0;
                for (int64_t kh = 0; kh < q->KH; kh++) {
                    int64_t th = ih + q->ph - kh * q->dh;
                    if (th < 0 || th % q->sh) continue;
                    int64_t i = th / q->sh;
                    if (i >= q->OH) continue;
                    for (int64_t kw = 0; kw < q->KW; kw++) {
                        int64_t tw = iw + q->pw - kw * q->dw;
                        if (tw < 0 || tw % q->sw) continue;
                        int64_t j = tw / q->sw;
                        if (j >= q->OW) continue;
                        for (int64_t o = g * q->Og; o < (g + 1) * q->Og; o++)
                            acc += dy[((n * q->O + o) * q->OH + i) * q->OW + j] *
                                   w[((o * q->Cg + c) * q->KH + kh) * q->KW + kw];
                    }
                }
                jb->y[(r * q->H + ih) * q->W + iw] = acc;
            }
    }
}

/* dw (O,Cg,KH,KW) rows o: dw[o,c,kh,kw] = sum_{n,i,j} dy[n,o,i,j] * x[n, g*Cg+c, i*sh-ph+kh*dh, j*sw-pw+kw*dw] */
static void gw_ref(void *v, int64_t r0, int64_t r1) {
    const rjob *jb = v;
    const geom *q = jb->q;
    const double *dy = jb->a, *x = jb->b;
    for (int64_t o = r0; o < r1; o++) {
        int64_t g = o / q->Og;
        for (int64_t c = 0; c < q->Cg; c++)
            for (int64_t kh = 0; kh < q->KH; kh++)
                for (int64_t kw = 0; kw < q->KW; kw++) {
                    double acc = 0.0;
                    for (int64_t n = 0; n < q->N; n++)
                        for (int64_t i = 0; i < q->OH; i++) {
                            int64_t ih = i * q->sh - q->ph + kh * q->dh;
                            if (ih < 0 || ih >= q->H) continue;
                            for (int64_t j = 0; j < q->OW; j++) {
                                int64_t iw = j * q->sw - q->pw + kw * q->dw;
                                if (iw < 0 || iw >= q->W) continue;
                                acc += dy[((n * q->O + o) * q->OH + i) * q->OW + j] *
                                       x[((n * q->C + g * q->Cg + c) * q->H + ih) * q->W + iw];
                            }
                        }
                    jb->y[((o * q->Cg + c) * q->KH + kh) * q->KW + kw] = acc;
                }
    }
}

/* ======================= F32 fast path ======================= */

typedef struct fjob {
    const geom *q;
    int64_t n0, m, g; /* images [n0, n0+m), group g */
    const float *src;
    float *dst;
    const float *bias;
} fjob;

static int64_t rows_grain(int64_t row_len) { return row_len >= 8192 ? 1 : 8192 / row_len; }

/* col (K, m*P) rows (k, image): col[k, mi*P + i*OW + j] = x[n0+mi, g*Cg+c, ih, iw] or 0 in the padding,
 * k = (c*KH + kh)*KW + kw, P = OH*OW */
static void im2col_rows(void *v, int64_t r0, int64_t r1) {
    const fjob *jb = v;
    const geom *q = jb->q;
    int64_t P = q->OH * q->OW, L = jb->m * P;
    /* row r = k*m + mi, k = (c*KH + kh)*KW + kw: decoded once, then stepped (the divisions per
     * row cost as much as a 14x14 row's copy) */
    int64_t k = r0 / jb->m, mi = r0 % jb->m;
    int64_t c = k / (q->KH * q->KW), kh = k / q->KW % q->KH, kw = k % q->KW;
    for (int64_t r = r0; r < r1; r++, mi++) {
        if (mi == jb->m) {
            mi = 0, k++;
            if (++kw == q->KW) {
                kw = 0;
                if (++kh == q->KH) kh = 0, c++;
            }
        }
        const float *xp = jb->src + ((jb->n0 + mi) * q->C + jb->g * q->Cg + c) * q->H * q->W;
        float *d = jb->dst + k * L + mi * P;
        int64_t lo, hi, off = kw * q->dw - q->pw;
        valid_range(off, q->sw, q->W, q->OW, &lo, &hi);
        if (q->sh == 1 && q->sw == 1 && q->OW == q->W && hi > lo) {
            /* "same" width, stride 1: the valid rows [i0, i1) of this plane are one shifted run of x;
             * copy it whole, then zero the columns outside [lo, hi) and the rows outside [i0, i1) */
            int64_t ioff = kh * q->dh - q->ph, i0, i1;
            valid_range(ioff, 1, q->H, q->OH, &i0, &i1);
            memset(d, 0, (size_t)(i0 * q->OW) * sizeof *d);
            if (i1 > i0)
                memcpy(d + i0 * q->OW + lo, xp + (i0 + ioff) * q->W + lo + off,
                       (size_t)((i1 - i0 - 1) * q->OW + hi - lo) * sizeof *d);
            for (int64_t i = i0; i < i1; i++) {
                for (int64_t j = 0; j < lo; j++) d[i * q->OW + j] = 0;
                for (int64_t j = hi; j < q->OW; j++) d[i * q->OW + j] = 0;
            }
            memset(d + i1 * q->OW, 0, (size_t)((q->OH - i1) * q->OW) * sizeof *d);
            continue;
        }
        for (int64_t i = 0; i < q->OH; i++, d += q->OW) {
            int64_t ih = i * q->sh - q->ph + kh * q->dh;
            if (ih < 0 || ih >= q->H) {
                memset(d, 0, (size_t)q->OW * sizeof *d);
                continue;
            }
            const float *xr = xp + ih * q->W; /* input column of j: j*sw + off */
            for (int64_t j = 0; j < lo; j++) d[j] = 0;
            if (q->sw == 1) {
                memcpy(d + lo, xr + lo + off, (size_t)(hi - lo) * sizeof *d);
            } else {
                for (int64_t j = lo; j < hi; j++) d[j] = xr[j * q->sw + off];
            }
            for (int64_t j = hi; j < q->OW; j++) d[j] = 0;
        }
    }
}

/* dx planes (image mi, channel c of group g) += col2im(col (K, m*P)) */
static void col2im_planes(void *v, int64_t r0, int64_t r1) {
    const fjob *jb = v;
    const geom *q = jb->q;
    int64_t P = q->OH * q->OW, L = jb->m * P;
    for (int64_t r = r0; r < r1; r++) {
        int64_t mi = r / q->Cg, c = r % q->Cg;
        float *dxp = jb->dst + ((jb->n0 + mi) * q->C + jb->g * q->Cg + c) * q->H * q->W;
        for (int64_t kh = 0; kh < q->KH; kh++)
            for (int64_t kw = 0; kw < q->KW; kw++) {
                const float *s = jb->src + ((c * q->KH + kh) * q->KW + kw) * L + mi * P;
                int64_t lo, hi, off = kw * q->dw - q->pw;
                valid_range(off, q->sw, q->W, q->OW, &lo, &hi);
                for (int64_t i = 0; i < q->OH; i++, s += q->OW) {
                    int64_t ih = i * q->sh - q->ph + kh * q->dh;
                    if (ih < 0 || ih >= q->H) continue;
                    float *xr = dxp + ih * q->W;
                    for (int64_t j = lo; j < hi; j++) xr[j * q->sw + off] += s[j];
                }
            }
    }
}

/* rows (mi, o) of group g: y[n0+mi, g*Og+o, :] = tmp[o, mi*P : (mi+1)*P] + bias[g*Og+o] */
static void scatter_rows(void *v, int64_t r0, int64_t r1) {
    const fjob *jb = v;
    const geom *q = jb->q;
    int64_t P = q->OH * q->OW, L = jb->m * P;
    for (int64_t r = r0; r < r1; r++) {
        int64_t mi = r / q->Og, o = r % q->Og;
        const float *s = jb->src + o * L + mi * P;
        float *d = jb->dst + ((jb->n0 + mi) * q->O + jb->g * q->Og + o) * P;
        float b = jb->bias ? jb->bias[jb->g * q->Og + o] : 0.0f;
        for (int64_t p = 0; p < P; p++) d[p] = s[p] + b;
    }
}

/* rows (mi, o) of group g: dyb[o, mi*P : (mi+1)*P] = dy[n0+mi, g*Og+o, :] */
static void gather_rows(void *v, int64_t r0, int64_t r1) {
    const fjob *jb = v;
    const geom *q = jb->q;
    int64_t P = q->OH * q->OW, L = jb->m * P;
    for (int64_t r = r0; r < r1; r++) {
        int64_t mi = r / q->Og, o = r % q->Og;
        memcpy(jb->dst + o * L + mi * P, jb->src + ((jb->n0 + mi) * q->O + jb->g * q->Og + o) * P,
               (size_t)P * sizeof(float));
    }
}

/* y rows r = n*O + o: y[n,o,:] += bias[o] */
static void bias_rows(void *v, int64_t r0, int64_t r1) {
    const fjob *jb = v;
    const geom *q = jb->q;
    int64_t P = q->OH * q->OW;
    for (int64_t r = r0; r < r1; r++) {
        float b = jb->bias[r % q->O], *d = jb->dst + r * P;
        for (int64_t p = 0; p < P; p++) d[p] += b;
    }
}

static bool is_1x1(const geom *q) {
    return q->KH == 1 && q->KW == 1 && q->sh == 1 && q->sw == 1 && q->ph == 0 && q->pw == 0;
}

/* Images per chunk and the workspace: col (K, nb*P) then (Og, nb*P), then
 * `extra` more bytes (64-byte aligned) for the caller. */
static float *workspace(const loom__cpu_args *a, const geom *q, int64_t *nb, size_t extra) {
    int64_t K = q->Cg * q->KH * q->KW, P = q->OH * q->OW, per = (K + q->Og) * P;
    int64_t n = ((int64_t)4 << 20) / per;
    *nb = n < 1 ? 1 : n > q->N ? q->N : n;
    size_t bytes = ((size_t)(per * *nb) * sizeof(float) + 63) / 64 * 64 + extra;
    float *ws = loom__cpu_scratch(a->cpu, bytes);
    if (!ws)
        loom__err(a->node->g->ctx, LOOM_ERR_OOM, "%s: cannot allocate %zu bytes of workspace (node '%s')",
                  loom_op_name(a->node->op), bytes, a->node->name);
    return ws;
}

/* ---- per-image path: threads take whole images ----
 * With at least as many images as threads, each thread takes a contiguous
 * range of images and works on one image at a time: its columns (K, P) stay
 * in its cache, GEMMs write straight into y / read dy in place (no scatter or
 * gather copies), and no thread waits on another until the op ends. Every
 * image is computed the same way for any thread count. The weight gradient
 * sums images in blocks of ~1024 columns in f32 (GEMM beta = 1) and the
 * blocks in double per part (a contiguous image range: one per thread, or
 * min(N, LOOM__CPU_DET_PARTS) in deterministic mode); the parts' doubles are
 * added in part order at the end. */

typedef struct ijob {
    const geom *q;
    int parts;
    const float *x, *w, *bias, *dy;
    float *y;
    char *ws;           /* parts * per_part bytes */
    size_t per_part;
} ijob;

static size_t al64(size_t n) { return (n + 63) / 64 * 64; }

/* images [*a, *b) of part p */
static void part_images(const ijob *j, int64_t p, int64_t *a, int64_t *b) {
    *a = j->q->N * p / j->parts, *b = j->q->N * (p + 1) / j->parts;
}

static void fwd_images(void *v, int64_t p0, int64_t p1) {
    const ijob *j = v;
    const geom *q = j->q;
    int64_t K = q->Cg * q->KH * q->KW, P = q->OH * q->OW;
    for (int64_t p = p0; p < p1; p++) {
        float *col = (float *)(j->ws + (size_t)p * j->per_part);
        int64_t a, b;
        part_images(j, p, &a, &b);
        for (int64_t n = a; n < b; n++)
            for (int64_t g = 0; g < q->G; g++) {
                fjob jb = {q, n, 1, g, j->x, col, NULL};
                im2col_rows(&jb, 0, K);
                float *yg = j->y + (n * q->O + g * q->Og) * P;
                /* y[n, g] (Og, P) = w_g (Og, K) @ col (K, P) */
                loom__cpu_sgemm(NULL, false, false, q->Og, P, K, 1.0f, j->w + g * q->Og * K, K, col, P, 0.0f, yg, P);
                for (int64_t o = 0; j->bias && o < q->Og; o++) {
                    float bo = j->bias[g * q->Og + o], *r = yg + o * P;
                    for (int64_t i = 0; i < P; i++) r[i] += bo;
                }
            }
    }
}

static void gi_images(void *v, int64_t p0, int64_t p1) {
    const ijob *j = v;
    const geom *q = j->q;
    int64_t K = q->Cg * q->KH * q->KW, P = q->OH * q->OW;
    for (int64_t p = p0; p < p1; p++) {
        float *col = (float *)(j->ws + (size_t)p * j->per_part);
        int64_t a, b;
        part_images(j, p, &a, &b);
        for (int64_t n = a; n < b; n++) {
            memset(j->y + n * q->C * q->H * q->W, 0, (size_t)(q->C * q->H * q->W) * sizeof(float));
            for (int64_t g = 0; g < q->G; g++) {
                /* col (K, P) = w_g^T (K, Og) @ dy[n, g] (Og, P) */
                loom__cpu_sgemm(NULL, true, false, K, P, q->Og, 1.0f, j->w + g * q->Og * K, K,
                                j->dy + (n * q->O + g * q->Og) * P, P, 0.0f, col, P);
                fjob jb = {q, n, 1, g, col, j->y, NULL};
                col2im_planes(&jb, 0, q->Cg);
            }
        }
    }
}

/* images per weight-gradient block: about 1024 columns (see gw_f32's chunked path) */
static int64_t gw_block(const geom *q) {
    int64_t P = q->OH * q->OW;
    return P >= 1024 ? 1 : 1024 / P;
}

/* The weight gradient's product of one group and block of L columns, transposed: t (K, Og) =
 * col (K, L) @ da^T (L, Og). Many rows and few columns suit the GEMM better than dw's own (Og, K)
 * orientation: OpenBLAS packs the short side (1.3x), and loom's AVX-512 kernel (gemm512.c) takes
 * these shapes (1.5-2x). */
static void gw_product(loom__cpu *cpu, const geom *q, int64_t K, int64_t L, const float *col, int64_t ldcol,
                       const float *da, int64_t ldda, float *t) {
    loom__cpu_sgemm(cpu, false, true, K, q->Og, L, 1.0f, col, ldcol, da, ldda, 0.0f, t, q->Og);
}

/* ag (Og, K) += t^T, t (K, Og) from gw_product */
static void gw_add_t(const geom *q, int64_t K, const float *t, double *ag) {
    for (int64_t o = 0; o < q->Og; o++)
        for (int64_t k = 0; k < K; k++) ag[o * K + k] += t[k * q->Og + o];
}

/* per part: col (K, B*P) and dyb (Og, B*P) floats, B = gw_block; tmp (O, K) floats; acc (O, K) doubles.
 * One GEMM per block of images (the block's im2col columns side by side, its dy rows gathered to
 * match): a GEMM per image (reduction OH*OW, ~200 on a 14x14 plane) spends as much in OpenBLAS's
 * packing as in its kernel. */
static void gw_images(void *v, int64_t p0, int64_t p1) {
    const ijob *j = v;
    const geom *q = j->q;
    int64_t K = q->Cg * q->KH * q->KW, P = q->OH * q->OW, B = gw_block(q);
    for (int64_t p = p0; p < p1; p++) {
        char *base = j->ws + (size_t)p * j->per_part;
        float *col = (float *)base;
        float *dyb = (float *)(base + al64((size_t)(K * B * P) * sizeof(float)));
        float *tmp = (float *)((char *)dyb + al64((size_t)(q->Og * B * P) * sizeof(float)));
        double *acc = (double *)((char *)tmp + al64((size_t)(q->O * K) * sizeof(float)));
        memset(acc, 0, (size_t)(q->O * K) * sizeof *acc);
        int64_t a, b;
        part_images(j, p, &a, &b);
        for (int64_t n0 = a; n0 < b; n0 += B) {
            int64_t m = n0 + B < b ? B : b - n0;
            for (int64_t g = 0; g < q->G; g++) {
                fjob jb = {q, n0, m, g, j->x, col, NULL};
                im2col_rows(&jb, 0, K * m);
                const float *da = j->dy + (n0 * q->O + g * q->Og) * P;
                if (m > 1) {
                    jb.src = j->dy, jb.dst = dyb;
                    gather_rows(&jb, 0, m * q->Og);
                    da = dyb;
                }
                /* tmp_g (K, Og) = col (K, m*P) @ dy block^T (m*P, Og) */
                gw_product(NULL, q, K, m * P, col, m * P, da, m * P, tmp + g * q->Og * K);
            }
            for (int64_t g = 0; g < q->G; g++) gw_add_t(q, K, tmp + g * q->Og * K, acc + g * q->Og * K);
        }
    }
}

/* Every conv op of a training step per image rather than chunked: a lone
 * forward conv with a large reduction can be a little faster chunked (one
 * large GEMM), but the per-image path leaves far less in flight through the
 * caches, which is what the whole step gains from. */
static bool per_image(const loom__cpu_args *a, const geom *q) {
    if (a->cpu->deterministic) return q->N > 1; /* the choice must not depend on the thread count */
    return loom__cpu_threads(a->cpu) <= q->N && q->N > 1;
}

/* Run fn over `parts` image ranges (0 = one per thread, at most N: forward
 * and grad_input, whose images do not depend on the split). */
static loom_status images_run(const loom__cpu_args *a, const geom *q, ijob *j, size_t per_part, int parts,
                              loom__cpu_range_fn fn) {
    if (parts <= 0) parts = loom__cpu_threads(a->cpu) < q->N ? loom__cpu_threads(a->cpu) : (int)q->N;
    size_t bytes = per_part * (size_t)parts;
    j->q = q, j->parts = parts, j->per_part = per_part;
    j->ws = loom__cpu_scratch(a->cpu, bytes);
    if (!j->ws)
        return loom__err(a->node->g->ctx, LOOM_ERR_OOM, "%s: cannot allocate %zu bytes of workspace (node '%s')",
                         loom_op_name(a->node->op), bytes, a->node->name);
    loom__cpu_parallel(a->cpu, parts, 1, fn, j);
    return LOOM_OK;
}

/* y = conv2d(x, w) + bias */
static loom_status fwd_f32(const loom__cpu_args *a, const geom *q) {
    const float *x = a->x[0], *w = a->x[1], *bias = a->node->nsrc > 2 ? a->x[2] : NULL;
    float *y = a->y;
    int64_t K = q->Cg * q->KH * q->KW, P = q->OH * q->OW;
    if (is_1x1(q)) {
        /* y[n, g] (Og, HW) = w_g (Og, Cg) @ x[n, g] (Cg, HW) */
        for (int64_t n = 0; n < q->N; n++)
            for (int64_t g = 0; g < q->G; g++)
                loom__cpu_sgemm(a->cpu, false, false, q->Og, P, q->Cg, 1.0f, w + g * q->Og * K, K,
                                x + (n * q->C + g * q->Cg) * P, P, 0.0f, y + (n * q->O + g * q->Og) * P, P);
        fjob jb = {q, 0, q->N, 0, NULL, y, bias};
        if (bias) loom__cpu_parallel(a->cpu, q->N * q->O, rows_grain(P), bias_rows, &jb);
        return LOOM_OK;
    }
    if (loom__cpu_conv_direct_ok(a->cpu, q)) return loom__cpu_conv_direct_fwd(a, q);
    if (per_image(a, q)) {
        ijob j = {.x = x, .w = w, .bias = bias, .y = y};
        return images_run(a, q, &j, al64((size_t)(K * P) * sizeof(float)), 0, fwd_images);
    }
    int64_t nb;
    float *ws = workspace(a, q, &nb, 0);
    if (!ws) return LOOM_ERR_OOM;
    for (int64_t n0 = 0; n0 < q->N; n0 += nb) {
        int64_t m = q->N - n0 < nb ? q->N - n0 : nb, L = m * P;
        float *col = ws, *tmp = ws + K * L;
        for (int64_t g = 0; g < q->G; g++) {
            fjob jb = {q, n0, m, g, x, col, bias};
            loom__cpu_parallel(a->cpu, K * m, rows_grain(P), im2col_rows, &jb);
            /* tmp (Og, L) = w_g (Og, K) @ col (K, L) */
            loom__cpu_sgemm(a->cpu, false, false, q->Og, L, K, 1.0f, w + g * q->Og * K, K, col, L, 0.0f, tmp, L);
            jb.src = tmp, jb.dst = y;
            loom__cpu_parallel(a->cpu, m * q->Og, rows_grain(P), scatter_rows, &jb);
        }
    }
    return LOOM_OK;
}

/* dx = conv2d_grad_input(dy, w) */
static loom_status gi_f32(const loom__cpu_args *a, const geom *q) {
    const float *dy = a->x[0], *w = a->x[1];
    float *dx = a->y;
    int64_t K = q->Cg * q->KH * q->KW, P = q->OH * q->OW;
    if (is_1x1(q)) {
        /* dx[n, g] (Cg, HW) = w_g^T (Cg, Og) @ dy[n, g] (Og, HW) */
        for (int64_t n = 0; n < q->N; n++)
            for (int64_t g = 0; g < q->G; g++)
                loom__cpu_sgemm(a->cpu, true, false, q->Cg, P, q->Og, 1.0f, w + g * q->Og * K, K,
                                dy + (n * q->O + g * q->Og) * P, P, 0.0f, dx + (n * q->C + g * q->Cg) * P, P);
        return LOOM_OK;
    }
    if (loom__cpu_conv_direct_ok(a->cpu, q)) return loom__cpu_conv_direct_gi(a, q);
    if (per_image(a, q)) {
        ijob j = {.w = w, .dy = dy, .y = dx};
        return images_run(a, q, &j, al64((size_t)(K * P) * sizeof(float)), 0, gi_images);
    }
    int64_t nb;
    float *ws = workspace(a, q, &nb, 0);
    if (!ws) return LOOM_ERR_OOM;
    memset(dx, 0, (size_t)(q->N * q->C * q->H * q->W) * sizeof *dx);
    for (int64_t n0 = 0; n0 < q->N; n0 += nb) {
        int64_t m = q->N - n0 < nb ? q->N - n0 : nb, L = m * P;
        float *col = ws, *dyb = ws + K * L;
        for (int64_t g = 0; g < q->G; g++) {
            fjob jb = {q, n0, m, g, dy, dyb, NULL};
            loom__cpu_parallel(a->cpu, m * q->Og, rows_grain(P), gather_rows, &jb);
            /* col (K, L) = w_g^T (K, Og) @ dyb (Og, L) */
            loom__cpu_sgemm(a->cpu, true, false, K, L, q->Og, 1.0f, w + g * q->Og * K, K, dyb, L, 0.0f, col, L);
            jb.src = col, jb.dst = dx;
            loom__cpu_parallel(a->cpu, m * q->Cg, rows_grain(q->KH * q->KW * P), col2im_planes, &jb);
        }
    }
    return LOOM_OK;
}

/* dw = conv2d_grad_weight(dy, x) */
static loom_status gw_f32(const loom__cpu_args *a, const geom *q) {
    const float *dy = a->x[0], *x = a->x[1];
    float *dw = a->y;
    int64_t K = q->Cg * q->KH * q->KW, P = q->OH * q->OW;
    if (is_1x1(q)) {
        /* dw_g (Og, Cg) += dy[n, g] (Og, HW) @ x[n, g]^T (HW, Cg) */
        for (int64_t n = 0; n < q->N; n++)
            for (int64_t g = 0; g < q->G; g++)
                loom__cpu_sgemm(a->cpu, false, true, q->Og, q->Cg, P, 1.0f, dy + (n * q->O + g * q->Og) * P, P,
                                x + (n * q->C + g * q->Cg) * P, P, n ? 1.0f : 0.0f, dw + g * q->Og * K, K);
        return LOOM_OK;
    }
    if (loom__cpu_conv_direct_gw_ok(a->cpu, q)) return loom__cpu_conv_direct_gw(a, q);
    if (per_image(a, q)) {
        ijob j = {.x = x, .dy = dy};
        int64_t B = gw_block(q);
        size_t per = al64((size_t)(K * B * P) * sizeof(float)) + al64((size_t)(q->Og * B * P) * sizeof(float)) +
                     al64((size_t)(q->O * K) * sizeof(float)) + al64((size_t)(q->O * K) * sizeof(double));
        /* the parts' sums are added in order: their count sets the result's bits */
        int parts = !a->cpu->deterministic     ? loom__cpu_threads(a->cpu)
                    : q->N < LOOM__CPU_DET_PARTS ? (int)q->N
                                                 : LOOM__CPU_DET_PARTS;
        loom_status st = images_run(a, q, &j, per, parts, gw_images);
        if (st != LOOM_OK) return st;
        size_t acc_off = per - al64((size_t)(q->O * K) * sizeof(double));
        for (int64_t i = 0; i < q->O * K; i++) {
            double s = 0;
            for (int pt = 0; pt < j.parts; pt++) s += ((const double *)(j.ws + (size_t)pt * j.per_part + acc_off))[i];
            dw[i] = (float)s;
        }
        return LOOM_OK;
    }
    int64_t nb;
    /* The weight gradient sums N*OH*OW products per element. One f32 GEMM
     * over all images drifts by ~1e-5 (enough to separate backends after a
     * few training steps); GEMMs over blocks of ~1024 columns added in double
     * keep the sum to ~1e-7. */
    size_t acc_bytes = (size_t)(q->O * K) * sizeof(double), tmp_bytes = (size_t)(q->Og * K) * sizeof(float);
    float *ws = workspace(a, q, &nb, acc_bytes + tmp_bytes);
    if (!ws) return LOOM_ERR_OOM;
    size_t main_bytes = ((size_t)((K + q->Og) * P * nb) * sizeof(float) + 63) / 64 * 64;
    double *acc = (double *)((char *)ws + main_bytes);
    float *tmp = (float *)(acc + q->O * K);
    memset(acc, 0, acc_bytes);
    int64_t per_block = gw_block(q); /* images per block */
    for (int64_t n0 = 0; n0 < q->N; n0 += nb) {
        int64_t m = q->N - n0 < nb ? q->N - n0 : nb, L = m * P;
        float *col = ws, *dyb = ws + K * L;
        for (int64_t g = 0; g < q->G; g++) {
            fjob jb = {q, n0, m, g, x, col, NULL};
            loom__cpu_parallel(a->cpu, K * m, rows_grain(P), im2col_rows, &jb);
            /* one image per block: dy[n, g] (Og, P) is already a matrix; no gather */
            bool gather = per_block > 1;
            if (gather) {
                jb.src = dy, jb.dst = dyb;
                loom__cpu_parallel(a->cpu, m * q->Og, rows_grain(P), gather_rows, &jb);
            }
            /* per block of images: tmp (K, Og) = col[:, block] (K, Lb) @ dyb[:, block]^T (Lb, Og) */
            for (int64_t b0 = 0; b0 < m; b0 += per_block) {
                int64_t Lb = (m - b0 < per_block ? m - b0 : per_block) * P;
                const float *da = gather ? dyb + b0 * P : dy + ((n0 + b0) * q->O + g * q->Og) * P;
                gw_product(a->cpu, q, K, Lb, col + b0 * P, L, da, gather ? L : P, tmp);
                gw_add_t(q, K, tmp, acc + g * q->Og * K);
            }
        }
    }
    for (int64_t i = 0; i < q->O * K; i++) dw[i] = (float)acc[i];
    return LOOM_OK;
}

/* ======================= entry points ======================= */

loom_status loom__cpu_conv2d(const loom__cpu_args *a) {
    geom q = loom__conv_geom_of(a->node);
    if (a->dt == LOOM_F32) return fwd_f32(a, &q);
    rjob jb = {&q, a->x[0], a->x[1], a->node->nsrc > 2 ? a->x[2] : NULL, a->y};
    loom__cpu_parallel(a->cpu, q.N * q.O, 1, fwd_ref, &jb);
    return LOOM_OK;
}

loom_status loom__cpu_conv2d_grad_input(const loom__cpu_args *a) {
    geom q = loom__conv_geom_of(a->node);
    if (a->dt == LOOM_F32) return gi_f32(a, &q);
    rjob jb = {&q, a->x[0], a->x[1], NULL, a->y};
    loom__cpu_parallel(a->cpu, q.N * q.C, 1, gi_ref, &jb);
    return LOOM_OK;
}

loom_status loom__cpu_conv2d_grad_weight(const loom__cpu_args *a) {
    geom q = loom__conv_geom_of(a->node);
    if (a->dt == LOOM_F32) return gw_f32(a, &q);
    rjob jb = {&q, a->x[0], a->x[1], NULL, a->y};
    loom__cpu_parallel(a->cpu, q.O, 1, gw_ref, &jb);
    return LOOM_OK;
}

/* ---- reproducible mode (core/repro.h): per image and group, im2col + the canonical GEMM ---- */

typedef loom__conv_geom geom;

typedef struct cjob {
    const geom *q;
    const float *x; /* image n's input (C, H, W) */
    float *col;     /* (K, P) */
    int64_t g;
} cjob;

/* col[k, p] = x[g*Cg + c, i*sh - ph + kh*dh, j*sw - pw + kw*dw] or 0 */
static void im2col(void *v, int64_t k0, int64_t k1) {
    const cjob *j = v;
    const geom *q = j->q;
    for (int64_t k = k0; k < k1; k++) {
        int64_t c = k / (q->KH * q->KW), kh = k / q->KW % q->KH, kw = k % q->KW;
        const float *xp = j->x + (j->g * q->Cg + c) * q->H * q->W;
        float *d = j->col + k * q->P;
        for (int64_t i = 0; i < q->OH; i++)
            for (int64_t jj = 0; jj < q->OW; jj++) {
                int64_t ih = i * q->sh - q->ph + kh * q->dh, iw = jj * q->sw - q->pw + kw * q->dw;
                d[i * q->OW + jj] = ih >= 0 && ih < q->H && iw >= 0 && iw < q->W ? xp[ih * q->W + iw] : 0.0f;
            }
    }
}

typedef struct gjob {
    const geom *q;
    const float *col; /* (K, P) of group g */
    float *dx;        /* image n's dx (C, H, W) */
    int64_t g;
} gjob;

/* dx[g*Cg + c, ih, iw] = 0 + the covering columns in (kh, kw) order */
static void col2im(void *v, int64_t r0, int64_t r1) {
    const gjob *j = v;
    const geom *q = j->q;
    for (int64_t r = r0; r < r1; r++) { /* r = (c, ih) */
        int64_t c = r / q->H, ih = r % q->H;
        float *d = j->dx + ((j->g * q->Cg + c) * q->H + ih) * q->W;
        for (int64_t iw = 0; iw < q->W; iw++) {
            float acc = 0.0f;
            for (int64_t kh = 0; kh < q->KH; kh++) {
                int64_t th = ih + q->ph - kh * q->dh;
                if (th < 0 || th % q->sh != 0 || th / q->sh >= q->OH) continue;
                for (int64_t kw = 0; kw < q->KW; kw++) {
                    int64_t tw = iw + q->pw - kw * q->dw;
                    if (tw < 0 || tw % q->sw != 0 || tw / q->sw >= q->OW) continue;
                    acc = acc + j->col[((c * q->KH + kh) * q->KW + kw) * q->P + (th / q->sh) * q->OW + tw / q->sw];
                }
            }
            d[iw] = acc;
        }
    }
}

typedef struct bjob {
    const geom *q;
    float *y;
    const float *bias;
} bjob;

static void conv_bias(void *v, int64_t r0, int64_t r1) { /* r = (n, o) */
    const bjob *j = v;
    for (int64_t r = r0; r < r1; r++) {
        float b = j->bias[r % j->q->O], *y = j->y + r * j->q->P;
        for (int64_t p = 0; p < j->q->P; p++) y[p] = y[p] + b;
    }
}

loom_status loom__cpu_conv2d_repro(const loom__cpu_args *a) {
    geom q = loom__conv_geom_of(a->node);
    float *col = malloc((size_t)(q.K * q.P) * sizeof *col);
    if (!col) return loom__cpu_repro_oom(a);
    const float *x = a->x[0], *w = a->x[1];
    float *y = a->y;
    for (int64_t n = 0; n < q.N; n++)
        for (int64_t g = 0; g < q.G; g++) {
            cjob cj = {&q, x + n * q.C * q.H * q.W, col, g};
            loom__cpu_parallel(a->cpu, q.K, 1 + 4096 / (q.P + 1), im2col, &cj);
            if (loom__cpu_sgemm_repro(a->cpu, false, false, q.Og, q.P, q.K, w + g * q.Og * q.K, q.K, col, q.P, false,
                                      y + (n * q.O + g * q.Og) * q.P, q.P)) {
                free(col);
                return loom__cpu_repro_oom(a);
            }
        }
    free(col);
    if (a->node->nsrc > 2) {
        bjob bj = {&q, y, a->x[2]};
        loom__cpu_parallel(a->cpu, q.N * q.O, 1 + 4096 / (q.P + 1), conv_bias, &bj);
    }
    return LOOM_OK;
}

/* (dy, w) -> dx */
loom_status loom__cpu_conv2d_grad_input_repro(const loom__cpu_args *a) {
    geom q = loom__conv_geom_of(a->node);
    float *col = malloc((size_t)(q.K * q.P) * sizeof *col);
    if (!col) return loom__cpu_repro_oom(a);
    const float *dy = a->x[0], *w = a->x[1];
    float *dx = a->y;
    for (int64_t n = 0; n < q.N; n++)
        for (int64_t g = 0; g < q.G; g++) {
            if (loom__cpu_sgemm_repro(a->cpu, true, false, q.K, q.P, q.Og, w + g * q.Og * q.K, q.K,
                                      dy + (n * q.O + g * q.Og) * q.P, q.P, false, col, q.P)) {
                free(col);
                return loom__cpu_repro_oom(a);
            }
            gjob gj = {&q, col, dx + n * q.C * q.H * q.W, g};
            loom__cpu_parallel(a->cpu, q.Cg * q.H, 1 + 4096 / (q.W * q.KH * q.KW + 1), col2im, &gj);
        }
    free(col);
    return LOOM_OK;
}

/* (dy, x) -> dw: dw = p0 + p1 + ... in image order */
loom_status loom__cpu_conv2d_grad_weight_repro(const loom__cpu_args *a) {
    geom q = loom__conv_geom_of(a->node);
    float *col = malloc((size_t)(q.K * q.P) * sizeof *col);
    if (!col) return loom__cpu_repro_oom(a);
    const float *dy = a->x[0], *x = a->x[1];
    float *dw = a->y;
    for (int64_t n = 0; n < q.N; n++)
        for (int64_t g = 0; g < q.G; g++) {
            cjob cj = {&q, x + n * q.C * q.H * q.W, col, g};
            loom__cpu_parallel(a->cpu, q.K, 1 + 4096 / (q.P + 1), im2col, &cj);
            if (loom__cpu_sgemm_repro(a->cpu, false, true, q.Og, q.K, q.P, dy + (n * q.O + g * q.Og) * q.P, q.P, col,
                                      q.P, n > 0, dw + g * q.Og * q.K, q.K)) {
                free(col);
                return loom__cpu_repro_oom(a);
            }
        }
    if (q.N == 0) memset(dw, 0, (size_t)loom_tensor_numel(a->node) * sizeof *dw);
    free(col);
    return LOOM_OK;
}
