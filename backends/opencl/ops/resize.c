/* backends/opencl/ops/resize.c — host side of resize_u8
 * (kernels/resize.cl): the width pass into a u8 scratch (one work-item per
 * pixel of it), then the height pass (one per output pixel). */
#include "../opencl.h"

loom_status loom__cl_resize_u8(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0], *taps = y->src[1];
    int64_t n = x->dims[0], h = x->dims[1], w = x->dims[2], c = x->dims[3], oh = y->dims[1], ow = y->dims[2];
    int64_t tmp_n = n * h * ow * c;
    cl_mem tmp;
    cl_kernel kw, kh;
    loom_status st;
    if ((st = loom__cl_scratch(o, (size_t)(tmp_n > 0 ? tmp_n : 1), &tmp)) != LOOM_OK ||
        (st = loom__cl_kernel(o, LOOM_F32, "resize_u8_w", &kw)) != LOOM_OK ||
        (st = loom__cl_kernel(o, LOOM_F32, "resize_u8_h", &kh)) != LOOM_OK)
        return st;
    int32_t span = (int32_t)(taps->dims[1] - 2);
    loom__cl_args a = loom__cl_args_begin(o, kw);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, taps), loom__cl_arg_mem(&a, tmp), loom__cl_arg_i64(&a, n * h * ow);
    loom__cl_arg_i32(&a, (int32_t)c), loom__cl_arg_i32(&a, (int32_t)h), loom__cl_arg_i32(&a, (int32_t)w);
    loom__cl_arg_i32(&a, (int32_t)oh), loom__cl_arg_i32(&a, (int32_t)ow), loom__cl_arg_i32(&a, span);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    a = loom__cl_args_begin(o, kh);
    loom__cl_arg_mem(&a, tmp), loom__cl_arg_t(&a, taps), loom__cl_arg_t(&a, y), loom__cl_arg_i64(&a, n * oh * ow);
    loom__cl_arg_i32(&a, (int32_t)c), loom__cl_arg_i32(&a, (int32_t)h), loom__cl_arg_i32(&a, (int32_t)w);
    loom__cl_arg_i32(&a, (int32_t)oh), loom__cl_arg_i32(&a, (int32_t)ow), loom__cl_arg_i32(&a, span);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    if ((st = loom__cl_launch_1d(o, kw, n * h * ow)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, kh, n * oh * ow);
}
