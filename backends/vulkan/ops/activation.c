/* backends/vulkan/ops/activation.c — host side of the activations and their
 * gradient ops: one elementwise kernel (shaders/activation.comp) selected by
 * kind; on CPU devices, unless in place, activation_t reads x and dy
 * through texel views (lavapipe gathers them; storage loads are lane loops). */
#include "../vulkan.h"

static loom_status run(loom__vk_op *o, int kind) {
    const loom_tensor *y = o->t;
    int64_t n = loom_tensor_numel(y);
    loom__vk_call c;
    /* binding 0 x, 1 dy (x again for forward kinds), 2 y; push {xo, dyo, yo, n, kind, slope} */
    loom__vk_begin(o, &c, "activation", y->dtype);
    loom__vk_in(&c, y->src[0]);
    loom__vk_in(&c, kind >= LOOM_K_ACT_FIRST_GRAD ? y->src[1] : y->src[0]);
    loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)n), loom__vk_i32(&c, kind), loom__vk_f32(&c, (float)y->f[LOOM_F_LEAKY_SLOPE]);
    loom__vk_texel_variant(&c, "activation_t", y->dtype, (const int[]){0, 1}, 2, 1); /* CPU devices, not in place */
    return loom__vk_run_1d(&c, n);
}

loom_status loom__vk_relu(loom__vk_op *o) { return run(o, LOOM_K_ACT_RELU); }
loom_status loom__vk_leaky_relu(loom__vk_op *o) { return run(o, LOOM_K_ACT_LEAKY); }
loom_status loom__vk_gelu(loom__vk_op *o) { return run(o, LOOM_K_ACT_GELU); }
loom_status loom__vk_silu(loom__vk_op *o) { return run(o, LOOM_K_ACT_SILU); }
loom_status loom__vk_tanh(loom__vk_op *o) { return run(o, LOOM_K_ACT_TANH); }
loom_status loom__vk_sigmoid(loom__vk_op *o) { return run(o, LOOM_K_ACT_SIGMOID); }
loom_status loom__vk_relu_grad(loom__vk_op *o) { return run(o, LOOM_K_ACT_RELU_GRAD); }
loom_status loom__vk_leaky_relu_grad(loom__vk_op *o) { return run(o, LOOM_K_ACT_LEAKY_GRAD); }
loom_status loom__vk_gelu_grad(loom__vk_op *o) { return run(o, LOOM_K_ACT_GELU_GRAD); }
loom_status loom__vk_silu_grad(loom__vk_op *o) { return run(o, LOOM_K_ACT_SILU_GRAD); }
loom_status loom__vk_tanh_grad(loom__vk_op *o) { return run(o, LOOM_K_ACT_TANH_GRAD); }
loom_status loom__vk_sigmoid_grad(loom__vk_op *o) { return run(o, LOOM_K_ACT_SIGMOID_GRAD); }
