/* backends/vulkan/ops/norm.c — host side of batch norm, layer norm and their
 * gradient ops (shaders/norm.comp). Optional inputs are found by the src
 * indices in node->p[] (core/ops/norm.c); an absent one is bound to x (read
 * only) and flagged off. Batch norm: one work-group per channel (forward,
 * statistics), one invocation per element (dx); layer norm: one work-group
 * per row (forward, dx, row statistics), one per column (parameter
 * gradients). Every kernel runs in the variant of x's dtype; running
 * statistics, the (4, C) batch-norm statistics and the layer-norm row
 * statistics are f32. */
#include "../vulkan.h"

/* src[idx], or x when absent (idx < 0) */
static const loom_tensor *opt(const loom_tensor *t, int64_t idx) { return idx >= 0 ? t->src[idx] : t->src[0]; }

/* x (N, C, S): N, C and S = prod(dims[2:]) */
static void bn_dims(const loom_tensor *x, int64_t *N, int64_t *C, int64_t *S) {
    *N = x->dims[0], *C = x->dims[1], *S = 1;
    for (int d = 2; d < x->ndim; d++) *S *= x->dims[d];
}

/* The f32 batch-norm kernels' vec4 variants (<name>_v4: one vec4 of a plane
 * per load, which lavapipe runs as one load loop over its lanes instead of
 * four; on CPU devices the _v4t forms read x and dy through texel views,
 * which lavapipe gathers) serve f32 tensors whose planes hold a multiple of 4 elements; v4
 * says which the call begins with, and loom__vk_pushed_aligned whether the
 * offsets the binding pushed (push words `words`) allow it. */
static bool v4_wanted(loom_dtype dt, int64_t S) { return dt == LOOM_F32 && S % 4 == 0; }

loom_status loom__vk_batch_norm(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    bool train = y->p[LOOM_P_BN_TRAIN] != 0, run = y->p[LOOM_P_BN_RMEAN] >= 0;
    loom__vk_call c;
    static const int words[] = {0, 5}; /* xo, yo */
    bool v4 = v4_wanted(x->dtype, S);
    for (;; v4 = false) {
        loom__vk_begin(o, &c, v4 ? "batch_norm_v4" : "batch_norm", x->dtype);
        loom__vk_in(&c, x), loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_GAMMA])), loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_BETA]));
        if (train && run) /* updated in place */
            loom__vk_inout(&c, opt(y, y->p[LOOM_P_BN_RMEAN])), loom__vk_inout(&c, opt(y, y->p[LOOM_P_BN_RVAR]));
        else
            loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_RMEAN])), loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_RVAR]));
        loom__vk_out(&c, y);
        if (!v4 || loom__vk_pushed_aligned(&c, words, 2, 4)) break;
    }
    if (v4) loom__vk_texel_variant(&c, "batch_norm_v4t", x->dtype, (const int[]){0}, 1, 4);
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C), loom__vk_u32(&c, (uint32_t)S);
    loom__vk_i32(&c, train), loom__vk_i32(&c, y->p[LOOM_P_BN_GAMMA] >= 0), loom__vk_i32(&c, y->p[LOOM_P_BN_BETA] >= 0);
    loom__vk_i32(&c, run), loom__vk_f32(&c, (float)y->f[LOOM_F_BN_EPS]),
        loom__vk_f32(&c, (float)y->f[LOOM_F_BN_MOMENTUM]);
    return loom__vk_run_groups(&c, C, loom__vk_reduce_local(o->vk, N * S));
}

loom_status loom__vk_batch_norm_grad_params(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    loom__vk_call c;
    static const int words[] = {0, 1}; /* xo, dyo */
    bool v4 = v4_wanted(x->dtype, S);
    for (;; v4 = false) {
        loom__vk_begin(o, &c, v4 ? "batch_norm_grad_params_v4" : "batch_norm_grad_params", x->dtype);
        loom__vk_in(&c, x), loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_DY]));
        loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_RMEAN])), loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_RVAR])), loom__vk_out(&c, y);
        if (!v4 || loom__vk_pushed_aligned(&c, words, 2, 4)) break;
    }
    if (v4) loom__vk_texel_variant(&c, "batch_norm_grad_params_v4t", x->dtype, (const int[]){0, 1}, 2, 4);
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C), loom__vk_u32(&c, (uint32_t)S);
    loom__vk_i32(&c, y->p[LOOM_P_BN_TRAIN] != 0), loom__vk_f32(&c, (float)y->f[LOOM_F_BN_EPS]);
    return loom__vk_run_groups(&c, C, loom__vk_reduce_local(o->vk, N * S));
}

loom_status loom__vk_batch_norm_grad(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    loom__vk_call c;
    static const int words[] = {0, 2, 4}; /* xo, dyo, dxo */
    bool v4 = v4_wanted(x->dtype, S);
    for (;; v4 = false) {
        loom__vk_begin(o, &c, v4 ? "batch_norm_grad_v4" : "batch_norm_grad", x->dtype);
        loom__vk_in(&c, x), loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_GAMMA])), loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_DY]));
        loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_STATS])), loom__vk_out(&c, y);
        if (!v4 || loom__vk_pushed_aligned(&c, words, 3, 4)) break;
    }
    if (v4) loom__vk_texel_variant(&c, "batch_norm_grad_v4t", x->dtype, (const int[]){0, 2}, 2, 4);
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C), loom__vk_u32(&c, (uint32_t)S);
    loom__vk_i32(&c, y->p[LOOM_P_BN_TRAIN] != 0), loom__vk_i32(&c, y->p[LOOM_P_BN_GAMMA] >= 0);
    return loom__vk_run_1d(&c, v4 ? N * C * (S / 4) : N * C * S);
}

/* x viewed as (R, D), D = the last norm_dims dims */
static void ln_dims(const loom_tensor *t, int64_t *R, int64_t *D) {
    const loom_tensor *x = t->src[0];
    int nd = (int)t->p[LOOM_P_LN_DIMS];
    *D = 1;
    for (int d = x->ndim - nd; d < x->ndim; d++) *D *= x->dims[d];
    *R = *D ? loom_tensor_numel(x) / *D : 0;
}

loom_status loom__vk_layer_norm(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t R, D;
    ln_dims(y, &R, &D);
    loom__vk_call c;
    loom__vk_begin(o, &c, "layer_norm", x->dtype);
    loom__vk_in(&c, x), loom__vk_in(&c, opt(y, y->p[LOOM_P_LN_GAMMA])), loom__vk_in(&c, opt(y, y->p[LOOM_P_LN_BETA]));
    loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)R), loom__vk_u32(&c, (uint32_t)D);
    loom__vk_i32(&c, y->p[LOOM_P_LN_GAMMA] >= 0), loom__vk_i32(&c, y->p[LOOM_P_LN_BETA] >= 0),
        loom__vk_f32(&c, (float)y->f[LOOM_F_LN_EPS]);
    return loom__vk_run_groups(&c, R, loom__vk_reduce_local(o->vk, D));
}

loom_status loom__vk_layer_norm_grad(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t R, D;
    ln_dims(y, &R, &D);
    loom__vk_call c;
    loom__vk_begin(o, &c, "layer_norm_grad", x->dtype);
    loom__vk_in(&c, x), loom__vk_in(&c, opt(y, y->p[LOOM_P_LN_GAMMA])), loom__vk_in(&c, opt(y, y->p[LOOM_P_LN_DY]));
    loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)R), loom__vk_u32(&c, (uint32_t)D);
    loom__vk_i32(&c, y->p[LOOM_P_LN_GAMMA] >= 0), loom__vk_f32(&c, (float)y->f[LOOM_F_LN_EPS]);
    return loom__vk_run_groups(&c, R, loom__vk_reduce_local(o->vk, D));
}

/* row statistics (2, R) f32 into scratch, then one group per column */
loom_status loom__vk_layer_norm_grad_params(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t R, D;
    ln_dims(y, &R, &D);
    loom__buffer *stats;
    loom_status st = loom__vk_scratch(o, (size_t)(2 * R) * sizeof(float), &stats);
    if (st != LOOM_OK) return st;
    loom__vk_call c;
    loom__vk_begin(o, &c, "ln_rowstats", x->dtype);
    loom__vk_in(&c, x), loom__vk_buf(&c, stats, LOOM__VK_W);
    loom__vk_u32(&c, (uint32_t)R), loom__vk_u32(&c, (uint32_t)D), loom__vk_f32(&c, (float)y->f[LOOM_F_LN_EPS]);
    if ((st = loom__vk_run_groups(&c, R, loom__vk_reduce_local(o->vk, D))) != LOOM_OK) return st;
    loom__vk_begin(o, &c, "layer_norm_grad_params", x->dtype);
    loom__vk_in(&c, x), loom__vk_in(&c, opt(y, y->p[LOOM_P_LN_DY])), loom__vk_buf(&c, stats, LOOM__VK_R);
    loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)R), loom__vk_u32(&c, (uint32_t)D);
    return loom__vk_run_groups(&c, D, loom__vk_reduce_local(o->vk, R));
}

/* ---- reproducible mode (core/repro.h; shaders/repro.comp), f32 only: the
 * kernel table's repro variants; bindings and push constants follow the
 * PUSH blocks of shaders/repro.comp ---- */

loom_status loom__vk_batch_norm_repro(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    bool train = y->p[LOOM_P_BN_TRAIN] != 0, run = y->p[LOOM_P_BN_RMEAN] >= 0;
    double M = (double)(N * S);
    loom__vk_call c;
    loom__vk_begin(o, &c, "repro_bn_fwd", LOOM_F32);
    loom__vk_in(&c, x), loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_GAMMA])), loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_BETA]));
    if (train && run)
        loom__vk_inout(&c, opt(y, y->p[LOOM_P_BN_RMEAN])), loom__vk_inout(&c, opt(y, y->p[LOOM_P_BN_RVAR]));
    else
        loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_RMEAN])), loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_RVAR]));
    loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C), loom__vk_u32(&c, (uint32_t)S);
    loom__vk_i32(&c, train), loom__vk_i32(&c, y->p[LOOM_P_BN_GAMMA] >= 0), loom__vk_i32(&c, y->p[LOOM_P_BN_BETA] >= 0);
    loom__vk_i32(&c, run);
    /* the host-side constants of core/repro.h, rounded as the CPU rounds them */
    loom__vk_f32(&c, (float)y->f[LOOM_F_BN_EPS]), loom__vk_f32(&c, (float)(1.0 - y->f[LOOM_F_BN_MOMENTUM])),
        loom__vk_f32(&c, (float)y->f[LOOM_F_BN_MOMENTUM]);
    loom__vk_f32(&c, M > 1 ? (float)(M / (M - 1)) : 1.0f);
    return loom__vk_run_groups(&c, C, loom__vk_reduce_local(o->vk, N * S));
}

loom_status loom__vk_batch_norm_grad_params_repro(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    loom__vk_call c;
    loom__vk_begin(o, &c, "repro_bn_dstats", LOOM_F32);
    loom__vk_in(&c, x), loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_DY]));
    loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_RMEAN])), loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_RVAR])), loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C), loom__vk_u32(&c, (uint32_t)S);
    loom__vk_i32(&c, y->p[LOOM_P_BN_TRAIN] != 0), loom__vk_f32(&c, (float)y->f[LOOM_F_BN_EPS]);
    return loom__vk_run_groups(&c, C, loom__vk_reduce_local(o->vk, (N * S + 1023) / 1024));
}

loom_status loom__vk_batch_norm_grad_repro(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    loom__vk_call c;
    loom__vk_begin(o, &c, "repro_bn_dx", LOOM_F32);
    loom__vk_in(&c, x), loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_GAMMA])), loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_DY]));
    loom__vk_in(&c, opt(y, y->p[LOOM_P_BN_STATS])), loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C), loom__vk_u32(&c, (uint32_t)S);
    loom__vk_i32(&c, y->p[LOOM_P_BN_TRAIN] != 0), loom__vk_i32(&c, y->p[LOOM_P_BN_GAMMA] >= 0);
    return loom__vk_run_1d(&c, N * C * S);
}
