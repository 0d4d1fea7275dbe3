/* backends/vulkan/ops/binary.c — host side of add/sub/mul/div (flat when the
 * shapes match, else a broadcast geometry table), expand, scale, fill and
 * cast. Kernels in shaders/binary.comp; the worked example of vulkan.h's
 * "How to add a family". */
#include "../vulkan.h"

static loom_status run_binary(loom__vk_op *o, int kind) {
    const loom_tensor *y = o->t, *a = y->src[0], *b = kind == LOOM_K_BIN_COPY ? a : y->src[1];
    int64_t n = loom_tensor_numel(y);
    loom__vk_call c;
    if (kind != LOOM_K_BIN_COPY && loom__same_shape(a, y) && loom__same_shape(b, y)) {
        /* binding 0 a, 1 b, 2 y; push {ao, bo, yo, n, kind} */
        loom__vk_begin(o, &c, "binary_flat", y->dtype);
        loom__vk_in(&c, a), loom__vk_in(&c, b), loom__vk_out(&c, y);
        loom__vk_u32(&c, (uint32_t)n), loom__vk_i32(&c, kind);
        return loom__vk_run_1d(&c, n);
    }
    /* g = {nd, dims[5], sa[5], sb[5]}: element strides of a and b per y axis */
    int64_t g[16] = {y->ndim};
    for (int i = 0; i < y->ndim; i++) g[1 + i] = y->dims[i];
    loom__broadcast_strides(a, y, g + 6);
    loom__broadcast_strides(b, y, g + 11);
    loom__buffer *gm;
    loom_status st = loom__vk_meta(o, g, 16, &gm);
    if (st != LOOM_OK) return st;
    /* binding 0 g, 1 a, 2 b, 3 y; push {ao, bo, yo, n, kind}; where loom__vk_rows says (CPU
     * devices) one invocation per row of y's last axis (binary_bcast_rows; n counts rows) */
    int64_t L = y->ndim ? y->dims[y->ndim - 1] : 1;
    bool rows = L >= 4 && loom__vk_rows(o);
    loom__vk_begin(o, &c, rows ? "binary_bcast_rows" : "binary_bcast", y->dtype);
    loom__vk_buf(&c, gm, LOOM__VK_R);
    loom__vk_in(&c, a), loom__vk_in(&c, b), loom__vk_out(&c, y);
    n = rows ? n / L : n;
    loom__vk_u32(&c, (uint32_t)n), loom__vk_i32(&c, kind);
    return loom__vk_run_1d(&c, n);
}

loom_status loom__vk_add(loom__vk_op *o) { return run_binary(o, LOOM_K_BIN_ADD); }
loom_status loom__vk_sub(loom__vk_op *o) { return run_binary(o, LOOM_K_BIN_SUB); }
loom_status loom__vk_mul(loom__vk_op *o) { return run_binary(o, LOOM_K_BIN_MUL); }
loom_status loom__vk_div(loom__vk_op *o) { return run_binary(o, LOOM_K_BIN_DIV); }
loom_status loom__vk_expand(loom__vk_op *o) { return run_binary(o, LOOM_K_BIN_COPY); }

loom_status loom__vk_scale(loom__vk_op *o) {
    const loom_tensor *y = o->t;
    int64_t n = loom_tensor_numel(y);
    loom__vk_call c;
    loom__vk_begin(o, &c, "scale", y->dtype);
    loom__vk_in(&c, y->src[0]), loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)n), loom__vk_f32(&c, (float)y->f[LOOM_F_SCALE_S]);
    return loom__vk_run_1d(&c, n);
}

loom_status loom__vk_fill(loom__vk_op *o) {
    const loom_tensor *y = o->t;
    int64_t n = loom_tensor_numel(y);
    loom__vk_call c;
    loom__vk_begin(o, &c, "fill", y->dtype);
    loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)n), loom__vk_f32(&c, (float)y->f[LOOM_F_FILL_VALUE]);
    return loom__vk_run_1d(&c, n);
}

/* one variant per (source, destination) pair: cast_<from>_<to> */
loom_status loom__vk_cast(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    if (x->dtype == LOOM_F64)
        return loom__err(o->vk->ctx, LOOM_ERR_UNSUPPORTED,
                         "vulkan: cast of '%s' from f64 to %s: the Vulkan backend has no f64 (node '%s')", x->name,
                         loom_dtype_name(y->dtype), y->name);
    char name[32];
    snprintf(name, sizeof name, "cast_%s_%s", loom_dtype_name(x->dtype), loom_dtype_name(y->dtype));
    int64_t n = loom_tensor_numel(y);
    loom__vk_call c;
    loom__vk_begin(o, &c, name, LOOM__VK_NODT);
    loom__vk_in(&c, x), loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)n);
    return loom__vk_run_1d(&c, n);
}
