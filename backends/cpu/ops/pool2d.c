/* backends/cpu/ops/pool2d.c — CPU kernels of the pool2d family: max, average
 * and adaptive average pooling and their gradients (parameters:
 * core/ops/pool2d.c). Reference loops that are also the fast path: one
 * (n, c) plane per work item, planes split across the thread pool; the same
 * template serves F32 and F64. Gradients gather nothing: each plane of dx is
 * zeroed and scattered into by its own work item, so there are no races.
 */
#include <math.h>

#include "../cpu_impl.h"
#include "../f32_inline.h"

/* one pooling: planes N*C, x plane (H,W), y plane (OH,OW) */
typedef struct pgeom {
    int64_t planes, H, W, OH, OW;
    int64_t kh, kw, sh, sw, ph, pw, include_pad;
} pgeom;

typedef struct pjob {
    pgeom q;
    const void *x, *dy; /* x: forward input (max grad's x too); dy: grads */
    void *y;            /* y or dx */
} pjob;

/* x and y shapes from the node: forward ops (x = src[0]) or grads (dx = node) */
static pjob pjob_of(const loom__cpu_args *a) {
    const loom_tensor *t = a->node;
    const int64_t *xd, *yd;
    pjob j = {{0}, NULL, NULL, a->y};
    switch (t->op) {
    case LOOM_OP_MAX_POOL2D_GRAD: xd = t->dims, yd = t->src[1]->dims, j.x = a->x[0], j.dy = a->x[1]; break;
    case LOOM_OP_AVG_POOL2D_GRAD:
    case LOOM_OP_ADAPTIVE_AVG_POOL2D_GRAD: xd = t->dims, yd = t->src[0]->dims, j.dy = a->x[0]; break;
    default: xd = t->src[0]->dims, yd = t->dims, j.x = a->x[0]; break;
    }
    const int64_t *p = t->p;
    pgeom q = {.planes = xd[0] * xd[1],
               .H = xd[2],
               .W = xd[3],
               .OH = yd[2],
               .OW = yd[3],
               .kh = p[LOOM_P_POOL_KH],
               .kw = p[LOOM_P_POOL_KW],
               .sh = p[LOOM_P_POOL_SH],
               .sw = p[LOOM_P_POOL_SW],
               .ph = p[LOOM_P_POOL_PH],
               .pw = p[LOOM_P_POOL_PW],
               .include_pad = p[LOOM_P_POOL_INCL]};
    j.q = q;
    return j;
}

/* Window of output (i, j) clipped to x: rows [*h0, *h1), cols [*w0, *w1);
 * returns torch's avg divisor (the unclipped size within the padded input,
 * or the clipped size without count_include_pad). */
static int64_t window(const pgeom *q, int64_t i, int64_t j, int64_t *h0, int64_t *h1, int64_t *w0, int64_t *w1) {
    int64_t hs = i * q->sh - q->ph, ws = j * q->sw - q->pw;
    int64_t he = hs + q->kh < q->H + q->ph ? hs + q->kh : q->H + q->ph;
    int64_t we = ws + q->kw < q->W + q->pw ? ws + q->kw : q->W + q->pw;
    int64_t padded = (he - hs) * (we - ws);
    *h0 = hs > 0 ? hs : 0, *w0 = ws > 0 ? ws : 0;
    *h1 = he < q->H ? he : q->H, *w1 = we < q->W ? we : q->W;
    return q->include_pad ? padded : (*h1 - *h0) * (*w1 - *w0);
}

/* adaptive bins: [floor(i*H/OH), ceil((i+1)*H/OH)) */
static int64_t bin_start(int64_t i, int64_t in, int64_t out) { return i * in / out; }
static int64_t bin_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

#define POOL_KERNELS(T)                                                                                   \
    /* y[p,i,j] = max over the window of x[p]; index of the first maximum (NaN propagates) */            \
    static int64_t argmax_##T(const pgeom *q, const T *x, int64_t i, int64_t j) {                       \
        int64_t h0, h1, w0, w1;                                                                           \
        window(q, i, j, &h0, &h1, &w0, &w1);                                                              \
        int64_t best = h0 * q->W + w0;                                                                    \
        T m = -INFINITY;                                                                                  \
        for (int64_t h = h0; h < h1; h++)                                                                 \
            for (int64_t w = w0; w < w1; w++) {                                                           \
                T v = x[h * q->W + w];                                                                    \
                if (v > m || isnan(v)) m = v, best = h * q->W + w;                                        \
            }                                                                                             \
        return best;                                                                                      \
    }                                                                                                     \
    static void max_##T(void *v, int64_t p0, int64_t p1) {                                                \
        const pjob *jb = v;                                                                               \
        const pgeom *q = &jb->q;                                                                          \
        for (int64_t p = p0; p < p1; p++) {                                                               \
            const T *x = (const T *)jb->x + p * q->H * q->W;                                              \
            T *y = (T *)jb->y + p * q->OH * q->OW;                                                        \
            for (int64_t i = 0; i < q->OH; i++)                                                           \
                for (int64_t j = 0; j < q->OW; j++) y[i * q->OW + j] = x[argmax_##T(q, x, i, j)];         \
        }                                                                                                 \
    }                                                                                                     \
    /* dx[p] = 0; dx[p, argmax(i,j)] += dy[p,i,j] */                                                      \
    static void max_grad_##T(void *v, int64_t p0, int64_t p1) {                                           \
        const pjob *jb = v;                                                                               \
        const pgeom *q = &jb->q;                                                                          \
        for (int64_t p = p0; p < p1; p++) {                                                               \
            const T *x = (const T *)jb->x + p * q->H * q->W;                                              \
            const T *dy = (const T *)jb->dy + p * q->OH * q->OW;                                          \
            T *dx = (T *)jb->y + p * q->H * q->W;                                                         \
            memset(dx, 0, (size_t)(q->H * q->W) * sizeof *dx);                                            \
            for (int64_t i = 0; i < q->OH; i++)                                                           \
                for (int64_t j = 0; j < q->OW; j++) dx[argmax_##T(q, x, i, j)] += dy[i * q->OW + j];      \
        }                                                                                                 \
    }                                                                                                     \
    /* y[p,i,j] = sum over the window / divisor */                                                        \
    static void avg_##T(void *v, int64_t p0, int64_t p1) {                                                \
        const pjob *jb = v;                                                                               \
        const pgeom *q = &jb->q;                                                                          \
        for (int64_t p = p0; p < p1; p++) {                                                               \
            const T *x = (const T *)jb->x + p * q->H * q->W;                                              \
            T *y = (T *)jb->y + p * q->OH * q->OW;                                                        \
            for (int64_t i = 0; i < q->OH; i++)                                                           \
                for (int64_t j = 0; j < q->OW; j++) {                                                     \
                    int64_t h0, h1, w0, w1, div = window(q, i, j, &h0, &h1, &w0, &w1);                    \
                    double s = 0;                                                                         \
                    for (int64_t h = h0; h < h1; h++)                                                     \
                        for (int64_t w = w0; w < w1; w++) s += x[h * q->W + w];                           \
                    y[i * q->OW + j] = div > 0 ? (T)(s / (double)div) : 0;                                \
                }                                                                                         \
        }                                                                                                 \
    }                                                                                                     \
    /* dx[p] = 0; dx[p, window(i,j)] += dy[p,i,j] / divisor */                                            \
    static void avg_grad_##T(void *v, int64_t p0, int64_t p1) {                                           \
        const pjob *jb = v;                                                                               \
        const pgeom *q = &jb->q;                                                                          \
        for (int64_t p = p0; p < p1; p++) {                                                               \
            const T *dy = (const T *)jb->dy + p * q->OH * q->OW;                                          \
            T *dx = (T *)jb->y + p * q->H * q->W;                                                         \
            memset(dx, 0, (size_t)(q->H * q->W) * sizeof *dx);                                            \
            for (int64_t i = 0; i < q->OH; i++)                                                           \
                for (int64_t j = 0; j < q->OW; j++) {                                                     \
                    int64_t h0, h1, w0, w1, div = window(q, i, j, &h0, &h1, &w0, &w1);                    \
                    if (div <= 0) continue;                                                               \
                    T g = (T)(dy[i * q->OW + j] / (double)div);                                           \
                    for (int64_t h = h0; h < h1; h++)                                                     \
                        for (int64_t w = w0; w < w1; w++) dx[h * q->W + w] += g;                          \
                }                                                                                         \
        }                                                                                                 \
    }                                                                                                     \
    /* y[p,i,j] = mean of x[p] over bin rows x bin cols */                                                \
    static void adaptive_##T(void *v, int64_t p0, int64_t p1) {                                           \
        const pjob *jb = v;                                                                               \
        const pgeom *q = &jb->q;                                                                          \
        for (int64_t p = p0; p < p1; p++) {                                                               \
            const T *x = (const T *)jb->x + p * q->H * q->W;                                              \
            T *y = (T *)jb->y + p * q->OH * q->OW;                                                        \
            for (int64_t i = 0; i < q->OH; i++) {                                                         \
                int64_t h0 = bin_start(i, q->H, q->OH), h1 = bin_end(i, q->H, q->OH);                     \
                for (int64_t j = 0; j < q->OW; j++) {                                                     \
                    int64_t w0 = bin_start(j, q->W, q->OW), w1 = bin_end(j, q->W, q->OW);                 \
                    double s = 0;                                                                         \
                    for (int64_t h = h0; h < h1; h++)                                                     \
                        for (int64_t w = w0; w < w1; w++) s += x[h * q->W + w];                           \
                    y[i * q->OW + j] = (T)(s / (double)((h1 - h0) * (w1 - w0)));                          \
                }                                                                                         \
            }                                                                                             \
        }                                                                                                 \
    }                                                                                                     \
    /* dx[p] = 0; dx[p, bin(i,j)] += dy[p,i,j] / bin size */                                              \
    static void adaptive_grad_##T(void *v, int64_t p0, int64_t p1) {                                      \
        const pjob *jb = v;                                                                               \
        const pgeom *q = &jb->q;                                                                          \
        for (int64_t p = p0; p < p1; p++) {                                                               \
            const T *dy = (const T *)jb->dy + p * q->OH * q->OW;                                          \
            T *dx = (T *)jb->y + p * q->H * q->W;                                                         \
            memset(dx, 0, (size_t)(q->H * q->W) * sizeof *dx);                                            \
            for (int64_t i = 0; i < q->OH; i++) {                                                         \
                int64_t h0 = bin_start(i, q->H, q->OH), h1 = bin_end(i, q->H, q->OH);                     \
                for (int64_t j = 0; j < q->OW; j++) {                                                     \
                    int64_t w0 = bin_start(j, q->W, q->OW), w1 = bin_end(j, q->W, q->OW);                 \
                    T g = (T)(dy[i * q->OW + j] / (double)((h1 - h0) * (w1 - w0)));                       \
                    for (int64_t h = h0; h < h1; h++)                                                     \
                        for (int64_t w = w0; w < w1; w++) dx[h * q->W + w] += g;                          \
                }                                                                                         \
            }                                                                                             \
        }                                                                                                 \
    }
POOL_KERNELS(float)
POOL_KERNELS(double)

/* ---- F32 fast path: 2x2 windows, stride 2, no padding (the common
 * downsampling pool). Same results as the generic loops: first maximum on
 * ties (row-major order within the window), the last NaN wins. Odd H/W: the last
 * row/column is outside every window (and gets zero gradient). */
static bool is_2x2(const pgeom *q) {
    return q->kh == 2 && q->kw == 2 && q->sh == 2 && q->sw == 2 && q->ph == 0 && q->pw == 0;
}

static void max2_float(void *v, int64_t p0, int64_t p1) {
    const pjob *jb = v;
    const pgeom *q = &jb->q;
    for (int64_t p = p0; p < p1; p++)
        loom__max2_plane((const float *)jb->x + p * q->H * q->W, (float *)jb->y + p * q->OH * q->OW, q->H, q->W,
                             q->OH, q->OW);
}

static void max2_float_avx512(void *v, int64_t p0, int64_t p1) {
    const pjob *jb = v;
    const pgeom *q = &jb->q;
    for (int64_t p = p0; p < p1; p++)
        loom__max2_plane_avx512((const float *)jb->x + p * q->H * q->W, (float *)jb->y + p * q->OH * q->OW, q->H,
                                q->W, q->OH, q->OW);
}

static void max2_grad_float_avx512(void *v, int64_t p0, int64_t p1) {
    const pjob *jb = v;
    const pgeom *q = &jb->q;
    for (int64_t p = p0; p < p1; p++)
        loom__max2_grad_plane_avx512((const float *)jb->x + p * q->H * q->W, (const float *)jb->dy + p * q->OH * q->OW,
                                     (float *)jb->y + p * q->H * q->W, q->H, q->W, q->OH, q->OW);
}

static void max2_grad_float(void *v, int64_t p0, int64_t p1) {
    const pjob *jb = v;
    const pgeom *q = &jb->q;
    for (int64_t p = p0; p < p1; p++)
        loom__max2_grad_plane((const float *)jb->x + p * q->H * q->W, (const float *)jb->dy + p * q->OH * q->OW,
                                  (float *)jb->y + p * q->H * q->W, q->H, q->W, q->OH, q->OW);
}

/* planes per work chunk: about 16k touched elements */
static loom_status run(const loom__cpu_args *a, loom__cpu_range_fn f32, loom__cpu_range_fn f64) {
    pjob j = pjob_of(a);
    int64_t per = j.q.H * j.q.W + j.q.OH * j.q.OW;
    int64_t grain = per >= 16384 ? 1 : 16384 / per;
    loom__cpu_parallel(a->cpu, j.q.planes, grain, a->dt == LOOM_F64 ? f64 : f32, &j);
    return LOOM_OK;
}

loom_status loom__cpu_max_pool2d(const loom__cpu_args *a) {
    pjob j = pjob_of(a);
    loom__cpu_range_fn f2 = loom__max2_avx512_ok() ? max2_float_avx512 : max2_float;
    return run(a, is_2x2(&j.q) ? f2 : max_float, max_double);
}
loom_status loom__cpu_avg_pool2d(const loom__cpu_args *a) { return run(a, avg_float, avg_double); }
loom_status loom__cpu_adaptive_avg_pool2d(const loom__cpu_args *a) { return run(a, adaptive_float, adaptive_double); }
loom_status loom__cpu_max_pool2d_grad(const loom__cpu_args *a) {
    pjob j = pjob_of(a);
    loom__cpu_range_fn f2 = loom__max2_avx512_ok() ? max2_grad_float_avx512 : max2_grad_float;
    return run(a, is_2x2(&j.q) ? f2 : max_grad_float, max_grad_double);
}
loom_status loom__cpu_avg_pool2d_grad(const loom__cpu_args *a) { return run(a, avg_grad_float, avg_grad_double); }
loom_status loom__cpu_adaptive_avg_pool2d_grad(const loom__cpu_args *a) {
    return run(a, adaptive_grad_float, adaptive_grad_double);
}
