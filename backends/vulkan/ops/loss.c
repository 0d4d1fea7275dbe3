/* backends/vulkan/ops/loss.c — host side of cross_entropy (per-row losses
 * into an f32 scratch, then one work-group sums them), cross_entropy_grad
 * (the dloss / count factor into a one-float scratch, then one work-group per
 * row) and mse (one work-group); the rows one invocation each where
 * loom__vk_rows says (CPU devices). Kernels in shaders/loss.comp; parameters in
 * core/ops/loss.c. Bad targets are run-time errors through the plan's error
 * slots, with the CPU's message. */
#include "../vulkan.h"

/* the first bad row: read its target back and say what is wrong */
static loom_status ce_check(loom__vk *vk, const loom_plan *p, const loom_tensor *t, int32_t row) {
    const loom_tensor *tg = t->src[1];
    int32_t v = 0;
    loom_status st = loom__vk_read(vk, loom__vk_buffer_of(p, tg), (loom__vk_elem_off(p, tg) + (size_t)row) * sizeof v,
                                   &v, sizeof v);
    if (st != LOOM_OK) return st;
    return loom__err(vk->ctx, LOOM_ERR_INVALID_ARG,
                     "%s (node '%s'): target %d at row %lld is outside [0, %lld) and is not ignore_index %d",
                     loom_op_name(t->op), t->name, (int)v, (long long)row, (long long)t->src[0]->dims[1],
                     (int)t->p[LOOM_P_CE_IGNORE]);
}

loom_status loom__vk_cross_entropy(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0], *tg = y->src[1];
    int64_t N = x->dims[0], C = x->dims[1];
    o->node->check = ce_check;
    loom__buffer *part;
    loom_status st = loom__vk_scratch(o, (size_t)(N ? N : 1) * sizeof(float), &part);
    if (st != LOOM_OK) return st;
    /* part (N) = loss_i: binding 0 x, 1 tg, 2 part, 3 err slots;
     * push {xo, to, N, C, ignore, eps, slot} */
    loom__vk_call c;
    bool rows = loom__vk_rows(o);
    loom__vk_begin(o, &c, rows ? "ce_rows_rows" : "ce_rows", y->dtype);
    loom__vk_in(&c, x), loom__vk_in(&c, tg), loom__vk_buf(&c, part, LOOM__VK_W);
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C), loom__vk_i32(&c, (int32_t)y->p[LOOM_P_CE_IGNORE]);
    loom__vk_f32(&c, (float)y->f[LOOM_F_CE_EPS]);
    loom__vk_err(&c);
    if ((st = rows ? loom__vk_run_1d(&c, N) : loom__vk_run_groups(&c, N, loom__vk_reduce_local(o->vk, C))) != LOOM_OK)
        return st;
    /* y = sum(part) / count: binding 0 part, 1 tg, 2 y; push {to, yo, N, C, ignore} */
    loom__vk_begin(o, &c, "ce_final", y->dtype);
    loom__vk_buf(&c, part, LOOM__VK_R), loom__vk_in(&c, tg), loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C), loom__vk_i32(&c, (int32_t)y->p[LOOM_P_CE_IGNORE]);
    return loom__vk_run_groups(&c, 1, loom__vk_reduce_local(o->vk, N)); /* N == 0 writes 0 */
}

loom_status loom__vk_cross_entropy_grad(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0], *tg = y->src[1], *dl = y->src[2];
    int64_t N = x->dims[0], C = x->dims[1];
    double eps = y->f[LOOM_F_CE_EPS];
    o->node->check = ce_check;
    loom__buffer *scale;
    loom_status st = loom__vk_scratch(o, sizeof(float), &scale);
    if (st != LOOM_OK) return st;
    /* scale = dloss / count: binding 0 tg, 1 dl, 2 scale; push {to, dlo, N, C, ignore} */
    loom__vk_call c;
    loom__vk_begin(o, &c, "ce_scale", y->dtype);
    loom__vk_in(&c, tg), loom__vk_in(&c, dl), loom__vk_buf(&c, scale, LOOM__VK_W);
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C), loom__vk_i32(&c, (int32_t)y->p[LOOM_P_CE_IGNORE]);
    if ((st = loom__vk_run_groups(&c, 1, loom__vk_reduce_local(o->vk, N))) != LOOM_OK) return st;
    /* dx rows: binding 0 x, 1 tg, 2 scale, 3 dx, 4 err slots;
     * push {xo, to, dxo, N, C, ignore, on, off, slot}. The smoothed one-hot is
     * formed in double and rounded once, as the CPU does. */
    bool rows = loom__vk_rows(o);
    loom__vk_begin(o, &c, rows ? "ce_grad_rows_rows" : "ce_grad_rows", y->dtype);
    loom__vk_in(&c, x), loom__vk_in(&c, tg), loom__vk_buf(&c, scale, LOOM__VK_R), loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C), loom__vk_i32(&c, (int32_t)y->p[LOOM_P_CE_IGNORE]);
    loom__vk_f32(&c, (float)(1.0 - eps + eps / (double)C)), loom__vk_f32(&c, (float)(eps / (double)C));
    loom__vk_err(&c);
    return rows ? loom__vk_run_1d(&c, N) : loom__vk_run_groups(&c, N, loom__vk_reduce_local(o->vk, C));
}

loom_status loom__vk_mse(loom__vk_op *o) {
    const loom_tensor *y = o->t;
    int64_t n = loom_tensor_numel(y->src[0]);
    /* binding 0 a, 1 b, 2 y; push {ao, bo, yo, n} */
    loom__vk_call c;
    loom__vk_begin(o, &c, "mse", y->dtype);
    loom__vk_in(&c, y->src[0]), loom__vk_in(&c, y->src[1]), loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)n);
    return loom__vk_run_groups(&c, 1, loom__vk_reduce_local(o->vk, n));
}

/* ---- reproducible mode (core/repro.h; shaders/repro.comp), f32 only: the
 * kernel table's repro variants; bindings and push constants follow the
 * PUSH blocks of shaders/repro.comp ---- */

loom_status loom__vk_cross_entropy_repro(loom__vk_op *o) {
    o->node->check = ce_check;
    const loom_tensor *y = o->t, *x = y->src[0], *tg = y->src[1];
    int64_t N = x->dims[0], C = x->dims[1];
    double eps = y->f[LOOM_F_CE_EPS];
    loom__buffer *part;
    loom_status st = loom__vk_scratch(o, (size_t)(N ? N : 1) * sizeof(float), &part);
    if (st != LOOM_OK) return st;
    loom__vk_call c;
    loom__vk_begin(o, &c, "repro_ce_rows", LOOM_F32);
    loom__vk_in(&c, x), loom__vk_in(&c, tg), loom__vk_buf(&c, part, LOOM__VK_W);
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C), loom__vk_i32(&c, (int32_t)y->p[LOOM_P_CE_IGNORE]);
    loom__vk_f32(&c, (float)(1.0 - eps)), loom__vk_f32(&c, (float)eps);
    loom__vk_err(&c);
    if ((st = loom__vk_run_1d(&c, N)) != LOOM_OK) return st;
    loom__vk_begin(o, &c, "repro_ce_final", LOOM_F32);
    loom__vk_buf(&c, part, LOOM__VK_R), loom__vk_in(&c, tg), loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C), loom__vk_i32(&c, (int32_t)y->p[LOOM_P_CE_IGNORE]);
    return loom__vk_run_groups(&c, 1, loom__vk_reduce_local(o->vk, (N + 1023) / 1024));
}

loom_status loom__vk_cross_entropy_grad_repro(loom__vk_op *o) {
    o->node->check = ce_check;
    const loom_tensor *y = o->t, *x = y->src[0], *tg = y->src[1], *dl = y->src[2];
    int64_t N = x->dims[0], C = x->dims[1];
    double eps = y->f[LOOM_F_CE_EPS];
    loom__buffer *scale;
    loom_status st = loom__vk_scratch(o, sizeof(float), &scale);
    if (st != LOOM_OK) return st;
    /* scale = dloss / (float)count: ops/loss.c's ce_scale (an exact count, one division) */
    loom__vk_call c;
    loom__vk_begin(o, &c, "ce_scale", LOOM_F32);
    loom__vk_in(&c, tg), loom__vk_in(&c, dl), loom__vk_buf(&c, scale, LOOM__VK_W);
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C), loom__vk_i32(&c, (int32_t)y->p[LOOM_P_CE_IGNORE]);
    if ((st = loom__vk_run_groups(&c, 1, loom__vk_reduce_local(o->vk, N))) != LOOM_OK) return st;
    loom__vk_begin(o, &c, "repro_ce_grad_rows", LOOM_F32);
    loom__vk_in(&c, x), loom__vk_in(&c, tg), loom__vk_buf(&c, scale, LOOM__VK_R), loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C), loom__vk_i32(&c, (int32_t)y->p[LOOM_P_CE_IGNORE]);
    loom__vk_f32(&c, (float)(1.0 - eps + eps / (double)C)), loom__vk_f32(&c, (float)(eps / (double)C));
    loom__vk_err(&c);
    return loom__vk_run_1d(&c, N);
}
