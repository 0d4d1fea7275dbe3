/* backends/cuda/ops/activation.cu — the elementwise activations and their
 * gradient ops, a port of backends/opencl/kernels/activation.cl (as
 * backends/cpu/ops/activation.c, F32 path): x, dy, y flat (n); gradient ops
 * read the forward input (relu, leaky_relu, gelu, silu) or output (tanh,
 * sigmoid) in x. May run in place (y == x). */
#include "../common.cuh"

enum { A_RELU, A_LEAKY, A_GELU, A_SILU, A_TANH, A_SIGMOID, G_RELU, G_LEAKY, G_GELU, G_SILU, G_TANH, G_SIGMOID };

/* stable for large |x|: exp of a non-positive argument only */
__device__ __forceinline__ float sigmoid_f(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

template <typename T>
__global__ void activation(const T *x, const T *dy, T *y, int64_t n, int kind, float slope) {
    int64_t i = gid1();
    if (i >= n) return;
    const float half_ = 0.5f, one = 1.0f, rsqrt2 = 0.70710678118654752440f, rsqrt2pi = 0.39894228040143267794f;
    float v = ldf(x[i]), r;
    switch (kind) {
    case A_RELU: r = v > 0.0f ? v : 0.0f; break;
    case A_LEAKY: r = v > 0.0f ? v : slope * v; break;
    case A_GELU: r = half_ * v * (one + erff(v * rsqrt2)); break; /* 0.5 x (1 + erf(x / sqrt 2)) */
    case A_SILU: r = v * sigmoid_f(v); break;
    case A_TANH: r = tanhf(v); break;
    case A_SIGMOID: r = sigmoid_f(v); break;
    case G_RELU: r = v > 0.0f ? ldf(dy[i]) : 0.0f; break;
    case G_LEAKY: r = v > 0.0f ? ldf(dy[i]) : slope * ldf(dy[i]); break;
    case G_GELU: { /* Phi(x) + x phi(x) */
        float cdf = half_ * (one + erff(v * rsqrt2));
        float pdf = rsqrt2pi * expf(-half_ * v * v);
        r = ldf(dy[i]) * (cdf + v * pdf);
        break;
    }
    case G_SILU: { /* s (1 + x (1 - s)) */
        float s = sigmoid_f(v);
        r = ldf(dy[i]) * s * (one + v * (one - s));
        break;
    }
    case G_TANH: r = ldf(dy[i]) * (one - v * v); break;   /* x is the forward output */
    case G_SIGMOID: r = ldf(dy[i]) * v * (one - v); break; /* x is the forward output */
    default: r = 0.0f;
    }
    st(y, i, r);
}

template <typename T>
static loom_status run(loom__cu_op *o, int kind) {
    const loom_tensor *y = o->t;
    int64_t n = loom_tensor_numel(y);
    const loom_tensor *dy = kind >= G_RELU ? y->src[1] : y->src[0]; /* unused by forward kinds */
    return loom__cu_launch(o, activation<T>, loom__cu_grid1d(n), LOOM__CU_THREADS, 0, loom__cu_ptr<T>(o, y->src[0]),
                           loom__cu_ptr<T>(o, dy), loom__cu_ptr<T>(o, y), n, kind, (float)y->f[0]);
}

#define ACT(stem, kind) \
    loom_status loom__cu_##stem(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run, o, kind); }
ACT(relu, A_RELU)
ACT(leaky_relu, A_LEAKY)
ACT(gelu, A_GELU)
ACT(silu, A_SILU)
ACT(tanh, A_TANH)
ACT(sigmoid, A_SIGMOID)
ACT(relu_grad, G_RELU)
ACT(leaky_relu_grad, G_LEAKY)
ACT(gelu_grad, G_GELU)
ACT(silu_grad, G_SILU)
ACT(tanh_grad, G_TANH)
ACT(sigmoid_grad, G_SIGMOID)
