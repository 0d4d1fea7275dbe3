/* backends/opencl/ops/activation.c — host side of the activations and their
 * gradient ops: one elementwise kernel per kind (kernels/activation.cl's
 * act_<kind>). */
#include "../opencl.h"

static loom_status run(loom__cl_op *o, int kind, const char *name) {
    const loom_tensor *y = o->t;
    int64_t n = loom_tensor_numel(y);
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, y->dtype, name, &k);
    if (st != LOOM_OK) return st;
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&ar, y->src[0]);
    loom__cl_arg_t(&ar, kind >= LOOM_K_ACT_FIRST_GRAD ? y->src[1] : y->src[0]); /* dy (unused by forward kinds) */
    loom__cl_arg_t(&ar, y);
    loom__cl_arg_i64(&ar, n), loom__cl_arg_f32(&ar, (float)y->f[LOOM_F_LEAKY_SLOPE]);
    if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, n);
}

loom_status loom__cl_relu(loom__cl_op *o) { return run(o, LOOM_K_ACT_RELU, "act_relu"); }
loom_status loom__cl_leaky_relu(loom__cl_op *o) { return run(o, LOOM_K_ACT_LEAKY, "act_leaky_relu"); }
loom_status loom__cl_gelu(loom__cl_op *o) { return run(o, LOOM_K_ACT_GELU, "act_gelu"); }
loom_status loom__cl_silu(loom__cl_op *o) { return run(o, LOOM_K_ACT_SILU, "act_silu"); }
loom_status loom__cl_tanh(loom__cl_op *o) { return run(o, LOOM_K_ACT_TANH, "act_tanh"); }
loom_status loom__cl_sigmoid(loom__cl_op *o) { return run(o, LOOM_K_ACT_SIGMOID, "act_sigmoid"); }
loom_status loom__cl_relu_grad(loom__cl_op *o) { return run(o, LOOM_K_ACT_RELU_GRAD, "act_relu_grad"); }
loom_status loom__cl_leaky_relu_grad(loom__cl_op *o) { return run(o, LOOM_K_ACT_LEAKY_GRAD, "act_leaky_relu_grad"); }
loom_status loom__cl_gelu_grad(loom__cl_op *o) { return run(o, LOOM_K_ACT_GELU_GRAD, "act_gelu_grad"); }
loom_status loom__cl_silu_grad(loom__cl_op *o) { return run(o, LOOM_K_ACT_SILU_GRAD, "act_silu_grad"); }
loom_status loom__cl_tanh_grad(loom__cl_op *o) { return run(o, LOOM_K_ACT_TANH_GRAD, "act_tanh_grad"); }
loom_status loom__cl_sigmoid_grad(loom__cl_op *o) { return run(o, LOOM_K_ACT_SIGMOID_GRAD, "act_sigmoid_grad"); }
