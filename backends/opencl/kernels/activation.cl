/* backends/opencl/kernels/activation.cl — the elementwise activations and
 * their gradient ops, as backends/cpu/ops/activation.c (F32 path): x, dy, y
 * flat (n); gradient ops read the forward input (relu, leaky_relu, gelu, silu)
 * or output (tanh, sigmoid) in x. May run in place (y == x): each element
 * is read before it is written. */

/* stable for large |x|: exp of a non-positive argument only */
inline float sigmoid_f(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + exp(-x));
    float e = exp(x);
    return e / (1.0f + e);
}

/* erf(a), max error about 1 ulp: shaders/activation.comp's erf_f (N.
 * Juffa's minimax polynomials; the fma's are part of the approximation) with
 * both branches computed and one selected, straight-line code PoCL
 * vectorizes over the work-group; its libm erf ran scalar (the gpt's GELU and
 * its gradient: 22 ms of a 119 ms step) */
inline float loom_erf(float a) {
    float t = fabs(a), s = a * a;
    float r = fma(-1.72853470e-5f, t, 3.83197126e-4f);
    float u = fma(-3.88396438e-3f, t, 2.42546219e-2f);
    r = fma(r, s, u);
    r = fma(r, t, -1.06777877e-1f);
    r = fma(r, t, -6.34846687e-1f);
    r = fma(r, t, -1.28717512e-1f);
    r = fma(r, t, -t);
    r = 1.0f - exp(r);
    float big = a < 0.0f ? -r : r;
    float q = -5.96761703e-4f;
    q = fma(q, s, 4.99119423e-3f);
    q = fma(q, s, -2.67681349e-2f);
    q = fma(q, s, 1.12819925e-1f);
    q = fma(q, s, -3.76125336e-1f);
    q = fma(q, s, 1.28379166e-1f);
    q = fma(q, a, a);
    return t > 0.927734375f ? big : q;
}

/* the activation of `kind` at x value v (d: the dy value, gradient kinds);
 * the kernels below pass kind as a constant, so each inlines one case */
inline float act(int kind, float v, float d, float slope) {
    const float half_ = 0.5f, one = 1.0f, rsqrt2 = 0.70710678118654752440f, rsqrt2pi = 0.39894228040143267794f;
    switch (kind) {
    case LOOM_K_ACT_RELU: return v > 0.0f || v != v ? v : 0.0f; /* NaN stays NaN (torch) */
    case LOOM_K_ACT_LEAKY: return v > 0.0f ? v : slope * v;
    case LOOM_K_ACT_GELU: return half_ * v * (one + loom_erf(v * rsqrt2)); /* 0.5 x (1 + erf(x / sqrt 2)) */
    case LOOM_K_ACT_SILU: return v * sigmoid_f(v);
    case LOOM_K_ACT_TANH: return tanh(v);
    case LOOM_K_ACT_SIGMOID: return sigmoid_f(v);
    case LOOM_K_ACT_RELU_GRAD: return v > 0.0f || v != v ? d : 0.0f;
    case LOOM_K_ACT_LEAKY_GRAD: return v > 0.0f ? d : slope * d;
    case LOOM_K_ACT_GELU_GRAD: { /* Phi(x) + x phi(x) */
        float cdf = half_ * (one + loom_erf(v * rsqrt2));
        float pdf = rsqrt2pi * exp(-half_ * v * v);
        return d * (cdf + v * pdf);
    }
    case LOOM_K_ACT_SILU_GRAD: { /* s (1 + x (1 - s)) */
        float s = sigmoid_f(v);
        return d * s * (one + v * (one - s));
    }
    case LOOM_K_ACT_TANH_GRAD: return d * (one - v * v);   /* x is the forward output */
    case LOOM_K_ACT_SIGMOID_GRAD: return d * v * (one - v); /* x is the forward output */
    default: return 0.0f;
    }
}

/* One kernel per kind (act_<kind>, ops/activation.c): straight-line code
 * with unconditional loads and x != x for isnan, which PoCL vectorizes over
 * the work-group; one kernel switching on a run-time kind ran scalar there
 * (relu on the cnn's activations 0.9 -> 0.14 ms). */
#define ACT_KERNEL(name, kind)                                                                                   \
    __kernel void name(__global const T *x, ulong xo, __global const T *dy, ulong dyo, __global T *y, ulong yo, \
                       long n, float slope) {                                                                    \
        long i = get_global_id(0);                                                                               \
        if (i >= n) return;                                                                                      \
        float v = LD(x + xo, i), d = (kind) >= LOOM_K_ACT_FIRST_GRAD ? LD(dy + dyo, i) : 0.0f;                 \
        ST(y + yo, i, act(kind, v, d, slope));                                                                   \
    }
ACT_KERNEL(act_relu, LOOM_K_ACT_RELU)
ACT_KERNEL(act_leaky_relu, LOOM_K_ACT_LEAKY)
ACT_KERNEL(act_gelu, LOOM_K_ACT_GELU)
ACT_KERNEL(act_silu, LOOM_K_ACT_SILU)
ACT_KERNEL(act_tanh, LOOM_K_ACT_TANH)
ACT_KERNEL(act_sigmoid, LOOM_K_ACT_SIGMOID)
ACT_KERNEL(act_relu_grad, LOOM_K_ACT_RELU_GRAD)
ACT_KERNEL(act_leaky_relu_grad, LOOM_K_ACT_LEAKY_GRAD)
ACT_KERNEL(act_gelu_grad, LOOM_K_ACT_GELU_GRAD)
ACT_KERNEL(act_silu_grad, LOOM_K_ACT_SILU_GRAD)
ACT_KERNEL(act_tanh_grad, LOOM_K_ACT_TANH_GRAD)
ACT_KERNEL(act_sigmoid_grad, LOOM_K_ACT_SIGMOID_GRAD)
