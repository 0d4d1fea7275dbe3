/* backends/opencl/kernels/optim.cl — the optimizer's effect ops on f32
 * params and states (semantics and the hyper layout in core/ops/optim.c),
 * matching the f32 path of backends/cpu/ops/optim.c operation for operation.
 * Factors the CPU forms in double from f[] alone arrive as floats rounded
 * once on the host; those that need hyper[] (read here, on the device) are
 * formed in float so that they round the same way: lr / bc1 and sqrt(bc2)
 * are correctly rounded (the program is built with
 * -cl-fp32-correctly-rounded-divide-sqrt where the device has it), and
 * 1 - lr wd uses an exact product and sum (fma, two-sum). The placeholder
 * output y () is set to 0. */

/* flags (LOOM_K_OPT_*): momentum buffer, nesterov, zero grad, coef given */
__kernel void sgd_step(__global float *p, ulong po, __global float *gr, ulong go, __global const float *hy, ulong ho,
                       __global float *buf, ulong bo, __global const float *cf, ulong co, __global float *y, ulong yo,
                       long n, int flags, float mom, float damp1, float wd) {
    long i = get_global_id(0);
    if (i >= n) return;
    hy += ho;
    if (i == 0) y[yo] = 0.0f;
    if (hy[LOOM_G_HYPER_APPLY] < 0.0f) { /* skipped (loss scaling found inf/NaN): only clear the accumulator */
        if (flags & LOOM_K_OPT_ZERO_GRAD) gr[go + i] = 0.0f;
        return;
    }
    if (hy[LOOM_G_HYPER_APPLY] == 0.0f) return;
    p += po, gr += go, buf += bo;
    float lr = hy[LOOM_G_HYPER_LR], mult = hy[LOOM_G_HYPER_GMULT] * ((flags & LOOM_K_OPT_COEF) ? cf[co] : 1.0f);
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
inline float one_minus_prod(float lr, float wd_hi, float wd_lo) {
    float ph = lr * wd_hi;
    float pl = fma(lr, wd_hi, -ph) + lr * wd_lo; /* lr * wd = ph + pl */
    float s = 1.0f - ph, bb = s - 1.0f;
    float e = (1.0f - (s - bb)) + (-ph - bb); /* 1 - ph = s + e exactly */
    return s + (e - pl);
}

/* flags (LOOM_K_OPT_*): BUF = decoupled weight decay (AdamW), zero grad, coef given */
__kernel void adam_step(__global float *p, ulong po, __global float *gr, ulong go, __global const float *hy, ulong ho,
                        __global float *m, ulong mo, __global float *v, ulong vo, __global const float *cf, ulong co,
                        __global float *y, ulong yo, long n, int flags, float b1, float b2, float eps, float wd,
                        float omb1, float omb2, float wd_hi, float wd_lo) {
    long i = get_global_id(0);
    if (i >= n) return;
    hy += ho;
    if (i == 0) y[yo] = 0.0f;
    if (hy[LOOM_G_HYPER_APPLY] < 0.0f) { /* skipped (loss scaling found inf/NaN): only clear the accumulator */
        if (flags & LOOM_K_OPT_ZERO_GRAD) gr[go + i] = 0.0f;
        return;
    }
    if (hy[LOOM_G_HYPER_APPLY] == 0.0f) return;
    p += po, gr += go, m += mo, v += vo;
    float lr = hy[LOOM_G_HYPER_LR];
    float mult = hy[LOOM_G_HYPER_GMULT] * ((flags & LOOM_K_OPT_COEF) ? cf[co] : 1.0f);
    float decay = one_minus_prod(lr, wd_hi, wd_lo);
    float step = lr / hy[LOOM_G_HYPER_BC1];
    float bc2s = sqrt(hy[LOOM_G_HYPER_BC2]);
    float g = gr[i] * mult;
    if (wd != 0.0f) {
        if (flags & LOOM_K_OPT_BUF) p[i] *= decay;
        else g += wd * p[i];
    }
    m[i] = b1 * m[i] + omb1 * g;
    v[i] = b2 * v[i] + omb2 * g * g;
    p[i] -= step * m[i] / (sqrt(v[i]) / bc2s + eps);
    if (flags & LOOM_K_OPT_ZERO_GRAD) gr[i] = 0.0f;
}

/* sgd_step8 and adam_step8: sgd_step and adam_step eight elements per work-item as float8
 * (n a multiple of 8; CPU devices, ops/optim.c): the same operations on each lane, so the same
 * bits (the one-element kernels branch on the flags per element, which PoCL runs scalar) */

/* the eight-element steps' start: item 0 clears y; false when the step is skipped (apply 0, or
 * below 0 when loss scaling found inf/NaN: then only the accumulator is cleared, where asked) */
inline bool step8_runs(__global const float *hy, __global float *gr, long i, int flags, __global float *y) {
    if (i == 0) y[0] = 0.0f;
    if (hy[LOOM_G_HYPER_APPLY] < 0.0f && (flags & LOOM_K_OPT_ZERO_GRAD)) vstore8((float8)(0.0f), 0, gr);
    return !(hy[LOOM_G_HYPER_APPLY] <= 0.0f); /* as the one-element kernels: a NaN runs the step */
}

__kernel void sgd_step8(__global float *p, ulong po, __global float *gr, ulong go, __global const float *hy, ulong ho,
                        __global float *buf, ulong bo, __global const float *cf, ulong co, __global float *y, ulong yo,
                        long n, int flags, float mom, float damp1, float wd) {
    long i = 8 * get_global_id(0);
    if (i >= n) return;
    hy += ho;
    if (!step8_runs(hy, gr + go + i, i, flags, y + yo)) return;
    p += po + i, gr += go + i, buf += bo + i;
    float lr = hy[LOOM_G_HYPER_LR], mult = hy[LOOM_G_HYPER_GMULT] * ((flags & LOOM_K_OPT_COEF) ? cf[co] : 1.0f);
    bool first = hy[LOOM_G_HYPER_FIRST] != 0.0f;
    float8 g = vload8(0, gr) * mult;
    if (wd != 0.0f) g += wd * vload8(0, p);
    if (flags & LOOM_K_OPT_BUF) {
        float8 b = first ? g : mom * vload8(0, buf) + damp1 * g;
        vstore8(b, 0, buf);
        g = (flags & LOOM_K_OPT_NESTEROV) ? g + mom * b : b;
    }
    float8 q = vload8(0, p);
    q -= lr * g;
    vstore8(q, 0, p);
    if (flags & LOOM_K_OPT_ZERO_GRAD) vstore8((float8)(0.0f), 0, gr);
}

__kernel void adam_step8(__global float *p, ulong po, __global float *gr, ulong go, __global const float *hy, ulong ho,
                         __global float *m, ulong mo, __global float *v, ulong vo, __global const float *cf, ulong co,
                         __global float *y, ulong yo, long n, int flags, float b1, float b2, float eps, float wd,
                         float omb1, float omb2, float wd_hi, float wd_lo) {
    long i = 8 * get_global_id(0);
    if (i >= n) return;
    hy += ho;
    if (!step8_runs(hy, gr + go + i, i, flags, y + yo)) return;
    p += po + i, gr += go + i, m += mo + i, v += vo + i;
    float lr = hy[LOOM_G_HYPER_LR];
    float mult = hy[LOOM_G_HYPER_GMULT] * ((flags & LOOM_K_OPT_COEF) ? cf[co] : 1.0f);
    float decay = one_minus_prod(lr, wd_hi, wd_lo);
    float step = lr / hy[LOOM_G_HYPER_BC1];
    float bc2s = sqrt(hy[LOOM_G_HYPER_BC2]);
    float8 g = vload8(0, gr) * mult, q = vload8(0, p);
    if (wd != 0.0f) {
        if (flags & LOOM_K_OPT_BUF) q *= decay;
        else g += wd * q;
    }
    float8 mm = b1 * vload8(0, m) + omb1 * g, vv = b2 * vload8(0, v) + omb2 * g * g;
    vstore8(mm, 0, m), vstore8(vv, 0, v);
    q -= step * mm / (sqrt(vv) / bc2s + eps);
    vstore8(q, 0, p);
    if (flags & LOOM_K_OPT_ZERO_GRAD) vstore8((float8)(0.0f), 0, gr);
}

/* acc (n) += grad */
__kernel void accumulate(__global float *acc, ulong ao, __global const float *g, ulong go, __global float *y, ulong yo,
                         long n) {
    long i = get_global_id(0);
    if (i >= n) return;
    if (i == 0) y[yo] = 0.0f;
    acc[ao + i] += g[go + i];
}

/* y () = min(1, max_norm / (sqrt(sumsq) * hyper[GMULT] + 1e-6)); sumsq of
 * dtype sdt (the CPU forms this in double; float here) */
__kernel void clip_coef(__global const uchar *ss, ulong so, int sdt, __global const float *hy, ulong ho,
                        __global float *y, ulong yo, float max_norm) {
    if (get_global_id(0) != 0) return;
    float s = ld_any(ss + so * (sdt == LOOM_K_DT_F32 ? 4 : 2), sdt, 0);
    float c = max_norm / (sqrt(s) * hy[ho + LOOM_G_HYPER_GMULT] + 1e-6f);
    y[yo] = c < 1.0f ? c : 1.0f;
}
