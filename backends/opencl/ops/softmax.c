/* backends/opencl/ops/softmax.c — host side of softmax, log_softmax and
 * their gradient ops (kernels/softmax.cl): one work-group per row. */
#include "../opencl.h"

static loom_status run(loom__cl_op *o, int kind) {
    const loom_tensor *t = o->t;
    int64_t C = t->dims[t->ndim - 1], R = loom_tensor_numel(t) / C;
    size_t local = loom__cl_reduce_local(o->cl, C);
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, t->dtype, "softmax", &k);
    if (st != LOOM_OK) return st;
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&ar, t->src[0]);
    loom__cl_arg_t(&ar, kind >= LOOM_K_SOFTMAX_GRAD ? t->src[1] : t->src[0]);
    loom__cl_arg_t(&ar, t);
    loom__cl_arg_i64(&ar, C), loom__cl_arg_i32(&ar, kind), loom__cl_arg_local(&ar, local * sizeof(float));
    if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
    return loom__cl_launch_groups(o, k, R, local);
}

loom_status loom__cl_softmax(loom__cl_op *o) { return run(o, LOOM_K_SOFTMAX); }
loom_status loom__cl_log_softmax(loom__cl_op *o) { return run(o, LOOM_K_LOG_SOFTMAX); }
loom_status loom__cl_softmax_grad(loom__cl_op *o) { return run(o, LOOM_K_SOFTMAX_GRAD); }
loom_status loom__cl_log_softmax_grad(loom__cl_op *o) { return run(o, LOOM_K_LOG_SOFTMAX_GRAD); }
