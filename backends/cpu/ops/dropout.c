/* backends/cpu/ops/dropout.c — CPU kernel for inverted dropout. Reference
 * loop, also the fast path: one Philox call serves a block of 4 elements and
 * blocks are split across the thread pool; each element's mask depends only
 * on (seed, stream, step, i), so the result does not depend on the thread
 * count. The mask layout is documented in core/ops/dropout.c. */
#include <math.h>

#include "../cpu_impl.h"

typedef struct drop_job {
    const void *x;
    void *y;
    int64_t n;         /* elements */
    uint64_t seed, stream, ctr_hi; /* ctr_hi = (step mod 2^24) << 40 */
    uint32_t thr;      /* keep iff (word >> 8) >= thr */
    double scale;      /* 1 / (1 - p) */
} drop_job;

/* x, y (n) flat; blocks [b0, b1) of 4 elements */
#define DROPOUT(T)                                                                    \
    static void drop_##T(void *v, int64_t b0, int64_t b1) {                           \
        const drop_job *j = v;                                                        \
        const T *x = j->x;                                                            \
        T *y = j->y, s = (T)j->scale;                                                 \
        for (int64_t b = b0; b < b1; b++) {                                           \
            uint32_t w[4];                                                            \
            loom_philox(j->seed, j->stream, j->ctr_hi | (uint64_t)b, w);              \
            int64_t i0 = 4 * b, m = j->n - i0 < 4 ? j->n - i0 : 4;                   \
            for (int64_t k = 0; k < m; k++)                                           \
                y[i0 + k] = (w[k] >> 8) >= j->thr ? x[i0 + k] * s : (T)0;             \
        }                                                                             \
    }
DROPOUT(float)
DROPOUT(double)

loom_status loom__cpu_dropout(const loom__cpu_args *a) {
    const loom_tensor *t = a->node;
    double p = t->f[LOOM_F_DROP_P];
    drop_job j = {
        .x = a->x[0],
        .y = a->y,
        .n = loom_tensor_numel(t),
        .seed = a->seed,
        .stream = (uint64_t)t->p[LOOM_P_DROP_STREAM],
        .ctr_hi = (a->step & ((1ull << 24) - 1)) << 40,
        .thr = (uint32_t)ceil(p * 16777216.0),
        .scale = 1.0 / (1.0 - p),
    };
    int64_t blocks = (j.n + 3) / 4;
    loom__cpu_parallel(a->cpu, blocks, 1 << 12, a->dt == LOOM_F64 ? drop_double : drop_float, &j);
    return LOOM_OK;
}
