/* backends/vulkan/ops/amp.c — host side of the loss-scaling ops
 * (shaders/amp.comp; semantics in core/ops/amp.c). The scaler's tensors are
 * f32; the scanned gradient may be f32, f16 or bf16. */
#include "../vulkan.h"

loom_status loom__vk_amp_found_inf(loom__vk_op *o) {
    const loom_tensor *t = o->t, *x = t->src[0];
    if (x->dtype == LOOM_F64)
        return loom__err(o->vk->ctx, LOOM_ERR_UNSUPPORTED, "vulkan: amp_found_inf of f64 '%s': no f64 (node '%s')",
                         x->name, t->name);
    bool has_prev = t->nsrc > 1;
    const loom_tensor *prev = has_prev ? t->src[1] : t; /* bound but not read when absent */
    /* y = prev (or 0) */
    loom__vk_call c;
    loom__vk_begin(o, &c, "amp_found_init", LOOM__VK_NODT);
    loom__vk_in(&c, prev), loom__vk_out(&c, t);
    loom__vk_u32(&c, has_prev);
    loom_status st = loom__vk_run_1d(&c, 1);
    if (st != LOOM_OK) return st;
    /* any non-finite element of x raises y to prev + 1 */
    int64_t n = loom_tensor_numel(x);
    loom__vk_begin(o, &c, "amp_found_scan", x->dtype);
    loom__vk_in(&c, x), loom__vk_in(&c, prev), loom__vk_inout(&c, t);
    loom__vk_u32(&c, (uint32_t)n), loom__vk_u32(&c, has_prev);
    return loom__vk_run_1d(&c, n);
}

loom_status loom__vk_amp_unscale(loom__vk_op *o) {
    const loom_tensor *t = o->t;
    loom__vk_call c;
    loom__vk_begin(o, &c, "amp_unscale", LOOM__VK_NODT);
    loom__vk_in(&c, t->src[0]), loom__vk_in(&c, t->src[1]), loom__vk_in(&c, t->src[2]), loom__vk_out(&c, t);
    return loom__vk_run_1d(&c, 8);
}

loom_status loom__vk_amp_scaler_update(loom__vk_op *o) {
    const loom_tensor *t = o->t;
    loom__vk_call c;
    loom__vk_begin(o, &c, "amp_scaler_update", LOOM__VK_NODT);
    loom__vk_inout(&c, t->src[0]), loom__vk_inout(&c, t->src[1]), loom__vk_inout(&c, t->src[2]);
    loom__vk_in(&c, t->src[3]), loom__vk_in(&c, t->src[4]), loom__vk_out(&c, t);
    loom__vk_f32(&c, (float)t->f[LOOM_F_AMP_GROWTH]), loom__vk_f32(&c, (float)t->f[LOOM_F_AMP_BACKOFF]),
        loom__vk_f32(&c, (float)t->p[LOOM_P_AMP_INTERVAL]);
    return loom__vk_run_1d(&c, 1);
}
