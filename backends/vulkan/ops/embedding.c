/* backends/vulkan/ops/embedding.c — host side of embedding and
 * embedding_grad (shaders/embedding.comp). Bad indices are run-time errors
 * through the plan's error slots, with the CPU's message. */
#include "../vulkan.h"

/* the first bad position k: read its index back, name it as a multi-index */
static loom_status idx_check(loom__vk *vk, const loom_plan *p, const loom_tensor *t, int32_t k) {
    const loom_tensor *it = t->src[1];
    int64_t V = t->op == LOOM_OP_EMBEDDING ? t->src[0]->dims[0] : t->p[LOOM_P_EMB_V];
    int32_t v = 0;
    loom_status st = loom__vk_read(vk, loom__vk_buffer_of(p, it), (loom__vk_elem_off(p, it) + (size_t)k) * sizeof v,
                                   &v, sizeof v);
    if (st != LOOM_OK) return st;
    int64_t c[LOOM_MAX_DIMS], r = k;
    for (int d = it->ndim - 1; d >= 0; d--) c[d] = r % it->dims[d], r /= it->dims[d];
    char pos[96];
    loom__shape_str(it->ndim, c, pos, sizeof pos);
    return loom__err(vk->ctx, LOOM_ERR_INVALID_ARG,
                     "%s: index %d at position %s of '%s' is out of range [0, %lld) (node '%s')", loom_op_name(t->op),
                     v, pos, it->name, (long long)V, t->name);
}

loom_status loom__vk_embedding(loom__vk_op *o) {
    const loom_tensor *y = o->t, *w = y->src[0], *it = y->src[1];
    int64_t n = loom_tensor_numel(it), D = w->dims[1];
    o->node->check = idx_check;
    /* binding 0 w, 1 idx, 2 y, 3 err slots; push {wo, io, yo, n, D, V, slot} */
    loom__vk_call c;
    loom__vk_begin(o, &c, "embedding", y->dtype);
    loom__vk_in(&c, w), loom__vk_in(&c, it), loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)n), loom__vk_u32(&c, (uint32_t)D), loom__vk_u32(&c, (uint32_t)w->dims[0]);
    loom__vk_err(&c);
    return loom__vk_run_1d(&c, n * D);
}

loom_status loom__vk_embedding_grad(loom__vk_op *o) {
    const loom_tensor *y = o->t, *dy = y->src[0], *it = y->src[1];
    int64_t n = loom_tensor_numel(it), V = y->p[LOOM_P_EMB_V], D = y->dims[1];
    bool f32 = y->dtype == LOOM_F32;
    o->node->check = idx_check;
    loom__buffer *acc = NULL;
    loom_status st;
    if (!f32 && (st = loom__vk_scratch(o, (size_t)(V * D > 0 ? V * D : 1) * sizeof(float), &acc)) != LOOM_OK) return st;
    /* binding 0 dy, 1 idx, 2 acc (y itself for f32, else the f32 scratch),
     * 3 err slots; push {dyo, io, ao, n, D, V, slot} */
    loom__vk_call c;
    loom__vk_begin(o, &c, "embedding_grad", y->dtype);
    loom__vk_in(&c, dy), loom__vk_in(&c, it);
    if (f32) {
        loom__vk_out(&c, y); /* accumulate straight into y */
    } else {
        loom__vk_buf(&c, acc, LOOM__VK_W), loom__vk_u32(&c, 0);
    }
    loom__vk_u32(&c, (uint32_t)n), loom__vk_u32(&c, (uint32_t)D), loom__vk_u32(&c, (uint32_t)V);
    loom__vk_err(&c);
    if ((st = loom__vk_run_1d(&c, D)) != LOOM_OK || f32) return st;
    /* y = acc rounded: binding 0 acc, 1 y; push {yo, n} */
    loom__vk_begin(o, &c, "embedding_grad_store", y->dtype);
    loom__vk_buf(&c, acc, LOOM__VK_R), loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)(V * D));
    return loom__vk_run_1d(&c, V * D);
}
