/* backends/opencl/ops/correct.c — host side of correct_count
 * (kernels/correct.cl; semantics in core/ops/correct.c): one work-group over
 * the rows. The count is f32; the logits may be f32, f16 or bf16. */
#include "../opencl.h"

loom_status loom__cl_correct_count(loom__cl_op *o) {
    const loom_tensor *t = o->t, *x = t->src[0], *tg = t->src[1];
    if (x->dtype == LOOM_F64)
        return loom__err(o->cl->ctx, LOOM_ERR_UNSUPPORTED, "opencl: correct_count of f64 '%s': no f64 (node '%s')",
                         x->name, t->name);
    int64_t N = x->dims[0], C = x->dims[1];
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, LOOM_F32, "correct_count", &k);
    if (st != LOOM_OK) return st;
    size_t local = loom__cl_reduce_local(o->cl, N);
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, x), loom__cl_arg_i32(&a, (int32_t)x->dtype), loom__cl_arg_t(&a, tg), loom__cl_arg_t(&a, t);
    loom__cl_arg_i64(&a, N), loom__cl_arg_i64(&a, C), loom__cl_arg_local(&a, local * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_groups(o, k, 1, local);
}
