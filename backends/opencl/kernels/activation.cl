/* backends/opencl/kernels/activation.cl — the elementwise activations and
 * their gradient ops, as backends/cpu/ops/activation.c (F32 path): x, dy, y
 * flat (n); gradient ops read the forward input (relu, leaky_relu, gelu, silu)
 * or output (tanh, sigmoid) in x. May run in place (y == x). */

/* stable for large |x|: exp of a non-positive argument only */
inline float sigmoid_f(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + exp(-x));
    float e = exp(x);
    return e / (1.0f + e);
}

__kernel void activation(__global const T *x, ulong xo, __global const T *dy, ulong dyo, __global T *y, ulong yo,
                         long n, int kind, float slope) {
    long i = get_global_id(0);
    if (i >= n) return;
    x += xo, dy += dyo, y += yo;
    const float half_ = 0.5f, one = 1.0f, rsqrt2 = 0.70710678118654752440f, rsqrt2pi = 0.39894228040143267794f;
    float v = LD(x, i), r;
    switch (kind) {
    case LOOM_K_ACT_RELU: r = v > 0.0f || isnan(v) ? v : 0.0f; break; /* NaN stays NaN (torch) */
    case LOOM_K_ACT_LEAKY: r = v > 0.0f ? v : slope * v; break;
    case LOOM_K_ACT_GELU: r = half_ * v * (one + erf(v * rsqrt2)); break; /* 0.5 x (1 + erf(x / sqrt 2)) */
    case LOOM_K_ACT_SILU: r = v * sigmoid_f(v); break;
    case LOOM_K_ACT_TANH: r = tanh(v); break;
    case LOOM_K_ACT_SIGMOID: r = sigmoid_f(v); break;
    case LOOM_K_ACT_RELU_GRAD: r = v > 0.0f || isnan(v) ? LD(dy, i) : 0.0f; break;
    case LOOM_K_ACT_LEAKY_GRAD: r = v > 0.0f ? LD(dy, i) : slope * LD(dy, i); break;
    case LOOM_K_ACT_GELU_GRAD: { /* Phi(x) + x phi(x) */
        float cdf = half_ * (one + erf(v * rsqrt2));
        float pdf = rsqrt2pi * exp(-half_ * v * v);
        r = LD(dy, i) * (cdf + v * pdf);
        break;
    }
    case LOOM_K_ACT_SILU_GRAD: { /* s (1 + x (1 - s)) */
        float s = sigmoid_f(v);
        r = LD(dy, i) * s * (one + v * (one - s));
        break;
    }
    case LOOM_K_ACT_TANH_GRAD: r = LD(dy, i) * (one - v * v); break;   /* x is the forward output */
    case LOOM_K_ACT_SIGMOID_GRAD: r = LD(dy, i) * v * (one - v); break; /* x is the forward output */
    default: r = 0.0f;
    }
    ST(y, i, r);
}
