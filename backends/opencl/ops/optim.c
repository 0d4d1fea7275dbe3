/* backends/opencl/ops/optim.c — host side of sgd_step, adam_step,
 * accumulate and clip_coef (kernels/optim.cl). f32 master weights only: an f64
 * parameter is LOOM_ERR_UNSUPPORTED at plan compile. The factors that depend
 * on f[] alone are formed here in double and rounded once, as the CPU does. */
#include "../opencl.h"

/* the eight-element form (sgd_step8, adam_step8) on CPU devices, n a multiple of 8, not in
 * reproducible mode (the one-element kernels stay its canonical ones) */
static bool by8(const loom__cl_op *o, int64_t n) {
    return (o->cl->type & CL_DEVICE_TYPE_CPU) && !o->cl->reproducible && n % 8 == 0 && n > 0;
}

static loom_status need_f32(loom__cl_op *o, const loom_tensor *p) {
    if (p->dtype == LOOM_F32) return LOOM_OK;
    return loom__err(o->cl->ctx, LOOM_ERR_UNSUPPORTED, "opencl: %s on %s parameter '%s': only f32 master weights (node '%s')",
                     loom_op_name(o->t->op), loom_dtype_name(p->dtype), p->name, o->t->name);
}

loom_status loom__cl_sgd_step(loom__cl_op *o) {
    const loom_tensor *t = o->t, *p = t->src[0];
    loom_status st = need_f32(o, p);
    if (st != LOOM_OK) return st;
    int ci = (int)t->p[LOOM_P_OPT_COEF];
    int flags = (t->p[LOOM_P_SGD_BUF] ? LOOM_K_OPT_BUF : 0) | (t->p[LOOM_P_SGD_NESTEROV] ? LOOM_K_OPT_NESTEROV : 0) |
                (t->p[LOOM_P_OPT_ZERO_GRAD] ? LOOM_K_OPT_ZERO_GRAD : 0) | (ci >= 0 ? LOOM_K_OPT_COEF : 0);
    cl_kernel k;
    int64_t n = loom_tensor_numel(p);
    const bool w8 = by8(o, n);
    if ((st = loom__cl_kernel(o, LOOM_F32, w8 ? "sgd_step8" : "sgd_step", &k)) != LOOM_OK) return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, p), loom__cl_arg_t(&a, t->src[1]), loom__cl_arg_t(&a, t->src[2]);
    loom__cl_arg_t(&a, t->p[LOOM_P_SGD_BUF] ? t->src[3] : p); /* momentum buffer (or unused) */
    loom__cl_arg_t(&a, ci >= 0 ? t->src[ci] : t->src[2]); /* coef (or unused) */
    loom__cl_arg_t(&a, t), loom__cl_arg_i64(&a, n), loom__cl_arg_i32(&a, flags);
    loom__cl_arg_f32(&a, (float)t->f[LOOM_F_SGD_MOMENTUM]),
        loom__cl_arg_f32(&a, (float)(1 - t->f[LOOM_F_SGD_DAMPENING])), loom__cl_arg_f32(&a, (float)t->f[LOOM_F_SGD_WD]);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, w8 ? n / 8 : n);
}

loom_status loom__cl_adam_step(loom__cl_op *o) {
    const loom_tensor *t = o->t, *p = t->src[0];
    loom_status st = need_f32(o, p);
    if (st != LOOM_OK) return st;
    int ci = (int)t->p[LOOM_P_OPT_COEF];
    int flags = (t->p[LOOM_P_ADAM_DECOUPLED] ? LOOM_K_OPT_BUF : 0) |
                (t->p[LOOM_P_OPT_ZERO_GRAD] ? LOOM_K_OPT_ZERO_GRAD : 0) | (ci >= 0 ? LOOM_K_OPT_COEF : 0);
    cl_kernel k;
    int64_t n = loom_tensor_numel(p);
    const bool w8 = by8(o, n);
    if ((st = loom__cl_kernel(o, LOOM_F32, w8 ? "adam_step8" : "adam_step", &k)) != LOOM_OK) return st;
    float wd_hi = (float)t->f[LOOM_F_ADAM_WD], wd_lo = (float)(t->f[LOOM_F_ADAM_WD] - (double)wd_hi);
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, p), loom__cl_arg_t(&a, t->src[1]), loom__cl_arg_t(&a, t->src[2]);
    loom__cl_arg_t(&a, t->src[3]), loom__cl_arg_t(&a, t->src[4]);
    loom__cl_arg_t(&a, ci >= 0 ? t->src[ci] : t->src[2]);
    loom__cl_arg_t(&a, t), loom__cl_arg_i64(&a, n), loom__cl_arg_i32(&a, flags);
    loom__cl_arg_f32(&a, (float)t->f[LOOM_F_ADAM_BETA1]), loom__cl_arg_f32(&a, (float)t->f[LOOM_F_ADAM_BETA2]);
    loom__cl_arg_f32(&a, (float)t->f[LOOM_F_ADAM_EPS]), loom__cl_arg_f32(&a, (float)t->f[LOOM_F_ADAM_WD]);
    loom__cl_arg_f32(&a, (float)(1 - t->f[LOOM_F_ADAM_BETA1])),
        loom__cl_arg_f32(&a, (float)(1 - t->f[LOOM_F_ADAM_BETA2]));
    loom__cl_arg_f32(&a, wd_hi), loom__cl_arg_f32(&a, wd_lo);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, w8 ? n / 8 : n);
}

loom_status loom__cl_accumulate(loom__cl_op *o) {
    const loom_tensor *t = o->t, *acc = t->src[0];
    loom_status st = need_f32(o, acc);
    if (st != LOOM_OK) return st;
    cl_kernel k;
    if ((st = loom__cl_kernel(o, LOOM_F32, "accumulate", &k)) != LOOM_OK) return st;
    int64_t n = loom_tensor_numel(acc);
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, acc), loom__cl_arg_t(&a, t->src[1]), loom__cl_arg_t(&a, t), loom__cl_arg_i64(&a, n);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, n);
}

loom_status loom__cl_clip_coef(loom__cl_op *o) {
    const loom_tensor *t = o->t, *ss = t->src[0];
    if (ss->dtype == LOOM_F64) return need_f32(o, ss);
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, LOOM_F32, "clip_coef", &k);
    if (st != LOOM_OK) return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, ss), loom__cl_arg_i32(&a, (int32_t)ss->dtype), loom__cl_arg_t(&a, t->src[1]);
    loom__cl_arg_t(&a, t), loom__cl_arg_f32(&a, (float)t->f[LOOM_F_CLIP_MAX_NORM]);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, 1);
}
