/* backends/cpu/ops/attention.c — CPU kernels for attention, its gradient op
 * and causal_mask (core/ops/attention.c): reference loops (f64) and a fast
 * path (f32, marked below) with the same structure.
 *
 * attention: one work unit per (batch * head, block of query rows); keys in
 * blocks: the scores of one block (at most QB x KB, or FB x FB in f32) are
 * all that is held, folded into the output rows by an online softmax (running max m and
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
#include "../fuse.h"
#include "../vmath.h"

#define QB 16 /* reference loops: query rows (dq) or key rows (dk, dv) per work unit */
#define KB 64 /* reference loops: keys per score block of the forward */
#define FB 128 /* f32 fast path: rows per work unit and keys per score block */

typedef struct ajob {
    int64_t BH, Tq, Tk, D, nb; /* nb: blocks per (batch, head) */
    bool causal;
    double scale;
    int which; /* attention_grad: LOOM_K_ATTN_* */
    const void *q, *k, *v, *o, *dy;
    void *lse, *y;
    void *dk, *dv; /* the fused gradient (grad_all_fast): y is dq */
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

/* T: float or double. dot_T uses four partial sums so the compiler can
 * vectorise it. */
#define ATTN_VEC(T)                                                                                                    \
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
    static void scal_##T(T *y, T a, int64_t n) {                                                                       \
        for (int64_t d = 0; d < n; d++) y[d] *= a;                                                                     \
    }
ATTN_VEC(float)
ATTN_VEC(double)

/* The reference loops (f64): T the type, S the libm suffix. */
#define ATTN_KERNELS(T, S)                                                                                             \
    static void axpy_##T(T *y, T a, const T *x, int64_t n) {                                                           \
        for (int64_t d = 0; d < n; d++) y[d] += a * x[d];                                                              \
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
ATTN_KERNELS(double, )

/* ---- f32: the fast path. The same units with FB x FB score blocks, and
 * the block products (scores, p v, and the gradient's) as GEMMs
 * (loom__cpu_sgemm, single-threaded inside a unit; the sizes of every call
 * depend only on the shapes, so neither does any result on the thread
 * count). A masked score (key j0 + c > query i0 + r, causal) is never
 * read: its p and ds are written as 0 (row_seen), and the products of a
 * block the diagonal crosses skip the tiles it masks whole (gemm_by_rows,
 * gemm_keys). The exponentials are vmath.h's
 * loom__vexpf, a vectorised loop per block row. ---- */

/* The max of x[0..n) and m, and the sum of x[0..n): LANES partial results
 * combined in a fixed order, so the loops vectorise at any width and give
 * the same bits on every ISA (a single running max or sum is a chain of
 * dependent scalar operations). The max is exact in any order; NaNs are
 * skipped as by one running comparison. */
#define LANES 16
LOOM__VMATH float lanes_max(const float *x, int64_t n, float m) {
    float p[LANES];
    for (int l = 0; l < LANES; l++) p[l] = m;
    int64_t c = 0;
    for (; c + LANES <= n; c += LANES)
        for (int l = 0; l < LANES; l++) p[l] = x[c + l] > p[l] ? x[c + l] : p[l];
    for (; c < n; c++) m = x[c] > m ? x[c] : m;
    for (int l = 0; l < LANES; l++) m = p[l] > m ? p[l] : m;
    return m;
}
LOOM__VMATH float lanes_sum(const float *x, int64_t n) {
    float p[LANES] = {0};
    int64_t c = 0;
    for (; c + LANES <= n; c += LANES)
        for (int l = 0; l < LANES; l++) p[l] += x[c + l];
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int l = 0; l < w; l++) p[l] += p[l + w];
    for (; c < n; c++) p[0] += x[c];
    return p[0];
}

/* The keys of a block's row r that are not masked: the scores past them
 * are neither read nor exponentiated, their p is written as 0 (half of a
 * causal block). */
LOOM__VMATH int64_t row_seen(const ajob *j, int64_t i0, int64_t r, int64_t j0, int64_t nj) {
    int64_t n = keys_seen(j, i0 + r, j0, nj);
    return n < 0 ? 0 : n;
}

/* A causal block's products only over the scores some row sees: by panels
 * of PB query rows (each up to the keys its last row sees) or PB keys (each
 * from the first row that sees its first key); about 5/8 of a diagonal
 * 128 x 128 block's work. The terms left out are masked (p and ds 0); the
 * smaller calls may round in another order than one whole call (last bits),
 * still a function of the shapes only. A block every row sees whole is one
 * call. */
enum { PB = 32 };

LOOM__VMATH bool block_whole(const ajob *j, int64_t i0, int64_t j0, int64_t nj) {
    return row_seen(j, i0, 0, j0, nj) == nj;
}

/* By panels of query rows, of the block of rows i0.. (ni) and keys j0.. (nj):
 * scores, s (ni, nj; row stride FB) = alpha a (ni, D) b (nj, D)^T where
 * seen; or rows, out (ni, D) += a (ni, nj; row stride FB) b (nj, D) */
LOOM__VMATH void gemm_by_rows(const ajob *j, bool scores, int64_t i0, int64_t ni, int64_t j0, int64_t nj, float alpha,
                              const float *a, const float *b, float *out) {
    const int64_t D = j->D, lda = scores ? D : FB, ldo = scores ? FB : D;
    const int64_t step = block_whole(j, i0, j0, nj) ? ni : PB;
    for (int64_t r0 = 0; r0 < ni; r0 += step) {
        int64_t n = ni - r0 < step ? ni - r0 : step, c = row_seen(j, i0, r0 + n - 1, j0, nj);
        if (c > 0 && scores)
            loom__cpu_sgemm(NULL, false, true, n, c, D, alpha, a + r0 * lda, lda, b, D, 0.0f, out + r0 * ldo, ldo);
        else if (c > 0)
            loom__cpu_sgemm(NULL, false, false, n, D, c, 1.0f, a + r0 * lda, lda, b, D, 1.0f, out + r0 * ldo, ldo);
    }
}

/* out (nj, D) += p (ni, nj; row stride FB)^T a (ni, D), by panels of keys */
LOOM__VMATH void gemm_keys(const ajob *j, int64_t i0, int64_t ni, int64_t j0, int64_t nj, const float *p, const float *a,
                           float *out) {
    const bool whole = block_whole(j, i0, j0, nj);
    const int64_t D = j->D, step = whole ? nj : PB;
    for (int64_t c0 = 0; c0 < nj; c0 += step) {
        int64_t n = nj - c0 < step ? nj - c0 : step, r = !whole && j0 + c0 > i0 ? j0 + c0 - i0 : 0; /* rows before r see none */
        if (r < ni)
            loom__cpu_sgemm(NULL, true, false, n, D, ni - r, 1.0f, p + r * FB + c0, FB, a + r * D, D, 1.0f, out + c0 * D, D);
    }
}

/* Fold the (ni, nj) score block s of query rows i0.. and keys j0.. into the
 * rows' statistics m, l and the output rows y (ni, D); s becomes the block's
 * unnormalised p. */
LOOM__VMATH void fold_block(const ajob *j, float *s, int64_t i0, int64_t ni, int64_t j0, int64_t nj, float *m,
                            float *l, float *y, int64_t D) {
    for (int64_t r = 0; r < ni; r++) {
        int64_t nv = row_seen(j, i0, r, j0, nj);
        float *sr = s + r * FB, mx = lanes_max(sr, nv, m[r]);
        if (mx == -INFINITY) { /* the row sees none of these keys */
            memset(sr, 0, (size_t)nj * sizeof(float));
            continue;
        }
        for (int64_t c = 0; c < nv; c++) sr[c] = loom__vexpf(sr[c] - mx);
        for (int64_t c = nv; c < nj; c++) sr[c] = 0.0f;
        float sum = lanes_sum(sr, nj);
        if (mx != m[r]) {
            float corr = loom__vexpf(m[r] - mx);
            l[r] *= corr;
            scal_float(y + r * D, corr, D);
        }
        l[r] += sum, m[r] = mx;
    }
}

LOOM__VMATH void fwd_body(void *arg, int64_t u0, int64_t u1) {
    const ajob *j = arg;
    const int64_t D = j->D, Tq = j->Tq, Tk = j->Tk;
    float s[FB * FB], m[FB], l[FB];
    for (int64_t u = u0; u < u1; u++) {
        int64_t bh, qb;
        unit_of(j, u, &bh, &qb);
        int64_t i0 = qb * FB, ni = Tq - i0 < FB ? Tq - i0 : FB;
        const float *q = (const float *)j->q + (bh * Tq + i0) * D;
        const float *K = (const float *)j->k + bh * Tk * D, *V = (const float *)j->v + bh * Tk * D;
        float *y = (float *)j->y + (bh * Tq + i0) * D, *lse = (float *)j->lse + bh * Tq + i0;
        for (int64_t r = 0; r < ni; r++) m[r] = -INFINITY, l[r] = 0;
        memset(y, 0, (size_t)(ni * D) * sizeof(float));
        int64_t kend = j->causal && i0 + ni < Tk ? i0 + ni : Tk;
        for (int64_t j0 = 0; j0 < kend; j0 += FB) {
            int64_t nj = kend - j0 < FB ? kend - j0 : FB;
            gemm_by_rows(j, true, i0, ni, j0, nj, (float)j->scale, q, K + j0 * D, s);
            fold_block(j, s, i0, ni, j0, nj, m, l, y, D);
            gemm_by_rows(j, false, i0, ni, j0, nj, 1.0f, s, V + j0 * D, y);
        }
        for (int64_t r = 0; r < ni; r++) {
            scal_float(y + r * D, 1.0f / l[r], D);
            lse[r] = m[r] + logf(l[r]);
        }
    }
}

/* p = exp(s - lse) over the (ni, nj) score block s of query rows i0.. and
 * keys j0.. (p may be s; masked scores: 0, row_seen) */
LOOM__VMATH void p_block(const ajob *j, const float *s, float *p, int64_t i0, int64_t ni, int64_t j0, int64_t nj,
                         const float *lse) {
    for (int64_t r = 0; r < ni; r++) {
        int64_t nv = row_seen(j, i0, r, j0, nj);
        for (int64_t c = 0; c < nv; c++) p[r * FB + c] = loom__vexpf(s[r * FB + c] - lse[r]);
        for (int64_t c = nv; c < nj; c++) p[r * FB + c] = 0.0f;
    }
}

/* ds = p (dp - delta) over the (ni, nj) block of query rows i0.. and keys
 * j0.. (ds may be p; masked: 0, and dp there is not read) */
LOOM__VMATH void ds_of_p(const ajob *j, const float *p, const float *dp, float *ds, int64_t i0, int64_t ni, int64_t j0,
                         int64_t nj, const float *delta) {
    for (int64_t r = 0; r < ni; r++) {
        int64_t nv = row_seen(j, i0, r, j0, nj);
        for (int64_t c = 0; c < nv; c++) ds[r * FB + c] = p[r * FB + c] * (dp[r * FB + c] - delta[r]);
        for (int64_t c = nv; c < nj; c++) ds[r * FB + c] = 0.0f;
    }
}

/* s (ni, nj) scores -> ds = p (dp - delta) with p = exp(s - lse), in place */
LOOM__VMATH void ds_block(const ajob *j, float *s, const float *dp, int64_t i0, int64_t ni, int64_t j0, int64_t nj,
                          const float *lse, const float *delta) {
    p_block(j, s, s, i0, ni, j0, nj, lse);
    ds_of_p(j, s, dp, s, i0, ni, j0, nj, delta);
}

/* dq of the query rows of block blk */
LOOM__VMATH void grad_q_fast(const ajob *j, int64_t bh, int64_t blk, float *s, float *dp) {
    const int64_t D = j->D, Tq = j->Tq, Tk = j->Tk;
    int64_t i0 = blk * FB, ni = Tq - i0 < FB ? Tq - i0 : FB, row = bh * Tq + i0;
    const float *q = (const float *)j->q + row * D, *dy = (const float *)j->dy + row * D;
    const float *o = (const float *)j->o + row * D, *lse = (const float *)j->lse + row;
    const float *K = (const float *)j->k + bh * Tk * D, *V = (const float *)j->v + bh * Tk * D;
    float *dq = (float *)j->y + row * D, delta[FB];
    for (int64_t r = 0; r < ni; r++) delta[r] = dot_float(dy + r * D, o + r * D, D);
    memset(dq, 0, (size_t)(ni * D) * sizeof(float));
    int64_t kend = j->causal && i0 + ni < Tk ? i0 + ni : Tk;
    for (int64_t j0 = 0; j0 < kend; j0 += FB) {
        int64_t nj = kend - j0 < FB ? kend - j0 : FB;
        gemm_by_rows(j, true, i0, ni, j0, nj, (float)j->scale, q, K + j0 * D, s);
        gemm_by_rows(j, true, i0, ni, j0, nj, 1.0f, dy, V + j0 * D, dp);
        ds_block(j, s, dp, i0, ni, j0, nj, lse, delta);
        gemm_by_rows(j, false, i0, ni, j0, nj, 1.0f, s, K + j0 * D, dq);
    }
    scal_float(dq, (float)j->scale, ni * D);
}

/* dk or dv of the key rows of block blk */
LOOM__VMATH void grad_kv_fast(const ajob *j, int64_t bh, int64_t blk, float *s, float *dp) {
    const int64_t D = j->D, Tq = j->Tq, Tk = j->Tk;
    const bool dk = j->which == LOOM_K_ATTN_DK;
    int64_t j0 = blk * FB, nj = Tk - j0 < FB ? Tk - j0 : FB;
    const float *K = (const float *)j->k + (bh * Tk + j0) * D, *V = (const float *)j->v + (bh * Tk + j0) * D;
    float *out = (float *)j->y + (bh * Tk + j0) * D, delta[FB];
    memset(out, 0, (size_t)(nj * D) * sizeof(float));
    for (int64_t i0 = j->causal ? j0 : 0; i0 < Tq; i0 += FB) { /* the query rows that see these keys */
        int64_t ni = Tq - i0 < FB ? Tq - i0 : FB, row = bh * Tq + i0;
        const float *q = (const float *)j->q + row * D, *dy = (const float *)j->dy + row * D;
        const float *o = (const float *)j->o + row * D, *lse = (const float *)j->lse + row;
        gemm_by_rows(j, true, i0, ni, j0, nj, (float)j->scale, q, K, s);
        if (!dk) { /* dv += p^T dy */
            p_block(j, s, s, i0, ni, j0, nj, lse);
            gemm_keys(j, i0, ni, j0, nj, s, dy, out);
            continue;
        }
        for (int64_t r = 0; r < ni; r++) delta[r] = dot_float(dy + r * D, o + r * D, D);
        gemm_by_rows(j, true, i0, ni, j0, nj, 1.0f, dy, V, dp);
        ds_block(j, s, dp, i0, ni, j0, nj, lse, delta);
        gemm_keys(j, i0, ni, j0, nj, s, q, out); /* dk += ds^T q */
    }
    if (dk) scal_float(out, (float)j->scale, nj * D);
}

/* dq, dk and dv of (batch, head) bh at once (the fused group of the three
 * attention_grad nodes, backends/cpu/fuse.h): each score block's p and ds
 * made once feed all three, with the calls, operands and accumulation order
 * of grad_q_fast and grad_kv_fast, so every output has their bits. Five
 * block GEMMs and one exponential per score instead of eight and three. */
LOOM__VMATH void grad_all_fast(const ajob *j, int64_t bh, float *s, float *dp, float *pb) {
    const int64_t D = j->D, Tq = j->Tq, Tk = j->Tk;
    const float *K = (const float *)j->k + bh * Tk * D, *V = (const float *)j->v + bh * Tk * D;
    float *dq = (float *)j->y + bh * Tq * D, *dk = (float *)j->dk + bh * Tk * D, *dv = (float *)j->dv + bh * Tk * D;
    float delta[FB];
    memset(dq, 0, (size_t)(Tq * D) * sizeof(float));
    memset(dk, 0, (size_t)(Tk * D) * sizeof(float));
    memset(dv, 0, (size_t)(Tk * D) * sizeof(float));
    for (int64_t i0 = 0; i0 < Tq; i0 += FB) {
        int64_t ni = Tq - i0 < FB ? Tq - i0 : FB, row = bh * Tq + i0;
        const float *q = (const float *)j->q + row * D, *dy = (const float *)j->dy + row * D;
        const float *o = (const float *)j->o + row * D, *lse = (const float *)j->lse + row;
        for (int64_t r = 0; r < ni; r++) delta[r] = dot_float(dy + r * D, o + r * D, D);
        int64_t kend = j->causal && i0 + ni < Tk ? i0 + ni : Tk;
        for (int64_t j0 = 0; j0 < kend; j0 += FB) {
            int64_t nj = kend - j0 < FB ? kend - j0 : FB;
            gemm_by_rows(j, true, i0, ni, j0, nj, (float)j->scale, q, K + j0 * D, s);
            p_block(j, s, pb, i0, ni, j0, nj, lse);
            gemm_keys(j, i0, ni, j0, nj, pb, dy, dv + j0 * D); /* dv += p^T dy */
            gemm_by_rows(j, true, i0, ni, j0, nj, 1.0f, dy, V + j0 * D, dp);
            ds_of_p(j, pb, dp, s, i0, ni, j0, nj, delta);
            gemm_by_rows(j, false, i0, ni, j0, nj, 1.0f, s, K + j0 * D, dq + i0 * D);
            gemm_keys(j, i0, ni, j0, nj, s, q, dk + j0 * D);
        }
    }
    scal_float(dq, (float)j->scale, Tq * D);
    scal_float(dk, (float)j->scale, Tk * D);
}

LOOM__VMATH void grad_all_body(void *arg, int64_t u0, int64_t u1) {
    const ajob *j = arg;
    float s[FB * FB], dp[FB * FB], pb[FB * FB];
    for (int64_t u = u0; u < u1; u++) grad_all_fast(j, u, s, dp, pb);
}

LOOM__VMATH void grad_body(void *arg, int64_t u0, int64_t u1) {
    const ajob *j = arg;
    float s[FB * FB], dp[FB * FB];
    for (int64_t u = u0; u < u1; u++) {
        int64_t bh, blk;
        unit_of(j, u, &bh, &blk);
        if (j->which == LOOM_K_ATTN_DQ)
            grad_q_fast(j, bh, blk, s, dp);
        else
            grad_kv_fast(j, bh, blk, s, dp);
    }
}

/* the fast path compiled for the baseline, AVX2 and AVX-512 (the same bits:
 * vmath.h), picked at run time */
static void fwd_fast(void *arg, int64_t u0, int64_t u1) { fwd_body(arg, u0, u1); }
LOOM__TARGET("avx2") static void fwd_avx2(void *arg, int64_t u0, int64_t u1) { fwd_body(arg, u0, u1); }
LOOM__TARGET("avx512f") static void fwd_avx512(void *arg, int64_t u0, int64_t u1) { fwd_body(arg, u0, u1); }
static void grad_fast(void *arg, int64_t u0, int64_t u1) { grad_body(arg, u0, u1); }
static void grad_all(void *arg, int64_t u0, int64_t u1) { grad_all_body(arg, u0, u1); }
LOOM__TARGET("avx2") static void grad_all_avx2(void *arg, int64_t u0, int64_t u1) { grad_all_body(arg, u0, u1); }
LOOM__TARGET("avx512f") static void grad_all_avx512(void *arg, int64_t u0, int64_t u1) {
    grad_all_body(arg, u0, u1);
}
LOOM__TARGET("avx2") static void grad_avx2(void *arg, int64_t u0, int64_t u1) { grad_body(arg, u0, u1); }
LOOM__TARGET("avx512f") static void grad_avx512(void *arg, int64_t u0, int64_t u1) { grad_body(arg, u0, u1); }

/* The job of node t (attention or attention_grad): sources q, k, v[, y, dy],
 * lse; units of `block` rows. */
static ajob job_of(const loom__cpu_args *a, bool grad, int64_t block) {
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
    j.nb = (rows + block - 1) / block;
    return j;
}

loom_status loom__cpu_attention(const loom__cpu_args *a) {
    bool f64 = a->dt == LOOM_F64;
    ajob j = job_of(a, false, f64 ? QB : FB);
    LOOM__ASSERT(a->xdt[3] == a->dt); /* the lse: f32 for f32 and 16-bit inputs, f64 for f64 */
    loom__cpu_parallel(a->cpu, j.BH * j.nb, 1, f64 ? fwd_double : loom__pick_isa(fwd_fast, fwd_avx2, fwd_avx512), &j);
    return LOOM_OK;
}

loom_status loom__cpu_attention_grad(const loom__cpu_args *a) {
    bool f64 = a->dt == LOOM_F64;
    ajob j = job_of(a, true, f64 ? QB : FB);
    LOOM__ASSERT(a->xdt[5] == a->dt);
    loom__cpu_parallel(a->cpu, j.BH * j.nb, 1, f64 ? grad_double : loom__pick_isa(grad_fast, grad_avx2, grad_avx512), &j);
    return LOOM_OK;
}

/* The fused group of the three gradients (a: the dq, dk and dv nodes'
 * arguments): f32 only (core/fuse.c forms groups of f32 nodes). */
loom_status loom__cpu_attention_grad_fused(loom__cpu *cpu, const loom__cpu_args a[3]) {
    ajob j = job_of(&a[0], true, FB);
    if (j.BH < 2 * (int64_t)cpu->threads) { /* too few units to share: node by node (the same bits) */
        for (int r = 0; r < 3; r++) {
            loom_status st = loom__cpu_attention_grad(&a[r]);
            if (st != LOOM_OK) return st;
        }
        return LOOM_OK;
    }
    j.y = a[0].y, j.dk = a[1].y, j.dv = a[2].y;
    loom__cpu_parallel(cpu, j.BH, 1, loom__pick_isa(grad_all, grad_all_avx2, grad_all_avx512), &j);
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
