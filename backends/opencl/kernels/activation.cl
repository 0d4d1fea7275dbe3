/* backends/opencl/kernels/activation.cl — the elementwise activations and
 * their gradient ops, as backends/cpu/ops/activation.c (F32 path): x, dy, y
 * flat (n); gradient ops read the forward input (relu, leaky_relu, gelu, silu)
 * or output (tanh, sigmoid) in x. May run in place (y == x). */

#define A_RELU 0
#define A_LEAKY 1
#define A_GELU 2
#define A_SILU 3
#define A_TANH 4
#define A_SIGMOID 5
#define G_RELU 6
#define G_LEAKY 7
#define G_GELU 8
#define G_SILU 9
#define G_TANH 10
#define G_SIGMOID 11

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
    case A_RELU: r = v > 0.0f ? v : 0.0f; break;
    case A_LEAKY: r = v > 0.0f ? v : slope * v; break;
    case A_GELU: r = half_ * v * (one + erf(v * rsqrt2)); break; /* 0.5 x (1 + erf(x / sqrt 2)) */
    case A_SILU: r = v * sigmoid_f(v); break;
    case A_TANH: r = tanh(v); break;
    case A_SIGMOID: r = sigmoid_f(v); break;
    case G_RELU: r = v > 0.0f ? LD(dy, i) : 0.0f; break;
    case G_LEAKY: r = v > 0.0f ? LD(dy, i) : slope * LD(dy, i); break;
    case G_GELU: { /* Phi(x) + x phi(x) */
        float cdf = half_ * (one + erf(v * rsqrt2));
        float pdf = rsqrt2pi * exp(-half_ * v * v);
        r = LD(dy, i) * (cdf + v * pdf);
        break;
    }
    case G_SILU: { /* s (1 + x (1 - s)) */
        float s = sigmoid_f(v);
        r = LD(dy, i) * s * (one + v * (one - s));
        break;
    }
    case G_TANH: r = LD(dy, i) * (one - v * v); break;   /* x is the forward output */
    case G_SIGMOID: r = LD(dy, i) * v * (one - v); break; /* x is the forward output */
    default: r = 0.0f;
    }
    ST(y, i, r);
}
