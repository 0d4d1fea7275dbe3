/* backends/cpu/ops/optim.c — CPU kernels of the optimizer ops (see
 * core/ops/optim.c for the semantics and the hyper layout). Reference loops
 * that are also the fast path: elementwise, split across the thread pool.
 * Params and states are f32 or f64 (a->dt is the placeholder's f32, so the
 * param's own dtype a->xdt[0] selects the path). */
#include <math.h>

#include "../cpu_impl.h"
#include "../../../core/optim_impl.h"

typedef struct ojob {
    const loom_tensor *node;
    void *x[LOOM_MAX_SRC];
    const float *hyper;
    float coef;
} ojob;

static float coef_of(const loom__cpu_args *a) {
    int ci = (int)a->node->p[LOOM_P_OPT_COEF];
    return ci >= 0 ? *(const float *)a->x[ci] : 1.0f;
}

/* SGD, torch semantics: g = grad*mult*coef (+ wd p); buf = momentum buf +
 * (1 - dampening) g (buf = g on the first step); g = nesterov ? g + momentum
 * buf : buf; p -= lr g. Like torch, scalar factors such as 1 - dampening are
 * formed in double and rounded once to T (1 - (float)beta2 would lose 4
 * digits to cancellation). */
#define SGD(T)                                                                                                         \
    static void sgd_##T(void *v, int64_t i0, int64_t i1) {                                                             \
        const ojob *j = v;                                                                                             \
        const loom_tensor *n = j->node;                                                                                \
        T *restrict p = j->x[0], *restrict gr = j->x[1];                                                               \
        T *restrict buf = n->p[LOOM_P_SGD_BUF] ? (T *)j->x[3] : NULL;                                                  \
        const T lr = (T)j->hyper[LOOM_G_HYPER_LR], mult = (T)j->hyper[LOOM_G_HYPER_GMULT] * (T)j->coef;                \
        const T mom = (T)n->f[LOOM_F_SGD_MOMENTUM], wd = (T)n->f[LOOM_F_SGD_WD];                                       \
        const T damp1 = (T)(1 - n->f[LOOM_F_SGD_DAMPENING]);                                                           \
        const bool first = j->hyper[LOOM_G_HYPER_FIRST] != 0, nesterov = n->p[LOOM_P_SGD_NESTEROV] != 0;               \
        /* the common configurations as straight loops (they vectorise) */                                             \
        if (buf && !nesterov && wd == 0 && !first) {                                                                   \
            for (int64_t i = i0; i < i1; i++) {                                                                        \
                T b = mom * buf[i] + damp1 * (gr[i] * mult);                                                           \
                buf[i] = b;                                                                                            \
                p[i] -= lr * b;                                                                                        \
            }                                                                                                          \
        } else if (!buf && wd == 0) {                                                                                  \
            for (int64_t i = i0; i < i1; i++) p[i] -= lr * (gr[i] * mult);                                             \
        } else {                                                                                                       \
            for (int64_t i = i0; i < i1; i++) {                                                                        \
                T g = gr[i] * mult;                                                                                    \
                if (wd != 0) g += wd * p[i];                                                                           \
                if (buf) {                                                                                             \
                    buf[i] = first ? g : mom * buf[i] + damp1 * g;                                                     \
                    g = nesterov ? g + mom * buf[i] : buf[i];                                                          \
                }                                                                                                      \
                p[i] -= lr * g;                                                                                        \
            }                                                                                                          \
        }                                                                                                              \
        if (n->p[LOOM_P_OPT_ZERO_GRAD])                                                                                \
            for (int64_t i = i0; i < i1; i++) gr[i] = 0;                                                               \
    }
SGD(float)
SGD(double)

/* Adam / AdamW, torch semantics: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps); Adam adds wd p to g, AdamW
 * scales p by (1 - lr wd) first. 1 - b1, 1 - b2, lr/bc1 and 1 - lr wd are
 * formed in double and rounded once, as torch does. */
#define ADAM(T)                                                                                                        \
    static void adam_##T(void *v, int64_t i0, int64_t i1) {                                                            \
        const ojob *j = v;                                                                                             \
        const loom_tensor *n = j->node;                                                                                \
        T *p = j->x[0], *gr = j->x[1], *m = j->x[3], *s = j->x[4];                                                     \
        T mult = (T)j->hyper[LOOM_G_HYPER_GMULT] * (T)j->coef;                                                         \
        T b1 = (T)n->f[LOOM_F_ADAM_BETA1], b2 = (T)n->f[LOOM_F_ADAM_BETA2];                                            \
        T eps = (T)n->f[LOOM_F_ADAM_EPS], wd = (T)n->f[LOOM_F_ADAM_WD];                                                \
        T omb1 = (T)(1 - n->f[LOOM_F_ADAM_BETA1]), omb2 = (T)(1 - n->f[LOOM_F_ADAM_BETA2]);                            \
        T decay = (T)(1 - (double)j->hyper[LOOM_G_HYPER_LR] * n->f[LOOM_F_ADAM_WD]);                                   \
        T step = (T)((double)j->hyper[LOOM_G_HYPER_LR] / j->hyper[LOOM_G_HYPER_BC1]);                                  \
        T bc2s = (T)sqrt((double)j->hyper[LOOM_G_HYPER_BC2]);                                                          \
        for (int64_t i = i0; i < i1; i++) {                                                                            \
            T g = gr[i] * mult;                                                                                        \
            if (wd != 0) {                                                                                             \
                if (n->p[LOOM_P_ADAM_DECOUPLED])                                                                       \
                    p[i] *= decay;                                                                                     \
                else                                                                                                   \
                    g += wd * p[i];                                                                                    \
            }                                                                                                          \
            m[i] = b1 * m[i] + omb1 * g;                                                                               \
            s[i] = b2 * s[i] + omb2 * g * g;                                                                           \
            p[i] -= step * m[i] / ((T)sqrt((double)s[i]) / bc2s + eps);                                                \
            if (n->p[LOOM_P_OPT_ZERO_GRAD]) gr[i] = 0;                                                                 \
        }                                                                                                              \
    }
ADAM(float)
ADAM(double)

static loom_status run_step(const loom__cpu_args *a, loom__cpu_range_fn f32, loom__cpu_range_fn f64) {
    const float *hyper = a->x[2];
    *(float *)a->y = 0; /* the placeholder output */
    if (hyper[LOOM_G_HYPER_APPLY] < 0) { /* a skipped step (loss scaling found inf/NaN): only clear the accumulator */
        const loom_tensor *gt = a->node->src[1];
        if (a->node->p[LOOM_P_OPT_ZERO_GRAD]) memset(a->x[1], 0, loom__nbytes(gt));
        return LOOM_OK;
    }
    if (hyper[LOOM_G_HYPER_APPLY] == 0) return LOOM_OK;
    ojob j = {a->node, {0}, hyper, coef_of(a)};
    memcpy(j.x, a->x, sizeof j.x);
    const loom_tensor *p = a->node->src[0];
    loom__cpu_parallel(a->cpu, loom_tensor_numel(p), 1 << 14, p->dtype == LOOM_F64 ? f64 : f32, &j);
    return LOOM_OK;
}

loom_status loom__cpu_sgd_step(const loom__cpu_args *a) { return run_step(a, sgd_float, sgd_double); }
loom_status loom__cpu_adam_step(const loom__cpu_args *a) { return run_step(a, adam_float, adam_double); }

/* acc += grad */
loom_status loom__cpu_accumulate(const loom__cpu_args *a) {
    const loom_tensor *acc = a->node->src[0];
    int64_t n = loom_tensor_numel(acc);
    *(float *)a->y = 0;
    if (acc->dtype == LOOM_F64)
        for (int64_t i = 0; i < n; i++) ((double *)a->x[0])[i] += ((const double *)a->x[1])[i];
    else
        for (int64_t i = 0; i < n; i++) ((float *)a->x[0])[i] += ((const float *)a->x[1])[i];
    return LOOM_OK;
}

/* y = min(1, max_norm / (sqrt(sumsq) * mult + 1e-6)) */
loom_status loom__cpu_clip_coef(const loom__cpu_args *a) {
    const loom_tensor *s = a->node->src[0];
    double ss = a->xdt[0] == LOOM_F64 ? *(const double *)a->x[0] : *(const float *)a->x[0];
    double mult = ((const float *)a->x[1])[LOOM_G_HYPER_GMULT];
    double c = a->node->f[LOOM_F_CLIP_MAX_NORM] / (sqrt(ss) * mult + 1e-6);
    (void)s;
    *(float *)a->y = (float)(c < 1 ? c : 1);
    return LOOM_OK;
}
