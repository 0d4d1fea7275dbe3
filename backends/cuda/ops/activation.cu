/* backends/cuda/ops/activation.cu — the elementwise activations and their
 * gradient ops, a port of backends/opencl/kernels/activation.cl (as
 * backends/cpu/ops/activation.c, F32 path): x, dy, y flat (n); gradient ops
 * read the forward input (relu, leaky_relu, gelu, silu) or output (tanh,
 * sigmoid) in x. May run in place (y == x). */
#include "../common.cuh"

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
    case LOOM_K_ACT_RELU: r = v > 0.0f || isnan(v) ? v : 0.0f; break; /* NaN stays NaN (torch) */
    case LOOM_K_ACT_LEAKY: r = v > 0.0f ? v : slope * v; break;
    case LOOM_K_ACT_GELU: r = half_ * v * (one + erff(v * rsqrt2)); break; /* 0.5 x (1 + erf(x / sqrt 2)) */
    case LOOM_K_ACT_SILU: r = v * sigmoid_f(v); break;
    case LOOM_K_ACT_TANH: r = tanhf(v); break;
    case LOOM_K_ACT_SIGMOID: r = sigmoid_f(v); break;
    case LOOM_K_ACT_RELU_GRAD: r = v > 0.0f || isnan(v) ? ldf(dy[i]) : 0.0f; break;
    case LOOM_K_ACT_LEAKY_GRAD: r = v > 0.0f ? ldf(dy[i]) : slope * ldf(dy[i]); break;
    case LOOM_K_ACT_GELU_GRAD: { /* Phi(x) + x phi(x) */
        float cdf = half_ * (one + erff(v * rsqrt2));
        float pdf = rsqrt2pi * expf(-half_ * v * v);
        r = ldf(dy[i]) * (cdf + v * pdf);
        break;
    }
    case LOOM_K_ACT_SILU_GRAD: { /* s (1 + x (1 - s)) */
        float s = sigmoid_f(v);
        r = ldf(dy[i]) * s * (one + v * (one - s));
        break;
    }
    case LOOM_K_ACT_TANH_GRAD: r = ldf(dy[i]) * (one - v * v); break;    /* x is the forward output */
    case LOOM_K_ACT_SIGMOID_GRAD: r = ldf(dy[i]) * v * (one - v); break; /* x is the forward output */
    default: r = 0.0f;
    }
    st(y, i, r);
}

template <typename T>
static loom_status run(loom__cu_op *o, int kind) {
    const loom_tensor *y = o->t;
    int64_t n = loom_tensor_numel(y);
    const loom_tensor *dy = kind >= LOOM_K_ACT_FIRST_GRAD ? y->src[1] : y->src[0]; /* unused by forward kinds */
    return loom__cu_launch(o, activation<T>, loom__cu_grid1d(n), LOOM__CU_THREADS, 0, loom__cu_ptr<T>(o, y->src[0]),
                           loom__cu_ptr<T>(o, dy), loom__cu_ptr<T>(o, y), n, kind, (float)y->f[LOOM_F_LEAKY_SLOPE]);
}

#define ACT(stem, kind) \
    loom_status loom__cu_##stem(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run, o, kind); }
ACT(relu, LOOM_K_ACT_RELU)
ACT(leaky_relu, LOOM_K_ACT_LEAKY)
ACT(gelu, LOOM_K_ACT_GELU)
ACT(silu, LOOM_K_ACT_SILU)
ACT(tanh, LOOM_K_ACT_TANH)
ACT(sigmoid, LOOM_K_ACT_SIGMOID)
ACT(relu_grad, LOOM_K_ACT_RELU_GRAD)
ACT(leaky_relu_grad, LOOM_K_ACT_LEAKY_GRAD)
ACT(gelu_grad, LOOM_K_ACT_GELU_GRAD)
ACT(silu_grad, LOOM_K_ACT_SILU_GRAD)
ACT(tanh_grad, LOOM_K_ACT_TANH_GRAD)
ACT(sigmoid_grad, LOOM_K_ACT_SIGMOID_GRAD)
