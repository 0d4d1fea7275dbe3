/* backends/cpu/ops/attention.c — CPU kernels for attention, its gradient op
 * and causal_mask (core/ops/attention.c). Reference loops that are also the
 * fast path.
 *
 * attention: one work unit per (batch * head, block of QB query rows); keys
 * in blocks of KB: the scores of one block (at most QB x KB) are all that is
 * held, folded into the output rows by an online softmax (running max m and
 * sum l per row; when the max grows, the row and l are rescaled by
 * exp(m_old - m_new)). The output rows are the accumulators; the
 * log-sum-exp m + log(l) of each row goes to the lse source.
 * attention_grad recomputes the scores from q, k and lse: dq per block of
 * query rows, dk and dv per block of key rows, each unit writing its own rows
 * only, so no result depends on the thread count.
 *
 * Units are handed out in a zigzag over the blocks (first, last, second, ...)
 * so that each thread's contiguous share of a causal triangle has about the
 * same work. Compute dtype f32 (16-bit inputs arrive converted) or f64. */
#include <math.h>

#include "../cpu_impl.h"

#define QB 16 /* query rows (dq) or key rows (dk, dv) per work unit */
#define KB 64 /* keys per score block of the forward */

typedef struct ajob {
    int64_t BH, Tq, Tk, D, nb; /* nb: blocks per (batch, head) */
    bool causal;
    double scale;
    int which; /* attention_grad: LOOM_K_ATTN_* */
    const void *q, *k, *v, *o, *dy;
    void *lse, *y;
} ajob;

static void unit_of(const ajob *j, int64_t u, int64_t *bh, int64_t *blk) {
    int64_t r = u / j->BH;
    *bh = u % j->BH;
    *blk = (r & 1) ? j->nb - 1 - r / 2 : r / 2;
}

/* Keys row i sees among the n keys starting at j0 (may be <= 0). */
static int64_t keys_seen(const ajob *j, int64_t i, int64_t j0, int64_t n) {
    if (!j->causal) return n;
    return i + 1 - j0 < n ? i + 1 - j0 : n;
}

/* T: float or double; S: libm suffix. dot_T uses four partial sums so the
 * compiler can vectorise it. */
#define ATTN_KERNELS(T, S)                                                                                             \
    static T dot_##T(const T *a, const T *b, int64_t n) {                                                              \
        T s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                                                              \
        int64_t d = 0;                                                                                                 \
        for (; d + 4 <= n; d += 4) {                                                                                   \
            s0 += a[d] * b[d], s1 += a[d + 1] * b[d + 1];                                                              \
            s2 += a[d + 2] * b[d + 2], s3 += a[d + 3] * b[d + 3];                                                      \
        }                                                                                                              \
        for (; d < n; d++) s0 += a[d] * b[d];                                                                          \
        return (s0 + s1) + (s2 + s3);                                                                                  \
    }                                                                                                                  \
    static void axpy_##T(T *y, T a, const T *x, int64_t n) {                                                           \
        for (int64_t d = 0; d < n; d++) y[d] += a * x[d];                                                              \
    }                                                                                                                  \
    static void scal_##T(T *y, T a, int64_t n) {                                                                       \
        for (int64_t d = 0; d < n; d++) y[d] *= a;                                                                     \
    }                                                                                                                  \
    /* fold keys [j0, j0 + n) into query row i: q, y its rows; m, l its statistics */                                 \
    static void fwd_row_##T(const ajob *j, const T *q, const T *K, const T *V, int64_t i, int64_t j0, int64_t n, T *y, \
                            T *m, T *l) {                                                                              \
        const int64_t D = j->D;                                                                                        \
        const T scale = (T)j->scale;                                                                                   \
        T s[KB];                                                                                                       \
        T mx = *m;                                                                                                     \
        n = keys_seen(j, i, j0, n);                                                                                    \
        if (n <= 0) return;                                                                                            \
        for (int64_t c = 0; c < n; c++) {                                                                              \
            s[c] = dot_##T(q, K + (j0 + c) * D, D) * scale;                                                            \
            mx = s[c] > mx ? s[c] : mx;                                                                                \
        }                                                                                                              \
        T sum = 0;                                                                                                     \
        for (int64_t c = 0; c < n; c++) sum += s[c] = exp##S(s[c] - mx);                                              \
        if (mx != *m) {                                                                                                \
            T corr = exp##S(*m - mx);                                                                                  \
            *l *= corr;                                                                                                \
            scal_##T(y, corr, D);                                                                                      \
        }                                                                                                              \
        *l += sum, *m = mx;                                                                                            \
        for (int64_t c = 0; c < n; c++) axpy_##T(y, s[c], V + (j0 + c) * D, D);                                        \
    }                                                                                                                  \
    static void fwd_##T(void *arg, int64_t u0, int64_t u1) {                                                           \
        const ajob *j = arg;                                                                                           \
        const int64_t D = j->D, Tq = j->Tq, Tk = j->Tk;                                                                \
        T m[QB], l[QB];                                                                                                \
        for (int64_t u = u0; u < u1; u++) {                                                                            \
            int64_t bh, qb;                                                                                            \
            unit_of(j, u, &bh, &qb);                                                                                   \
            int64_t i0 = qb * QB, ni = Tq - i0 < QB ? Tq - i0 : QB;                                                    \
            const T *q = (const T *)j->q + (bh * Tq + i0) * D;                                                         \
            const T *K = (const T *)j->k + bh * Tk * D, *V = (const T *)j->v + bh * Tk * D;                            \
            T *y = (T *)j->y + (bh * Tq + i0) * D, *lse = (T *)j->lse + bh * Tq + i0;                                  \
            for (int64_t r = 0; r < ni; r++) m[r] = -INFINITY, l[r] = 0;                                               \
            memset(y, 0, (size_t)(ni * D) * sizeof(T));                                                                \
            int64_t kend = j->causal && i0 + ni < Tk ? i0 + ni : Tk;                                                   \
            for (int64_t j0 = 0; j0 < kend; j0 += KB)                                                                  \
                for (int64_t r = 0; r < ni; r++)                                                                       \
                    fwd_row_##T(j, q + r * D, K, V, i0 + r, j0, kend - j0 < KB ? kend - j0 : KB, y + r * D, &m[r],     \
                                &l[r]);                                                                                \
            for (int64_t r = 0; r < ni; r++) {                                                                         \
                scal_##T(y + r * D, (T)1 / l[r], D);                                                                   \
                lse[r] = m[r] + log##S(l[r]);                                                                          \
            }                                                                                                          \
        }                                                                                                              \
    }                                                                                                                  \
    /* dq: rows of one query block */                                                                                  \
    static void grad_q_##T(const ajob *j, int64_t bh, int64_t blk) {                                                   \
        const int64_t D = j->D, Tq = j->Tq, Tk = j->Tk;                                                                \
        const T scale = (T)j->scale;                                                                                   \
        const T *K = (const T *)j->k + bh * Tk * D, *V = (const T *)j->v + bh * Tk * D;                                \
        int64_t i0 = blk * QB, i1 = Tq - i0 < QB ? Tq : i0 + QB;                                                       \
        for (int64_t i = i0; i < i1; i++) {                                                                            \
            int64_t row = bh * Tq + i;                                                                                 \
            const T *q = (const T *)j->q + row * D, *dy = (const T *)j->dy + row * D;                                  \
            T *dq = (T *)j->y + row * D, lse = ((const T *)j->lse)[row];                                               \
            T delta = dot_##T(dy, (const T *)j->o + row * D, D);                                                       \
            memset(dq, 0, (size_t)D * sizeof(T));                                                                      \
            int64_t n = keys_seen(j, i, 0, Tk);                                                                        \
            for (int64_t c = 0; c < n; c++) {                                                                          \
                T p = exp##S(dot_##T(q, K + c * D, D) * scale - lse);                                                  \
                T ds = p * (dot_##T(dy, V + c * D, D) - delta);                                                        \
                axpy_##T(dq, ds, K + c * D, D);                                                                        \
            }                                                                                                          \
            scal_##T(dq, scale, D);                                                                                    \
        }                                                                                                              \
    }                                                                                                                  \
    /* dk or dv: rows of one key block */                                                                              \
    static void grad_kv_##T(const ajob *j, int64_t bh, int64_t blk) {                                                  \
        const int64_t D = j->D, Tq = j->Tq, Tk = j->Tk;                                                                \
        const T scale = (T)j->scale;                                                                                   \
        const bool dk = j->which == LOOM_K_ATTN_DK;                                                                    \
        int64_t j0 = blk * QB, nj = Tk - j0 < QB ? Tk - j0 : QB;                                                       \
        const T *K = (const T *)j->k + (bh * Tk + j0) * D, *V = (const T *)j->v + (bh * Tk + j0) * D;                  \
        T *out = (T *)j->y + (bh * Tk + j0) * D;                                                                       \
        memset(out, 0, (size_t)(nj * D) * sizeof(T));                                                                  \
        for (int64_t i = j->causal ? j0 : 0; i < Tq; i++) {                                                            \
            int64_t row = bh * Tq + i;                                                                                 \
            const T *q = (const T *)j->q + row * D, *dy = (const T *)j->dy + row * D;                                  \
            T lse = ((const T *)j->lse)[row];                                                                          \
            T delta = dk ? dot_##T(dy, (const T *)j->o + row * D, D) : 0;                                              \
            int64_t n = keys_seen(j, i, j0, nj);                                                                       \
            for (int64_t c = 0; c < n; c++) {                                                                          \
                T p = exp##S(dot_##T(q, K + c * D, D) * scale - lse);                                                  \
                if (dk)                                                                                                \
                    axpy_##T(out + c * D, p * (dot_##T(dy, V + c * D, D) - delta), q, D);                              \
                else                                                                                                   \
                    axpy_##T(out + c * D, p, dy, D);                                                                   \
            }                                                                                                          \
        }                                                                                                              \
        if (dk)                                                                                                        \
            for (int64_t c = 0; c < nj; c++) scal_##T(out + c * D, scale, D);                                         \
    }                                                                                                                  \
    static void grad_##T(void *arg, int64_t u0, int64_t u1) {                                                          \
        const ajob *j = arg;                                                                                           \
        for (int64_t u = u0; u < u1; u++) {                                                                            \
            int64_t bh, blk;                                                                                           \
            unit_of(j, u, &bh, &blk);                                                                                  \
            if (j->which == LOOM_K_ATTN_DQ)                                                                            \
                grad_q_##T(j, bh, blk);                                                                                \
            else                                                                                                       \
                grad_kv_##T(j, bh, blk);                                                                               \
        }                                                                                                              \
    }
ATTN_KERNELS(float, f)
ATTN_KERNELS(double, )

/* The job of node t (attention or attention_grad): sources q, k, v[, y, dy], lse. */
static ajob job_of(const loom__cpu_args *a, bool grad) {
    const loom_tensor *t = a->node, *q = t->src[0], *k = t->src[1];
    ajob j = {
        .BH = q->dims[0] * q->dims[1],
        .Tq = q->dims[2],
        .Tk = k->dims[2],
        .D = q->dims[3],
        .causal = t->p[LOOM_P_ATTN_CAUSAL] != 0,
        .scale = t->f[LOOM_F_ATTN_SCALE],
        .which = (int)t->p[LOOM_P_ATTN_WHICH],
        .q = a->x[0],
        .k = a->x[1],
        .v = a->x[2],
        .o = grad ? a->x[3] : NULL,
        .dy = grad ? a->x[4] : NULL,
        .lse = grad ? a->x[5] : a->x[3],
        .y = a->y,
    };
    int64_t rows = grad && j.which != LOOM_K_ATTN_DQ ? j.Tk : j.Tq;
    j.nb = (rows + QB - 1) / QB;
    return j;
}

loom_status loom__cpu_attention(const loom__cpu_args *a) {
    ajob j = job_of(a, false);
    LOOM__ASSERT(a->xdt[3] == a->dt); /* the lse: f32 for f32 and 16-bit inputs, f64 for f64 */
    loom__cpu_parallel(a->cpu, j.BH * j.nb, 1, a->dt == LOOM_F64 ? fwd_double : fwd_float, &j);
    return LOOM_OK;
}

loom_status loom__cpu_attention_grad(const loom__cpu_args *a) {
    ajob j = job_of(a, true);
    LOOM__ASSERT(a->xdt[5] == a->dt);
    loom__cpu_parallel(a->cpu, j.BH * j.nb, 1, a->dt == LOOM_F64 ? grad_double : grad_float, &j);
    return LOOM_OK;
}

/* ---- causal_mask: x viewed as (R, Tq, Tk) ---- */
typedef struct mjob {
    int64_t Tq, Tk;
    double value;
    const void *x;
    void *y;
} mjob;

#define MASK_ROWS(T)                                                                                                   \
    static void mask_##T(void *arg, int64_t r0, int64_t r1) {                                                          \
        const mjob *j = arg;                                                                                           \
        const T value = (T)j->value;                                                                                   \
        for (int64_t r = r0; r < r1; r++) {                                                                            \
            const T *x = (const T *)j->x + r * j->Tk;                                                                  \
            T *y = (T *)j->y + r * j->Tk;                                                                              \
            int64_t i = r % j->Tq;                                                                                     \
            for (int64_t c = 0; c < j->Tk; c++) y[c] = c > i ? value : x[c];                                           \
        }                                                                                                              \
    }
MASK_ROWS(float)
MASK_ROWS(double)

loom_status loom__cpu_causal_mask(const loom__cpu_args *a) {
    const loom_tensor *t = a->node;
    mjob j = {t->dims[t->ndim - 2], t->dims[t->ndim - 1], t->f[LOOM_F_CAUSAL_VALUE], a->x[0], a->y};
    int64_t R = j.Tk ? loom_tensor_numel(t) / j.Tk : 0;
    int64_t grain = j.Tk >= (1 << 13) ? 1 : (1 << 13) / (j.Tk ? j.Tk : 1);
    loom__cpu_parallel(a->cpu, R, grain, a->dt == LOOM_F64 ? mask_double : mask_float, &j);
    return LOOM_OK;
}
