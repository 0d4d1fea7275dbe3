/* backends/cpu/ops/norm.c — CPU kernels for batch norm, layer norm and their
 * gradient ops. Reference loops, also the fast path: statistics are two-pass
 * (mean, then squared deviations) accumulated in double; work is split over
 * channels (batch norm), rows (layer norm) or columns (layer-norm parameter
 * gradients), so each output has one writer and results do not depend on the
 * thread count. Optional inputs are found by the src indices in node->p[]
 * (see core/ops/norm.c). */
#include <math.h>

#include "../cpu_impl.h"

enum { BN_TRAIN = 0, BN_GAMMA = 1, BN_BETA = 2, BN_RMEAN = 3, BN_RVAR = 4, BN_DY = 5 };
enum { LN_DIMS = 0, LN_GAMMA = 1, LN_BETA = 2, LN_DY = 3 };

static void *opt_src(const loom__cpu_args *a, int64_t idx) {
    if (idx < 0) return NULL;
    LOOM__ASSERT(idx < a->node->nsrc && a->xdt[idx] == a->dt);
    return a->x[idx];
}

/* ---- batch norm: x (N, C, S) with S = prod(dims[2:]), one channel per task ---- */

typedef struct bn_job {
    int64_t N, C, S;
    bool train;
    double eps, momentum;
    const void *x, *gamma, *beta, *dy;
    void *rmean, *rvar; /* running stats: read (eval) or updated (train) */
    void *y;            /* output: y, dx, or (2, C) params */
} bn_job;

static void bn_job_init(bn_job *j, const loom__cpu_args *a) {
    const loom_tensor *t = a->node, *x = t->src[0];
    j->N = x->dims[0], j->C = x->dims[1], j->S = loom__numel(x->ndim - 2, x->dims + 2);
    j->train = t->p[BN_TRAIN] != 0;
    j->eps = t->f[0], j->momentum = t->f[1];
    j->x = a->x[0];
    j->gamma = opt_src(a, t->p[BN_GAMMA]);
    j->beta = opt_src(a, t->p[BN_BETA]);
    j->rmean = opt_src(a, t->p[BN_RMEAN]);
    j->rvar = opt_src(a, t->p[BN_RVAR]);
    j->dy = opt_src(a, t->p[BN_DY]);
    j->y = a->y;
}

/* element (n, s) of channel c */
#define BN_AT(j, n, c, s) (((n) * (j)->C + (c)) * (j)->S + (s))

#define BN_KERNELS(T)                                                                                 \
    /* batch mean and biased variance of channel c */                                                \
    static void bn_stats_##T(const bn_job *j, int64_t c, double *mean, double *var) {                 \
        const T *x = j->x;                                                                            \
        double m = (double)(j->N * j->S), s = 0, q = 0;                                               \
        for (int64_t n = 0; n < j->N; n++)                                                            \
            for (int64_t i = 0; i < j->S; i++) s += x[BN_AT(j, n, c, i)];                             \
        s /= m;                                                                                       \
        for (int64_t n = 0; n < j->N; n++)                                                            \
            for (int64_t i = 0; i < j->S; i++) {                                                      \
                double d = x[BN_AT(j, n, c, i)] - s;                                                  \
                q += d * d;                                                                           \
            }                                                                                         \
        *mean = s, *var = q / m;                                                                      \
    }                                                                                                 \
    /* mean and invstd used by the node: batch (train) or running (eval) */                          \
    static void bn_norm_##T(const bn_job *j, int64_t c, double *mean, double *invstd) {               \
        double var;                                                                                   \
        if (j->train) {                                                                               \
            bn_stats_##T(j, c, mean, &var);                                                           \
        } else {                                                                                      \
            *mean = j->rmean ? ((const T *)j->rmean)[c] : 0.0;                                        \
            var = ((const T *)j->rvar)[c];                                                            \
        }                                                                                             \
        *invstd = 1.0 / sqrt(var + j->eps);                                                           \
    }                                                                                                 \
    /* y = (x - mean) invstd gamma + beta; train: update running stats */                            \
    static void bn_fwd_##T(void *v, int64_t c0, int64_t c1) {                                         \
        const bn_job *j = v;                                                                          \
        const T *x = j->x, *gm = j->gamma, *bt = j->beta;                                             \
        T *y = j->y;                                                                                  \
        for (int64_t c = c0; c < c1; c++) {                                                           \
            double mean, var, invstd;                                                                 \
            if (j->train) {                                                                           \
                bn_stats_##T(j, c, &mean, &var);                                                      \
                if (j->rmean) {                                                                       \
                    double m = (double)(j->N * j->S), mo = j->momentum;                               \
                    T *rm = j->rmean, *rv = j->rvar;                                                  \
                    rm[c] = (T)((1 - mo) * rm[c] + mo * mean);                                        \
                    rv[c] = (T)((1 - mo) * rv[c] + mo * var * m / (m - 1));                           \
                }                                                                                     \
            } else {                                                                                  \
                mean = ((const T *)j->rmean)[c];                                                      \
                var = ((const T *)j->rvar)[c];                                                        \
            }                                                                                         \
            invstd = 1.0 / sqrt(var + j->eps);                                                        \
            double g = gm ? gm[c] : 1.0, b = bt ? bt[c] : 0.0;                                        \
            for (int64_t n = 0; n < j->N; n++)                                                        \
                for (int64_t i = 0; i < j->S; i++) {                                                  \
                    int64_t k = BN_AT(j, n, c, i);                                                    \
                    y[k] = (T)((x[k] - mean) * invstd * g + b);                                       \
                }                                                                                     \
        }                                                                                             \
    }                                                                                                 \
    /* train: dx = g invstd (dy - mean(dy) - xhat mean(dy xhat)); eval: dx = g invstd dy */           \
    static void bn_dx_##T(void *v, int64_t c0, int64_t c1) {                                          \
        const bn_job *j = v;                                                                          \
        const T *x = j->x, *dy = j->dy, *gm = j->gamma;                                               \
        T *dx = j->y;                                                                                 \
        double m = (double)(j->N * j->S);                                                             \
        for (int64_t c = c0; c < c1; c++) {                                                           \
            double mean, invstd, g = gm ? gm[c] : 1.0, sdy = 0, sdyx = 0;                             \
            bn_norm_##T(j, c, &mean, &invstd);                                                        \
            if (j->train)                                                                             \
                for (int64_t n = 0; n < j->N; n++)                                                    \
                    for (int64_t i = 0; i < j->S; i++) {                                              \
                        int64_t k = BN_AT(j, n, c, i);                                                \
                        sdy += dy[k];                                                                 \
                        sdyx += dy[k] * (x[k] - mean) * invstd;                                       \
                    }                                                                                 \
            sdy /= m, sdyx /= m;                                                                      \
            for (int64_t n = 0; n < j->N; n++)                                                        \
                for (int64_t i = 0; i < j->S; i++) {                                                  \
                    int64_t k = BN_AT(j, n, c, i);                                                    \
                    double xh = (x[k] - mean) * invstd;                                               \
                    dx[k] = (T)(j->train ? g * invstd * (dy[k] - sdy - xh * sdyx) : g * invstd * dy[k]); \
                }                                                                                     \
        }                                                                                             \
    }                                                                                                 \
    /* out (2, C): out[0, c] = sum(dy xhat), out[1, c] = sum(dy) */                                   \
    static void bn_dparams_##T(void *v, int64_t c0, int64_t c1) {                                     \
        const bn_job *j = v;                                                                          \
        const T *x = j->x, *dy = j->dy;                                                               \
        T *out = j->y;                                                                                \
        for (int64_t c = c0; c < c1; c++) {                                                           \
            double mean, invstd, sdy = 0, sdyx = 0;                                                   \
            bn_norm_##T(j, c, &mean, &invstd);                                                        \
            for (int64_t n = 0; n < j->N; n++)                                                        \
                for (int64_t i = 0; i < j->S; i++) {                                                  \
                    int64_t k = BN_AT(j, n, c, i);                                                    \
                    sdy += dy[k];                                                                     \
                    sdyx += dy[k] * (x[k] - mean) * invstd;                                           \
                }                                                                                     \
            out[c] = (T)sdyx;                                                                         \
            out[j->C + c] = (T)sdy;                                                                   \
        }                                                                                             \
    }
BN_KERNELS(float)
BN_KERNELS(double)

static loom_status bn_run(const loom__cpu_args *a, loom__cpu_range_fn f32, loom__cpu_range_fn f64) {
    bn_job j;
    bn_job_init(&j, a);
    int64_t per = j.N * j.S, grain = per >= (1 << 14) ? 1 : (1 << 14) / per;
    loom__cpu_parallel(a->cpu, j.C, grain, a->dt == LOOM_F64 ? f64 : f32, &j);
    return LOOM_OK;
}

loom_status loom__cpu_batch_norm(const loom__cpu_args *a) { return bn_run(a, bn_fwd_float, bn_fwd_double); }
loom_status loom__cpu_batch_norm_grad(const loom__cpu_args *a) { return bn_run(a, bn_dx_float, bn_dx_double); }
loom_status loom__cpu_batch_norm_grad_params(const loom__cpu_args *a) {
    return bn_run(a, bn_dparams_float, bn_dparams_double);
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
    int nd = (int)t->p[LN_DIMS];
    j->D = loom__numel(nd, x->dims + x->ndim - nd);
    j->R = loom_tensor_numel(x) / j->D;
    j->eps = t->f[0];
    j->x = a->x[0];
    j->gamma = opt_src(a, t->p[LN_GAMMA]);
    j->beta = opt_src(a, t->p[LN_BETA]);
    j->dy = opt_src(a, t->p[LN_DY]);
    j->y = a->y;
    j->mean = j->invstd = NULL;
}

#define LN_KERNELS(T)                                                                                 \
    static void ln_stats_##T(const ln_job *j, int64_t r, double *mean, double *invstd) {              \
        const T *x = (const T *)j->x + r * j->D;                                                      \
        double s = 0, q = 0;                                                                          \
        for (int64_t i = 0; i < j->D; i++) s += x[i];                                                 \
        s /= (double)j->D;                                                                            \
        for (int64_t i = 0; i < j->D; i++) q += (x[i] - s) * (x[i] - s);                              \
        *mean = s, *invstd = 1.0 / sqrt(q / (double)j->D + j->eps);                                   \
    }                                                                                                 \
    /* y[r, i] = (x[r, i] - mean_r) invstd_r gamma[i] + beta[i] */                                    \
    static void ln_fwd_##T(void *v, int64_t r0, int64_t r1) {                                         \
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
    static void ln_dx_##T(void *v, int64_t r0, int64_t r1) {                                          \
        const ln_job *j = v;                                                                          \
        const T *gm = j->gamma;                                                                       \
        for (int64_t r = r0; r < r1; r++) {                                                           \
            const T *x = (const T *)j->x + r * j->D, *dy = (const T *)j->dy + r * j->D;               \
            T *dx = (T *)j->y + r * j->D;                                                             \
            double mean, invstd, a = 0, b = 0;                                                        \
            ln_stats_##T(j, r, &mean, &invstd);                                                       \
            for (int64_t i = 0; i < j->D; i++) {                                                      \
                double gd = dy[i] * (gm ? gm[i] : 1.0);                                               \
                a += gd;                                                                              \
                b += gd * (x[i] - mean) * invstd;                                                     \
            }                                                                                         \
            a /= (double)j->D, b /= (double)j->D;                                                     \
            for (int64_t i = 0; i < j->D; i++) {                                                      \
                double gd = dy[i] * (gm ? gm[i] : 1.0);                                               \
                dx[i] = (T)(invstd * (gd - a - (x[i] - mean) * invstd * b));                          \
            }                                                                                         \
        }                                                                                             \
    }                                                                                                 \
    static void ln_rowstats_##T(void *v, int64_t r0, int64_t r1) {                                    \
        ln_job *j = v;                                                                                \
        for (int64_t r = r0; r < r1; r++) ln_stats_##T(j, r, &j->mean[r], &j->invstd[r]);            \
    }                                                                                                 \
    /* out (2, D): out[0, i] = sum_r dy xhat, out[1, i] = sum_r dy; one column range per task */      \
    static void ln_dparams_##T(void *v, int64_t i0, int64_t i1) {                                     \
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
LN_KERNELS(float)
LN_KERNELS(double)

static int64_t row_grain(int64_t width) { return width >= (1 << 14) ? 1 : (1 << 14) / width; }

loom_status loom__cpu_layer_norm(const loom__cpu_args *a) {
    ln_job j;
    ln_job_init(&j, a);
    loom__cpu_parallel(a->cpu, j.R, row_grain(j.D), a->dt == LOOM_F64 ? ln_fwd_double : ln_fwd_float, &j);
    return LOOM_OK;
}

loom_status loom__cpu_layer_norm_grad(const loom__cpu_args *a) {
    ln_job j;
    ln_job_init(&j, a);
    loom__cpu_parallel(a->cpu, j.R, row_grain(j.D), a->dt == LOOM_F64 ? ln_dx_double : ln_dx_float, &j);
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
    loom__cpu_parallel(a->cpu, j.R, row_grain(j.D), f64 ? ln_rowstats_double : ln_rowstats_float, &j);
    int64_t cols = row_grain(j.R) < 64 ? 64 : row_grain(j.R);
    loom__cpu_parallel(a->cpu, j.D, cols, f64 ? ln_dparams_double : ln_dparams_float, &j);
    free(j.mean);
    return LOOM_OK;
}
