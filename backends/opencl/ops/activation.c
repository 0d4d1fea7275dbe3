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

/* loom__cl_<name>: kind LOOM_K_ACT_<KIND>, kernel act_<name> */
#define LOOM__CL_ACT(name, KIND) \
    loom_status loom__cl_##name(loom__cl_op *o) { return run(o, LOOM_K_ACT_##KIND, "act_" #name); }
LOOM__CL_ACT(relu, RELU)
LOOM__CL_ACT(leaky_relu, LEAKY)
LOOM__CL_ACT(gelu, GELU)
LOOM__CL_ACT(silu, SILU)
LOOM__CL_ACT(tanh, TANH)
LOOM__CL_ACT(sigmoid, SIGMOID)
LOOM__CL_ACT(relu_grad, RELU_GRAD)
LOOM__CL_ACT(leaky_relu_grad, LEAKY_GRAD)
LOOM__CL_ACT(gelu_grad, GELU_GRAD)
LOOM__CL_ACT(silu_grad, SILU_GRAD)
LOOM__CL_ACT(tanh_grad, TANH_GRAD)
LOOM__CL_ACT(sigmoid_grad, SIGMOID_GRAD)
