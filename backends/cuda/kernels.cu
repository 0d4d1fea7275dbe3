/* backends/cuda/kernels.cu — the CUDA backend's op table: one entry per
 * op, its host function (ops/<family>.cu) and the output dtypes it takes. A
 * missing entry means "unsupported"; this table is the only record. f64 is
 * not listed (as in the OpenCL backend).
 *
 * C++ has no array designators, so the table is filled by a static
 * initializer (before main; the vtable only holds its address).
 */
#include "cuda.h"

#define K(e, stem, dts) t[LOOM_OP_##e] = loom__kernel{(loom__fnptr)loom__cu_##stem, dts, nullptr}
#define FLOAT LOOM__CU_FLOAT
#define ALL LOOM__CU_ALL
#define F32 LOOM__DT(F32)

loom__kernel loom__cu_kernels[LOOM_OP_COUNT];

static int fill(loom__kernel *t) {
    K(ADD, add, FLOAT);
    K(SUB, sub, FLOAT);
    K(MUL, mul, FLOAT);
    K(DIV, div, FLOAT);
    K(SCALE, scale, FLOAT);
    K(FILL, fill, FLOAT);
    K(EXPAND, expand, FLOAT);
    K(CAST, cast, ALL);
    K(RELU, relu, FLOAT);
    K(LEAKY_RELU, leaky_relu, FLOAT);
    K(GELU, gelu, FLOAT);
    K(SILU, silu, FLOAT);
    K(TANH, tanh, FLOAT);
    K(SIGMOID, sigmoid, FLOAT);
    K(SOFTMAX, softmax, FLOAT);
    K(LOG_SOFTMAX, log_softmax, FLOAT);
    K(CROSS_ENTROPY, cross_entropy, FLOAT);
    K(MSE, mse, FLOAT);
    K(CORRECT_COUNT, correct_count, F32);
    K(DROPOUT, dropout, FLOAT);
    K(EMBEDDING, embedding, FLOAT);
    K(AUGMENT_U8, augment_u8, FLOAT);
    K(RESIZE_U8, resize_u8, LOOM__DT(U8));
    K(PERMUTE, permute, ALL);
    K(CONCAT, concat, ALL);
    K(SLICE, slice, ALL);
    K(SUM, sum, FLOAT);
    K(MEAN, mean, FLOAT);
    K(MAX_POOL2D, max_pool2d, FLOAT);
    K(AVG_POOL2D, avg_pool2d, FLOAT);
    K(ADAPTIVE_AVG_POOL2D, adaptive_avg_pool2d, FLOAT);
    K(BATCH_NORM, batch_norm, FLOAT);
    K(LAYER_NORM, layer_norm, FLOAT);
    K(SGD_STEP, sgd_step, F32);
    K(ADAM_STEP, adam_step, F32);
    K(ACCUMULATE, accumulate, F32);
    K(CLIP_COEF, clip_coef, F32);
    K(AMP_FOUND_INF, amp_found_inf, F32);
    K(AMP_UNSCALE, amp_unscale, F32);
    K(AMP_SCALER_UPDATE, amp_scaler_update, F32);
    K(AMP_FOUND_INF, amp_found_inf, F32);
    K(AMP_UNSCALE, amp_unscale, F32);
    K(AMP_SCALER_UPDATE, amp_scaler_update, F32);
    K(RELU_GRAD, relu_grad, FLOAT);
    K(LEAKY_RELU_GRAD, leaky_relu_grad, FLOAT);
    K(GELU_GRAD, gelu_grad, FLOAT);
    K(SILU_GRAD, silu_grad, FLOAT);
    K(TANH_GRAD, tanh_grad, FLOAT);
    K(SIGMOID_GRAD, sigmoid_grad, FLOAT);
    K(SOFTMAX_GRAD, softmax_grad, FLOAT);
    K(LOG_SOFTMAX_GRAD, log_softmax_grad, FLOAT);
    K(ATTENTION, attention, FLOAT);
    K(ATTENTION_GRAD, attention_grad, FLOAT);
    K(CAUSAL_MASK, causal_mask, FLOAT);
    K(CROSS_ENTROPY_GRAD, cross_entropy_grad, FLOAT);
    K(EMBEDDING_GRAD, embedding_grad, FLOAT);
    K(SLICE_GRAD, slice_grad, ALL);
    K(MATMUL, matmul, FLOAT);
    K(LINEAR, linear, FLOAT);
    K(CONV2D, conv2d, FLOAT);
    K(CONV2D_GRAD_INPUT, conv2d_grad_input, FLOAT);
    K(CONV2D_GRAD_WEIGHT, conv2d_grad_weight, FLOAT);
    K(MAX_POOL2D_GRAD, max_pool2d_grad, FLOAT);
    K(AVG_POOL2D_GRAD, avg_pool2d_grad, FLOAT);
    K(ADAPTIVE_AVG_POOL2D_GRAD, adaptive_avg_pool2d_grad, FLOAT);
    K(BATCH_NORM_GRAD, batch_norm_grad, FLOAT);
    K(BATCH_NORM_GRAD_PARAMS, batch_norm_grad_params, FLOAT);
    K(LAYER_NORM_GRAD, layer_norm_grad, FLOAT);
    K(LAYER_NORM_GRAD_PARAMS, layer_norm_grad_params, FLOAT);
    return 0;
}

[[maybe_unused]] static const int filled = fill(loom__cu_kernels);
