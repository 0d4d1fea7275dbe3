/* backends/opencl/ops/amp.c — host side of the loss-scaling ops
 * (kernels/amp.cl; semantics in core/ops/amp.c). The scaler's state is f32;
 * the scanned gradient may be f32, f16 or bf16. */
#include "../opencl.h"

loom_status loom__cl_amp_found_inf(loom__cl_op *o) {
    const loom_tensor *t = o->t, *x = t->src[0];
    if (x->dtype == LOOM_F64)
        return loom__err(o->cl->ctx, LOOM_ERR_UNSUPPORTED, "opencl: amp_found_inf of f64 '%s': no f64 (node '%s')",
                         x->name, t->name);
    bool has_prev = t->nsrc > 1;
    const loom_tensor *prev = has_prev ? t->src[1] : t; /* unused when absent */
    cl_kernel k0, k1;
    loom_status st = loom__cl_kernel(o, LOOM_F32, "amp_found_init", &k0);
    if (st == LOOM_OK) st = loom__cl_kernel(o, LOOM_F32, "amp_found_scan", &k1);
    if (st != LOOM_OK) return st;
    loom__cl_args a = loom__cl_args_begin(o, k0);
    loom__cl_arg_t(&a, prev), loom__cl_arg_i32(&a, has_prev), loom__cl_arg_t(&a, t);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK || (st = loom__cl_launch_1d(o, k0, 1)) != LOOM_OK) return st;
    int64_t n = loom_tensor_numel(x);
    a = loom__cl_args_begin(o, k1);
    loom__cl_arg_t(&a, x), loom__cl_arg_i32(&a, (int32_t)x->dtype), loom__cl_arg_i64(&a, n);
    loom__cl_arg_t(&a, prev), loom__cl_arg_i32(&a, has_prev), loom__cl_arg_t(&a, t);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k1, n);
}

loom_status loom__cl_amp_unscale(loom__cl_op *o) {
    const loom_tensor *t = o->t;
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, LOOM_F32, "amp_unscale", &k);
    if (st != LOOM_OK) return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, t->src[0]), loom__cl_arg_t(&a, t->src[1]), loom__cl_arg_t(&a, t->src[2]), loom__cl_arg_t(&a, t);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, 8);
}

loom_status loom__cl_amp_scaler_update(loom__cl_op *o) {
    const loom_tensor *t = o->t;
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, LOOM_F32, "amp_scaler_update", &k);
    if (st != LOOM_OK) return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    for (int i = 0; i < 5; i++) loom__cl_arg_t(&a, t->src[i]);
    loom__cl_arg_t(&a, t);
    loom__cl_arg_f32(&a, (float)t->f[LOOM_F_AMP_GROWTH]), loom__cl_arg_f32(&a, (float)t->f[LOOM_F_AMP_BACKOFF]),
        loom__cl_arg_f32(&a, (float)t->p[LOOM_P_AMP_INTERVAL]);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, 1);
}
