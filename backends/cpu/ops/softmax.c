/* backends/cpu/ops/softmax.c — CPU kernels for softmax, log_softmax and their
 * gradient ops, over the last axis. Reference loops that are also the fast
 * path: rows split across the thread pool; row sums accumulate in double for
 * both dtypes; F32 uses expf/logf. */
#include <math.h>

#include "../cpu_impl.h"

typedef struct smjob {
    int kind;
    int64_t C;      /* last-axis length */
    const void *x;  /* forward: x; gradient ops: the forward output y */
    const void *dy; /* gradient ops only */
    void *y;
} smjob;

/* x, y, dy viewed as (R, C), R = numel / C; rows [r0, r1). S is the libm
 * suffix (f or empty). */
#define SOFTMAX_ROWS(T, S)                                                                                             \
    static void rows_##T(void *v, int64_t r0, int64_t r1) {                                                            \
        const smjob *j = v;                                                                                            \
        const int64_t C = j->C;                                                                                        \
        for (int64_t r = r0; r < r1; r++) {                                                                            \
            const T *x = (const T *)j->x + r * C;                                                                      \
            const T *dy = j->dy ? (const T *)j->dy + r * C : NULL;                                                     \
            T *y = (T *)j->y + r * C;                                                                                  \
            switch (j->kind) {                                                                                         \
            case LOOM_K_SOFTMAX: { /* y = exp(x - max) / sum exp(x - max) */                                           \
                T m = x[0];                                                                                            \
                for (int64_t c = 1; c < C; c++) m = x[c] > m ? x[c] : m;                                               \
                double s = 0;                                                                                          \
                for (int64_t c = 0; c < C; c++) {                                                                      \
                    T e = exp##S(x[c] - m);                                                                            \
                    y[c] = e;                                                                                          \
                    s += e;                                                                                            \
                }                                                                                                      \
                T inv = (T)(1.0 / s);                                                                                  \
                for (int64_t c = 0; c < C; c++) y[c] *= inv;                                                           \
                break;                                                                                                 \
            }                                                                                                          \
            case LOOM_K_LOG_SOFTMAX: { /* y = x - max - log sum exp(x - max) */                                        \
                T m = x[0];                                                                                            \
                for (int64_t c = 1; c < C; c++) m = x[c] > m ? x[c] : m;                                               \
                double s = 0;                                                                                          \
                for (int64_t c = 0; c < C; c++) s += exp##S(x[c] - m);                                                 \
                T lse = m + (T)log(s);                                                                                 \
                for (int64_t c = 0; c < C; c++) y[c] = x[c] - lse;                                                     \
                break;                                                                                                 \
            }                                                                                                          \
            case LOOM_K_SOFTMAX_GRAD: { /* dx = y (dy - sum(dy y)) */                                                  \
                double s = 0;                                                                                          \
                for (int64_t c = 0; c < C; c++) s += (double)dy[c] * x[c];                                             \
                T dot = (T)s;                                                                                          \
                for (int64_t c = 0; c < C; c++) y[c] = x[c] * (dy[c] - dot);                                           \
                break;                                                                                                 \
            }                                                                                                          \
            case LOOM_K_LOG_SOFTMAX_GRAD: { /* dx = dy - exp(y) sum(dy) */                                             \
                double s = 0;                                                                                          \
                for (int64_t c = 0; c < C; c++) s += dy[c];                                                            \
                T sum = (T)s;                                                                                          \
                for (int64_t c = 0; c < C; c++) y[c] = dy[c] - exp##S(x[c]) * sum;                                     \
                break;                                                                                                 \
            }                                                                                                          \
            }                                                                                                          \
        }                                                                                                              \
    }
SOFTMAX_ROWS(float, f)
SOFTMAX_ROWS(double, )

static loom_status run(const loom__cpu_args *a, int kind) {
    const loom_tensor *t = a->node;
    int64_t C = t->dims[t->ndim - 1], R = loom_tensor_numel(t) / C;
    smjob j = {kind, C, a->x[0], kind >= LOOM_K_SOFTMAX_GRAD ? a->x[1] : NULL, a->y};
    int64_t grain = C >= (1 << 13) ? 1 : (1 << 13) / C;
    loom__cpu_parallel(a->cpu, R, grain, a->dt == LOOM_F64 ? rows_double : rows_float, &j);
    return LOOM_OK;
}

loom_status loom__cpu_softmax(const loom__cpu_args *a) { return run(a, LOOM_K_SOFTMAX); }
loom_status loom__cpu_log_softmax(const loom__cpu_args *a) { return run(a, LOOM_K_LOG_SOFTMAX); }
loom_status loom__cpu_softmax_grad(const loom__cpu_args *a) { return run(a, LOOM_K_SOFTMAX_GRAD); }
loom_status loom__cpu_log_softmax_grad(const loom__cpu_args *a) { return run(a, LOOM_K_LOG_SOFTMAX_GRAD); }
