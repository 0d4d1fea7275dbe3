/* backends/cpu/ops/repro.c — the CPU's canonical f32 kernels of reproducible
 * mode (loom_backend_desc.reproducible): each follows the order and
 * arithmetic written down in core/repro.h, which the Vulkan and OpenCL
 * backends follow too, so all of them give the same bits. backend.c runs
 * loom__cpu_repro_kernels[op] instead of the ordinary kernel when the mode
 * is on and the entry is set; the other ops allowed in the mode are exact by
 * construction. Work is split over whole outputs (channels, rows, GEMM
 * tiles), so the thread count changes nothing. */
#include "../../../core/repro.h"
#include "../cpu_impl.h"

/* ---- csum / cdot accumulators (core/repro.h) ---- */
typedef struct csum {
    float t, p;
    int64_t n;  /* values in the open chunk */
    bool any;   /* a chunk was closed */
} csum;

static inline void cs_close(csum *s) {
    s->t = s->any ? s->t + s->p : s->p;
    s->any = true, s->p = 0.0f, s->n = 0;
}
static inline void cs_add(csum *s, float v) {
    s->p = s->p + v;
    if (++s->n == LOOM__REPRO_CHUNK) cs_close(s);
}
static inline void cs_dot(csum *s, float a, float b) {
    s->p = s->p + a * b;
    if (++s->n == LOOM__REPRO_CHUNK) cs_close(s);
}
static inline float cs_total(csum *s) {
    if (s->n > 0 || !s->any) cs_close(s);
    return s->t;
}

/* ---- matmul, linear ---- */

static loom_status oom(const loom__cpu_args *a) {
    return loom__err(a->node->g->ctx, LOOM_ERR_OOM, "cpu: out of memory in the reproducible kernel of %s (node '%s')",
                     loom_op_name(a->node->op), a->node->name);
}

static loom_status repro_matmul(const loom__cpu_args *a) {
    loom__mm_geom m = loom__matmul_geom_of(a->node);
    const loom_tensor *y = a->node;
    bool ta = y->p[LOOM_P_MATMUL_TRANS_A], tb = y->p[LOOM_P_MATMUL_TRANS_B];
    for (int64_t b0 = 0; b0 < m.batch[0]; b0++)
        for (int64_t b1 = 0; b1 < m.batch[1]; b1++)
            for (int64_t b2 = 0; b2 < m.batch[2]; b2++) {
                const float *A = (const float *)a->x[0] + b0 * m.sa[0] + b1 * m.sa[1] + b2 * m.sa[2];
                const float *B = (const float *)a->x[1] + b0 * m.sb[0] + b1 * m.sb[1] + b2 * m.sb[2];
                float *C = (float *)a->y + b0 * m.sc[0] + b1 * m.sc[1] + b2 * m.sc[2];
                if (loom__cpu_sgemm_repro(a->cpu, ta, tb, m.M, m.N, m.K, A, m.lda, B, m.ldb, false, C, m.ldc))
                    return oom(a);
            }
    return LOOM_OK;
}

/* y (R, OUT) = cdot(x row, w row) + bias: the product first, the bias added after (accumulate) */
static loom_status repro_linear(const loom__cpu_args *a) {
    const loom_tensor *y = a->node, *w = y->src[1];
    int64_t out = w->dims[0], in = w->dims[1], rows = loom_tensor_numel(y) / out;
    bool bias = y->p[LOOM_P_LINEAR_BIAS];
    float *Y = a->y;
    if (bias)
        for (int64_t r = 0; r < rows; r++) memcpy(Y + r * out, a->x[2], (size_t)out * sizeof *Y);
    if (loom__cpu_sgemm_repro(a->cpu, false, true, rows, out, in, a->x[0], in, a->x[1], in, bias, Y, out))
        return oom(a);
    return LOOM_OK;
}

/* ---- conv2d family: per image and group, im2col + the canonical GEMM ---- */

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

static loom_status repro_conv2d(const loom__cpu_args *a) {
    geom q = loom__conv_geom_of(a->node);
    float *col = malloc((size_t)(q.K * q.P) * sizeof *col);
    if (!col) return oom(a);
    const float *x = a->x[0], *w = a->x[1];
    float *y = a->y;
    for (int64_t n = 0; n < q.N; n++)
        for (int64_t g = 0; g < q.G; g++) {
            cjob cj = {&q, x + n * q.C * q.H * q.W, col, g};
            loom__cpu_parallel(a->cpu, q.K, 1 + 4096 / (q.P + 1), im2col, &cj);
            if (loom__cpu_sgemm_repro(a->cpu, false, false, q.Og, q.P, q.K, w + g * q.Og * q.K, q.K, col, q.P, false,
                                      y + (n * q.O + g * q.Og) * q.P, q.P)) {
                free(col);
                return oom(a);
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
static loom_status repro_conv2d_grad_input(const loom__cpu_args *a) {
    geom q = loom__conv_geom_of(a->node);
    float *col = malloc((size_t)(q.K * q.P) * sizeof *col);
    if (!col) return oom(a);
    const float *dy = a->x[0], *w = a->x[1];
    float *dx = a->y;
    for (int64_t n = 0; n < q.N; n++)
        for (int64_t g = 0; g < q.G; g++) {
            if (loom__cpu_sgemm_repro(a->cpu, true, false, q.K, q.P, q.Og, w + g * q.Og * q.K, q.K,
                                      dy + (n * q.O + g * q.Og) * q.P, q.P, false, col, q.P)) {
                free(col);
                return oom(a);
            }
            gjob gj = {&q, col, dx + n * q.C * q.H * q.W, g};
            loom__cpu_parallel(a->cpu, q.Cg * q.H, 1 + 4096 / (q.W * q.KH * q.KW + 1), col2im, &gj);
        }
    free(col);
    return LOOM_OK;
}

/* (dy, x) -> dw: dw = p0 + p1 + ... in image order */
static loom_status repro_conv2d_grad_weight(const loom__cpu_args *a) {
    geom q = loom__conv_geom_of(a->node);
    float *col = malloc((size_t)(q.K * q.P) * sizeof *col);
    if (!col) return oom(a);
    const float *dy = a->x[0], *x = a->x[1];
    float *dw = a->y;
    for (int64_t n = 0; n < q.N; n++)
        for (int64_t g = 0; g < q.G; g++) {
            cjob cj = {&q, x + n * q.C * q.H * q.W, col, g};
            loom__cpu_parallel(a->cpu, q.K, 1 + 4096 / (q.P + 1), im2col, &cj);
            if (loom__cpu_sgemm_repro(a->cpu, false, true, q.Og, q.K, q.P, dy + (n * q.O + g * q.Og) * q.P, q.P, col,
                                      q.P, n > 0, dw + g * q.Og * q.K, q.K)) {
                free(col);
                return oom(a);
            }
        }
    if (q.N == 0) memset(dw, 0, (size_t)loom_tensor_numel(a->node) * sizeof *dw);
    free(col);
    return LOOM_OK;
}

/* ---- sum, mean: csum over the reduced elements in row-major order ---- */

typedef struct rjob {
    int64_t g[23];
    const float *x;
    float *y;
    bool mean;
} rjob;

static void reduce_rows(void *v, int64_t o0, int64_t o1) {
    const rjob *j = v;
    const int64_t *g = j->g;
    int64_t nkeep = g[0], nred = g[11], count = g[22];
    for (int64_t o = o0; o < o1; o++) {
        int64_t base = 0, r = o;
        for (int64_t i = nkeep - 1; i >= 0; i--) {
            base += (r % g[1 + i]) * g[6 + i];
            r /= g[1 + i];
        }
        csum s = {0};
        for (int64_t e = 0; e < count; e++) {
            int64_t off = base, q = e;
            for (int64_t i = nred - 1; i >= 0; i--) {
                off += (q % g[12 + i]) * g[17 + i];
                q /= g[12 + i];
            }
            cs_add(&s, j->x[off]);
        }
        float t = cs_total(&s);
        j->y[o] = j->mean ? t / (float)count : t;
    }
}

static loom_status repro_reduce(const loom__cpu_args *a, bool mean) {
    rjob j = {.x = a->x[0], .y = a->y, .mean = mean};
    int64_t count = loom__reduce_table(a->node, j.g);
    loom__cpu_parallel(a->cpu, loom_tensor_numel(a->node), 1 + 4096 / (count + 1), reduce_rows, &j);
    return LOOM_OK;
}
static loom_status repro_sum(const loom__cpu_args *a) { return repro_reduce(a, false); }
static loom_status repro_mean(const loom__cpu_args *a) { return repro_reduce(a, true); }

/* ---- batch norm: one channel per task, elements in (n, s) order ---- */

typedef struct bn {
    int64_t N, C, S;
    bool train;
    float eps, mo_a, mo_b, unbias; /* (float)eps, (float)(1 - momentum), (float)momentum, (float)(M / (M - 1)) */
    const float *x, *gamma, *beta, *dy, *stats;
    float *rmean, *rvar, *y;
} bn;

static const float *opt_src(const loom__cpu_args *a, int64_t idx) { return idx < 0 ? NULL : a->x[idx]; }

static void bn_init(bn *j, const loom__cpu_args *a) {
    const loom_tensor *t = a->node, *x = t->src[0];
    j->N = x->dims[0], j->C = x->dims[1], j->S = loom__numel(x->ndim - 2, x->dims + 2);
    j->train = t->p[LOOM_P_BN_TRAIN] != 0;
    double M = (double)(j->N * j->S);
    j->eps = (float)t->f[LOOM_F_BN_EPS], j->mo_a = (float)(1.0 - t->f[LOOM_F_BN_MOMENTUM]),
    j->mo_b = (float)t->f[LOOM_F_BN_MOMENTUM];
    j->unbias = M > 1 ? (float)(M / (M - 1)) : 1.0f;
    j->x = a->x[0];
    j->gamma = opt_src(a, t->p[LOOM_P_BN_GAMMA]);
    j->beta = opt_src(a, t->p[LOOM_P_BN_BETA]);
    j->rmean = (float *)opt_src(a, t->p[LOOM_P_BN_RMEAN]);
    j->rvar = (float *)opt_src(a, t->p[LOOM_P_BN_RVAR]);
    j->dy = opt_src(a, t->p[LOOM_P_BN_DY]);
    j->stats = t->op == LOOM_OP_BATCH_NORM_GRAD ? opt_src(a, t->p[LOOM_P_BN_STATS]) : NULL;
    j->y = a->y;
}

#define BN_FOR(j, c, k) \
    for (int64_t n_ = 0; n_ < (j)->N; n_++) \
        for (int64_t s_ = 0, k = (n_ * (j)->C + (c)) * (j)->S; s_ < (j)->S; s_++, k++)

/* the batch mean and biased variance of channel c; invstd */
static void bn_stats(const bn *j, int64_t c, float *mean, float *var, float *invstd) {
    float Mf = (float)(j->N * j->S);
    if (j->train) {
        csum s = {0}, q = {0};
        BN_FOR(j, c, k) cs_add(&s, j->x[k]);
        float m = cs_total(&s) / Mf;
        BN_FOR(j, c, k) {
            float d = j->x[k] - m;
            cs_dot(&q, d, d);
        }
        *mean = m, *var = cs_total(&q) / Mf;
    } else {
        *mean = j->rmean[c], *var = j->rvar[c];
    }
    *invstd = 1.0f / sqrtf(*var + j->eps);
}

static void bn_fwd(void *v, int64_t c0, int64_t c1) {
    const bn *j = v;
    for (int64_t c = c0; c < c1; c++) {
        float mean, var, invstd;
        bn_stats(j, c, &mean, &var, &invstd);
        if (j->train && j->rmean) {
            j->rmean[c] = j->mo_a * j->rmean[c] + j->mo_b * mean;
            j->rvar[c] = j->mo_a * j->rvar[c] + j->mo_b * (var * j->unbias);
        }
        float g = j->gamma ? j->gamma[c] : 1.0f, b = j->beta ? j->beta[c] : 0.0f;
        BN_FOR(j, c, k) j->y[k] = ((j->x[k] - mean) * invstd) * g + b;
    }
}

static void bn_dstats(void *v, int64_t c0, int64_t c1) {
    const bn *j = v;
    for (int64_t c = c0; c < c1; c++) {
        float mean, var, invstd;
        bn_stats(j, c, &mean, &var, &invstd);
        csum sdx = {0}, sdy = {0};
        BN_FOR(j, c, k) {
            cs_dot(&sdx, j->dy[k], (j->x[k] - mean) * invstd);
            cs_add(&sdy, j->dy[k]);
        }
        j->y[c] = cs_total(&sdx), j->y[j->C + c] = cs_total(&sdy);
        j->y[2 * j->C + c] = mean, j->y[3 * j->C + c] = invstd;
    }
}

static void bn_dx(void *v, int64_t c0, int64_t c1) {
    const bn *j = v;
    float Mf = (float)(j->N * j->S);
    for (int64_t c = c0; c < c1; c++) {
        float sdx = j->stats[c], sdy = j->stats[j->C + c], mean = j->stats[2 * j->C + c];
        float invstd = j->stats[3 * j->C + c], gi = (j->gamma ? j->gamma[c] : 1.0f) * invstd;
        float a1 = sdy / Mf, a2 = sdx / Mf;
        if (j->train) {
            BN_FOR(j, c, k) j->y[k] = gi * ((j->dy[k] - a1) - ((j->x[k] - mean) * invstd) * a2);
        } else {
            BN_FOR(j, c, k) j->y[k] = gi * j->dy[k];
        }
    }
}

static loom_status bn_go(const loom__cpu_args *a, loom__cpu_range_fn fn) {
    bn j;
    bn_init(&j, a);
    loom__cpu_parallel(a->cpu, j.C, 1, fn, &j);
    return LOOM_OK;
}
static loom_status repro_batch_norm(const loom__cpu_args *a) { return bn_go(a, bn_fwd); }
static loom_status repro_batch_norm_grad_params(const loom__cpu_args *a) { return bn_go(a, bn_dstats); }
static loom_status repro_batch_norm_grad(const loom__cpu_args *a) { return bn_go(a, bn_dx); }

/* ---- cross-entropy: rows in order ---- */

static loom_status ce_targets(const loom__cpu_args *a, int64_t N, int64_t C, int32_t ignore, int64_t *count) {
    const int32_t *t = a->x[1];
    int64_t n = 0;
    for (int64_t i = 0; i < N; i++) {
        if (t[i] == ignore) continue;
        if (t[i] < 0 || t[i] >= C)
            return loom__err(a->node->g->ctx, LOOM_ERR_INVALID_ARG,
                             "%s (node '%s'): target %d at row %lld is outside [0, %lld) and is not ignore_index %d",
                             loom_op_name(a->node->op), a->node->name, (int)t[i], (long long)i, (long long)C,
                             (int)ignore);
        n++;
    }
    *count = n;
    return LOOM_OK;
}

/* m = the row's max, se = csum(exp(x - m)) */
static void ce_row(const float *x, int64_t C, float *m, float *se) {
    float mx = x[0];
    for (int64_t c = 1; c < C; c++) mx = x[c] > mx ? x[c] : mx;
    csum s = {0};
    for (int64_t c = 0; c < C; c++) cs_add(&s, loom__repro_exp(x[c] - mx));
    *m = mx, *se = cs_total(&s);
}

static loom_status repro_cross_entropy(const loom__cpu_args *a) {
    const loom_tensor *lg = a->node->src[0];
    int64_t N = lg->dims[0], C = lg->dims[1], count = 0;
    int32_t ignore = (int32_t)a->node->p[LOOM_P_CE_IGNORE];
    loom_status st = ce_targets(a, N, C, ignore, &count);
    if (st != LOOM_OK) return st;
    double eps = a->node->f[LOOM_F_CE_EPS];
    float a1 = (float)(1.0 - eps), a2 = (float)eps, Cf = (float)C;
    const float *X = a->x[0];
    const int32_t *T = a->x[1];
    csum tot = {0};
    for (int64_t i = 0; i < N; i++) {
        if (T[i] == ignore) {
            cs_add(&tot, 0.0f); /* every row is a term of the sum (0 when ignored), as on the GPUs */
            continue;
        }
        const float *x = X + i * C;
        float m, se;
        ce_row(x, C, &m, &se);
        csum sx = {0};
        for (int64_t c = 0; c < C; c++) cs_add(&sx, x[c]);
        float lse = m + loom__repro_log(se);
        float u = a1 * (x[T[i]] - lse), w = a2 * (cs_total(&sx) / Cf - lse);
        cs_add(&tot, -u - w);
    }
    *(float *)a->y = count ? cs_total(&tot) / (float)count : 0.0f;
    return LOOM_OK;
}

typedef struct cejob {
    int64_t C;
    int32_t ignore;
    float on, off, scale;
    const float *x;
    const int32_t *t;
    float *dx;
} cejob;

static void ce_grad_rows(void *v, int64_t r0, int64_t r1) {
    const cejob *j = v;
    for (int64_t i = r0; i < r1; i++) {
        const float *x = j->x + i * j->C;
        float *dx = j->dx + i * j->C;
        if (j->t[i] == j->ignore) {
            for (int64_t c = 0; c < j->C; c++) dx[c] = 0.0f;
            continue;
        }
        float m, se;
        ce_row(x, j->C, &m, &se);
        float inv = 1.0f / se;
        for (int64_t c = 0; c < j->C; c++)
            dx[c] = (loom__repro_exp(x[c] - m) * inv - (c == j->t[i] ? j->on : j->off)) * j->scale;
    }
}

static loom_status repro_cross_entropy_grad(const loom__cpu_args *a) {
    const loom_tensor *lg = a->node->src[0];
    int64_t N = lg->dims[0], C = lg->dims[1], count = 0;
    int32_t ignore = (int32_t)a->node->p[LOOM_P_CE_IGNORE];
    loom_status st = ce_targets(a, N, C, ignore, &count);
    if (st != LOOM_OK) return st;
    double eps = a->node->f[LOOM_F_CE_EPS];
    cejob j = {C, ignore, (float)(1.0 - eps + eps / (double)C), (float)(eps / (double)C), 0.0f, a->x[0], a->x[1], a->y};
    j.scale = count ? *(const float *)a->x[2] / (float)count : 0.0f;
    loom__cpu_parallel(a->cpu, N, 1 + 4096 / (C + 1), ce_grad_rows, &j);
    return LOOM_OK;
}

const loom__cpu_fn loom__cpu_repro_kernels[LOOM_OP_COUNT] = {
    [LOOM_OP_MATMUL] = repro_matmul,
    [LOOM_OP_LINEAR] = repro_linear,
    [LOOM_OP_CONV2D] = repro_conv2d,
    [LOOM_OP_CONV2D_GRAD_INPUT] = repro_conv2d_grad_input,
    [LOOM_OP_CONV2D_GRAD_WEIGHT] = repro_conv2d_grad_weight,
    [LOOM_OP_SUM] = repro_sum,
    [LOOM_OP_MEAN] = repro_mean,
    [LOOM_OP_BATCH_NORM] = repro_batch_norm,
    [LOOM_OP_BATCH_NORM_GRAD_PARAMS] = repro_batch_norm_grad_params,
    [LOOM_OP_BATCH_NORM_GRAD] = repro_batch_norm_grad,
    [LOOM_OP_CROSS_ENTROPY] = repro_cross_entropy,
    [LOOM_OP_CROSS_ENTROPY_GRAD] = repro_cross_entropy_grad,
};
