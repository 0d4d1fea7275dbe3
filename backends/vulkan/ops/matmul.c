/* backends/vulkan/ops/matmul.c — host side of matmul (batched, broadcast,
 * transposes) and linear (x w^T with the bias added in the GEMM's epilogue),
 * and the GEMM launcher (ops/gemm.h) the conv2d family shares. Kernel:
 * shaders/gemm.comp, variants gemm_<ta><tb>_<dtype> (n / t per operand) and
 * gemm_<tn|nt>_cf_<f16|bf16> (float C; the f32 plain variants serve f32).
 *
 * Measured: see the GFLOP/s table at the top of shaders/gemm.comp. */
#include "gemm.h"

/* Two tilings of shaders/gemm.comp (register block RM x RN = 8 x 8 per
 * invocation in both): gemm_* 128 x 128 tiles of 256 invocations for large
 * products, gemm64_* 64 x 64 tiles of 64 invocations when a side of C is
 * under 128 (conv2d's O/groups x OH*OW products, small layers) or the device
 * caps work-groups below 256. */
typedef struct tiling {
    const char *prefix;
    int64_t tm, tn;
    uint32_t nt;
} tiling;
static const tiling LARGE = {"gemm", 128, 128, 256}, SMALL = {"gemm64", 64, 64, 64};

/* binds operand m (an input or, with w, the output) and pushes its element offset */
static void bind_mat(loom__vk_call *c, const loom__vk_mat *m, bool w) {
    if (m->t) {
        if (w) loom__vk_out(c, m->t);
        else loom__vk_in(c, m->t);
    } else {
        loom__vk_buf(c, m->buf, w ? LOOM__VK_W : LOOM__VK_R);
        loom__vk_u32(c, 0);
    }
}

loom_status loom__vk_gemm(loom__vk_op *o, loom_dtype dt, const loom__vk_gemm_desc *d) {
    loom__vk *vk = o->vk;
    int64_t nb = d->batch[0] * d->batch[1] * d->batch[2];
    if (d->M <= 0 || d->N <= 0 || nb <= 0) return LOOM_OK;
    const tiling *tl = d->M >= LARGE.tm && d->N >= LARGE.tn && vk->max_local >= LARGE.nt ? &LARGE : &SMALL;
    if (vk->max_local < tl->nt)
        return loom__err(vk->ctx, LOOM_ERR_UNSUPPORTED,
                         "vulkan: %s (node '%s'): the GEMM needs work-groups of %u invocations, the device allows %u",
                         loom_op_name(o->t->op), o->t->name, tl->nt, vk->max_local);
    /* every size, stride and offset the shader sees is a uint */
    const int64_t *vals[] = {&d->M, &d->N, &d->K, &d->lda, &d->ldb, &d->ldc, &d->bias_rs, &d->bias_cs};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++)
        if (*vals[i] < 0 || *vals[i] > INT32_MAX)
            return loom__err(vk->ctx, LOOM_ERR_UNSUPPORTED, "vulkan: %s (node '%s'): a GEMM size of %lld does not fit 31 bits",
                             loom_op_name(o->t->op), o->t->name, (long long)*vals[i]);
    /* <prefix>_<ta><tb>[_cf]: float-output variants exist for conv2d's gradients,
     * tn (grad_input) and nt (grad_weight); f32 uses the plain ones */
    LOOM__ASSERT(!d->c_float || d->ta != d->tb);
    char name[32];
    snprintf(name, sizeof name, "%s_%c%c%s", tl->prefix, d->ta ? 't' : 'n', d->tb ? 't' : 'n',
             d->c_float && dt != LOOM_F32 ? "_cf" : d->repro && dt == LOOM_F32 ? "_r" : "");
    bool has_bias = d->bias.t || d->bias.buf;
    loom__vk_call c;
    loom__vk_begin(o, &c, name, dt);
    /* bindings A, B, C, bias (A again when there is none): push {ao, bo, co, biaso} */
    bind_mat(&c, &d->a, false);
    bind_mat(&c, &d->b, false);
    bind_mat(&c, &d->c, true);
    bind_mat(&c, has_bias ? &d->bias : &d->a, false);
    loom__vk_u32(&c, (uint32_t)d->M), loom__vk_u32(&c, (uint32_t)d->N), loom__vk_u32(&c, (uint32_t)d->K);
    loom__vk_u32(&c, (uint32_t)d->lda), loom__vk_u32(&c, (uint32_t)d->ldb), loom__vk_u32(&c, (uint32_t)d->ldc);
    loom__vk_u32(&c, has_bias), loom__vk_u32(&c, (uint32_t)d->bias_rs), loom__vk_u32(&c, (uint32_t)d->bias_cs);
    for (int i = 0; i < 3; i++) loom__vk_u32(&c, (uint32_t)d->batch[i]);
    const int64_t *s[4] = {d->sa, d->sb, d->sc, d->sbias};
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 3; i++) loom__vk_u32(&c, (uint32_t)s[k][i]);
    /* the shader walks each grid axis with a stride: clamp to the device */
    const uint32_t *mx = vk->props.limits.maxComputeWorkGroupCount;
    int64_t g[3] = {(d->N + tl->tn - 1) / tl->tn, (d->M + tl->tm - 1) / tl->tm, nb};
    for (int i = 0; i < 3; i++)
        if (g[i] > (int64_t)mx[i]) g[i] = mx[i];
    return loom__vk_run_grid(&c, (uint32_t)g[0], (uint32_t)g[1], (uint32_t)g[2], tl->nt);
}

/* y (batch..., M, N) = op(a) (batch_a..., M, K) x op(b) (batch_b..., K, N);
 * up to 3 batch dims (LOOM_MAX_DIMS = 5), broadcast strides as the CPU backend */
static loom_status matmul(loom__vk_op *o, bool repro) {
    const loom_tensor *y = o->t, *A = y->src[0], *B = y->src[1];
    loom__mm_geom q = loom__matmul_geom_of(y);
    loom__vk_gemm_desc d = {.repro = repro};
    d.ta = y->p[LOOM_P_MATMUL_TRANS_A], d.tb = y->p[LOOM_P_MATMUL_TRANS_B];
    d.M = q.M, d.N = q.N, d.K = q.K, d.lda = q.lda, d.ldb = q.ldb, d.ldc = q.ldc;
    for (int i = 0; i < 3; i++) d.batch[i] = q.batch[i], d.sa[i] = q.sa[i], d.sb[i] = q.sb[i], d.sc[i] = q.sc[i];
    d.a = loom__vk_mat_t(A), d.b = loom__vk_mat_t(B), d.c = loom__vk_mat_t(y);
    return loom__vk_gemm(o, y->dtype, &d);
}

/* y (R, OUT) = x (R, IN) w^T (IN, OUT) + bias (OUT) per column */
static loom_status linear(loom__vk_op *o, bool repro) {
    const loom_tensor *y = o->t, *x = y->src[0], *w = y->src[1];
    int64_t out = w->dims[0], in = w->dims[1];
    loom__vk_gemm_desc d = {.ta = false, .tb = true, .repro = repro, .batch = {1, 1, 1}};
    d.M = loom_tensor_numel(y) / (out ? out : 1), d.N = out, d.K = in;
    d.lda = in, d.ldb = in, d.ldc = out;
    d.a = loom__vk_mat_t(x), d.b = loom__vk_mat_t(w), d.c = loom__vk_mat_t(y);
    if (y->p[LOOM_P_LINEAR_BIAS]) d.bias = loom__vk_mat_t(y->src[2]), d.bias_rs = 0, d.bias_cs = 1;
    return loom__vk_gemm(o, y->dtype, &d);
}

loom_status loom__vk_matmul(loom__vk_op *o) { return matmul(o, false); }
loom_status loom__vk_linear(loom__vk_op *o) { return linear(o, false); }
/* reproducible mode: the canonical GEMM (gemm*_r_f32, core/repro.h) */
loom_status loom__vk_matmul_repro(loom__vk_op *o) { return matmul(o, true); }
loom_status loom__vk_linear_repro(loom__vk_op *o) { return linear(o, true); }
