/* backends/vulkan/ops/pool2d.c — host side of max, average and adaptive
 * average pooling and their gradients (shaders/pool2d.comp): one invocation
 * per output element (forward) or per dx element (gradients, gathers); 2x2
 * stride-2 max pooling of even planes one invocation per window (K_MAX2*;
 * on CPU devices max2*_t read x and dy through texel views).
 * The geometry goes in an int32 meta table (push constants for K_MAX2*);
 * parameters in core/ops/pool2d.c. */
#include "../vulkan.h"

/* geometry table (LOOM_G_POOL_*) from x's and y's shapes */
static loom_status geom(loom__vk_op *o, const int64_t *xd, const int64_t *yd, loom__buffer **out) {
    int64_t g[LOOM_G_POOL_LEN];
    loom__pool_geom(o->t, xd, yd, g);
    return loom__vk_meta(o, g, LOOM_G_POOL_LEN, out);
}

/* 2x2 max pooling in f32 on a CPU device: a window row per vec2 load (max2*_v2; lavapipe
 * loops over its lanes once per load or store instruction) where the offsets allow */
static bool cpu_f32(const loom__vk_op *o, loom_dtype dt) {
    return dt == LOOM_F32 && o->vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
}

static loom_status forward(loom__vk_op *o, int kind) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t nw;
    if (kind == LOOM_K_POOL_MAX && loom__pool_max2(y, x->dims, &nw)) {
        loom__vk_call c;
        bool v2 = cpu_f32(o, y->dtype);
        for (;; v2 = false) {
            loom__vk_begin(o, &c, v2 ? "max2_v2" : "max2", y->dtype);
            loom__vk_in(&c, x), loom__vk_out(&c, y);
            if (!v2 || loom__vk_pushed_aligned(&c, (const int[]){0}, 1, 2)) break; /* xo */
        }
        loom__vk_u32(&c, (uint32_t)nw), loom__vk_u32(&c, (uint32_t)x->dims[3]), loom__vk_u32(&c, (uint32_t)(x->dims[3] / 2));
        if (!v2) loom__vk_texel_variant(&c, "max2_t", y->dtype, (const int[]){0}, 1, 1);
        return loom__vk_run_1d(&c, nw);
    }
    loom__buffer *g;
    loom_status st = geom(o, x->dims, y->dims, &g);
    if (st != LOOM_OK) return st;
    loom__vk_call c;
    loom__vk_begin(o, &c, "pool2d", y->dtype);
    loom__vk_in(&c, x), loom__vk_out(&c, y), loom__vk_buf(&c, g, LOOM__VK_R);
    loom__vk_i32(&c, kind);
    return loom__vk_run_1d(&c, loom_tensor_numel(y));
}

/* dx = the node (x's shape); max: src (x, dy), avg/adaptive: src (dy), bound as x too */
static loom_status backward(loom__vk_op *o, int kind) {
    const loom_tensor *dx = o->t, *x = o->t->src[0], *dy = kind == LOOM_K_POOL_MAX ? o->t->src[1] : o->t->src[0];
    int64_t nw;
    if (kind == LOOM_K_POOL_MAX && loom__pool_max2(dx, dx->dims, &nw)) {
        loom__vk_call c;
        bool v2 = cpu_f32(o, dx->dtype);
        for (;; v2 = false) {
            loom__vk_begin(o, &c, v2 ? "max2_grad_v2" : "max2_grad", dx->dtype);
            loom__vk_in(&c, x), loom__vk_in(&c, dy), loom__vk_out(&c, dx);
            if (!v2 || loom__vk_pushed_aligned(&c, (const int[]){0, 2}, 2, 2)) break; /* xo, dxo */
        }
        loom__vk_u32(&c, (uint32_t)nw), loom__vk_u32(&c, (uint32_t)dx->dims[3]), loom__vk_u32(&c, (uint32_t)(dx->dims[3] / 2));
        if (!v2) loom__vk_texel_variant(&c, "max2_grad_t", dx->dtype, (const int[]){0, 1}, 2, 1);
        return loom__vk_run_1d(&c, nw);
    }
    loom__buffer *g;
    loom_status st = geom(o, dx->dims, dy->dims, &g);
    if (st != LOOM_OK) return st;
    loom__vk_call c;
    loom__vk_begin(o, &c, "pool2d_grad", dx->dtype);
    loom__vk_in(&c, x), loom__vk_in(&c, dy), loom__vk_out(&c, dx), loom__vk_buf(&c, g, LOOM__VK_R);
    loom__vk_i32(&c, kind);
    return loom__vk_run_1d(&c, loom_tensor_numel(dx));
}

/* relu_grad (o->t) -> 2x2 max_pool2d_grad of a fused group: max2_grad's RELU variants (f32) */
loom_status loom__vk_relu_max2_grad(loom__vk_op *o, const loom__fuse_group *g, bool *done) {
    const loom_tensor *rg = o->t, *pg = o->plan->exec[g->m[LOOM__FU_POOL_GRAD]];
    const loom_tensor *x = pg->src[0];
    int64_t nw;
    *done = false;
    if (pg->dtype != LOOM_F32 || pg->src[1] != rg || !loom__pool_max2(pg, pg->dims, &nw) ||
        loom_tensor_numel(rg) != nw)
        return LOOM_OK;
    loom__vk_call c;
    bool v2 = cpu_f32(o, LOOM_F32);
    for (;; v2 = false) {
        /* push {xo, dyo, dxo, rxo, rgo, windows, W, OW} */
        loom__vk_begin(o, &c, v2 ? "max2_grad_relu_v2" : "max2_grad_relu", LOOM_F32);
        loom__vk_in(&c, x), loom__vk_in(&c, rg->src[1]), loom__vk_out(&c, pg);
        loom__vk_in(&c, rg->src[0]), loom__vk_out(&c, rg);
        if (!v2 || loom__vk_pushed_aligned(&c, (const int[]){0, 2}, 2, 2)) break; /* xo, dxo */
    }
    loom__vk_u32(&c, (uint32_t)nw), loom__vk_u32(&c, (uint32_t)pg->dims[3]), loom__vk_u32(&c, (uint32_t)(pg->dims[3] / 2));
    /* relu's input the pool's own output (the cnn's pool -> relu): the texel form, which takes it
     * as the window's maximum instead of loading it */
    const loom_tensor *rx = rg->src[0];
    if (v2 && rx->op == LOOM_OP_MAX_POOL2D && rx->src[0] == x && loom__pool_max2(rx, x->dims, &(int64_t){0}))
        loom__vk_texel_variant(&c, "max2_grad_relu_v2t", LOOM_F32, (const int[]){0, 1}, 2, 1);
    loom_status st = loom__vk_run_1d(&c, nw);
    if (st != LOOM_OK) return st;
    loom__vk_fuse_member(o, g->m[LOOM__FU_POOL_GRAD]);
    *done = true;
    return LOOM_OK;
}

loom_status loom__vk_max_pool2d(loom__vk_op *o) { return forward(o, LOOM_K_POOL_MAX); }
loom_status loom__vk_avg_pool2d(loom__vk_op *o) { return forward(o, LOOM_K_POOL_AVG); }
loom_status loom__vk_adaptive_avg_pool2d(loom__vk_op *o) { return forward(o, LOOM_K_POOL_ADAPTIVE); }
loom_status loom__vk_max_pool2d_grad(loom__vk_op *o) { return backward(o, LOOM_K_POOL_MAX); }
loom_status loom__vk_avg_pool2d_grad(loom__vk_op *o) { return backward(o, LOOM_K_POOL_AVG); }
loom_status loom__vk_adaptive_avg_pool2d_grad(loom__vk_op *o) { return backward(o, LOOM_K_POOL_ADAPTIVE); }
