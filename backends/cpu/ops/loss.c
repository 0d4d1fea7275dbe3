/* backends/cpu/ops/loss.c — CPU kernels for cross-entropy (fused
 * log-softmax, label smoothing, ignore_index), its gradient, and mse.
 * Reference loops that are also the fast path: rows are split into a fixed
 * number of blocks (set by the size, not the thread count) whose partial sums
 * are added in order, so results do not depend on the number of threads.
 * Scalar losses accumulate in double for both dtypes. Cross-entropy in f32
 * takes the exponential from vmath.h and sums a row over 8 double lanes, so
 * its loops vectorise (F64 and the mse: the plain loops). */
#include <math.h>

#include "../../../core/repro.h"
#include "../cpu_impl.h"
#include "../vmath.h"

#define MAX_BLOCKS 64

/* blocks for n items of `cost` work each: about 16k operations per block */
static int64_t block_count(int64_t n, int64_t cost) {
    int64_t b = n * cost / (1 << 14);
    if (b > MAX_BLOCKS) b = MAX_BLOCKS;
    if (b > n) b = n;
    return b < 1 ? 1 : b;
}

typedef struct cejob {
    int64_t N, C, nblk;
    const void *x;     /* logits (N, C) */
    const int32_t *t;  /* targets (N) */
    void *dx;          /* gradient (N, C), cross_entropy_grad only */
    int32_t ignore;
    double eps;
    double scale;      /* gradient: dloss / count */
    double part[MAX_BLOCKS];
    int64_t count[MAX_BLOCKS];
} cejob;

/* Forward, rows of block b: part[b] = sum of loss_i, count[b] = rows used.
 * logp[c] = x[c] - lse, lse = m + log sum exp(x - m);
 * loss_i = -(1 - eps) logp[t] - eps/C sum_c logp[c]. Targets were
 * range-checked before. */
#define CE_BLOCKS(T, S)                                                                   \
    static void ce_##T(void *v, int64_t b0, int64_t b1) {                                 \
        cejob *j = v;                                                                     \
        const int64_t C = j->C;                                                           \
        for (int64_t b = b0; b < b1; b++) {                                               \
            double sum = 0;                                                               \
            int64_t cnt = 0;                                                              \
            for (int64_t i = b * j->N / j->nblk; i < (b + 1) * j->N / j->nblk; i++) {     \
                int32_t t = j->t[i];                                                      \
                if (t == j->ignore) continue;                                             \
                const T *x = (const T *)j->x + i * C;                                     \
                T m = x[0];                                                               \
                for (int64_t c = 1; c < C; c++) m = x[c] > m ? x[c] : m;                  \
                double se = 0, sx = 0;                                                    \
                for (int64_t c = 0; c < C; c++) {                                         \
                    se += exp##S(x[c] - m);                                               \
                    sx += x[c];                                                           \
                }                                                                         \
                double lse = (double)m + log(se);                                         \
                sum += -(1.0 - j->eps) * ((double)x[t] - lse) - j->eps * (sx / (double)C - lse); \
                cnt++;                                                                    \
            }                                                                             \
            j->part[b] = sum;                                                             \
            j->count[b] = cnt;                                                            \
        }                                                                                 \
    }
CE_BLOCKS(double, )

/* Gradient, rows [r0, r1): dx = (softmax(x) - q) * scale, q the smoothed
 * one-hot; zero rows where the target is ignore_index. */
#define CE_GRAD_ROWS(T, S)                                                                \
    static void ce_grad_##T(void *v, int64_t r0, int64_t r1) {                            \
        const cejob *j = v;                                                               \
        const int64_t C = j->C;                                                           \
        const T off = (T)(j->eps / (double)C), on = (T)(1.0 - j->eps + j->eps / (double)C); \
        for (int64_t i = r0; i < r1; i++) {                                               \
            const T *x = (const T *)j->x + i * C;                                         \
            T *dx = (T *)j->dx + i * C;                                                   \
            int32_t t = j->t[i];                                                          \
            if (t == j->ignore) {                                                         \
                for (int64_t c = 0; c < C; c++) dx[c] = 0;                                \
                continue;                                                                 \
            }                                                                             \
            T m = x[0];                                                                   \
            for (int64_t c = 1; c < C; c++) m = x[c] > m ? x[c] : m;                      \
            double se = 0;                                                                \
            for (int64_t c = 0; c < C; c++) {                                             \
                T e = exp##S(x[c] - m);                                                   \
                dx[c] = e;                                                                \
                se += e;                                                                  \
            }                                                                             \
            T inv = (T)(1.0 / se), k = (T)j->scale;                                       \
            for (int64_t c = 0; c < C; c++) dx[c] = (dx[c] * inv - (c == t ? on : off)) * k; \
        }                                                                                 \
    }
CE_GRAD_ROWS(double, )

/* f32: the same arithmetic in a form that vectorises (three ISA variants,
 * picked at run time; each gives the same bits): the row's max over 16
 * lanes, e = loom__vexpf(x - max), their sum in double over 8 lanes added
 * in a fixed order (per row: the thread count does not change a bit). */
LOOM__VMATH float ce_max(const float *x, int64_t C) {
    float mv[16], m;
    int64_t c = 0;
    for (int l = 0; l < 16; l++) mv[l] = x[0];
    for (; c + 16 <= C; c += 16)
        for (int l = 0; l < 16; l++) mv[l] = x[c + l] > mv[l] ? x[c + l] : mv[l];
    m = mv[0];
    for (int l = 1; l < 16; l++) m = mv[l] > m ? mv[l] : m;
    for (; c < C; c++) m = x[c] > m ? x[c] : m;
    return m;
}

/* sum of e = exp(x - m), e stored to out unless it is NULL; the
 * exponentials a chunk at a time (a loop that vectorises), then their sum */
LOOM__VMATH double ce_sumexp(const float *x, int64_t C, float m, float *out) {
    float tmp[256];
    double sv[8] = {0};
    for (int64_t c0 = 0; c0 < C; c0 += 256) {
        const int64_t n = C - c0 < 256 ? C - c0 : 256;
        float *e = out ? out + c0 : tmp;
        for (int64_t c = 0; c < n; c++) e[c] = loom__vexpf(x[c0 + c] - m);
        int64_t c = 0;
        for (; c + 8 <= n; c += 8)
            for (int l = 0; l < 8; l++) sv[l] += e[c + l];
        for (; c < n; c++) sv[c & 7] += e[c];
    }
    return ((sv[0] + sv[1]) + (sv[2] + sv[3])) + ((sv[4] + sv[5]) + (sv[6] + sv[7]));
}

LOOM__VMATH void ce_f32_body(cejob *j, int64_t b0, int64_t b1) {
    const int64_t C = j->C;
    for (int64_t b = b0; b < b1; b++) {
        double sum = 0;
        int64_t cnt = 0;
        for (int64_t i = b * j->N / j->nblk; i < (b + 1) * j->N / j->nblk; i++) {
            int32_t t = j->t[i];
            if (t == j->ignore) continue;
            const float *x = (const float *)j->x + i * C;
            float m = ce_max(x, C);
            double se = ce_sumexp(x, C, m, NULL), sx = 0;
            for (int64_t c = 0; c < C; c++) sx += x[c];
            double lse = (double)m + log(se);
            sum += -(1.0 - j->eps) * ((double)x[t] - lse) - j->eps * (sx / (double)C - lse);
            cnt++;
        }
        j->part[b] = sum;
        j->count[b] = cnt;
    }
}

LOOM__VMATH void ce_grad_f32_body(const cejob *j, int64_t r0, int64_t r1) {
    const int64_t C = j->C;
    const float off = (float)(j->eps / (double)C), on = (float)(1.0 - j->eps + j->eps / (double)C);
    for (int64_t i = r0; i < r1; i++) {
        const float *x = (const float *)j->x + i * C;
        float *dx = (float *)j->dx + i * C;
        int32_t t = j->t[i];
        if (t == j->ignore) {
            for (int64_t c = 0; c < C; c++) dx[c] = 0;
            continue;
        }
        float m = ce_max(x, C);
        double se = ce_sumexp(x, C, m, dx);
        float inv = (float)(1.0 / se), k = (float)j->scale, et = dx[t];
        for (int64_t c = 0; c < C; c++) dx[c] = (dx[c] * inv - off) * k;
        dx[t] = (et * inv - on) * k;
    }
}

static void ce_f32(void *v, int64_t b0, int64_t b1) { ce_f32_body(v, b0, b1); }
LOOM__TARGET("avx2") static void ce_f32_avx2(void *v, int64_t b0, int64_t b1) { ce_f32_body(v, b0, b1); }
LOOM__TARGET("avx512f") static void ce_f32_avx512(void *v, int64_t b0, int64_t b1) { ce_f32_body(v, b0, b1); }
static void ce_grad_f32(void *v, int64_t r0, int64_t r1) { ce_grad_f32_body(v, r0, r1); }
LOOM__TARGET("avx2") static void ce_grad_f32_avx2(void *v, int64_t r0, int64_t r1) { ce_grad_f32_body(v, r0, r1); }
LOOM__TARGET("avx512f") static void ce_grad_f32_avx512(void *v, int64_t r0, int64_t r1) {
    ce_grad_f32_body(v, r0, r1);
}

/* Count the rows that are not ignored; fail on a target outside [0, C). */
static loom_status ce_check(const loom__cpu_args *a, const cejob *j, int64_t *count) {
    int64_t n = 0;
    for (int64_t i = 0; i < j->N; i++) {
        int32_t t = j->t[i];
        if (t == j->ignore) continue;
        if (t < 0 || t >= j->C)
            return loom__err(a->node->g->ctx, LOOM_ERR_INVALID_ARG,
                             "%s (node '%s'): target %d at row %lld is outside [0, %lld) and is not ignore_index %d",
                             loom_op_name(a->node->op), a->node->name, (int)t, (long long)i, (long long)j->C,
                             (int)j->ignore);
        n++;
    }
    *count = n;
    return LOOM_OK;
}

static void ce_init(cejob *j, const loom__cpu_args *a) {
    const loom_tensor *logits = a->node->src[0];
    memset(j, 0, sizeof *j);
    j->N = logits->dims[0];
    j->C = logits->dims[1];
    j->x = a->x[0];
    j->t = a->x[1];
    j->ignore = (int32_t)a->node->p[LOOM_P_CE_IGNORE];
    j->eps = a->node->f[LOOM_F_CE_EPS];
}

/* logits (N, C), targets (N) i32 -> scalar */
loom_status loom__cpu_cross_entropy(const loom__cpu_args *a) {
    cejob j;
    ce_init(&j, a);
    int64_t count = 0;
    loom_status st = ce_check(a, &j, &count);
    if (st != LOOM_OK) return st;
    j.nblk = block_count(j.N, j.C);
    loom__cpu_parallel(a->cpu, j.nblk, 1,
                       a->dt == LOOM_F64 ? ce_double : loom__pick_isa(ce_f32, ce_f32_avx2, ce_f32_avx512), &j);
    double sum = 0;
    for (int64_t b = 0; b < j.nblk; b++) sum += j.part[b];
    double loss = count ? sum / (double)count : 0.0; /* all rows ignored: 0 (torch: NaN) */
    if (a->dt == LOOM_F64) *(double *)a->y = loss;
    else *(float *)a->y = (float)loss;
    return LOOM_OK;
}

/* logits (N, C), targets (N) i32, dloss () -> dlogits (N, C) */
loom_status loom__cpu_cross_entropy_grad(const loom__cpu_args *a) {
    cejob j;
    ce_init(&j, a);
    int64_t count = 0;
    loom_status st = ce_check(a, &j, &count);
    if (st != LOOM_OK) return st;
    double dloss = a->dt == LOOM_F64 ? *(const double *)a->x[2] : *(const float *)a->x[2];
    j.scale = count ? dloss / (double)count : 0.0;
    j.dx = a->y;
    int64_t grain = j.C >= (1 << 13) ? 1 : (1 << 13) / j.C;
    loom__cpu_parallel(a->cpu, j.N, grain,
                       a->dt == LOOM_F64 ? ce_grad_double : loom__pick_isa(ce_grad_f32, ce_grad_f32_avx2, ce_grad_f32_avx512),
                       &j);
    return LOOM_OK;
}

typedef struct msejob {
    int64_t n, nblk;
    const void *a, *b;
    double part[MAX_BLOCKS];
} msejob;

/* a, b flat (n): part[blk] = sum over the block of (a - b)^2 */
#define MSE_BLOCKS(T)                                                             \
    static void mse_##T(void *v, int64_t b0, int64_t b1) {                        \
        msejob *j = v;                                                            \
        const T *A = j->a, *B = j->b;                                             \
        for (int64_t b = b0; b < b1; b++) {                                       \
            double s = 0;                                                         \
            for (int64_t i = b * j->n / j->nblk; i < (b + 1) * j->n / j->nblk; i++) { \
                double d = (double)A[i] - (double)B[i];                           \
                s += d * d;                                                       \
            }                                                                     \
            j->part[b] = s;                                                       \
        }                                                                         \
    }
MSE_BLOCKS(float)
MSE_BLOCKS(double)

/* a, b (any shape, equal) -> scalar mean((a - b)^2) */
loom_status loom__cpu_mse(const loom__cpu_args *a) {
    msejob j;
    memset(&j, 0, sizeof j);
    j.n = loom_tensor_numel(a->node->src[0]);
    j.nblk = block_count(j.n, 1);
    j.a = a->x[0];
    j.b = a->x[1];
    loom__cpu_parallel(a->cpu, j.nblk, 1, a->dt == LOOM_F64 ? mse_double : mse_float, &j);
    double sum = 0;
    for (int64_t b = 0; b < j.nblk; b++) sum += j.part[b];
    double loss = sum / (double)j.n;
    if (a->dt == LOOM_F64) *(double *)a->y = loss;
    else *(float *)a->y = (float)loss;
    return LOOM_OK;
}

/* ---- reproducible mode (core/repro.h): cross-entropy, rows in order ---- */

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

/* m = the row's max, se = loom__csum(exp(x - m)) */
static void ce_row(const float *x, int64_t C, float *m, float *se) {
    float mx = x[0];
    for (int64_t c = 1; c < C; c++) mx = x[c] > mx ? x[c] : mx;
    loom__csum s = {0};
    for (int64_t c = 0; c < C; c++) loom__csum_add(&s, loom__repro_exp(x[c] - mx));
    *m = mx, *se = loom__csum_total(&s);
}

loom_status loom__cpu_cross_entropy_repro(const loom__cpu_args *a) {
    const loom_tensor *lg = a->node->src[0];
    int64_t N = lg->dims[0], C = lg->dims[1], count = 0;
    int32_t ignore = (int32_t)a->node->p[LOOM_P_CE_IGNORE];
    loom_status st = ce_targets(a, N, C, ignore, &count);
    if (st != LOOM_OK) return st;
    double eps = a->node->f[LOOM_F_CE_EPS];
    float a1 = (float)(1.0 - eps), a2 = (float)eps, Cf = (float)C;
    const float *X = a->x[0];
    const int32_t *T = a->x[1];
    loom__csum tot = {0};
    for (int64_t i = 0; i < N; i++) {
        if (T[i] == ignore) {
            loom__csum_add(&tot, 0.0f); /* every row is a term of the sum (0 when ignored), as on the GPUs */
            continue;
        }
        const float *x = X + i * C;
        float m, se;
        ce_row(x, C, &m, &se);
        loom__csum sx = {0};
        for (int64_t c = 0; c < C; c++) loom__csum_add(&sx, x[c]);
        float lse = m + loom__repro_log(se);
        float u = a1 * (x[T[i]] - lse), w = a2 * (loom__csum_total(&sx) / Cf - lse);
        loom__csum_add(&tot, -u - w);
    }
    *(float *)a->y = count ? loom__csum_total(&tot) / (float)count : 0.0f;
    return LOOM_OK;
}

typedef struct cegjob {
    int64_t C;
    int32_t ignore;
    float on, off, scale;
    const float *x;
    const int32_t *t;
    float *dx;
} cegjob;

static void ce_grad_rows(void *v, int64_t r0, int64_t r1) {
    const cegjob *j = v;
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

loom_status loom__cpu_cross_entropy_grad_repro(const loom__cpu_args *a) {
    const loom_tensor *lg = a->node->src[0];
    int64_t N = lg->dims[0], C = lg->dims[1], count = 0;
    int32_t ignore = (int32_t)a->node->p[LOOM_P_CE_IGNORE];
    loom_status st = ce_targets(a, N, C, ignore, &count);
    if (st != LOOM_OK) return st;
    double eps = a->node->f[LOOM_F_CE_EPS];
    cegjob j = {C, ignore, (float)(1.0 - eps + eps / (double)C), (float)(eps / (double)C), 0.0f, a->x[0],
                a->x[1], a->y};
    j.scale = count ? *(const float *)a->x[2] / (float)count : 0.0f;
    loom__cpu_parallel(a->cpu, N, 1 + 4096 / (C + 1), ce_grad_rows, &j);
    return LOOM_OK;
}
