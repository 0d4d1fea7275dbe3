/* backends/cpu/ops/correct.c — CPU kernel of correct_count (semantics in
 * core/ops/correct.c): one pass over the rows, the first maximum of each row
 * against its target. 16-bit logits arrive converted to f32 by the
 * dispatcher (the conversion keeps the order, so the argmax is the same). */
#include "../cpu_impl.h"

#define ARGMAX_COUNT(T)                                                                        \
    static int64_t count_##T(const T *x, const int32_t *t, int64_t N, int64_t C) {             \
        int64_t correct = 0;                                                                   \
        for (int64_t i = 0; i < N; i++) {                                                      \
            const T *r = x + i * C;                                                            \
            int64_t best = 0;                                                                  \
            for (int64_t c = 1; c < C; c++)                                                    \
                if (r[c] > r[best]) best = c;                                                  \
            correct += t[i] == best;                                                           \
        }                                                                                      \
        return correct;                                                                        \
    }
ARGMAX_COUNT(float)
ARGMAX_COUNT(double)

/* logits (N, C), targets (N) i32 -> f32 () */
loom_status loom__cpu_correct_count(const loom__cpu_args *a) {
    const loom_tensor *logits = a->node->src[0];
    int64_t N = logits->dims[0], C = logits->dims[1];
    const int32_t *t = a->x[1];
    int64_t n = a->xdt[0] == LOOM_F64 ? count_double(a->x[0], t, N, C) : count_float(a->x[0], t, N, C);
    *(float *)a->y = (float)n;
    return LOOM_OK;
}
