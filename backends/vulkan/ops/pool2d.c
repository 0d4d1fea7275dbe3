/* backends/vulkan/ops/pool2d.c — host side of max, average and adaptive
 * average pooling and their gradients (shaders/pool2d.comp): one invocation
 * per output element (forward) or per dx element (gradients, gathers). The
 * geometry goes in an int32 meta table; parameters in core/ops/pool2d.c. */
#include "../vulkan.h"

enum { K_MAX, K_AVG, K_ADAPTIVE };

/* geometry table (layout: PG_* in shaders/pool2d.comp) from x's and y's shapes */
static loom_status geom(loom__vk_op *o, const int64_t *xd, const int64_t *yd, loom__buffer **out) {
    const int64_t *p = o->t->p;
    int64_t g[12] = {xd[0] * xd[1], xd[2], xd[3], yd[2], yd[3], p[0], p[1], p[2], p[3], p[4], p[5], p[6]};
    return loom__vk_meta(o, g, 12, out);
}

static loom_status forward(loom__vk_op *o, int kind) {
    const loom_tensor *y = o->t, *x = y->src[0];
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
    const loom_tensor *dx = o->t, *x = o->t->src[0], *dy = kind == K_MAX ? o->t->src[1] : o->t->src[0];
    loom__buffer *g;
    loom_status st = geom(o, dx->dims, dy->dims, &g);
    if (st != LOOM_OK) return st;
    loom__vk_call c;
    loom__vk_begin(o, &c, "pool2d_grad", dx->dtype);
    loom__vk_in(&c, x), loom__vk_in(&c, dy), loom__vk_out(&c, dx), loom__vk_buf(&c, g, LOOM__VK_R);
    loom__vk_i32(&c, kind);
    return loom__vk_run_1d(&c, loom_tensor_numel(dx));
}

loom_status loom__vk_max_pool2d(loom__vk_op *o) { return forward(o, K_MAX); }
loom_status loom__vk_avg_pool2d(loom__vk_op *o) { return forward(o, K_AVG); }
loom_status loom__vk_adaptive_avg_pool2d(loom__vk_op *o) { return forward(o, K_ADAPTIVE); }
loom_status loom__vk_max_pool2d_grad(loom__vk_op *o) { return backward(o, K_MAX); }
loom_status loom__vk_avg_pool2d_grad(loom__vk_op *o) { return backward(o, K_AVG); }
loom_status loom__vk_adaptive_avg_pool2d_grad(loom__vk_op *o) { return backward(o, K_ADAPTIVE); }
