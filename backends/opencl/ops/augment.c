/* backends/opencl/ops/augment.c — host side of augment_u8
 * (kernels/augment.cl): the row sums before contrast (one work-item per
 * output row), the contrast means (one per sample), then one work-item per
 * output pixel. A node with the RandomAffine needs cl_khr_fp64. */
#include "../opencl.h"

loom_status loom__cl_augment_u8(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t n = y->dims[0], oh = y->dims[2], ow = y->dims[3];
    if (y->p[LOOM_P_AUG_AFFINE] && !o->cl->fp64)
        return loom__err(o->cl->ctx, LOOM_ERR_UNSUPPORTED, "opencl: augment_u8 node '%s' applies a RandomAffine, "
                         "which needs cl_khr_fp64; device '%s' lacks it (the loader keeps the affine on the host when "
                         "loom_loader_desc.backend names this backend)", y->name, o->cl->name);
    cl_mem rows, mean;
    cl_kernel kr, km, k;
    loom_status st;
    if ((st = loom__cl_scratch(o, (size_t)(n * oh) * sizeof(uint32_t), &rows)) != LOOM_OK ||
        (st = loom__cl_scratch(o, (size_t)n * sizeof(float), &mean)) != LOOM_OK ||
        (st = loom__cl_kernel(o, y->dtype, "augment_u8_rows", &kr)) != LOOM_OK ||
        (st = loom__cl_kernel(o, y->dtype, "augment_u8_mean", &km)) != LOOM_OK ||
        (st = loom__cl_kernel(o, y->dtype, "augment_u8", &k)) != LOOM_OK)
        return st;
    int32_t c = (int32_t)x->dims[3], h = (int32_t)x->dims[1], w = (int32_t)x->dims[2];
    int32_t fill = (int32_t)y->p[LOOM_P_AUG_FILL];
    loom__cl_args a = loom__cl_args_begin(o, kr);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, y->src[1]), loom__cl_arg_mem(&a, rows), loom__cl_arg_i64(&a, n * oh);
    loom__cl_arg_i32(&a, c), loom__cl_arg_i32(&a, h), loom__cl_arg_i32(&a, w);
    loom__cl_arg_i32(&a, (int32_t)oh), loom__cl_arg_i32(&a, (int32_t)ow), loom__cl_arg_i32(&a, fill);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    a = loom__cl_args_begin(o, km);
    loom__cl_arg_mem(&a, rows), loom__cl_arg_mem(&a, mean), loom__cl_arg_i64(&a, n);
    loom__cl_arg_i32(&a, (int32_t)oh), loom__cl_arg_i32(&a, (int32_t)ow);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, y->src[1]), loom__cl_arg_t(&a, y->src[2]), loom__cl_arg_mem(&a, mean);
    loom__cl_arg_t(&a, y), loom__cl_arg_i64(&a, n * oh * ow), loom__cl_arg_i32(&a, c), loom__cl_arg_i32(&a, h);
    loom__cl_arg_i32(&a, w), loom__cl_arg_i32(&a, (int32_t)oh), loom__cl_arg_i32(&a, (int32_t)ow);
    loom__cl_arg_i32(&a, fill), loom__cl_arg_i32(&a, (int32_t)y->p[LOOM_P_AUG_AFFINE]);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    if ((st = loom__cl_launch_1d(o, kr, n * oh)) != LOOM_OK || (st = loom__cl_launch_1d(o, km, n)) != LOOM_OK)
        return st;
    return loom__cl_launch_1d(o, k, n * oh * ow);
}
