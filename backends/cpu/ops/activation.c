/* backends/cpu/ops/activation.c — CPU kernels for the elementwise
 * activations and their gradient ops. Reference loops that are also the fast
 * path: one flat loop per op, split across the thread pool. F64 computes with
 * the double libm functions; F32 with the float ones, except GELU, whose
 * normal CDF and density come from vmath.h (straight-line code that
 * vectorises, accurate on both tails). The f32 loops are compiled three
 * times, baseline, AVX2 and AVX-512 (picked at run time), with the same bits.
 *
 * Forward ops may run in place (y and x the same buffer): each element is
 * read before it is written. */
#include <math.h>

#include "../../../core/prefetch.h"
#include "../cpu_impl.h"
#include "../vmath.h"

typedef struct ajob {
    int kind;
    const void *x;  /* forward: x; gradient ops: x or y of the forward node */
    const void *dy; /* gradient ops only */
    void *y;
    double slope;   /* leaky_relu */
} ajob;

/* for (i = i0; i < i1; i++) BODY over one cache line of T at a time, each
 * line first asking for X's (and D's) line LOOM__PF_AHEAD bytes on: the
 * loops whose per-element work keeps few lines in flight (prefetch.h) */
#define PF_LOOP(T, BODY)                                                                                               \
    for (int64_t b_ = i0; b_ < i1; b_ += 64 / (int64_t)sizeof(T)) {                                                    \
        int64_t e_ = b_ + 64 / (int64_t)sizeof(T) < i1 ? b_ + 64 / (int64_t)sizeof(T) : i1;                             \
        loom__prefetch(X + b_, LOOM__PF_AHEAD);                                                                        \
        if (D) loom__prefetch(D + b_, LOOM__PF_AHEAD);                                                                 \
        for (int64_t i = b_; i < e_; i++) BODY                                                                         \
    }

/* S is the libm suffix: f for float, empty for double. All tensors are flat,
 * n = numel: y[i] = f(x[i]) or dx[i] = f'(x[i]) * dy[i]. */
#define ACT_RANGE(T, S)                                                                                                \
    static inline __attribute__((always_inline)) void body_##T(void *v, int64_t i0, int64_t i1) {                      \
        const ajob *j = v;                                                                                             \
        const T *X = j->x, *D = j->dy;                                                                                 \
        T *Y = j->y;                                                                                                   \
        const T slope = (T)j->slope, half = (T)0.5, one = (T)1;                                                        \
        const T rsqrt2pi = (T)0.39894228040143267794;                                                                  \
        switch (j->kind) {                                                                                             \
        case LOOM_K_ACT_RELU: /* NaN stays NaN, as in torch (x != x: NaN) */                                           \
            for (int64_t i = i0; i < i1; i++) {                                                                        \
                T x = X[i];                                                                                            \
                Y[i] = x > 0 || x != x ? x : 0;                                                                        \
            }                                                                                                          \
            break;                                                                                                     \
        case LOOM_K_ACT_LEAKY:                                                                                         \
            for (int64_t i = i0; i < i1; i++) {                                                                        \
                T x = X[i];                                                                                            \
                Y[i] = x > 0 ? x : slope * x;                                                                          \
            }                                                                                                          \
            break;                                                                                                     \
        case LOOM_K_ACT_GELU: /* x Phi(x) */                                                                           \
            PF_LOOP(T, { Y[i] = X[i] * cdf_##T(X[i]); })                                                               \
            break;                                                                                                     \
        case LOOM_K_ACT_SILU: /* x sigmoid(x) */                                                                       \
            for (int64_t i = i0; i < i1; i++) {                                                                        \
                T x = X[i];                                                                                            \
                Y[i] = x * sigmoid_##T(x);                                                                             \
            }                                                                                                          \
            break;                                                                                                     \
        case LOOM_K_ACT_TANH:                                                                                          \
            for (int64_t i = i0; i < i1; i++) Y[i] = tanh##S(X[i]);                                                    \
            break;                                                                                                     \
        case LOOM_K_ACT_SIGMOID:                                                                                       \
            for (int64_t i = i0; i < i1; i++) Y[i] = sigmoid_##T(X[i]);                                                \
            break;                                                                                                     \
        case LOOM_K_ACT_RELU_GRAD: /* D loaded on both paths: the select vectorises */                                 \
            for (int64_t i = i0; i < i1; i++) {                                                                        \
                T d = D[i], x = X[i];                                                                                  \
                Y[i] = x > 0 || x != x ? d : 0;                                                                        \
            }                                                                                                          \
            break;                                                                                                     \
        case LOOM_K_ACT_LEAKY_GRAD:                                                                                    \
            for (int64_t i = i0; i < i1; i++) {                                                                        \
                T d = D[i];                                                                                            \
                Y[i] = X[i] > 0 ? d : slope * d;                                                                       \
            }                                                                                                          \
            break;                                                                                                     \
        case LOOM_K_ACT_GELU_GRAD: /* Phi(x) + x phi(x) */                                                             \
            PF_LOOP(T, {                                                                                               \
                T x = X[i];                                                                                            \
                Y[i] = D[i] * (cdf_##T(x) + x * (rsqrt2pi * exp_##T(-half * x * x)));                                  \
            })                                                                                                         \
            break;                                                                                                     \
        case LOOM_K_ACT_SILU_GRAD: /* s (1 + x (1 - s)), s = sigmoid(x) */                                             \
            for (int64_t i = i0; i < i1; i++) {                                                                        \
                T x = X[i], s = sigmoid_##T(x);                                                                        \
                Y[i] = D[i] * s * (one + x * (one - s));                                                               \
            }                                                                                                          \
            break;                                                                                                     \
        case LOOM_K_ACT_TANH_GRAD: /* X is the forward output y: 1 - y^2 */                                            \
            for (int64_t i = i0; i < i1; i++) Y[i] = D[i] * (one - X[i] * X[i]);                                       \
            break;                                                                                                     \
        case LOOM_K_ACT_SIGMOID_GRAD: /* X is the forward output y: y (1 - y) */                                       \
            for (int64_t i = i0; i < i1; i++) Y[i] = D[i] * X[i] * (one - X[i]);                                       \
            break;                                                                                                     \
        }                                                                                                              \
    }

/* Stable for large |x|: exp of a non-positive argument only. */
static inline float sigmoid_float(float x) {
    if (x >= 0) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}
static inline double sigmoid_double(double x) {
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

/* GELU's Phi(x) and exp: vectorisable in f32, libm in f64 */
static inline float cdf_float(float x) { return loom__vnormcdf(x); }
static inline float exp_float(float x) { return loom__vexpf(x); }
static inline double cdf_double(double x) { return 0.5 * erfc(-x * 0.70710678118654752440); }
static inline double exp_double(double x) { return exp(x); }

ACT_RANGE(float, f)
ACT_RANGE(double, )
static void range_float(void *v, int64_t i0, int64_t i1) { body_float(v, i0, i1); }
LOOM__TARGET("avx2") static void range_float_avx2(void *v, int64_t i0, int64_t i1) { body_float(v, i0, i1); }
LOOM__TARGET("avx512f") static void range_float_avx512(void *v, int64_t i0, int64_t i1) {
    body_float(v, i0, i1);
}
static void range_double(void *v, int64_t i0, int64_t i1) { body_double(v, i0, i1); }

static loom_status run(const loom__cpu_args *a, int kind) {
    bool grad = kind >= LOOM_K_ACT_FIRST_GRAD;
    ajob j = {kind, a->x[0], grad ? a->x[1] : NULL, a->y, a->node->f[LOOM_F_LEAKY_SLOPE]};
    loom__vrange_fn fn =
        a->dt == LOOM_F64 ? range_double : loom__pick_isa(range_float, range_float_avx2, range_float_avx512);
    loom__cpu_parallel(a->cpu, loom_tensor_numel(a->node), 1 << 14, fn, &j);
    return LOOM_OK;
}

loom_status loom__cpu_relu(const loom__cpu_args *a) { return run(a, LOOM_K_ACT_RELU); }
loom_status loom__cpu_leaky_relu(const loom__cpu_args *a) { return run(a, LOOM_K_ACT_LEAKY); }
loom_status loom__cpu_gelu(const loom__cpu_args *a) { return run(a, LOOM_K_ACT_GELU); }
loom_status loom__cpu_silu(const loom__cpu_args *a) { return run(a, LOOM_K_ACT_SILU); }
loom_status loom__cpu_tanh(const loom__cpu_args *a) { return run(a, LOOM_K_ACT_TANH); }
loom_status loom__cpu_sigmoid(const loom__cpu_args *a) { return run(a, LOOM_K_ACT_SIGMOID); }
loom_status loom__cpu_relu_grad(const loom__cpu_args *a) { return run(a, LOOM_K_ACT_RELU_GRAD); }
loom_status loom__cpu_leaky_relu_grad(const loom__cpu_args *a) { return run(a, LOOM_K_ACT_LEAKY_GRAD); }
loom_status loom__cpu_gelu_grad(const loom__cpu_args *a) { return run(a, LOOM_K_ACT_GELU_GRAD); }
loom_status loom__cpu_silu_grad(const loom__cpu_args *a) { return run(a, LOOM_K_ACT_SILU_GRAD); }
loom_status loom__cpu_tanh_grad(const loom__cpu_args *a) { return run(a, LOOM_K_ACT_TANH_GRAD); }
loom_status loom__cpu_sigmoid_grad(const loom__cpu_args *a) { return run(a, LOOM_K_ACT_SIGMOID_GRAD); }
