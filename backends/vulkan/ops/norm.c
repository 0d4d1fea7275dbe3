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

/* Batch norm in training split into barrier-free passes (shaders/bn_split.comp:
 * column sums over the batch that read x, and dy, once; a per-channel finish;
 * an elementwise apply) and the gradient's channel found without an integer
 * division (batch_norm_grad_v4tq), on CPU devices: lavapipe runs the
 * per-channel work-groups' three passes over x, their barriers and its
 * lane-by-lane divisions slower. f32 planes of a multiple of 4 elements,
 * N C S / 4 < 2^22 (loom_udiv22); LOOM_VULKAN_BN_SPLIT=0|1 forces either form
 * (checked when the device was made). */
static bool split(const loom__vk_op *o, loom_dtype dt, int64_t N, int64_t C, int64_t S) {
    if (!v4_wanted(dt, S) || N * C * (S / 4) >= ((int64_t)1 << 22)) return false;
    int e = loom__env_switch("LOOM_VULKAN_BN_SPLIT");
    if (e >= 0) return e == 1;
    return o->vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
}

/* the column sums of x (and dy, when given) into cs (2 or 4, C, S/4); false when an offset is not
 * a multiple of 4 (nothing recorded) */
static loom_status colsum(loom__vk_op *o, const loom_tensor *x, const loom_tensor *dy, int64_t N, int64_t C,
                          int64_t S, loom__buffer *cs, bool *ok) {
    loom__vk_call c;
    loom__vk_begin(o, &c, dy ? "bn_colsum_dy" : "bn_colsum", LOOM_F32);
    loom__vk_in(&c, x), loom__vk_in(&c, dy ? dy : x);
    *ok = loom__vk_pushed_aligned(&c, (const int[]){0, 1}, 2, 4); /* xo, dyo */
    if (!*ok) return LOOM_OK;
    loom__vk_buf(&c, cs, LOOM__VK_W);
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C), loom__vk_u32(&c, (uint32_t)S);
    loom__vk_texel_variant(&c, dy ? "bn_colsum_dy_t" : "bn_colsum_t", LOOM_F32, (const int[]){0, 1}, dy ? 2 : 1, 4);
    return loom__vk_run_1d(&c, C * (S / 4));
}

/* an apply kernel's first bindings: x, st (bn_finish's per-channel vec4s), y */
static void apply_begin(loom__vk_op *o, loom__vk_call *ap, const char *kernel, loom__buffer *st) {
    const loom_tensor *y = o->t, *x = y->src[0];
    loom__vk_begin(o, ap, kernel, LOOM_F32);
    loom__vk_in(ap, x), loom__vk_buf(ap, st, LOOM__VK_R), loom__vk_out(ap, y);
}

/* the elementwise apply (bn_apply): its invocation count, 0 when an offset rules it out */
static int64_t apply_plain(loom__vk_op *o, loom__buffer *st, int64_t N, int64_t C, int64_t S, loom__vk_call *ap) {
    apply_begin(o, ap, "bn_apply", st);
    if (!loom__vk_pushed_aligned(ap, (const int[]){0, 1}, 2, 4)) return 0; /* xo, yo */
    loom__vk_u32(ap, (uint32_t)N), loom__vk_u32(ap, (uint32_t)C), loom__vk_u32(ap, (uint32_t)S);
    loom__vk_texel_variant(ap, "bn_apply_t", LOOM_F32, (const int[]){0, 1}, 2, 4);
    return N * C * (S / 4);
}

/* fused group g's apply: the add and relu after the batch norm (bn_apply_fuse), or the 2x2
 * max pooling and relu (bn_apply_pool, one invocation per window); its invocation count, 0
 * when a shape or an offset rules it out */
static int64_t apply_fused(loom__vk_op *o, const loom__fuse_group *g, loom__buffer *st, int64_t N, int64_t C,
                           int64_t S, loom__vk_call *ap) {
    const loom_tensor *y = o->t, *x = y->src[0];
    const loom_tensor *add = g->m[LOOM__FU_ADD] >= 0 ? o->plan->exec[g->m[LOOM__FU_ADD]] : NULL;
    const loom_tensor *pool = g->m[LOOM__FU_POOL] >= 0 ? o->plan->exec[g->m[LOOM__FU_POOL]] : NULL;
    const loom_tensor *relu = g->m[LOOM__FU_RELU] >= 0 ? o->plan->exec[g->m[LOOM__FU_RELU]] : NULL;
    int64_t nw = 0;
    if (pool && (!loom__pool_max2(pool, x->dims, &nw) || nw >= ((int64_t)1 << 22))) return 0;
    apply_begin(o, ap, pool ? "bn_apply_pool" : "bn_apply_fuse", st);
    if (pool) {
        /* push {xo, yo, po, ro, windows, C, OHW, W, OW, has_relu} */
        loom__vk_out(ap, pool);
        if (relu) loom__vk_out(ap, relu); else loom__vk_in(ap, x);
        if (!loom__vk_pushed_aligned(ap, (const int[]){0, 1}, 2, 2)) return 0; /* xo, yo: vec2 rows */
        loom__vk_u32(ap, (uint32_t)nw), loom__vk_u32(ap, (uint32_t)C);
        loom__vk_u32(ap, (uint32_t)(pool->dims[2] * pool->dims[3])), loom__vk_u32(ap, (uint32_t)x->dims[3]);
        loom__vk_u32(ap, (uint32_t)pool->dims[3]);
        loom__vk_i32(ap, relu != NULL);
        loom__vk_texel_variant_per(ap, "bn_apply_pool_t", LOOM_F32, (const int[]){0, 1}, (const int[]){1, 4}, 2);
        return nw;
    }
    /* push {xo, yo, oo, ao, ro, N, C, S, has_add, has_relu} */
    loom__vk_in(ap, add ? add->src[add->src[0] == y ? 1 : 0] : x);
    if (add) loom__vk_out(ap, add); else loom__vk_in(ap, x);
    if (relu) loom__vk_out(ap, relu); else loom__vk_in(ap, x);
    if (!loom__vk_pushed_aligned(ap, (const int[]){0, 1, 2, 3, 4}, 5, 4)) return 0;
    loom__vk_u32(ap, (uint32_t)N), loom__vk_u32(ap, (uint32_t)C), loom__vk_u32(ap, (uint32_t)S);
    loom__vk_i32(ap, add != NULL), loom__vk_i32(ap, relu != NULL);
    loom__vk_texel_variant(ap, "bn_apply_fuse_t", LOOM_F32, (const int[]){0, 1}, 2, 4);
    return N * C * (S / 4);
}

/* the split forward (train), its apply that of fused group g when g is not NULL: *done false
 * when a shape or an offset rules it out (nothing recorded) */
static loom_status forward_split(loom__vk_op *o, const loom__fuse_group *g, int64_t N, int64_t C, int64_t S,
                                 bool *done) {
    const loom_tensor *y = o->t, *x = y->src[0];
    bool run = y->p[LOOM_P_BN_RMEAN] >= 0;
    loom__buffer *cs, *st;
    loom_status s;
    *done = false;
    if ((s = loom__vk_scratch(o, (size_t)(2 * C * (S / 4)) * sizeof(float), &cs)) != LOOM_OK ||
        (s = loom__vk_scratch(o, (size_t)(4 * C) * sizeof(float), &st)) != LOOM_OK)
        return s;
    /* the apply first (not yet run): its shapes and offsets decide */
    loom__vk_call ap;
    int64_t n = g ? apply_fused(o, g, st, N, C, S, &ap) : apply_plain(o, st, N, C, S, &ap);
    if (!n) return LOOM_OK;
    if ((s = colsum(o, x, NULL, N, C, S, cs, done)) != LOOM_OK || !*done) return s;
    /* bindings x, cs, rm, rv (x again without running statistics), st, gamma, beta (x where absent):
     * push {xo, rmo, rvo, gmo, bto, N, C, S, has_run, eps, momentum, has_g, has_b} */
    loom__vk_call f;
    loom__vk_begin(o, &f, "bn_finish", LOOM_F32);
    loom__vk_in(&f, x), loom__vk_buf(&f, cs, LOOM__VK_R);
    if (run)
        loom__vk_inout(&f, opt(y, y->p[LOOM_P_BN_RMEAN])), loom__vk_inout(&f, opt(y, y->p[LOOM_P_BN_RVAR]));
    else
        loom__vk_in(&f, x), loom__vk_in(&f, x);
    loom__vk_buf(&f, st, LOOM__VK_W);
    loom__vk_in(&f, opt(y, y->p[LOOM_P_BN_GAMMA])), loom__vk_in(&f, opt(y, y->p[LOOM_P_BN_BETA]));
    loom__vk_u32(&f, (uint32_t)N), loom__vk_u32(&f, (uint32_t)C), loom__vk_u32(&f, (uint32_t)S);
    loom__vk_i32(&f, run), loom__vk_f32(&f, (float)y->f[LOOM_F_BN_EPS]), loom__vk_f32(&f, (float)y->f[LOOM_F_BN_MOMENTUM]);
    loom__vk_i32(&f, y->p[LOOM_P_BN_GAMMA] >= 0), loom__vk_i32(&f, y->p[LOOM_P_BN_BETA] >= 0);
    if ((s = loom__vk_run_1d(&f, C)) != LOOM_OK) return s;
    return loom__vk_run_1d(&ap, n);
}

loom_status loom__vk_bn_fused(loom__vk_op *o, const loom__fuse_group *g, bool *done) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    *done = false;
    if (y->p[LOOM_P_BN_TRAIN] == 0 || !split(o, x->dtype, N, C, S)) return LOOM_OK;
    loom_status st = forward_split(o, g, N, C, S, done);
    if (st != LOOM_OK || !*done) return st;
    for (int r = LOOM__FU_ADD; r <= LOOM__FU_RELU; r++)
        if (g->m[r] >= 0) loom__vk_fuse_member(o, g->m[r]);
    return LOOM_OK;
}

loom_status loom__vk_batch_norm(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t N, C, S;
    bn_dims(x, &N, &C, &S);
    bool train = y->p[LOOM_P_BN_TRAIN] != 0, run = y->p[LOOM_P_BN_RMEAN] >= 0;
    if (train && split(o, x->dtype, N, C, S)) {
        bool done;
        loom_status st = forward_split(o, NULL, N, C, S, &done);
        if (st != LOOM_OK || done) return st;
    }
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
    if (y->p[LOOM_P_BN_TRAIN] != 0 && split(o, x->dtype, N, C, S)) {
        loom__buffer *cs;
        bool done;
        loom_status st = loom__vk_scratch(o, (size_t)(4 * C * (S / 4)) * sizeof(float), &cs);
        if (st == LOOM_OK) st = colsum(o, x, opt(y, y->p[LOOM_P_BN_DY]), N, C, S, cs, &done);
        if (st != LOOM_OK) return st;
        if (done) {
            /* bindings x, cs, out (4, C): push {xo, outo, N, C, S, eps} */
            loom__vk_call f;
            loom__vk_begin(o, &f, "bn_finish_grad", LOOM_F32);
            loom__vk_in(&f, x), loom__vk_buf(&f, cs, LOOM__VK_R), loom__vk_out(&f, y);
            loom__vk_u32(&f, (uint32_t)N), loom__vk_u32(&f, (uint32_t)C), loom__vk_u32(&f, (uint32_t)S);
            loom__vk_f32(&f, (float)y->f[LOOM_F_BN_EPS]);
            return loom__vk_run_1d(&f, C);
        }
    }
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
    /* on CPU devices (split) runs of `run` vec4s of a plane per invocation: the largest divisor of S / 4
     * up to 8 (the cnn's planes: 784 and 196 elements, runs of 7) */
    bool sp = v4 && split(o, x->dtype, N, C, S);
    int64_t run = 1;
    for (int64_t r = 8; sp && r > 1 && run == 1; r--)
        if ((S / 4) % r == 0) run = r;
    if (v4 && !loom__vk_texel_variant(&c, sp ? (run > 1 ? "batch_norm_grad_v4tr" : "batch_norm_grad_v4tq")
                                             : "batch_norm_grad_v4t",
                                      x->dtype, (const int[]){0, 2}, 2, 4))
        run = 1; /* the storage form */
    loom__vk_u32(&c, (uint32_t)N), loom__vk_u32(&c, (uint32_t)C), loom__vk_u32(&c, (uint32_t)S);
    loom__vk_i32(&c, y->p[LOOM_P_BN_TRAIN] != 0), loom__vk_i32(&c, y->p[LOOM_P_BN_GAMMA] >= 0);
    loom__vk_u32(&c, (uint32_t)run);
    return loom__vk_run_1d(&c, v4 ? N * C * (S / 4) / run : N * C * S);
}

/* x viewed as (R, D), D = the last norm_dims dims */
static void ln_dims(const loom_tensor *t, int64_t *R, int64_t *D) {
    const loom_tensor *x = t->src[0];
    int nd = (int)t->p[LOOM_P_LN_DIMS];
    *D = 1;
    for (int d = x->ndim - nd; d < x->ndim; d++) *D *= x->dims[d];
    *R = *D ? loom_tensor_numel(x) / *D : 0;
}

/* The row kernels' one-invocation-per-row form (layer norm and its gradients,
 * cross-entropy and its gradient, sum and mean: their *_rows variants, with
 * common.glsl's ROW_* macros) on CPU devices: lavapipe runs a work-group per
 * row's shared memory and barriers slowly (the gpt's layer norms, 1024 rows
 * of 128: 137 ms of its 446 ms step). Not in reproducible mode (another
 * summation order); LOOM_VULKAN_ROWS=0|1 forces either (checked when the
 * device was made). */
bool loom__vk_rows(const loom__vk_op *o) {
    if (o->vk->reproducible) return false;
    int e = loom__env_switch("LOOM_VULKAN_ROWS");
    if (e >= 0) return e == 1;
    return o->vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
}

/* kernel `name` (or its _rows variant) over n rows (columns) of `len` elements */
static void ln_begin(loom__vk_op *o, loom__vk_call *c, const char *name, loom_dtype dt) {
    char v[48];
    snprintf(v, sizeof v, "%s%s", name, loom__vk_rows(o) ? "_rows" : "");
    loom__vk_begin(o, c, v, dt);
}

static loom_status ln_run(loom__vk_op *o, loom__vk_call *c, int64_t n, int64_t len) {
    return loom__vk_rows(o) ? loom__vk_run_1d(c, n) : loom__vk_run_groups(c, n, loom__vk_reduce_local(o->vk, len));
}

loom_status loom__vk_layer_norm(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t R, D;
    ln_dims(y, &R, &D);
    loom__vk_call c;
    ln_begin(o, &c, "layer_norm", x->dtype);
    loom__vk_in(&c, x), loom__vk_in(&c, opt(y, y->p[LOOM_P_LN_GAMMA])), loom__vk_in(&c, opt(y, y->p[LOOM_P_LN_BETA]));
    loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)R), loom__vk_u32(&c, (uint32_t)D);
    loom__vk_i32(&c, y->p[LOOM_P_LN_GAMMA] >= 0), loom__vk_i32(&c, y->p[LOOM_P_LN_BETA] >= 0),
        loom__vk_f32(&c, (float)y->f[LOOM_F_LN_EPS]);
    return ln_run(o, &c, R, D);
}

loom_status loom__vk_layer_norm_grad(loom__vk_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t R, D;
    ln_dims(y, &R, &D);
    loom__vk_call c;
    ln_begin(o, &c, "layer_norm_grad", x->dtype);
    loom__vk_in(&c, x), loom__vk_in(&c, opt(y, y->p[LOOM_P_LN_GAMMA])), loom__vk_in(&c, opt(y, y->p[LOOM_P_LN_DY]));
    loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)R), loom__vk_u32(&c, (uint32_t)D);
    loom__vk_i32(&c, y->p[LOOM_P_LN_GAMMA] >= 0), loom__vk_f32(&c, (float)y->f[LOOM_F_LN_EPS]);
    return ln_run(o, &c, R, D);
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
    ln_begin(o, &c, "ln_rowstats", x->dtype);
    loom__vk_in(&c, x), loom__vk_buf(&c, stats, LOOM__VK_W);
    loom__vk_u32(&c, (uint32_t)R), loom__vk_u32(&c, (uint32_t)D), loom__vk_f32(&c, (float)y->f[LOOM_F_LN_EPS]);
    if ((st = ln_run(o, &c, R, D)) != LOOM_OK) return st;
    ln_begin(o, &c, "layer_norm_grad_params", x->dtype);
    loom__vk_in(&c, x), loom__vk_in(&c, opt(y, y->p[LOOM_P_LN_DY])), loom__vk_buf(&c, stats, LOOM__VK_R);
    loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)R), loom__vk_u32(&c, (uint32_t)D);
    return ln_run(o, &c, D, R);
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
