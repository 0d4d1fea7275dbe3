/* backends/vulkan/ops/activation.c — host side of the activations and their
 * gradient ops: one elementwise kernel (shaders/activation.comp) selected by
 * kind. */
#include "../vulkan.h"

enum { A_RELU, A_LEAKY, A_GELU, A_SILU, A_TANH, A_SIGMOID, G_RELU, G_LEAKY, G_GELU, G_SILU, G_TANH, G_SIGMOID };

static loom_status run(loom__vk_op *o, int kind) {
    const loom_tensor *y = o->t;
    int64_t n = loom_tensor_numel(y);
    loom__vk_call c;
    /* binding 0 x, 1 dy (x again for forward kinds), 2 y; push {xo, dyo, yo, n, kind, slope} */
    loom__vk_begin(o, &c, "activation", y->dtype);
    loom__vk_in(&c, y->src[0]);
    loom__vk_in(&c, kind >= G_RELU ? y->src[1] : y->src[0]);
    loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)n), loom__vk_i32(&c, kind), loom__vk_f32(&c, (float)y->f[0]);
    return loom__vk_run_1d(&c, n);
}

loom_status loom__vk_relu(loom__vk_op *o) { return run(o, A_RELU); }
loom_status loom__vk_leaky_relu(loom__vk_op *o) { return run(o, A_LEAKY); }
loom_status loom__vk_gelu(loom__vk_op *o) { return run(o, A_GELU); }
loom_status loom__vk_silu(loom__vk_op *o) { return run(o, A_SILU); }
loom_status loom__vk_tanh(loom__vk_op *o) { return run(o, A_TANH); }
loom_status loom__vk_sigmoid(loom__vk_op *o) { return run(o, A_SIGMOID); }
loom_status loom__vk_relu_grad(loom__vk_op *o) { return run(o, G_RELU); }
loom_status loom__vk_leaky_relu_grad(loom__vk_op *o) { return run(o, G_LEAKY); }
loom_status loom__vk_gelu_grad(loom__vk_op *o) { return run(o, G_GELU); }
loom_status loom__vk_silu_grad(loom__vk_op *o) { return run(o, G_SILU); }
loom_status loom__vk_tanh_grad(loom__vk_op *o) { return run(o, G_TANH); }
loom_status loom__vk_sigmoid_grad(loom__vk_op *o) { return run(o, G_SIGMOID); }
