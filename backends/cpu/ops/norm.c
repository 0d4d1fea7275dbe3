/* backends/cpu/ops/norm.c — CPU kernels for batch norm, layer norm and their
 * gradient ops. Statistics accumulate in double; work is split over
 * channels (batch norm), rows (layer norm) or columns (layer-norm parameter
 * gradients), so each output has one writer and results do not depend on the
 * thread count. Optional inputs are found by the src indices in node->p[]
 * (see core/ops/norm.c). */
#include <math.h>
#include <string.h>

#include "../../../core/repro.h"
#include "../cpu_impl.h"
#include "../f32_inline.h"
#include "../vmath.h"

static void *opt_src(const loom__cpu_args *a, int64_t idx) {
    if (idx < 0) return NULL;
    LOOM__ASSERT(idx < a->node->nsrc && a->xdt[idx] == a->dt);
    return a->x[idx];
}

/* ---- batch norm: x (N, C, S) with S = prod(dims[2:]), one channel per task ----
 * F64: the reference (two-pass statistics). F32 fast path: one pass for the
 * sums (double partial sums in 8 independent lanes, so the loop vectorises
 * without reassociation), then y = x * scale + shift; the backward pass reads
 * the statistics op's (4, C) output instead of recomputing them. */

typedef loom__bn_job bn_job;

void loom__cpu_bn_job_init(bn_job *j, const loom__cpu_args *a) {
    const loom_tensor *t = a->node, *x = t->src[0];
    j->N = x->dims[0], j->C = x->dims[1], j->S = loom__numel(x->ndim - 2, x->dims + 2);
    j->train = t->p[LOOM_P_BN_TRAIN] != 0;
    j->eps = t->f[LOOM_F_BN_EPS], j->momentum = t->f[LOOM_F_BN_MOMENTUM];
    j->x = a->x[0];
    j->gamma = opt_src(a, t->p[LOOM_P_BN_GAMMA]);
    j->beta = opt_src(a, t->p[LOOM_P_BN_BETA]);
    j->rmean = opt_src(a, t->p[LOOM_P_BN_RMEAN]);
    j->rvar = opt_src(a, t->p[LOOM_P_BN_RVAR]);
    j->dy = opt_src(a, t->p[LOOM_P_BN_DY]);
    j->stats = opt_src(a, t->p[LOOM_P_BN_STATS]);
    j->y = a->y;
}

/* element (n, s) of channel c */
#define BN_AT(j, n, c, s) (((n) * (j)->C + (c)) * (j)->S + (s))

/* ---- F64 reference ---- */

/* batch mean and biased variance of channel c */
static void bn_stats_ref(const bn_job *j, int64_t c, double *mean, double *var) {
    const double *x = j->x;
    double m = (double)(j->N * j->S), s = 0, q = 0;
    for (int64_t n = 0; n < j->N; n++)
        for (int64_t i = 0; i < j->S; i++) s += x[BN_AT(j, n, c, i)];
    s /= m;
    for (int64_t n = 0; n < j->N; n++)
        for (int64_t i = 0; i < j->S; i++) {
            double d = x[BN_AT(j, n, c, i)] - s;
            q += d * d;
        }
    *mean = s, *var = q / m;
}

static void running_update(const bn_job *j, int64_t c, double mean, double var, bool f64) {
    if (!j->rmean) return;
    if (f64) {
        double m = (double)(j->N * j->S), mo = j->momentum;
        double *rm = j->rmean, *rv = j->rvar;
        rm[c] = (1 - mo) * rm[c] + mo * mean;
        rv[c] = (1 - mo) * rv[c] + mo * var * m / (m - 1);
    } else {
        loom__bn_running_f32(j, c, mean, var);
    }
}

/* y = (x - mean) invstd gamma + beta; train: update running stats */
static void bn_fwd_ref(void *v, int64_t c0, int64_t c1) {
    const bn_job *j = v;
    const double *x = j->x, *gm = j->gamma, *bt = j->beta;
    double *y = j->y;
    for (int64_t c = c0; c < c1; c++) {
        double mean, var;
        if (j->train) {
            bn_stats_ref(j, c, &mean, &var);
            running_update(j, c, mean, var, true);
        } else {
            mean = ((const double *)j->rmean)[c], var = ((const double *)j->rvar)[c];
        }
        double invstd = 1.0 / sqrt(var + j->eps), g = gm ? gm[c] : 1.0, b = bt ? bt[c] : 0.0;
        for (int64_t n = 0; n < j->N; n++)
            for (int64_t i = 0; i < j->S; i++) {
                int64_t k = BN_AT(j, n, c, i);
                y[k] = (x[k] - mean) * invstd * g + b;
            }
    }
}

/* stats (4, C): sum(dy xhat), sum(dy), mean, invstd */
static void bn_dstats_ref(void *v, int64_t c0, int64_t c1) {
    const bn_job *j = v;
    const double *x = j->x, *dy = j->dy;
    double *out = j->y;
    for (int64_t c = c0; c < c1; c++) {
        double mean, var, sdy = 0, sdyx = 0;
        if (j->train)
            bn_stats_ref(j, c, &mean, &var);
        else
            mean = ((const double *)j->rmean)[c], var = ((const double *)j->rvar)[c];
        double invstd = 1.0 / sqrt(var + j->eps);
        for (int64_t n = 0; n < j->N; n++)
            for (int64_t i = 0; i < j->S; i++) {
                int64_t k = BN_AT(j, n, c, i);
                sdy += dy[k];
                sdyx += dy[k] * (x[k] - mean) * invstd;
            }
        out[c] = sdyx, out[j->C + c] = sdy, out[2 * j->C + c] = mean, out[3 * j->C + c] = invstd;
    }
}

/* train: dx = g invstd (dy - sum(dy)/M - xhat sum(dy xhat)/M); eval: dx = g invstd dy */
static void bn_dx_ref(void *v, int64_t c0, int64_t c1) {
    const bn_job *j = v;
    const double *x = j->x, *dy = j->dy, *gm = j->gamma, *st = j->stats;
    double *dx = j->y, m = (double)(j->N * j->S);
    for (int64_t c = c0; c < c1; c++) {
        double sdyx = st[c] / m, sdy = st[j->C + c] / m, mean = st[2 * j->C + c], invstd = st[3 * j->C + c];
        double g = gm ? gm[c] : 1.0;
        for (int64_t n = 0; n < j->N; n++)
            for (int64_t i = 0; i < j->S; i++) {
                int64_t k = BN_AT(j, n, c, i);
                double xh = (x[k] - mean) * invstd;
                dx[k] = j->train ? g * invstd * (dy[k] - sdy - xh * sdyx) : g * invstd * dy[k];
            }
    }
}

/* ---- F32 fast path ---- */

static void bn_fwd_f32(void *v, int64_t c0, int64_t c1) {
    const bn_job *j = v;
    const float *x = j->x;
    float *y = j->y;
    for (int64_t c = c0; c < c1; c++) {
        float sc, sh;
        loom__bn_coef(j, c, &sc, &sh);
        for (int64_t n = 0; n < j->N; n++) {
            const float *xr = x + BN_AT(j, n, c, 0);
            float *yr = y + BN_AT(j, n, c, 0);
            loom__bn_pf_next(xr, n, j->N, j->C * j->S, j->S);
            for (int64_t i = 0; i < j->S; i++) yr[i] = xr[i] * sc + sh;
        }
    }
}

void loom__cpu_bn_dstats_store(const bn_job *j, int64_t c, float K, const double acc[4]) {
    float *out = j->y;
    double m = (double)(j->N * j->S), sdy = acc[0], sdyx = acc[1], sx = acc[2], sq = acc[3], mean, var;
    if (j->train) {
        mean = K + sx / m;
        var = sq / m - (sx / m) * (sx / m);
        if (var < 0) var = 0;
    } else {
        mean = ((const float *)j->rmean)[c], var = ((const float *)j->rvar)[c];
    }
    double invstd = 1.0 / sqrt(var + j->eps);
    out[c] = (float)((sdyx - (mean - K) * sdy) * invstd); /* sum(dy xhat) */
    out[j->C + c] = (float)sdy;
    out[2 * j->C + c] = (float)mean;
    out[3 * j->C + c] = (float)invstd;
}

static void bn_dstats_f32(void *v, int64_t c0, int64_t c1) {
    const bn_job *j = v;
    const float *x = j->x, *dy = j->dy;
    for (int64_t c = c0; c < c1; c++) {
        double acc[4] = {0};
        float K = x[BN_AT(j, 0, c, 0)];
        for (int64_t n = 0; n < j->N; n++) {
            loom__bn_pf_next(x + BN_AT(j, n, c, 0), n, j->N, j->C * j->S, j->S);
            loom__bn_pf_next(dy + BN_AT(j, n, c, 0), n, j->N, j->C * j->S, j->S);
            loom__bn_sum_dy(x + BN_AT(j, n, c, 0), dy + BN_AT(j, n, c, 0), j->S, K, acc, j->train);
        }
        loom__cpu_bn_dstats_store(j, c, K, acc);
    }
}

void loom__cpu_bn_dx_coef(const bn_job *j, int64_t c, float f[3]) {
    const float *gm = j->gamma, *st = j->stats;
    double m = (double)(j->N * j->S);
    double sdyx = st[c] / m, sdy = st[j->C + c] / m, mean = st[2 * j->C + c], invstd = st[3 * j->C + c];
    double g = gm ? gm[c] : 1.0, k1 = g * invstd, k2 = 0, k3 = 0;
    if (j->train) {
        k2 = -k1 * invstd * sdyx;
        k3 = k1 * (mean * invstd * sdyx - sdy);
    }
    f[0] = (float)k1, f[1] = (float)k2, f[2] = (float)k3;
}

/* dx = k1 dy + k2 x + k3 per channel (the train formula expanded) */
static void bn_dx_f32(void *v, int64_t c0, int64_t c1) {
    const bn_job *j = v;
    const float *x = j->x, *dy = j->dy;
    float *dx = j->y;
    for (int64_t c = c0; c < c1; c++) {
        float f[3];
        loom__cpu_bn_dx_coef(j, c, f);
        float f1 = f[0], f2 = f[1], f3 = f[2];
        for (int64_t n = 0; n < j->N; n++) {
            const float *xr = x + BN_AT(j, n, c, 0), *gr = dy + BN_AT(j, n, c, 0);
            float *o = dx + BN_AT(j, n, c, 0);
            loom__bn_pf_next(xr, n, j->N, j->C * j->S, j->S);
            loom__bn_pf_next(gr, n, j->N, j->C * j->S, j->S);
            for (int64_t i = 0; i < j->S; i++) o[i] = f1 * gr[i] + f2 * xr[i] + f3;
        }
    }
}

static loom_status bn_run(const loom__cpu_args *a, loom__cpu_range_fn f32, loom__cpu_range_fn f64) {
    bn_job j;
    loom__cpu_bn_job_init(&j, a);
    int64_t per = j.N * j.S, grain = per >= (1 << 14) ? 1 : (1 << 14) / per;
    loom__cpu_parallel(a->cpu, j.C, grain, a->dt == LOOM_F64 ? f64 : f32, &j);
    return LOOM_OK;
}

loom_status loom__cpu_batch_norm(const loom__cpu_args *a) { return bn_run(a, bn_fwd_f32, bn_fwd_ref); }
loom_status loom__cpu_batch_norm_grad(const loom__cpu_args *a) { return bn_run(a, bn_dx_f32, bn_dx_ref); }
loom_status loom__cpu_batch_norm_grad_params(const loom__cpu_args *a) {
    return bn_run(a, bn_dstats_f32, bn_dstats_ref);
}

/* ---- layer norm: x (R, D), D = the last norm_dims dims, one row per task ---- */

typedef struct ln_job {
    int64_t R, D;
    double eps;
    const void *x, *gamma, *beta, *dy;
    void *y;
    double *mean, *invstd; /* (R) scratch for the parameter gradients */
} ln_job;

static void ln_job_init(ln_job *j, const loom__cpu_args *a) {
    const loom_tensor *t = a->node, *x = t->src[0];
    int nd = (int)t->p[LOOM_P_LN_DIMS];
    j->D = loom__numel(nd, x->dims + x->ndim - nd);
    j->R = loom_tensor_numel(x) / j->D;
    j->eps = t->f[LOOM_F_LN_EPS];
    j->x = a->x[0];
    j->gamma = opt_src(a, t->p[LOOM_P_LN_GAMMA]);
    j->beta = opt_src(a, t->p[LOOM_P_LN_BETA]);
    j->dy = opt_src(a, t->p[LOOM_P_LN_DY]);
    j->y = a->y;
    j->mean = j->invstd = NULL;
}

/* out = the sum of EXPR over e = 0 .. n - 1, one running sum in double (the
 * f64 kernels; the f32 ones below keep eight lanes) */
#define LN_SUM(n, out, EXPR)                                                                          \
    do {                                                                                              \
        out = 0;                                                                                      \
        for (int64_t e = 0; e < (n); e++) out += (EXPR);                                              \
    } while (0)

/* the f64 kernels (T double; the f32 ones are written below) */
#define LN_KERNELS(T)                                                                                 \
    LOOM__VMATH void ln_stats_##T(const ln_job *j, int64_t r, double *mean, double *invstd) {         \
        const T *x = (const T *)j->x + r * j->D;                                                      \
        double s, q;                                                                                  \
        LN_SUM(j->D, s, x[e]);                                                                        \
        s /= (double)j->D;                                                                            \
        LN_SUM(j->D, q, (x[e] - s) * (x[e] - s));                                                     \
        *mean = s, *invstd = 1.0 / sqrt(q / (double)j->D + j->eps);                                   \
    }                                                                                                 \
    /* y[r, i] = (x[r, i] - mean_r) invstd_r gamma[i] + beta[i] */                                    \
    LOOM__VMATH void ln_fwd_body_##T(void *v, int64_t r0, int64_t r1) {                               \
        const ln_job *j = v;                                                                          \
        const T *gm = j->gamma, *bt = j->beta;                                                        \
        for (int64_t r = r0; r < r1; r++) {                                                           \
            const T *x = (const T *)j->x + r * j->D;                                                  \
            T *y = (T *)j->y + r * j->D;                                                              \
            double mean, invstd;                                                                      \
            ln_stats_##T(j, r, &mean, &invstd);                                                       \
            for (int64_t i = 0; i < j->D; i++)                                                        \
                y[i] = (T)((x[i] - mean) * invstd * (gm ? gm[i] : 1.0) + (bt ? bt[i] : 0.0));         \
        }                                                                                             \
    }                                                                                                 \
    /* dx = invstd (g dy - mean(g dy) - xhat mean(g dy xhat)) per row */                             \
    LOOM__VMATH void ln_dx_body_##T(void *v, int64_t r0, int64_t r1) {                                \
        const ln_job *j = v;                                                                          \
        const T *gm = j->gamma;                                                                       \
        for (int64_t r = r0; r < r1; r++) {                                                           \
            const T *x = (const T *)j->x + r * j->D, *dy = (const T *)j->dy + r * j->D;               \
            T *dx = (T *)j->y + r * j->D;                                                             \
            double mean, invstd, a, b;                                                                \
            ln_stats_##T(j, r, &mean, &invstd);                                                       \
            LN_SUM(j->D, a, dy[e] * (gm ? gm[e] : 1.0));                                              \
            LN_SUM(j->D, b, dy[e] * (gm ? gm[e] : 1.0) * (x[e] - mean) * invstd);                     \
            a /= (double)j->D, b /= (double)j->D;                                                     \
            for (int64_t i = 0; i < j->D; i++) {                                                      \
                double gd = dy[i] * (gm ? gm[i] : 1.0);                                               \
                dx[i] = (T)(invstd * (gd - a - (x[i] - mean) * invstd * b));                          \
            }                                                                                         \
        }                                                                                             \
    }                                                                                                 \
    LOOM__VMATH void ln_rowstats_body_##T(void *v, int64_t r0, int64_t r1) {                          \
        ln_job *j = v;                                                                                \
        for (int64_t r = r0; r < r1; r++) ln_stats_##T(j, r, &j->mean[r], &j->invstd[r]);            \
    }
LN_KERNELS(double)

/* the parameter gradients of both dtypes (columns: the same loop vectorises for f32) */
#define LN_DPARAMS(T)                                                                                 \
    /* out (2, D): out[0, i] = sum_r dy xhat, out[1, i] = sum_r dy; one column range per task */      \
    LOOM__VMATH void ln_dparams_body_##T(void *v, int64_t i0, int64_t i1) {                           \
        const ln_job *j = v;                                                                          \
        const T *x = j->x, *dy = j->dy;                                                               \
        T *out = j->y;                                                                                \
        double dg[64], db[64];                                                                        \
        for (int64_t b0 = i0; b0 < i1; b0 += 64) {                                                    \
            int64_t b1 = b0 + 64 < i1 ? b0 + 64 : i1;                                                 \
            for (int64_t i = b0; i < b1; i++) dg[i - b0] = db[i - b0] = 0;                            \
            for (int64_t r = 0; r < j->R; r++)                                                        \
                for (int64_t i = b0; i < b1; i++) {                                                   \
                    int64_t k = r * j->D + i;                                                         \
                    dg[i - b0] += dy[k] * (x[k] - j->mean[r]) * j->invstd[r];                         \
                    db[i - b0] += dy[k];                                                              \
                }                                                                                     \
            for (int64_t i = b0; i < b1; i++) out[i] = (T)dg[i - b0], out[j->D + i] = (T)db[i - b0];  \
        }                                                                                             \
    }
LN_DPARAMS(double)
LN_DPARAMS(float)

/* The f32 row kernels: each row sum in eight double lanes (element e into
 * lane e % 8, the tail into lane 0, the lanes added 0 .. 7), each lane doing
 * the scalar expression's operations in its order (no contraction): the same
 * bits on every ISA. The lanes are GCC vectors of W doubles, 8 / W of them:
 * one 64-byte vector with AVX-512, two 32-byte ones elsewhere (GCC lowers a
 * 64-byte vector without AVX-512 through the stack, element by element: 2.7
 * ns per element on Zen 3). Written as scalar loops over eight lanes, GCC
 * left them scalar (the GPT's layer norms ran at ~1.6 ns per element). */
typedef float ln_v4f __attribute__((vector_size(16)));
typedef double ln_v4d __attribute__((vector_size(32)));
typedef float ln_v8f __attribute__((vector_size(32)));
typedef double ln_v8d __attribute__((vector_size(64)));
/* the helpers below are always inlined: no call passes a vector, whatever GCC
 * says (at the end of the file, so the rest of it too) of the ABI of a 64-byte
 * vector without AVX-512 */
#pragma GCC diagnostic ignored "-Wpsabi"

/* (a macro: no function takes a vector by value) */
#define LN_ST(VF, p, v)                                                                               \
    do {                                                                                              \
        VF f_ = __builtin_convertvector((v), VF);                                                     \
        memcpy((p), &f_, sizeof f_);                                                                  \
    } while (0)

/* the row kernels with lanes of W doubles (VD) loaded from W floats (VF); names end in SFX */
#define LN_F32_ROWS(W, VD, VF, SFX)                                                                   \
    enum { LN_NH_##SFX = 8 / (W) };                                                                   \
    LOOM__VMATH VD ln_ld_##SFX(const float *p) {                                                      \
        VF f;                                                                                         \
        memcpy(&f, p, sizeof f);                                                                      \
        return __builtin_convertvector(f, VD);                                                        \
    }                                                                                                 \
    /* W floats of p, or 1.0 where p is NULL (gamma absent) */                                        \
    LOOM__VMATH VD ln_ld_or1_##SFX(const float *p, int64_t i) {                                       \
        return p ? ln_ld_##SFX(p + i) : (VD){0} + 1.0;                                                \
    }                                                                                                 \
    LOOM__VMATH double ln_lanes_##SFX(const VD *p) {                                                  \
        double out = p[0][0];                                                                         \
        for (int k = 1; k < 8; k++) out += p[k / (W)][k % (W)];                                       \
        return out;                                                                                   \
    }                                                                                                 \
    LOOM__VMATH void ln_stats_##SFX(const ln_job *j, int64_t r, double *mean, double *invstd) {       \
        const float *x = (const float *)j->x + r * j->D;                                              \
        const int64_t D = j->D, n8 = D & ~(int64_t)7;                                                 \
        VD p[LN_NH_##SFX] = {0}, q[LN_NH_##SFX] = {0};                                                \
        for (int64_t i = 0; i < n8; i += 8)                                                           \
            for (int h = 0; h < LN_NH_##SFX; h++) p[h] += ln_ld_##SFX(x + i + h * (W));               \
        for (int64_t i = n8; i < D; i++) p[0][0] += x[i];                                             \
        double s = ln_lanes_##SFX(p) / (double)D;                                                     \
        for (int64_t i = 0; i < n8; i += 8)                                                           \
            for (int h = 0; h < LN_NH_##SFX; h++) {                                                   \
                VD v = ln_ld_##SFX(x + i + h * (W)) - s;                                              \
                q[h] += v * v;                                                                        \
            }                                                                                         \
        for (int64_t i = n8; i < D; i++) q[0][0] += (x[i] - s) * (x[i] - s);                          \
        *mean = s, *invstd = 1.0 / sqrt(ln_lanes_##SFX(q) / (double)D + j->eps);                      \
    }                                                                                                 \
    /* y[r, i] = (x[r, i] - mean_r) invstd_r gamma[i] + beta[i] */                                    \
    LOOM__VMATH void ln_fwd_body_##SFX(void *v, int64_t r0, int64_t r1) {                             \
        const ln_job *j = v;                                                                          \
        const float *gm = j->gamma, *bt = j->beta;                                                    \
        const int64_t D = j->D, n8 = D & ~(int64_t)7;                                                 \
        for (int64_t r = r0; r < r1; r++) {                                                           \
            const float *x = (const float *)j->x + r * D;                                             \
            float *y = (float *)j->y + r * D;                                                         \
            double mean, invstd;                                                                      \
            ln_stats_##SFX(j, r, &mean, &invstd);                                                     \
            for (int64_t i = 0; i < n8; i += (W)) {                                                   \
                VD b = bt ? ln_ld_##SFX(bt + i) : (VD){0};                                            \
                LN_ST(VF, y + i, (ln_ld_##SFX(x + i) - mean) * invstd * ln_ld_or1_##SFX(gm, i) + b);  \
            }                                                                                         \
            for (int64_t i = n8; i < D; i++)                                                          \
                y[i] = (float)((x[i] - mean) * invstd * (gm ? gm[i] : 1.0) + (bt ? bt[i] : 0.0));     \
        }                                                                                             \
    }                                                                                                 \
    /* dx = invstd (g dy - mean(g dy) - xhat mean(g dy xhat)) per row */                             \
    LOOM__VMATH void ln_dx_body_##SFX(void *v, int64_t r0, int64_t r1) {                              \
        const ln_job *j = v;                                                                          \
        const float *gm = j->gamma;                                                                   \
        const int64_t D = j->D, n8 = D & ~(int64_t)7;                                                 \
        for (int64_t r = r0; r < r1; r++) {                                                           \
            const float *x = (const float *)j->x + r * D, *dy = (const float *)j->dy + r * D;         \
            float *dx = (float *)j->y + r * D;                                                        \
            double mean, invstd;                                                                      \
            ln_stats_##SFX(j, r, &mean, &invstd);                                                     \
            VD pa[LN_NH_##SFX] = {0}, pb[LN_NH_##SFX] = {0};                                          \
            for (int64_t i = 0; i < n8; i += 8)                                                       \
                for (int h = 0; h < LN_NH_##SFX; h++) {                                               \
                    int64_t e = i + h * (W);                                                          \
                    VD gd = ln_ld_##SFX(dy + e) * ln_ld_or1_##SFX(gm, e);                             \
                    pa[h] += gd;                                                                      \
                    pb[h] += gd * (ln_ld_##SFX(x + e) - mean) * invstd;                               \
                }                                                                                     \
            for (int64_t i = n8; i < D; i++) {                                                        \
                pa[0][0] += dy[i] * (gm ? gm[i] : 1.0);                                               \
                pb[0][0] += dy[i] * (gm ? gm[i] : 1.0) * (x[i] - mean) * invstd;                      \
            }                                                                                         \
            double a = ln_lanes_##SFX(pa) / (double)D, b = ln_lanes_##SFX(pb) / (double)D;            \
            for (int64_t i = 0; i < n8; i += (W)) {                                                   \
                VD gd = ln_ld_##SFX(dy + i) * ln_ld_or1_##SFX(gm, i);                                 \
                LN_ST(VF, dx + i, invstd * (gd - a - (ln_ld_##SFX(x + i) - mean) * invstd * b));      \
            }                                                                                         \
            for (int64_t i = n8; i < D; i++) {                                                        \
                double gd = dy[i] * (gm ? gm[i] : 1.0);                                               \
                dx[i] = (float)(invstd * (gd - a - (x[i] - mean) * invstd * b));                      \
            }                                                                                         \
        }                                                                                             \
    }                                                                                                 \
    LOOM__VMATH void ln_rowstats_body_##SFX(void *v, int64_t r0, int64_t r1) {                        \
        ln_job *j = v;                                                                                \
        for (int64_t r = r0; r < r1; r++) ln_stats_##SFX(j, r, &j->mean[r], &j->invstd[r]);           \
    }
LN_F32_ROWS(4, ln_v4d, ln_v4f, v4)
LN_F32_ROWS(8, ln_v8d, ln_v8f, v8)

/* the kernels as range functions: f64 plain; f32 for the baseline and AVX2
 * (lanes of 4 doubles) and AVX-512 (lanes of 8), the same bits (no
 * contraction), picked at run time */
#define LN_RANGE(name, f32, f32_avx512)                                                               \
    static void name##_double(void *v, int64_t a, int64_t b) { name##_body_double(v, a, b); }         \
    static void name##_float(void *v, int64_t a, int64_t b) { f32(v, a, b); }                         \
    LOOM__TARGET("avx2") static void name##_float_avx2(void *v, int64_t a, int64_t b) { f32(v, a, b); } \
    LOOM__TARGET("avx512f") static void name##_float_avx512(void *v, int64_t a, int64_t b) {          \
        f32_avx512(v, a, b);                                                                          \
    }                                                                                                 \
    static loom__vrange_fn name##_fn(bool f64) {                                                      \
        return f64 ? name##_double : loom__pick_isa(name##_float, name##_float_avx2, name##_float_avx512); \
    }
LN_RANGE(ln_fwd, ln_fwd_body_v4, ln_fwd_body_v8)
LN_RANGE(ln_dx, ln_dx_body_v4, ln_dx_body_v8)
LN_RANGE(ln_rowstats, ln_rowstats_body_v4, ln_rowstats_body_v8)
LN_RANGE(ln_dparams, ln_dparams_body_float, ln_dparams_body_float)

static int64_t row_grain(int64_t width) { return width >= (1 << 14) ? 1 : (1 << 14) / width; }

loom_status loom__cpu_layer_norm(const loom__cpu_args *a) {
    ln_job j;
    ln_job_init(&j, a);
    loom__cpu_parallel(a->cpu, j.R, row_grain(j.D), ln_fwd_fn(a->dt == LOOM_F64), &j);
    return LOOM_OK;
}

loom_status loom__cpu_layer_norm_grad(const loom__cpu_args *a) {
    ln_job j;
    ln_job_init(&j, a);
    loom__cpu_parallel(a->cpu, j.R, row_grain(j.D), ln_dx_fn(a->dt == LOOM_F64), &j);
    return LOOM_OK;
}

loom_status loom__cpu_layer_norm_grad_params(const loom__cpu_args *a) {
    ln_job j;
    ln_job_init(&j, a);
    bool f64 = a->dt == LOOM_F64;
    j.mean = malloc((size_t)j.R * 2 * sizeof(double));
    if (!j.mean)
        return loom__err(a->node->g->ctx, LOOM_ERR_OOM, "layer_norm_grad_params: out of memory for %lld row stats",
                         (long long)j.R);
    j.invstd = j.mean + j.R;
    loom__cpu_parallel(a->cpu, j.R, row_grain(j.D), ln_rowstats_fn(f64), &j);
    int64_t cols = row_grain(j.R) < 64 ? 64 : row_grain(j.R);
    loom__cpu_parallel(a->cpu, j.D, cols, ln_dparams_fn(f64), &j);
    free(j.mean);
    return LOOM_OK;
}

/* ---- reproducible mode (core/repro.h): batch norm, one channel per task, elements in (n, s) order ---- */

typedef struct bn {
    int64_t N, C, S;
    bool train;
    float eps, mo_a, mo_b, unbias; /* (float)eps, (float)(1 - momentum), (float)momentum, (float)(M / (M - 1)) */
    const float *x, *gamma, *beta, *dy, *stats;
    float *rmean, *rvar, *y;
} bn;

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
        loom__csum s = {0}, q = {0};
        BN_FOR(j, c, k) loom__csum_add(&s, j->x[k]);
        float m = loom__csum_total(&s) / Mf;
        BN_FOR(j, c, k) {
            float d = j->x[k] - m;
            loom__csum_dot(&q, d, d);
        }
        *mean = m, *var = loom__csum_total(&q) / Mf;
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
        loom__csum sdx = {0}, sdy = {0};
        BN_FOR(j, c, k) {
            loom__csum_dot(&sdx, j->dy[k], (j->x[k] - mean) * invstd);
            loom__csum_add(&sdy, j->dy[k]);
        }
        j->y[c] = loom__csum_total(&sdx), j->y[j->C + c] = loom__csum_total(&sdy);
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
loom_status loom__cpu_batch_norm_repro(const loom__cpu_args *a) { return bn_go(a, bn_fwd); }
loom_status loom__cpu_batch_norm_grad_params_repro(const loom__cpu_args *a) { return bn_go(a, bn_dstats); }
loom_status loom__cpu_batch_norm_grad_repro(const loom__cpu_args *a) { return bn_go(a, bn_dx); }
