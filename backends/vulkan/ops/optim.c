/* backends/vulkan/ops/optim.c — host side of sgd_step, adam_step,
 * accumulate and clip_coef (shaders/optim.comp; semantics and the hyper
 * layout in core/ops/optim.c). f32 master weights only: an f64 parameter is
 * LOOM_ERR_UNSUPPORTED at plan compile. The factors that depend on f[] alone
 * are formed here in double and rounded once, as the CPU does. Params,
 * gradients and states are written in place (loom__vk_inout). On CPU
 * devices sgd_step runs eight or four elements per invocation where the sizes
 * and offsets allow (sgd_step_v8, sgd_step_v4). */
#include "../vulkan.h"

static loom_status need_f32(loom__vk_op *o, const loom_tensor *p) {
    if (p->dtype == LOOM_F32) return LOOM_OK;
    return loom__err(o->vk->ctx, LOOM_ERR_UNSUPPORTED, "vulkan: %s on %s tensor '%s': only f32 master weights (node '%s')",
                     loom_op_name(o->t->op), loom_dtype_name(p->dtype), p->name, o->t->name);
}

loom_status loom__vk_sgd_step(loom__vk_op *o) {
    const loom_tensor *t = o->t, *p = t->src[0];
    loom_status st = need_f32(o, p);
    if (st != LOOM_OK) return st;
    int ci = (int)t->p[LOOM_P_OPT_COEF];
    uint32_t flags = (t->p[LOOM_P_SGD_BUF] ? LOOM_K_OPT_BUF : 0) |
                     (t->p[LOOM_P_SGD_NESTEROV] ? LOOM_K_OPT_NESTEROV : 0) |
                     (t->p[LOOM_P_OPT_ZERO_GRAD] ? LOOM_K_OPT_ZERO_GRAD : 0) | (ci >= 0 ? LOOM_K_OPT_COEF : 0);
    int64_t n = loom_tensor_numel(p);
    loom__vk_call c;
    /* on a CPU device with n and the offsets of p, grad and buf multiples of 8: sgd_step_v8 (where the
     * device has 64-bit integers), of 4: sgd_step_v4; w elements per invocation */
    bool cpu = n > 0 && o->vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    int w = cpu && n % 8 == 0 && o->vk->int64 ? 8 : cpu && n % 4 == 0 ? 4 : 1;
    for (;; w = w == 8 ? 4 : 1) { /* n % 8 == 0: n % 4 == 0 too */
        /* bindings p, grad, hyper, buf, coef, y: push {po, go, ho, bo, co, yo, n, flags, mom, damp1, wd} */
        loom__vk_begin(o, &c, w == 8 ? "sgd_step_v8" : w == 4 ? "sgd_step_v4" : "sgd_step", LOOM__VK_NODT);
        loom__vk_inout(&c, p), loom__vk_inout(&c, t->src[1]), loom__vk_in(&c, t->src[2]);
        if (t->p[LOOM_P_SGD_BUF])
            loom__vk_inout(&c, t->src[3]);
        else loom__vk_in(&c, p); /* unused */
        loom__vk_in(&c, ci >= 0 ? t->src[ci] : t->src[2]); /* coef (or unused) */
        loom__vk_out(&c, t);
        if (w == 1 || loom__vk_pushed_aligned(&c, (const int[]){0, 1, 3}, 3, (uint32_t)w)) break; /* po, go, bo */
    }
    n /= w;
    loom__vk_u32(&c, (uint32_t)n), loom__vk_u32(&c, flags);
    loom__vk_f32(&c, (float)t->f[LOOM_F_SGD_MOMENTUM]), loom__vk_f32(&c, (float)(1 - t->f[LOOM_F_SGD_DAMPENING])),
        loom__vk_f32(&c, (float)t->f[LOOM_F_SGD_WD]);
    return loom__vk_run_1d(&c, n > 0 ? n : 1); /* invocation 0 writes y */
}

loom_status loom__vk_adam_step(loom__vk_op *o) {
    const loom_tensor *t = o->t, *p = t->src[0];
    loom_status st = need_f32(o, p);
    if (st != LOOM_OK) return st;
    int ci = (int)t->p[LOOM_P_OPT_COEF];
    uint32_t flags = (t->p[LOOM_P_ADAM_DECOUPLED] ? LOOM_K_OPT_BUF : 0) |
                     (t->p[LOOM_P_OPT_ZERO_GRAD] ? LOOM_K_OPT_ZERO_GRAD : 0) | (ci >= 0 ? LOOM_K_OPT_COEF : 0);
    int64_t n = loom_tensor_numel(p);
    float wd_hi = (float)t->f[LOOM_F_ADAM_WD], wd_lo = (float)(t->f[LOOM_F_ADAM_WD] - (double)wd_hi);
    loom__vk_call c;
    /* bindings p, grad, hyper, m, v, coef, y: push {po, go, ho, mo, vo, co, yo, n, flags,
     * b1, b2, eps, wd, omb1, omb2, wd_hi, wd_lo} */
    loom__vk_begin(o, &c, "adam_step", LOOM__VK_NODT);
    loom__vk_inout(&c, p), loom__vk_inout(&c, t->src[1]), loom__vk_in(&c, t->src[2]);
    loom__vk_inout(&c, t->src[3]), loom__vk_inout(&c, t->src[4]);
    loom__vk_in(&c, ci >= 0 ? t->src[ci] : t->src[2]);
    loom__vk_out(&c, t);
    loom__vk_u32(&c, (uint32_t)n), loom__vk_u32(&c, flags);
    loom__vk_f32(&c, (float)t->f[LOOM_F_ADAM_BETA1]), loom__vk_f32(&c, (float)t->f[LOOM_F_ADAM_BETA2]);
    loom__vk_f32(&c, (float)t->f[LOOM_F_ADAM_EPS]), loom__vk_f32(&c, (float)t->f[LOOM_F_ADAM_WD]);
    loom__vk_f32(&c, (float)(1 - t->f[LOOM_F_ADAM_BETA1])), loom__vk_f32(&c, (float)(1 - t->f[LOOM_F_ADAM_BETA2]));
    loom__vk_f32(&c, wd_hi), loom__vk_f32(&c, wd_lo);
    return loom__vk_run_1d(&c, n > 0 ? n : 1);
}

loom_status loom__vk_accumulate(loom__vk_op *o) {
    const loom_tensor *t = o->t, *acc = t->src[0];
    loom_status st = need_f32(o, acc);
    if (st != LOOM_OK) return st;
    int64_t n = loom_tensor_numel(acc);
    loom__vk_call c;
    /* bindings acc, grad, y: push {ao, go, yo, n} */
    loom__vk_begin(o, &c, "accumulate", LOOM__VK_NODT);
    loom__vk_inout(&c, acc), loom__vk_in(&c, t->src[1]), loom__vk_out(&c, t);
    loom__vk_u32(&c, (uint32_t)n);
    return loom__vk_run_1d(&c, n > 0 ? n : 1);
}

loom_status loom__vk_clip_coef(loom__vk_op *o) {
    const loom_tensor *t = o->t, *ss = t->src[0];
    if (ss->dtype != LOOM_F32 && ss->dtype != LOOM_F16 && ss->dtype != LOOM_BF16) return need_f32(o, ss);
    loom__vk_call c;
    /* bindings sumsq (32-bit words), hyper, y: push {so, ho, yo, sdt, max_norm} */
    loom__vk_begin(o, &c, "clip_coef", LOOM__VK_NODT);
    loom__vk_in(&c, ss), loom__vk_in(&c, t->src[1]), loom__vk_out(&c, t);
    loom__vk_u32(&c, (uint32_t)ss->dtype), loom__vk_f32(&c, (float)t->f[LOOM_F_CLIP_MAX_NORM]);
    return loom__vk_run_1d(&c, 1);
}
