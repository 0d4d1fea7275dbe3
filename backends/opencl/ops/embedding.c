/* backends/opencl/ops/embedding.c — host side of embedding and
 * embedding_grad (kernels/embedding.cl). Bad indices are run-time errors
 * through the plan's error slots, with the CPU's message. */
#include "../opencl.h"

/* the first bad position k: read its index back, name it as a multi-index */
static loom_status idx_check(loom__cl *cl, const loom_plan *p, const loom_tensor *t, int32_t k) {
    const loom_tensor *it = t->src[1];
    int64_t V = t->op == LOOM_OP_EMBEDDING ? t->src[0]->dims[0] : t->p[LOOM_P_EMB_V];
    int32_t v = 0;
    cl_int e = clEnqueueReadBuffer(cl->queue, loom__cl_mem(p, it), CL_TRUE,
                                   (loom__cl_elem_off(p, it) + (size_t)k) * sizeof v, sizeof v, &v, 0, NULL, NULL);
    if (e != CL_SUCCESS) return loom__cl_fail(cl->ctx, e, "clEnqueueReadBuffer(bad index)", __FILE__, __LINE__);
    int64_t c[LOOM_MAX_DIMS], r = k;
    for (int d = it->ndim - 1; d >= 0; d--) c[d] = r % it->dims[d], r /= it->dims[d];
    char pos[96];
    loom__shape_str(it->ndim, c, pos, sizeof pos);
    return loom__err(cl->ctx, LOOM_ERR_INVALID_ARG, "%s: index %d at position %s of '%s' is out of range [0, %lld) (node '%s')",
                     loom_op_name(t->op), v, pos, it->name, (long long)V, t->name);
}

loom_status loom__cl_embedding(loom__cl_op *o) {
    const loom_tensor *y = o->t, *w = y->src[0], *it = y->src[1];
    int64_t n = loom_tensor_numel(it), D = w->dims[1];
    int slot;
    loom__cl_err_slot(o, &slot);
    o->node->check = idx_check;
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, y->dtype, "embedding", &k);
    if (st != LOOM_OK) return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, w), loom__cl_arg_t(&a, it), loom__cl_arg_t(&a, y);
    loom__cl_arg_i64(&a, n), loom__cl_arg_i64(&a, D), loom__cl_arg_i64(&a, w->dims[0]);
    loom__cl_arg_mem(&a, o->err_buf), loom__cl_arg_i32(&a, slot);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, n * D);
}

loom_status loom__cl_embedding_grad(loom__cl_op *o) {
    const loom_tensor *y = o->t, *dy = y->src[0], *it = y->src[1];
    int64_t n = loom_tensor_numel(it), V = y->p[LOOM_P_EMB_V], D = y->dims[1];
    bool f32 = y->dtype == LOOM_F32;
    int slot;
    loom__cl_err_slot(o, &slot);
    o->node->check = idx_check;
    cl_mem acc = NULL;
    cl_kernel k, ks = NULL;
    loom_status st;
    if (!f32 && (st = loom__cl_scratch(o, (size_t)(V * D) * sizeof(float), &acc)) != LOOM_OK) return st;
    if ((st = loom__cl_kernel(o, y->dtype, "embedding_grad", &k)) != LOOM_OK) return st;
    if (!f32 && (st = loom__cl_kernel(o, y->dtype, "embedding_grad_store", &ks)) != LOOM_OK) return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, dy), loom__cl_arg_t(&a, it);
    if (f32) {
        loom__cl_arg_t(&a, y); /* accumulate straight into y */
    } else {
        loom__cl_arg_mem(&a, acc), loom__cl_arg_u64(&a, 0);
    }
    loom__cl_arg_i64(&a, n), loom__cl_arg_i64(&a, D), loom__cl_arg_i64(&a, V);
    loom__cl_arg_mem(&a, o->err_buf), loom__cl_arg_i32(&a, slot);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    if ((st = loom__cl_launch_1d(o, k, D)) != LOOM_OK || f32) return st;
    a = loom__cl_args_begin(o, ks);
    loom__cl_arg_mem(&a, acc), loom__cl_arg_t(&a, y), loom__cl_arg_i64(&a, V * D);
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, ks, V * D);
}
