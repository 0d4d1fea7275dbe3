/* backends/opencl/ops/binary.c — host side of add/sub/mul/div (flat when
 * the shapes match, else a broadcast geometry table), expand, scale, fill and
 * cast. Kernels in kernels/binary.cl. */
#include "../opencl.h"

static loom_status run_binary(loom__cl_op *o, int kind) {
    const loom_tensor *y = o->t, *a = y->src[0], *b = kind == LOOM_K_BIN_COPY ? a : y->src[1];
    int64_t n = loom_tensor_numel(y);
    cl_kernel k;
    loom_status st;
    if (kind != LOOM_K_BIN_COPY && loom__same_shape(a, y) && loom__same_shape(b, y)) {
        if ((st = loom__cl_kernel(o, y->dtype, "binary_flat", &k)) != LOOM_OK) return st;
        loom__cl_args ar = loom__cl_args_begin(o, k);
        loom__cl_arg_t(&ar, a), loom__cl_arg_t(&ar, b), loom__cl_arg_t(&ar, y);
        loom__cl_arg_i64(&ar, n), loom__cl_arg_i32(&ar, kind);
        if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
        return loom__cl_launch_1d(o, k, n);
    }
    int64_t g[16] = {y->ndim};
    for (int i = 0; i < y->ndim; i++) g[1 + i] = y->dims[i];
    loom__broadcast_strides(a, y, g + 6);
    loom__broadcast_strides(b, y, g + 11);
    cl_mem gm;
    if ((st = loom__cl_meta(o, g, 16, &gm)) != LOOM_OK) return st;
    /* one item per row of y's last axis where loom__cl_rows says (CPU devices; n counts rows) */
    int64_t L = y->ndim ? y->dims[y->ndim - 1] : 1;
    bool rows = L >= 4 && loom__cl_rows(o->cl);
    if ((st = loom__cl_kernel(o, y->dtype, rows ? "binary_bcast_rows" : "binary_bcast", &k)) != LOOM_OK) return st;
    n = rows ? n / L : n;
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_mem(&ar, gm);
    loom__cl_arg_t(&ar, a), loom__cl_arg_t(&ar, b), loom__cl_arg_t(&ar, y);
    loom__cl_arg_i64(&ar, n), loom__cl_arg_i32(&ar, kind);
    if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, n);
}

loom_status loom__cl_add(loom__cl_op *o) { return run_binary(o, LOOM_K_BIN_ADD); }
loom_status loom__cl_sub(loom__cl_op *o) { return run_binary(o, LOOM_K_BIN_SUB); }
loom_status loom__cl_mul(loom__cl_op *o) { return run_binary(o, LOOM_K_BIN_MUL); }
loom_status loom__cl_div(loom__cl_op *o) { return run_binary(o, LOOM_K_BIN_DIV); }
loom_status loom__cl_expand(loom__cl_op *o) { return run_binary(o, LOOM_K_BIN_COPY); }

loom_status loom__cl_scale(loom__cl_op *o) {
    const loom_tensor *y = o->t;
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, y->dtype, "scale", &k);
    if (st != LOOM_OK) return st;
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&ar, y->src[0]), loom__cl_arg_t(&ar, y);
    loom__cl_arg_i64(&ar, loom_tensor_numel(y)), loom__cl_arg_f32(&ar, (float)y->f[LOOM_F_SCALE_S]);
    if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, loom_tensor_numel(y));
}

loom_status loom__cl_fill(loom__cl_op *o) {
    const loom_tensor *y = o->t;
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, y->dtype, "fill", &k);
    if (st != LOOM_OK) return st;
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&ar, y);
    loom__cl_arg_i64(&ar, loom_tensor_numel(y)), loom__cl_arg_f32(&ar, (float)y->f[LOOM_F_FILL_VALUE]);
    if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, loom_tensor_numel(y));
}

loom_status loom__cl_cast(loom__cl_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    if (x->dtype == LOOM_F64)
        return loom__err(o->cl->ctx, LOOM_ERR_UNSUPPORTED,
                         "opencl: cast of '%s' from f64 to %s: the OpenCL backend has no f64 (node '%s')", x->name,
                         loom_dtype_name(y->dtype), y->name);
    cl_kernel k;
    loom_status st = loom__cl_kernel(o, y->dtype, "cast", &k);
    if (st != LOOM_OK) return st;
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&ar, x), loom__cl_arg_i32(&ar, (int32_t)x->dtype);
    loom__cl_arg_t(&ar, y), loom__cl_arg_i32(&ar, (int32_t)y->dtype);
    loom__cl_arg_i64(&ar, loom_tensor_numel(y));
    if ((st = loom__cl_args_end(&ar)) != LOOM_OK) return st;
    return loom__cl_launch_1d(o, k, loom_tensor_numel(y));
}
