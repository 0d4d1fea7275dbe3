/* backends/cuda/ops/optim.cu — sgd_step, adam_step, accumulate and
 * clip_coef on f32 params and states, a port of
 * backends/opencl/kernels/optim.cl (semantics and the hyper layout in
 * core/ops/optim.c), matching the f32 path of backends/cpu/ops/optim.c
 * operation for operation. Factors the CPU forms in double from f[] alone
 * arrive as floats rounded once on the host; those that need hyper[] (read
 * on the device: the learning rate and bias corrections change every step
 * without recompiling, and the CUDA graph replays fixed arguments) are
 * formed in float so that they round the same way: lr / bc1 and sqrt(bc2)
 * are correctly rounded (IEEE division and square root: the nvcc defaults),
 * and 1 - lr wd uses an exact product and sum (fma, two-sum). The
 * placeholder output y () is set to 0. f32 master weights only: another
 * dtype is LOOM_ERR_UNSUPPORTED at plan compile. */
#include "../common.cuh"

/* flags (LOOM_K_OPT_*): momentum buffer, nesterov, zero grad, coef given */
__global__ void sgd_step_k(float *p, float *gr, const float *hy, float *buf, const float *cf, float *y, int64_t n,
                           int flags, float mom, float damp1, float wd) {
    int64_t i = gid1();
    if (i >= n) return;
    if (i == 0) y[0] = 0.0f;
    if (hy[LOOM_G_HYPER_APPLY] < 0.0f) { /* skipped (loss scaling found inf/NaN): only clear the accumulator */
        if (flags & LOOM_K_OPT_ZERO_GRAD) gr[i] = 0.0f;
        return;
    }
    if (hy[LOOM_G_HYPER_APPLY] == 0.0f) return;
    float lr = hy[LOOM_G_HYPER_LR], mult = hy[LOOM_G_HYPER_GMULT] * ((flags & LOOM_K_OPT_COEF) ? cf[0] : 1.0f);
    bool first = hy[LOOM_G_HYPER_FIRST] != 0.0f;
    float g = gr[i] * mult;
    if (wd != 0.0f) g += wd * p[i];
    if (flags & LOOM_K_OPT_BUF) {
        buf[i] = first ? g : mom * buf[i] + damp1 * g;
        g = (flags & LOOM_K_OPT_NESTEROV) ? g + mom * buf[i] : buf[i];
    }
    p[i] -= lr * g;
    if (flags & LOOM_K_OPT_ZERO_GRAD) gr[i] = 0.0f;
}

/* 1 - lr * (wd_hi + wd_lo), rounded once from a nearly exact value */
__device__ __forceinline__ float one_minus_prod(float lr, float wd_hi, float wd_lo) {
    float ph = lr * wd_hi;
    float pl = __fmaf_rn(lr, wd_hi, -ph) + lr * wd_lo; /* lr * wd = ph + pl */
    float s = 1.0f - ph, bb = s - 1.0f;
    float e = (1.0f - (s - bb)) + (-ph - bb); /* 1 - ph = s + e exactly */
    return s + (e - pl);
}

/* flags (LOOM_K_OPT_*): BUF = decoupled weight decay (AdamW), zero grad, coef given */
__global__ void adam_step_k(float *p, float *gr, const float *hy, float *m, float *v, const float *cf, float *y,
                            int64_t n, int flags, float b1, float b2, float eps, float wd, float omb1, float omb2,
                            float wd_hi, float wd_lo) {
    int64_t i = gid1();
    if (i >= n) return;
    if (i == 0) y[0] = 0.0f;
    if (hy[LOOM_G_HYPER_APPLY] < 0.0f) { /* skipped (loss scaling found inf/NaN): only clear the accumulator */
        if (flags & LOOM_K_OPT_ZERO_GRAD) gr[i] = 0.0f;
        return;
    }
    if (hy[LOOM_G_HYPER_APPLY] == 0.0f) return;
    float lr = hy[LOOM_G_HYPER_LR];
    float mult = hy[LOOM_G_HYPER_GMULT] * ((flags & LOOM_K_OPT_COEF) ? cf[0] : 1.0f);
    float decay = one_minus_prod(lr, wd_hi, wd_lo);
    float step = __fdiv_rn(lr, hy[LOOM_G_HYPER_BC1]);
    float bc2s = __fsqrt_rn(hy[LOOM_G_HYPER_BC2]);
    float g = gr[i] * mult;
    if (wd != 0.0f) {
        if (flags & LOOM_K_OPT_BUF)
            p[i] *= decay;
        else g += wd * p[i];
    }
    m[i] = b1 * m[i] + omb1 * g;
    v[i] = b2 * v[i] + omb2 * g * g;
    p[i] -= step * m[i] / (__fsqrt_rn(v[i]) / bc2s + eps);
    if (flags & LOOM_K_OPT_ZERO_GRAD) gr[i] = 0.0f;
}

/* acc (n) += grad */
__global__ void accumulate_k(float *acc, const float *g, float *y, int64_t n) {
    int64_t i = gid1();
    if (i >= n) return;
    if (i == 0) y[0] = 0.0f;
    acc[i] += g[i];
}

/* y () = min(1, max_norm / (sqrt(sumsq) * hyper[GMULT] + 1e-6)); sumsq of
 * dtype sdt (the CPU forms this in double; float here) */
__global__ void clip_coef_k(const unsigned char *ss, int sdt, const float *hy, float *y, float max_norm) {
    if (gid1() != 0) return;
    float s = ld_any(ss, sdt, 0);
    float c = max_norm / (__fsqrt_rn(s) * hy[LOOM_G_HYPER_GMULT] + 1e-6f);
    y[0] = c < 1.0f ? c : 1.0f;
}

static loom_status need_f32(loom__cu_op *o, const loom_tensor *p) {
    if (p->dtype == LOOM_F32) return LOOM_OK;
    return loom__err(o->cu->ctx, LOOM_ERR_UNSUPPORTED, "cuda: %s on %s parameter '%s': only f32 master weights (node '%s')",
                     loom_op_name(o->t->op), loom_dtype_name(p->dtype), p->name, o->t->name);
}

static float *F(const loom__cu_op *o, const loom_tensor *t) { return loom__cu_ptr<float>(o, t); }

loom_status loom__cu_sgd_step(loom__cu_op *o) {
    const loom_tensor *t = o->t, *p = t->src[0];
    loom_status st = need_f32(o, p);
    if (st != LOOM_OK) return st;
    int ci = (int)t->p[LOOM_P_OPT_COEF];
    int flags = (t->p[LOOM_P_SGD_BUF] ? LOOM_K_OPT_BUF : 0) | (t->p[LOOM_P_SGD_NESTEROV] ? LOOM_K_OPT_NESTEROV : 0) |
                (t->p[LOOM_P_OPT_ZERO_GRAD] ? LOOM_K_OPT_ZERO_GRAD : 0) | (ci >= 0 ? LOOM_K_OPT_COEF : 0);
    int64_t n = loom_tensor_numel(p);
    if (n <= 0) return LOOM_OK;
    return loom__cu_launch(
        o, sgd_step_k, loom__cu_grid1d(n), LOOM__CU_THREADS, 0, F(o, p), F(o, t->src[1]), F(o, t->src[2]),
        F(o, t->p[LOOM_P_SGD_BUF] ? t->src[3] : p) /* momentum buffer (or unused) */,
        F(o, ci >= 0 ? t->src[ci] : t->src[2]) /* coef (or unused) */, F(o, t), n, flags,
        (float)t->f[LOOM_F_SGD_MOMENTUM], (float)(1 - t->f[LOOM_F_SGD_DAMPENING]), (float)t->f[LOOM_F_SGD_WD]);
}

loom_status loom__cu_adam_step(loom__cu_op *o) {
    const loom_tensor *t = o->t, *p = t->src[0];
    loom_status st = need_f32(o, p);
    if (st != LOOM_OK) return st;
    int ci = (int)t->p[LOOM_P_OPT_COEF];
    int flags = (t->p[LOOM_P_ADAM_DECOUPLED] ? LOOM_K_OPT_BUF : 0) |
                (t->p[LOOM_P_OPT_ZERO_GRAD] ? LOOM_K_OPT_ZERO_GRAD : 0) | (ci >= 0 ? LOOM_K_OPT_COEF : 0);
    int64_t n = loom_tensor_numel(p);
    if (n <= 0) return LOOM_OK;
    float wd_hi = (float)t->f[LOOM_F_ADAM_WD], wd_lo = (float)(t->f[LOOM_F_ADAM_WD] - (double)wd_hi);
    return loom__cu_launch(o, adam_step_k, loom__cu_grid1d(n), LOOM__CU_THREADS, 0, F(o, p), F(o, t->src[1]),
                           F(o, t->src[2]), F(o, t->src[3]), F(o, t->src[4]), F(o, ci >= 0 ? t->src[ci] : t->src[2]),
                           F(o, t), n, flags, (float)t->f[LOOM_F_ADAM_BETA1], (float)t->f[LOOM_F_ADAM_BETA2],
                           (float)t->f[LOOM_F_ADAM_EPS], (float)t->f[LOOM_F_ADAM_WD],
                           (float)(1 - t->f[LOOM_F_ADAM_BETA1]), (float)(1 - t->f[LOOM_F_ADAM_BETA2]), wd_hi, wd_lo);
}

loom_status loom__cu_accumulate(loom__cu_op *o) {
    const loom_tensor *t = o->t, *acc = t->src[0];
    loom_status st = need_f32(o, acc);
    if (st != LOOM_OK) return st;
    int64_t n = loom_tensor_numel(acc);
    if (n <= 0) return LOOM_OK;
    return loom__cu_launch(o, accumulate_k, loom__cu_grid1d(n), LOOM__CU_THREADS, 0, F(o, acc), F(o, t->src[1]),
                           F(o, t), n);
}

loom_status loom__cu_clip_coef(loom__cu_op *o) {
    const loom_tensor *t = o->t, *ss = t->src[0];
    if (ss->dtype == LOOM_F64) return need_f32(o, ss);
    return loom__cu_launch(o, clip_coef_k, 1, 32, 0, loom__cu_ptr<const unsigned char>(o, ss), (int)ss->dtype,
                           F(o, t->src[1]), F(o, t), (float)t->f[LOOM_F_CLIP_MAX_NORM]);
}
