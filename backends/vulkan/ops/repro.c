/* backends/vulkan/ops/repro.c — host side of reproducible mode's canonical
 * kernels (core/repro.h; shaders/repro.comp): batch norm and its
 * gradients, cross-entropy and its gradient, f32 only (the core refuses
 * other dtypes in the mode). The ordinary entry points (ops/norm.c,
 * ops/loss.c) call these when vk->reproducible is set; the GEMM
 * runs its gemm*_r_f32 variants (ops/matmul.c), sum/mean take repro_sum in
 * ops/reduce.c, and conv2d always takes the
 * im2col + GEMM path (ops/conv2d.c). Bindings and push constants follow the
 * PUSH blocks of shaders/repro.comp. */
#include "../vulkan.h"

static const loom_tensor *opt(const loom_tensor *t, int64_t idx) { return idx >= 0 ? t->src[idx] : t->src[0]; }

static void bn_dims(const loom_tensor *x, int64_t *N, int64_t *C, int64_t *S) {
    *N = x->dims[0], *C = x->dims[1], *S = 1;
    for (int d = 2; d < x->ndim; d++) *S *= x->dims[d];
}

loom_status loom__vk_repro_batch_norm(loom__vk_op *o) {
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

loom_status loom__vk_repro_batch_norm_grad_params(loom__vk_op *o) {
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

loom_status loom__vk_repro_batch_norm_grad(loom__vk_op *o) {
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

loom_status loom__vk_repro_cross_entropy(loom__vk_op *o) {
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

loom_status loom__vk_repro_cross_entropy_grad(loom__vk_op *o) {
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
