/* shaders/activation.comp — the elementwise activations and their gradient
 * ops, as backends/cpu/ops/activation.c (F32 path) and
 * backends/opencl/kernels/activation.cl: x, dy, y flat (n); gradient kinds
 * read the forward input (relu, leaky_relu, gelu, silu) or output (tanh,
 * sigmoid) in x. May run in place (y and x the same buffer). GLSL has no
 * erf: erf_f below is a faithfully rounded float erf. */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

/* erf(a) for float, max error about 1 ulp: N. Juffa's minimax polynomials
 * (stackoverflow.com/a/35148199, as used by MLX and PyTorch's Metal
 * kernels); the fma's are part of the approximation. */
float erf_f(float a) {
    float t = abs(a), s = a * a, r;
    if (t > 0.927734375) {
        r = fma(-1.72853470e-5, t, 3.83197126e-4);
        float u = fma(-3.88396438e-3, t, 2.42546219e-2);
        r = fma(r, s, u);
        r = fma(r, t, -1.06777877e-1);
        r = fma(r, t, -6.34846687e-1);
        r = fma(r, t, -1.28717512e-1);
        r = fma(r, t, -t);
        r = 1.0 - exp(r);
        r = a < 0.0 ? -r : r;
    } else {
        r = -5.96761703e-4;
        r = fma(r, s, 4.99119423e-3);
        r = fma(r, s, -2.67681349e-2);
        r = fma(r, s, 1.12819925e-1);
        r = fma(r, s, -3.76125336e-1);
        r = fma(r, s, 1.28379166e-1);
        r = fma(r, a, a);
    }
    return r;
}

/* stable for large |x|: exp of a non-positive argument only */
float sigmoid_f(float x) {
    if (x >= 0.0) return 1.0 / (1.0 + exp(-x));
    float e = exp(x);
    return e / (1.0 + e);
}

/* tanh without overflow: sign(x) (1 - e) / (1 + e), e = exp(-2 |x|) */
float tanh_f(float x) {
    precise float e = exp(-2.0 * abs(x));
    precise float r = (1.0 - e) / (1.0 + e);
    return x < 0.0 ? -r : r;
}

PUSH { uint xo, dyo, yo, n; int kind; float slope; } pc;

/* kind pc.kind of x value v; d: the dy value (gradient kinds) */
float act(float v, float d) {
    const float half_ = 0.5, one = 1.0, rsqrt2 = 0.70710678118654752440, rsqrt2pi = 0.39894228040143267794;
    precise float r;
    switch (pc.kind) {
    case LOOM_K_ACT_RELU: r = v > 0.0 || isnan(v) ? v : 0.0; break; /* NaN stays NaN (torch) */
    case LOOM_K_ACT_LEAKY: r = v > 0.0 ? v : pc.slope * v; break;
    case LOOM_K_ACT_GELU: r = half_ * v * (one + erf_f(v * rsqrt2)); break; /* 0.5 x (1 + erf(x / sqrt 2)) */
    case LOOM_K_ACT_SILU: r = v * sigmoid_f(v); break;
    case LOOM_K_ACT_TANH: r = tanh_f(v); break;
    case LOOM_K_ACT_SIGMOID: r = sigmoid_f(v); break;
    case LOOM_K_ACT_RELU_GRAD: r = v > 0.0 || isnan(v) ? d : 0.0; break;
    case LOOM_K_ACT_LEAKY_GRAD: r = v > 0.0 ? d : pc.slope * d; break;
    case LOOM_K_ACT_GELU_GRAD: { /* Phi(x) + x phi(x) */
        precise float cdf = half_ * (one + erf_f(v * rsqrt2));
        precise float pdf = rsqrt2pi * exp(-half_ * v * v);
        r = d * (cdf + v * pdf);
        break;
    }
    case LOOM_K_ACT_SILU_GRAD: { /* s (1 + x (1 - s)) */
        float s = sigmoid_f(v);
        r = d * s * (one + v * (one - s));
        break;
    }
    case LOOM_K_ACT_TANH_GRAD: r = d * (one - v * v); break;   /* x is the forward output */
    case LOOM_K_ACT_SIGMOID_GRAD: r = d * v * (one - v); break; /* x is the forward output */
    default: r = 0.0;
    }
    return r;
}

#if defined(V4)
/* f32, four elements per invocation, one vec4 per load and store (n: vec4s;
 * the offsets multiples of 4, ops/activation.c checks): lavapipe loops over
 * its lanes once per load instruction, whatever its width */
TENSOR_IN(0, vec4, x);
TENSOR_IN(1, vec4, dy);
TENSOR_OUT(2, vec4, y);

void main() {
    uint i = loom_gid();
    if (i >= pc.n) return;
    vec4 v = x[pc.xo / 4u + i], d = pc.kind >= LOOM_K_ACT_FIRST_GRAD ? dy[pc.dyo / 4u + i] : v, r;
    for (int q = 0; q < 4; q++) r[q] = act(v[q], d[q]);
    y[pc.yo / 4u + i] = r;
}
#else
TENSOR_IN(0, T, x);
TENSOR_IN(1, T, dy); /* forward kinds: x again, unused */
TENSOR_OUT(2, T, y);

void main() {
    uint i = loom_gid();
    if (i >= pc.n) return;
    float d = pc.kind >= LOOM_K_ACT_FIRST_GRAD ? LD1(dy, pc.dyo + i) : 0.0;
    ST(y, pc.yo + i, act(LD0(x, pc.xo + i), d));
}
#endif
