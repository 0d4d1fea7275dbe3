/* backends/opencl/ops/pool2d.c — host side of max, average and adaptive
 * average pooling and their gradients (kernels/pool2d.cl): one work-item per
 * output element (forward) or per dx element (gradients, gathers); 2x2
 * stride-2 max pooling of even planes one work-item per window (max2*; the
 * forward on CPU devices over a 2-D range, max2_2d).
 * The geometry goes in a constant table; parameters in core/ops/pool2d.c. */
#include "../kernel_sizes.h"
#include "../opencl.h"

/* geometry table (LOOM_G_POOL_*) from x's and y's shapes */
static loom_status geom(loom__cl_op *o, const int64_t *xd, const int64_t *yd, cl_mem *out) {
    int64_t g[LOOM_G_POOL_LEN];
    loom__pool_geom(o->t, xd, yd, g);
    return loom__cl_meta(o, g, LOOM_G_POOL_LEN, out);
}

/* 2x2 max pooling's forward over a 2-D range (window j, window row r) on
 * CPU devices (max2_2d: PoCL loads the stride-2 windows of neighbouring
 * work-items as vectors; the cnn's first layer, standalone: 1.4 -> 0.5-0.7
 * ms), one work-item per window (1-D) on GPUs; LOOM_OPENCL_POOL_2D=0|1
 * forces either (checked when the backend was made), and for relu_grad +
 * the pool gradient of a fused group, the explicit-vector form on CPU
 * devices (max2_grad_relu_v8: 8 windows at a time, 16 rows of windows per
 * work-group; the cnn's layers 1.0 / 0.5 -> 0.47-0.52 / 0.34 ms; a row's
 * last windows in whole vectors, PoCL on an AMD EPYC (Zen 3): 0.68-0.70 /
 * 0.62-0.67 -> 0.54-0.58 / 0.29-0.32 ms) against
 * the one-work-item-per-window form a GPU runs (a 2-D range of single
 * windows ran slower on PoCL: 2.6-2.9 vs 1.8-2.2 ms per step). */
static bool pool_2d(const loom__cl_op *o) {
    int e = loom__env_switch("LOOM_OPENCL_POOL_2D");
    if (e >= 0) return e == 1;
    return (o->cl->type & CL_DEVICE_TYPE_CPU) != 0;
}

bool loom__cl_pool_v8(const loom__cl_op *o) { return pool_2d(o); }

loom_status loom__cl_launch_window_rows(loom__cl_op *o, cl_kernel k, int64_t OW, int64_t rows) {
    size_t l0 = OW < 64 ? (size_t)OW : 64;
    if (l0 > o->cl->max_wg) l0 = o->cl->max_wg;
    return loom__cl_launch_2d_local(o, k, OW, l0, rows);
}

static loom_status forward(loom__cl_op *o, int kind) {
    const loom_tensor *y = o->t, *x = y->src[0];
    cl_mem g;
    cl_kernel k;
    loom_status st;
    int64_t nw;
    if (kind == LOOM_K_POOL_MAX && loom__pool_max2(y, x->dims, &nw)) {
        bool two = pool_2d(o);
        int64_t OW = x->dims[3] / 2, rows = nw / OW;
        if ((st = loom__cl_kernel(o, y->dtype, two ? "max2_2d" : "max2", &k)) != LOOM_OK) return st;
        loom__cl_args a = loom__cl_args_begin(o, k);
        loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, y);
        loom__cl_arg_i64(&a, two ? rows : nw), loom__cl_arg_i64(&a, x->dims[3]), loom__cl_arg_i64(&a, OW);
        if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
        return two ? loom__cl_launch_window_rows(o, k, OW, rows) : loom__cl_launch_1d(o, k, nw);
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

/* relu_grad (o->t) -> 2x2 max_pool2d_grad of a fused group: max2_grad_relu (GPUs) or max2_grad_relu_v8 */
loom_status loom__cl_relu_max2_grad(loom__cl_op *o, const loom__fuse_group *g, bool *done) {
    const loom_tensor *rg = o->t, *pg = o->plan->exec[g->m[LOOM__FU_POOL_GRAD]];
    int64_t nw;
    cl_kernel k;
    loom_status st;
    *done = false;
    if (pg->src[1] != rg || !loom__pool_max2(pg, pg->dims, &nw) || loom_tensor_numel(rg) != nw) return LOOM_OK;
    const bool v8 = loom__cl_pool_v8(o); /* CPU devices: 8 windows at a time, explicit vectors */
    int64_t OW = pg->dims[3] / 2, rows = nw / OW;
    if ((st = loom__cl_kernel(o, pg->dtype, v8 ? "max2_grad_relu_v8" : "max2_grad_relu", &k)) != LOOM_OK) return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, pg->src[0]), loom__cl_arg_t(&a, rg->src[1]), loom__cl_arg_t(&a, pg);
    loom__cl_arg_t(&a, rg->src[0]), loom__cl_arg_t(&a, rg);
    loom__cl_arg_i64(&a, v8 ? rows : nw), loom__cl_arg_i64(&a, pg->dims[3]), loom__cl_arg_i64(&a, OW);
    if (v8) loom__cl_arg_i32(&a, !loom__cl_overlap(o->plan, pg, pg->src[0])); /* whole: dx not over x */
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    st = v8 ? loom__cl_launch_groups(o, k, (rows + LOOM_CL_MAX2_V8_ROWS - 1) / LOOM_CL_MAX2_V8_ROWS, 1)
            : loom__cl_launch_1d(o, k, nw);
    if (st != LOOM_OK) return st;
    loom__cl_fuse_member(o, g->m[LOOM__FU_POOL_GRAD]);
    *done = true;
    return LOOM_OK;
}

loom_status loom__cl_max_pool2d(loom__cl_op *o) { return forward(o, LOOM_K_POOL_MAX); }
loom_status loom__cl_avg_pool2d(loom__cl_op *o) { return forward(o, LOOM_K_POOL_AVG); }
loom_status loom__cl_adaptive_avg_pool2d(loom__cl_op *o) { return forward(o, LOOM_K_POOL_ADAPTIVE); }
loom_status loom__cl_max_pool2d_grad(loom__cl_op *o) { return backward(o, LOOM_K_POOL_MAX); }
loom_status loom__cl_avg_pool2d_grad(loom__cl_op *o) { return backward(o, LOOM_K_POOL_AVG); }
loom_status loom__cl_adaptive_avg_pool2d_grad(loom__cl_op *o) { return backward(o, LOOM_K_POOL_ADAPTIVE); }
