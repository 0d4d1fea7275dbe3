/* backends/opencl/ops/augment.c — host side of augment_u8
 * (kernels/augment.cl): one work-item per output element. */
#include "../opencl.h"

loom_status loom__cl_augment_u8(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, y->dtype, "augment_u8", &k);
    if (st != LOOM_OK) return st;
    int64_t total = loom_tensor_numel(y);
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, y->src[1]), loom__cl_arg_t(&a, y->src[2]), loom__cl_arg_t(&a, y);
    loom__cl_arg_i64(&a, total), loom__cl_arg_i32(&a, (int32_t)x->dims[3]);
    loom__cl_arg_i32(&a, (int32_t)x->dims[1]), loom__cl_arg_i32(&a, (int32_t)x->dims[2]);
    loom__cl_arg_i32(&a, (int32_t)y->dims[2]), loom__cl_arg_i32(&a, (int32_t)y->dims[3]);
    loom__cl_arg_i32(&a, (int32_t)y->p[LOOM_P_AUG_FILL]);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, total);
}
