/* backends/cpu/fuse_kernels.c — the CPU backend's fused batch-norm passes
 * (groups: fuse.h; the attention gradients' kernel is in ops/attention.c, a
 * matmul's bias add is the GEMM's epilogue, gemm.c). One channel per task, as the batch-norm kernels split
 * their work: the forward pass normalises a (n, c) plane and at once runs the
 * add, pooling and relu after it on that plane while it is in L1; the
 * backward pass makes each plane of the gradient that reaches the batch norm
 * (relu_grad, pool gradient) and adds it into the channel's sums at once,
 * then the input gradient re-reads the channel, still in L2. Every value is
 * computed by the same expression as in the single-op kernel (ops/<family>.c), so
 * results match the unfused run bit for bit. */
#include "f32_inline.h"
#include "fuse.h"

typedef struct fjob {
    loom__bn_job bn; /* forward: the batch_norm; backward: batch_norm_grad_params */
    loom__bn_job dx; /* backward: batch_norm_grad */
    int64_t H, W, OH, OW; /* pooling planes */
    float *bn_y, *add_y, *pool_y, *relu_y, *rg_y, *pg_y;
    const float *add_other, *rg_x, *rg_dy, *pg_x;
    bool bn_first; /* add: the batch-norm output is the add's src[0] */
    bool pool512;  /* the pooling planes with AVX-512 (ops/pool2x2.c) */
} fjob;

static void *addr_of(const loom_plan *p, const loom_tensor *t) {
    loom__addr a = p->addr[t->id];
    return (char *)a.buf->data + a.off;
}

static void args_of(loom__cpu *cpu, const loom_plan *p, int e, loom__cpu_args *a) {
    const loom_tensor *t = p->exec[e];
    *a = (loom__cpu_args){.cpu = cpu, .node = t, .dt = t->dtype, .seed = p->g->seed, .step = p->step};
    a->y = addr_of(p, t);
    for (int k = 0; k < t->nsrc; k++) a->x[k] = addr_of(p, t->src[k]), a->xdt[k] = t->src[k]->dtype;
}

/* relu as ops/activation.c computes it (NaN stays NaN) */
LOOM__F32_INLINE void relu_run(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = v > 0 || v != v ? v : 0;
    }
}

LOOM__F32_INLINE void fwd_body(void *v, int64_t c0, int64_t c1) {
    const fjob *j = v;
    const loom__bn_job *b = &j->bn;
    const float *x = b->x;
    for (int64_t c = c0; c < c1; c++) {
        float sc, sh;
        loom__bn_coef(b, c, &sc, &sh);
        for (int64_t n = 0; n < b->N; n++) {
            int64_t off = (n * b->C + c) * b->S, poff = (n * b->C + c) * j->OH * j->OW;
            const float *xr = x + off;
            float *yr = j->bn_y + off;
            loom__bn_pf_next(xr, n, b->N, b->C * b->S, b->S);
            if (j->add_y) loom__bn_pf_next(j->add_other + off, n, b->N, b->C * b->S, b->S);
            for (int64_t i = 0; i < b->S; i++) yr[i] = xr[i] * sc + sh;
            const float *last = yr;
            int64_t len = b->S;
            if (j->add_y) {
                const float *o = j->add_other + off;
                float *ar = j->add_y + off;
                if (j->bn_first)
                    for (int64_t i = 0; i < b->S; i++) ar[i] = yr[i] + o[i];
                else
                    for (int64_t i = 0; i < b->S; i++) ar[i] = o[i] + yr[i];
                last = ar;
            } else if (j->pool_y) {
                if (j->pool512)
                    loom__max2_plane_avx512(yr, j->pool_y + poff, j->H, j->W, j->OH, j->OW);
                else
                    loom__max2_plane(yr, j->pool_y + poff, j->H, j->W, j->OH, j->OW);
                last = j->pool_y + poff, len = j->OH * j->OW, off = poff;
            }
            if (j->relu_y) relu_run(last, j->relu_y + off, len);
        }
    }
}

LOOM__F32_INLINE void bwd_body(void *v, int64_t c0, int64_t c1) {
    const fjob *j = v;
    const loom__bn_job *b = &j->bn, *d = &j->dx;
    const float *x = b->x, *g = b->dy; /* g: the gradient reaching the batch norm */
    for (int64_t c = c0; c < c1; c++) {
        double acc[4] = {0};
        float K = x[c * b->S];
        for (int64_t n = 0; n < b->N; n++) {
            int64_t off = (n * b->C + c) * b->S, poff = (n * b->C + c) * j->OH * j->OW;
            loom__bn_pf_next(x + off, n, b->N, b->C * b->S, b->S);
            if (j->pg_y) loom__bn_pf_next(j->pg_x + off, n, b->N, b->C * b->S, b->S);
            else loom__bn_pf_next(g + off, n, b->N, b->C * b->S, b->S); /* (relu_grad writes g's plane, or g comes in) */
            if (j->rg_y) { /* relu_grad as ops/activation.c computes it */
                int64_t o = j->pg_y ? poff : off, len = j->pg_y ? j->OH * j->OW : b->S;
                const float *rx = j->rg_x + o, *rd = j->rg_dy + o;
                loom__bn_pf_next(rx, n, b->N, b->C * len, len);
                loom__bn_pf_next(rd, n, b->N, b->C * len, len);
                float *ry = j->rg_y + o;
                for (int64_t i = 0; i < len; i++) {
                    float dd = rd[i], xx = rx[i];
                    ry[i] = xx > 0 || xx != xx ? dd : 0;
                }
            }
            if (j->pg_y) {
                const float *pdy = (j->rg_y ? j->rg_y : j->rg_dy) + poff;
                if (j->pool512)
                    loom__max2_grad_plane_avx512(j->pg_x + off, pdy, j->pg_y + off, j->H, j->W, j->OH, j->OW);
                else
                    loom__max2_grad_plane(j->pg_x + off, pdy, j->pg_y + off, j->H, j->W, j->OH, j->OW);
            }
            loom__bn_sum_dy(x + off, g + off, b->S, K, acc, b->train);
        }
        loom__cpu_bn_dstats_store(b, c, K, acc);
        float f[3];
        loom__cpu_bn_dx_coef(d, c, f);
        float f1 = f[0], f2 = f[1], f3 = f[2];
        for (int64_t n = 0; n < b->N; n++) {
            int64_t off = (n * b->C + c) * b->S;
            const float *xr = x + off, *gr = g + off;
            float *o = (float *)d->y + off;
            loom__bn_pf_next(xr, n, b->N, b->C * b->S, b->S);
            loom__bn_pf_next(gr, n, b->N, b->C * b->S, b->S);
            for (int64_t i = 0; i < b->S; i++) o[i] = f1 * gr[i] + f2 * xr[i] + f3;
        }
    }
}

/* the passes for the baseline x86-64 vector unit and for AVX2 (the same
 * bits: f32_inline.h) */
static void fwd_range(void *v, int64_t c0, int64_t c1) { fwd_body(v, c0, c1); }
static void bwd_range(void *v, int64_t c0, int64_t c1) { bwd_body(v, c0, c1); }
#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_AVX2_VARIANT 1
__attribute__((target("avx2"))) static void fwd_range_avx2(void *v, int64_t c0, int64_t c1) { fwd_body(v, c0, c1); }
__attribute__((target("avx2"))) static void bwd_range_avx2(void *v, int64_t c0, int64_t c1) { bwd_body(v, c0, c1); }
#endif

loom_status loom__cpu_fusion_run(loom__cpu *cpu, const loom_plan *p, const loom__fuse_group *g) {
    fjob j;
    memset(&j, 0, sizeof j);
    loom__cpu_args a;
    const int *m = g->m;
    if (g->bias) { /* y = matmul (+ bias) (-> gelu | + residual): the product by ops/matmul.c */
        loom__cpu_args mm, add, ge;
        args_of(cpu, p, m[LOOM__FU_MM], &mm);
        const loom_tensor *y = mm.node;
        int64_t N = y->dims[y->ndim - 1];
        loom__cpu_gemm_ep ep = {.Y = mm.y, .ldy = N, .ldg = N, .ldr = N, .ldz = N};
        const loom_tensor *sum = y; /* what the gelu or the residual add reads */
        if (m[LOOM__FU_BIAS] >= 0) {
            args_of(cpu, p, m[LOOM__FU_BIAS], &add);
            ep.bias = add.x[add.node->src[0] == y ? 1 : 0], ep.Y = add.y, sum = add.node;
        }
        if (m[LOOM__FU_GELU] >= 0) args_of(cpu, p, m[LOOM__FU_GELU], &ge), ep.G = ge.y;
        if (m[LOOM__FU_RES] >= 0) {
            args_of(cpu, p, m[LOOM__FU_RES], &ge);
            ep.R = ge.x[ge.node->src[0] == sum ? 1 : 0], ep.Z = ge.y;
        }
        return loom__cpu_matmul_ep(&mm, &ep);
    }
    if (g->attn) {
        loom__cpu_args three[3];
        for (int r = 0; r < 3; r++) args_of(cpu, p, m[LOOM__FU_ATTN_DQ + r], &three[r]);
        return loom__cpu_attention_grad_fused(cpu, three);
    }
    if (!g->backward) {
        args_of(cpu, p, m[LOOM__FU_BN], &a);
        loom__cpu_bn_job_init(&j.bn, &a);
        j.bn_y = a.y;
        if (m[LOOM__FU_ADD] >= 0) {
            args_of(cpu, p, m[LOOM__FU_ADD], &a);
            j.bn_first = a.node->src[0] == p->exec[m[LOOM__FU_BN]];
            j.add_y = a.y, j.add_other = a.x[j.bn_first ? 1 : 0];
        }
        if (m[LOOM__FU_POOL] >= 0) {
            args_of(cpu, p, m[LOOM__FU_POOL], &a);
            j.pool_y = a.y;
            j.H = a.node->src[0]->dims[2], j.W = a.node->src[0]->dims[3];
            j.OH = a.node->dims[2], j.OW = a.node->dims[3];
        }
        if (m[LOOM__FU_RELU] >= 0) args_of(cpu, p, m[LOOM__FU_RELU], &a), j.relu_y = a.y;
    } else {
        if (m[LOOM__FU_RELU_GRAD] >= 0) {
            args_of(cpu, p, m[LOOM__FU_RELU_GRAD], &a);
            j.rg_y = a.y, j.rg_x = a.x[0], j.rg_dy = a.x[1];
        }
        if (m[LOOM__FU_POOL_GRAD] >= 0) {
            args_of(cpu, p, m[LOOM__FU_POOL_GRAD], &a);
            j.pg_y = a.y, j.pg_x = a.x[0];
            if (!j.rg_y) j.rg_dy = a.x[1]; /* the pooled gradient comes from outside the group */
            j.H = a.node->dims[2], j.W = a.node->dims[3];
            j.OH = a.node->src[1]->dims[2], j.OW = a.node->src[1]->dims[3];
        }
        args_of(cpu, p, m[LOOM__FU_PARAMS], &a);
        loom__cpu_bn_job_init(&j.bn, &a);
        args_of(cpu, p, m[LOOM__FU_GRAD], &a);
        loom__cpu_bn_job_init(&j.dx, &a);
    }
    j.pool512 = loom__max2_avx512_ok();
    int64_t per = j.bn.N * j.bn.S, grain = per >= (1 << 14) ? 1 : (1 << 14) / per;
    loom__cpu_range_fn fn = g->backward ? bwd_range : fwd_range;
#ifdef HAVE_AVX2_VARIANT
    if (__builtin_cpu_supports("avx2")) fn = g->backward ? bwd_range_avx2 : fwd_range_avx2;
#endif
    loom__cpu_parallel(cpu, j.bn.C, grain, fn, &j);
    return LOOM_OK;
}
