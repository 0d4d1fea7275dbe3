/* backends/vulkan/ops/matmul.c — host side of matmul (batched, broadcast,
 * transposes) and linear (x w^T with the bias added in the GEMM's epilogue),
 * and the GEMM launcher (ops/gemm.h) the conv2d family shares. Kernel:
 * shaders/gemm.comp, variants gemm_<ta><tb>_<dtype> (n / t per operand) and
 * gemm_<tn|nt>_cf_<f16|bf16> (float C; the f32 plain variants serve f32),
 * and shaders/gemm_wide.comp, gemmw<4|8>_* with the same names (pick() below).
 *
 * Measured: bench/results/2026-12-04-gemm-vulkan.md. */
#include "gemm.h"

/* The GEMM kernels (forms), chosen per product by pick():
 *   tiled: shaders/gemm.comp, shared-memory tiles for GPUs, in two tilings
 *     (register block RM x RN = 8 x 8 per invocation in both): gemm_* 128 x
 *     128 tiles of 256 invocations for large products, gemm64_* 64 x 64
 *     tiles of 64 invocations when a side of C is under 128 (conv2d's
 *     O/groups x OH*OW products, small layers) or the device caps
 *     work-groups below 256;
 *   wide: shaders/gemm_wide.comp, no shared memory, each invocation loading
 *     its own operands 8 (gemmw8_*) or 4 (gemmw4_*) elements per load, for
 *     drivers that run invocations as SIMD lanes of a CPU (lavapipe, where
 *     every load instruction is a loop over the lanes). gemmw<W> needs K,
 *     lda, ldb and A's and B's element offsets and batch strides to be
 *     multiples of W (and 64-bit integers for gemmw8 in f32); where neither
 *     width fits, tiled;
 *   texel: shaders/gemm_wide.comp with TEXEL (gemmt4_*): A and B through
 *     uniform texel buffers (views of their windows, loom__vk_texel_ab), 16 x
 *     8 blocks, 4 elements per fetch; on CPU devices whose formats allow it
 *     (device.c), where lavapipe gathers texels instead of looping over the
 *     lanes (2-3.7x the storage-buffer loads, bench/results/
 *     2026-12-05-vulkan-texel-gemm-probe.md); f16 and bf16 with K and the
 *     leading dimensions multiples of 8 as gemmt8_* (8 elements per fetch;
 *     f16 in 8 x 8 blocks); with C's columns in aligned groups of 4 as
 *     gemmt4v_* / gemmt8v_* (four columns per store: a vec4, or a uvec2 of
 *     four 16-bit values; lavapipe stores lane by lane, one loop per store
 *     instruction; LOOM_VULKAN_GEMM_VSTORE=0 turns it off). Where a
 *     window does not allow a view, the narrower texel form, else wide.
 * LOOM_VULKAN_GEMM=tiled|wide|texel forces a form (wide: storage buffers only;
 * texel where it applies; the op-check runs each); unset or auto: texel, else
 * wide, on a CPU device, tiled elsewhere.
 * Reproducible mode always runs the canonical gemm*_r_f32. Figures:
 * bench/results/2026-12-04-gemm-vulkan.md. */
typedef struct form {
    const char *prefix;
    int64_t tm, tn;
    uint32_t local;
    int w;       /* elements per load of A and B: 0 (tiled), 4 or 8 */
    bool rows_x; /* grid x walks row tiles (gemm_wide.comp), else column tiles */
    const struct form *vstore; /* a texel form: the same with four columns of C per store */
} form;
static const form LARGE = {"gemm", 128, 128, 256, 0, false, NULL}, SMALL = {"gemm64", 64, 64, 64, 0, false, NULL};
static const form WIDE8 = {"gemmw8", 8, 64, 8, 8, true, NULL}, WIDE4 = {"gemmw4", 8, 64, 8, 4, true, NULL};
static const form TEXEL4V = {"gemmt4v", 16, 64, 8, 4, true, NULL}, TEXEL8V = {"gemmt8v", 16, 64, 8, 8, true, NULL};
static const form TEXEL8HV = {"gemmt8v", 8, 64, 8, 8, true, NULL};
static const form TEXEL4 = {"gemmt4", 16, 64, 8, 4, true, &TEXEL4V}, TEXEL8 = {"gemmt8", 16, 64, 8, 8, true, &TEXEL8V};
/* f16's 8-element form runs 8 x 8 blocks (shaders/gemm_wide.comp, TEXEL) */
static const form TEXEL8H = {"gemmt8", 8, 64, 8, 8, true, &TEXEL8HV};

/* C's layout allows the aligned four-column stores of TEXEL4V / TEXEL8V
 * (its pushed element offset, the third push word, is checked once bound) */
static bool vstore_fits(const loom__vk_call *c, const loom__vk_gemm_desc *d) {
    if (d->N % 4 || d->ldc % 4 || d->cseg % 4 || d->csegs % 4) return false;
    for (int i = 0; i < 3; i++)
        if (d->sc[i] % 4) return false;
    return loom__vk_pushed_aligned(c, (const int[]){2}, 1, 4);
}

/* A and B suit loads of w elements (the tensors' element offsets are checked
 * once bound: fits_offsets) */
static bool fits_width(const loom__vk *vk, loom_dtype dt, const loom__vk_gemm_desc *d, int w) {
    if (d->repro || d->K % w || d->lda % w || d->ldb % w) return false;
    for (int i = 0; i < 3; i++)
        if (d->sa[i] % w || d->sb[i] % w) return false;
    if (w == 8 && dt == LOOM_F32 && !vk->int64) return false;
    return dt == LOOM_F32 || dt == LOOM_F16 || dt == LOOM_BF16;
}

static const form *tiled(const loom__vk *vk, const loom__vk_gemm_desc *d) {
    return d->M >= LARGE.tm && d->N >= LARGE.tn && vk->max_local >= LARGE.local ? &LARGE : &SMALL;
}

/* the storage-buffer wide form of this product, else tiled */
static const form *wide_form(const loom__vk *vk, loom_dtype dt, const loom__vk_gemm_desc *d) {
    if (vk->max_local >= WIDE8.local) {
        if (fits_width(vk, dt, d, 8)) return &WIDE8;
        if (fits_width(vk, dt, d, 4)) return &WIDE4;
    }
    return tiled(vk, d);
}

/* the form of this product: LOOM_VULKAN_GEMM, else the device's kind (on a
 * CPU device the texel form where the device has texel views, device.c,
 * and the sizes fit; its operands' windows are checked once bound) */
static loom_status pick(loom__vk_op *o, loom_dtype dt, const loom__vk_gemm_desc *d, const form **out) {
    loom__vk *vk = o->vk;
    const char *env = getenv("LOOM_VULKAN_GEMM");
    bool wide = vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    *out = tiled(vk, d);
    if (env && *env && strcmp(env, "auto")) {
        wide = !strcmp(env, "wide") || !strcmp(env, "texel");
        if (!wide && strcmp(env, "tiled"))
            return loom__err(vk->ctx, LOOM_ERR_INVALID_ARG,
                             "vulkan: LOOM_VULKAN_GEMM='%s' (node '%s'): expected auto, tiled, wide or texel", env,
                             o->t->name);
    }
    if (!wide) return LOOM_OK;
    bool texel = vk->texel && !(env && !strcmp(env, "wide")); /* wide: storage buffers only */
    texel = texel && vk->max_local >= TEXEL4.local;
    if (texel && (dt == LOOM_BF16 || dt == LOOM_F16) && fits_width(vk, dt, d, 8)) *out = dt == LOOM_F16 ? &TEXEL8H : &TEXEL8;
    else *out = texel && fits_width(vk, dt, d, 4) ? &TEXEL4 : wide_form(vk, dt, d);
    return LOOM_OK;
}

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

/* the element offsets the binding pushed for A and B (the first two push
 * words) are multiples of w, as gemm_wide.comp's word views need */
static bool fits_offsets(const loom__vk_call *c, int w) {
    return loom__vk_pushed_aligned(c, (const int[]){0, 1}, 2, (uint32_t)w);
}

/* begins the dispatch of form f and pushes everything but the grid (conv: the
 * implicit GEMM's geometry table, bound fifth) */
static void record(loom__vk_op *o, loom__vk_call *c, const form *f, loom_dtype dt, const loom__vk_gemm_desc *d,
                   loom__buffer *conv) {
    /* <prefix>_<ta><tb>[_cf]: float-output variants exist for conv2d's gradients,
     * tn (grad_input) and nt (grad_weight); f32 uses the plain ones; nc: B read
     * from a convolution's input; yx: A read from dy, B the input's columns
     * transposed */
    char name[32];
    snprintf(name, sizeof name, "%s_%c%c%s", f->prefix, conv && d->tb ? 'y' : d->ta ? 't' : 'n',
             conv ? (d->tb ? 'x' : 'c') : d->tb ? 't' : 'n',
             d->c_float && dt != LOOM_F32 ? "_cf" : d->repro && dt == LOOM_F32 ? "_r" : "");
    bool has_bias = d->bias.t || d->bias.buf;
    loom__vk_begin(o, c, name, dt);
    /* bindings A, B, C, bias (A again when there is none): push {ao, bo, co, biaso} */
    bind_mat(c, &d->a, false);
    bind_mat(c, &d->b, false);
    bind_mat(c, &d->c, true);
    bind_mat(c, has_bias ? &d->bias : &d->a, false);
    if (conv) loom__vk_buf(c, conv, LOOM__VK_R);
    loom__vk_u32(c, (uint32_t)d->M), loom__vk_u32(c, (uint32_t)d->N), loom__vk_u32(c, (uint32_t)d->K);
    loom__vk_u32(c, (uint32_t)d->lda), loom__vk_u32(c, (uint32_t)d->ldb), loom__vk_u32(c, (uint32_t)d->ldc);
    loom__vk_u32(c, has_bias), loom__vk_u32(c, (uint32_t)d->bias_rs), loom__vk_u32(c, (uint32_t)d->bias_cs);
    for (int i = 0; i < 3; i++) loom__vk_u32(c, (uint32_t)d->batch[i]);
    const int64_t *s[4] = {d->sa, d->sb, d->sc, d->sbias};
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 3; i++) loom__vk_u32(c, (uint32_t)s[k][i]);
    loom__vk_u32(c, (uint32_t)d->cseg), loom__vk_u32(c, (uint32_t)d->csegs);
}

loom_status loom__vk_gemm(loom__vk_op *o, loom_dtype dt, const loom__vk_gemm_desc *d) {
    loom__vk *vk = o->vk;
    int64_t nb = d->batch[0] * d->batch[1] * d->batch[2];
    if (d->M <= 0 || d->N <= 0 || nb <= 0) return LOOM_OK;
    /* every size, stride and offset the shader sees is a uint */
    const int64_t *vals[] = {&d->M, &d->N, &d->K, &d->lda, &d->ldb, &d->ldc, &d->bias_rs, &d->bias_cs, &d->cseg, &d->csegs};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++)
        if (*vals[i] < 0 || *vals[i] > INT32_MAX)
            return loom__err(vk->ctx, LOOM_ERR_UNSUPPORTED, "vulkan: %s (node '%s'): a GEMM size of %lld does not fit 31 bits",
                             loom_op_name(o->t->op), o->t->name, (long long)*vals[i]);
    LOOM__ASSERT(!d->c_float || d->ta != d->tb);
    LOOM__ASSERT(!d->conv || (!d->ta && d->tb == d->c_float)); /* nc: the forward; yx: the weight gradient */
    const form *f = &SMALL;
    loom__vk_call c;
    loom_status st;
    if (d->conv) { /* the implicit GEMM: the tiled form on any device */
        loom__buffer *cb;
        if ((st = loom__vk_meta(o, d->conv, LOOM__CONV_IMPLICIT_LEN, &cb)) != LOOM_OK) return st;
        f = tiled(vk, d);
        record(o, &c, f, dt, d, cb);
    } else if ((st = pick(o, dt, d, &f)) != LOOM_OK) {
        return st;
    } else {
        record(o, &c, f, dt, d, NULL);
    }
    /* (the tiled forms have no texel twin and load any width: nothing below changes them) */
    if (f->vstore && f->w == 8 && !(fits_offsets(&c, 8) && loom__vk_texel_ab(&c, dt, 8))) {
        f = &TEXEL4; /* fits_width 8 implies 4 */
        record(o, &c, f, dt, d, NULL);
    }
    if (f == &TEXEL4 && !(fits_offsets(&c, 4) && loom__vk_texel_ab(&c, dt, 4))) { /* windows that allow no views */
        f = wide_form(vk, dt, d);
        record(o, &c, f, dt, d, NULL);
    } else if (f->vstore && vstore_fits(&c, d) && loom__env_switch("LOOM_VULKAN_GEMM_VSTORE") != 0) {
        loom__vk_call v; /* the same product, four columns of C per store */
        record(o, &v, f->vstore, dt, d, NULL);
        if (loom__vk_texel_ab(&v, dt, f->w)) c = v, f = f->vstore;
    }
    if (f->w && !fits_offsets(&c, f->w)) { /* a tensor bound off a word boundary */
        f = f->w == 8 && fits_offsets(&c, 4) && fits_width(vk, dt, d, 4) ? &WIDE4 : tiled(vk, d);
        record(o, &c, f, dt, d, NULL);
    }
    if (vk->max_local < f->local)
        return loom__err(vk->ctx, LOOM_ERR_UNSUPPORTED,
                         "vulkan: %s (node '%s'): the GEMM needs work-groups of %u invocations, the device allows %u",
                         loom_op_name(o->t->op), o->t->name, f->local, vk->max_local);
    /* the shader walks each grid axis with a stride: clamp to the device */
    const uint32_t *mx = vk->props.limits.maxComputeWorkGroupCount;
    int64_t mt = (d->M + f->tm - 1) / f->tm, nt = (d->N + f->tn - 1) / f->tn;
    int64_t g[3] = {f->rows_x ? mt : nt, f->rows_x ? nt : mt, nb};
    for (int i = 0; i < 3; i++)
        if (g[i] > (int64_t)mx[i]) g[i] = mx[i];
    return loom__vk_run_grid(&c, (uint32_t)g[0], (uint32_t)g[1], (uint32_t)g[2], f->local);
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
