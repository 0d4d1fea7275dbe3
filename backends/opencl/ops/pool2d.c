/* backends/opencl/ops/pool2d.c — host side of max, average and adaptive
 * average pooling and their gradients (kernels/pool2d.cl): one work-item per
 * output element (forward) or per dx element (gradients, gathers); 2x2
 * stride-2 max pooling of even planes one work-item per window (max2*).
 * The geometry goes in a constant table; parameters in core/ops/pool2d.c. */
#include "../opencl.h"

/* geometry table (LOOM_G_POOL_*) from x's and y's shapes */
static loom_status geom(loom__cl_op *o, const int64_t *xd, const int64_t *yd, cl_mem *out) {
    int64_t g[LOOM_G_POOL_LEN];
    loom__pool_geom(o->t, xd, yd, g);
    return loom__cl_meta(o, g, LOOM_G_POOL_LEN, out);
}

static loom_status forward(loom__cl_op *o, int kind) {
    const loom_tensor *y = o->t, *x = y->src[0];
    cl_mem g;
    cl_kernel k;
    loom_status st;
    int64_t nw;
    if (kind == LOOM_K_POOL_MAX && loom__pool_max2(y, x->dims, &nw)) {
        if ((st = loom__cl_kernel(o, y->dtype, "max2", &k)) != LOOM_OK) return st;
        loom__cl_args a = loom__cl_args_begin(o, k);
        loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, y);
        loom__cl_arg_i64(&a, nw), loom__cl_arg_i64(&a, x->dims[3]), loom__cl_arg_i64(&a, x->dims[3] / 2);
        if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
        return loom__cl_launch_1d(o, k, nw);
    }
    if ((st = geom(o, x->dims, y->dims, &g)) != LOOM_OK || (st = loom__cl_kernel(o, y->dtype, "pool2d", &k)) != LOOM_OK)
        return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, y), loom__cl_arg_mem(&a, g), loom__cl_arg_i32(&a, kind);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, loom_tensor_numel(y));
}

/* dx = the node (x's shape); max: src (x, dy), avg/adaptive: src (dy) */
static loom_status backward(loom__cl_op *o, int kind) {
    const loom_tensor *dx = o->t, *x = o->t->src[0], *dy = kind == LOOM_K_POOL_MAX ? o->t->src[1] : o->t->src[0];
    cl_mem g;
    cl_kernel k;
    loom_status st;
    int64_t nw;
    if (kind == LOOM_K_POOL_MAX && loom__pool_max2(dx, dx->dims, &nw)) {
        if ((st = loom__cl_kernel(o, dx->dtype, "max2_grad", &k)) != LOOM_OK) return st;
        loom__cl_args a = loom__cl_args_begin(o, k);
        loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, dy), loom__cl_arg_t(&a, dx);
        loom__cl_arg_i64(&a, nw), loom__cl_arg_i64(&a, dx->dims[3]), loom__cl_arg_i64(&a, dx->dims[3] / 2);
        if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
        return loom__cl_launch_1d(o, k, nw);
    }
    if ((st = geom(o, dx->dims, dy->dims, &g)) != LOOM_OK ||
        (st = loom__cl_kernel(o, dx->dtype, "pool2d_grad", &k)) != LOOM_OK)
        return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, dy), loom__cl_arg_t(&a, dx), loom__cl_arg_mem(&a, g);
    loom__cl_arg_i32(&a, kind);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, loom_tensor_numel(dx));
}

loom_status loom__cl_max_pool2d(loom__cl_op *o) { return forward(o, LOOM_K_POOL_MAX); }
loom_status loom__cl_avg_pool2d(loom__cl_op *o) { return forward(o, LOOM_K_POOL_AVG); }
loom_status loom__cl_adaptive_avg_pool2d(loom__cl_op *o) { return forward(o, LOOM_K_POOL_ADAPTIVE); }
loom_status loom__cl_max_pool2d_grad(loom__cl_op *o) { return backward(o, LOOM_K_POOL_MAX); }
loom_status loom__cl_avg_pool2d_grad(loom__cl_op *o) { return backward(o, LOOM_K_POOL_AVG); }
loom_status loom__cl_adaptive_avg_pool2d_grad(loom__cl_op *o) { return backward(o, LOOM_K_POOL_ADAPTIVE); }
