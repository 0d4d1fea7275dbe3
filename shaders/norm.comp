/* shaders/norm.comp — batch norm, layer norm and their gradient ops, as
 * backends/opencl/kernels/norm.cl and backends/cpu/ops/norm.c (parameters:
 * core/ops/norm.c). Statistics are two-pass (mean, then the sum of squared
 * deviations) with float work-group tree sums: one work-group per channel
 * (batch norm), per row (layer norm) or per column (layer-norm parameter
 * gradients). Running statistics, the (4, C) batch-norm statistics and the
 * layer-norm row statistics are f32 whatever T is. Absent optional inputs
 * (has_* = 0) are bound to x and never read. Every invocation reaches every
 * barrier (group_sum); a work-group past the pushed count returns as a whole. */
#version 450
#extension GL_GOOGLE_include_directive : require
#define LOOM_GROUP_REDUCE
#include "common.glsl"



/* ---- batch norm: x (N, C, S), channel c of element (n, i) at (n C + c) S + i ---- */

#if defined(V4) && defined(TEXEL)
/* TEXEL (CPU devices): x and dy read through R32G32B32A32_SFLOAT uniform
 * texel buffers (bindings 10 and 11, views of the bindings of x and dy; one
 * texel = one vec4 of the storage form, same index): lavapipe gathers texels
 * where it loads storage buffers lane by lane */
layout(set = 0, binding = 10) uniform samplerBuffer x_t;
layout(set = 0, binding = 11) uniform samplerBuffer dy_t;
#define XV(i) texelFetch(x_t, int(i))
#define DYV(i) texelFetch(dy_t, int(i))
#elif defined(V4)
#define XV(i) x[i]
#define DYV(i) dy[i]
#endif

#if defined(V4) && (defined(K_BATCH_NORM) || defined(K_BATCH_NORM_GRAD_PARAMS))
/* the same statistics one vec4 (four elements of a plane) per load: S % 4 == 0
 * and x's pushed offset a multiple of 4 (ops/norm.c checks both); M4 = N S / 4 */
#define BN_STATS4(x, xo4, M4, C, S4, c, mean, var)                                                \
    {                                                                                             \
        uint l_ = gl_LocalInvocationID.x, nl_ = gl_WorkGroupSize.x;                               \
        float sum_ = 0.0;                                                                         \
        for (uint e = l_; e < (M4); e += nl_) {                                                   \
            vec4 v_ = XV((xo4) + ((e / (S4)) * (C) + (c)) * (S4) + e % (S4));                    \
            sum_ += (v_.x + v_.y) + (v_.z + v_.w);                                                \
        }                                                                                         \
        float m_ = group_sum(sum_) / float(4u * (M4));                                            \
        float q_ = 0.0;                                                                           \
        for (uint e = l_; e < (M4); e += nl_) {                                                   \
            vec4 d_ = XV((xo4) + ((e / (S4)) * (C) + (c)) * (S4) + e % (S4)) - m_;               \
            q_ += (d_.x * d_.x + d_.y * d_.y) + (d_.z * d_.z + d_.w * d_.w);                      \
        }                                                                                         \
        mean = m_;                                                                                \
        var = group_sum(q_) / float(4u * (M4));                                                   \
    }
#endif

#if defined(V4) && defined(K_BATCH_NORM)
/* K_BATCH_NORM in f32, one vec4 per load and store (x and y offsets multiples of 4) */
TENSOR_IN(0, vec4, x);
TENSOR_IN(1, T, gm);
TENSOR_IN(2, T, bt);
TENSOR_OUT(3, float, rm);
TENSOR_OUT(4, float, rv);
TENSOR_OUT(5, vec4, y);
PUSH {
    uint xo, gmo, bto, rmo, rvo, yo, N, C, S;
    int train, has_g, has_b, has_run;
    float eps, momentum;
} pc;

void main() {
    uint c = loom_group();
    if (c >= pc.C) return;
    uint l = gl_LocalInvocationID.x, nl = gl_WorkGroupSize.x;
    uint S4 = pc.S / 4u, M4 = pc.N * S4, C = pc.C, xo4 = pc.xo / 4u, yo4 = pc.yo / 4u;
    float mean, var;
    BN_STATS4(x, xo4, (pc.train != 0 ? M4 : 0u), C, S4, c, mean, var);
    if (pc.train != 0) {
        if (pc.has_run != 0 && l == 0u) {
            float mf = float(4u * M4);
            precise float a = (1.0 - pc.momentum) * rm[pc.rmo + c] + pc.momentum * mean;
            precise float b = (1.0 - pc.momentum) * rv[pc.rvo + c] + pc.momentum * (var * mf / (mf - 1.0));
            rm[pc.rmo + c] = a;
            rv[pc.rvo + c] = b;
        }
    } else {
        mean = rm[pc.rmo + c], var = rv[pc.rvo + c];
    }
    float invstd = 1.0 / sqrt(var + pc.eps);
    float g = pc.has_g != 0 ? LD(gm, pc.gmo + c) : 1.0, b = pc.has_b != 0 ? LD(bt, pc.bto + c) : 0.0;
    for (uint e = l; e < M4; e += nl) {
        uint k = ((e / S4) * C + c) * S4 + e % S4;
        precise vec4 v = (XV(xo4 + k) - mean) * invstd * g + b;
        y[yo4 + k] = v;
    }
}

#elif defined(V4) && defined(K_BATCH_NORM_GRAD_PARAMS)
/* K_BATCH_NORM_GRAD_PARAMS in f32, one vec4 of x and of dy per load */
TENSOR_IN(0, vec4, x);
TENSOR_IN(1, vec4, dy);
TENSOR_IN(2, float, rm);
TENSOR_IN(3, float, rv);
TENSOR_OUT(4, float, outp);
PUSH {
    uint xo, dyo, rmo, rvo, outo, N, C, S;
    int train;
    float eps;
} pc;

void main() {
    uint c = loom_group();
    if (c >= pc.C) return;
    uint l = gl_LocalInvocationID.x, nl = gl_WorkGroupSize.x;
    uint S4 = pc.S / 4u, M4 = pc.N * S4, C = pc.C, xo4 = pc.xo / 4u, dyo4 = pc.dyo / 4u;
    float mean, var;
    BN_STATS4(x, xo4, (pc.train != 0 ? M4 : 0u), C, S4, c, mean, var);
    if (pc.train == 0) mean = rm[pc.rmo + c], var = rv[pc.rvo + c];
    float invstd = 1.0 / sqrt(var + pc.eps);
    float sd = 0.0, sdx = 0.0;
    for (uint e = l; e < M4; e += nl) {
        uint k = ((e / S4) * C + c) * S4 + e % S4;
        vec4 gv = DYV(dyo4 + k), p = gv * (XV(xo4 + k) - mean);
        sd += (gv.x + gv.y) + (gv.z + gv.w);
        sdx += (p.x + p.y) + (p.z + p.w);
    }
    sd = group_sum(sd);
    sdx = group_sum(sdx);
    if (l == 0u) {
        outp[pc.outo + c] = sdx * invstd;
        outp[pc.outo + C + c] = sd;
        outp[pc.outo + 2u * C + c] = mean;
        outp[pc.outo + 3u * C + c] = invstd;
    }
}

#elif defined(V4) && defined(K_BATCH_NORM_GRAD)
/* K_BATCH_NORM_GRAD in f32, one invocation per four elements of a plane; RUN (with TEXEL and
 * FASTDIV, CPU devices): per run of pc.run vec4s of one plane, so that the channel's five values
 * are loaded once per run (lavapipe loops over its lanes per storage load: the cnn's two gradients
 * 20.7-22.4 -> 6.9-8.5 ms per step under --profile on an AMD EPYC Zen 3) */
TENSOR_IN(0, vec4, x);
TENSOR_IN(1, T, gm);
TENSOR_IN(2, vec4, dy);
TENSOR_IN(3, float, st);
TENSOR_OUT(4, vec4, dx);
PUSH {
    uint xo, gmo, dyo, sto, dxo, N, C, S;
    int train, has_g;
    uint run; /* RUN: vec4s per invocation, a divisor of S / 4 */
} pc;

void main() {
    uint S4 = pc.S / 4u;
#if defined(RUN) /* N C S / 4 < 2^22 (the host checks) */
    uint j = loom_gid(), J = S4 / pc.run; /* J runs per plane */
    if (j >= pc.N * pc.C * J) return;
    uint C = pc.C, p = loom_udiv22(j, J), c = p - loom_udiv22(p, C) * C, k0 = p * S4 + (j - p * J) * pc.run;
#else
    uint k0 = loom_gid();
    if (k0 >= pc.N * pc.C * S4) return;
#if defined(FASTDIV) /* N C S / 4 < 2^22 (the host checks) */
    uint C = pc.C, p = loom_udiv22(k0, S4), c = p - loom_udiv22(p, C) * C;
#else
    uint C = pc.C, c = (k0 / S4) % C;
#endif
#endif
    float M = float(pc.N * pc.S);
    float sdx = st[pc.sto + c] / M, sd = st[pc.sto + C + c] / M;
    float mean = st[pc.sto + 2u * C + c], invstd = st[pc.sto + 3u * C + c];
    float g = pc.has_g != 0 ? LD(gm, pc.gmo + c) : 1.0;
#if defined(RUN)
    for (uint k = k0; k < k0 + pc.run; k++) {
#else
    {
        uint k = k0;
#endif
        vec4 d = DYV(pc.dyo / 4u + k), xh = (XV(pc.xo / 4u + k) - mean) * invstd;
        precise vec4 v = pc.train != 0 ? g * invstd * (d - sd - xh * sdx) : g * invstd * d;
        dx[pc.dxo / 4u + k] = v;
    }
}

#endif

#if !defined(V4) && (defined(K_BATCH_NORM) || defined(K_BATCH_NORM_GRAD_PARAMS))
/* batch mean and biased variance of channel c over its first M elements
 * (N S, or 0 to skip) of x (at element offset xo) */
#define BN_STATS(x, xo, M, C, S, c, mean, var)                                                    \
    {                                                                                             \
        uint l_ = gl_LocalInvocationID.x, nl_ = gl_WorkGroupSize.x;                               \
        float sum_ = 0.0;                                                                         \
        for (uint e = l_; e < (M); e += nl_) sum_ += LD(x, (xo) + ((e / (S)) * (C) + (c)) * (S) + e % (S)); \
        float m_ = group_sum(sum_) / float(M);                                                    \
        float q_ = 0.0;                                                                           \
        for (uint e = l_; e < (M); e += nl_) {                                                    \
            float d_ = LD(x, (xo) + ((e / (S)) * (C) + (c)) * (S) + e % (S)) - m_;                \
            q_ += d_ * d_;                                                                        \
        }                                                                                         \
        mean = m_;                                                                                \
        var = group_sum(q_) / float(M);                                                           \
    }
#endif

#if defined(V4)
/* (the f32 vec4 batch-norm kernels above) */
#elif defined(K_BATCH_NORM)
/* y = (x - mean) invstd gamma + beta per channel; train: batch statistics,
 * and (has_run) running = (1 - momentum) running + momentum stat, with the
 * unbiased variance; eval: the running statistics. One group per channel. */
TENSOR_IN(0, T, x);
TENSOR_IN(1, T, gm);
TENSOR_IN(2, T, bt);
TENSOR_OUT(3, float, rm);
TENSOR_OUT(4, float, rv);
TENSOR_OUT(5, T, y);
PUSH {
    uint xo, gmo, bto, rmo, rvo, yo, N, C, S;
    int train, has_g, has_b, has_run;
    float eps, momentum;
} pc;

void main() {
    uint c = loom_group();
    if (c >= pc.C) return;
    uint l = gl_LocalInvocationID.x, nl = gl_WorkGroupSize.x;
    uint M = pc.N * pc.S, C = pc.C, S = pc.S;
    float mean, var;
    BN_STATS(x, pc.xo, (pc.train != 0 ? M : 0u), C, S, c, mean, var);
    if (pc.train != 0) {
        if (pc.has_run != 0 && l == 0u) {
            float mf = float(M);
            precise float a = (1.0 - pc.momentum) * rm[pc.rmo + c] + pc.momentum * mean;
            precise float b = (1.0 - pc.momentum) * rv[pc.rvo + c] + pc.momentum * (var * mf / (mf - 1.0));
            rm[pc.rmo + c] = a;
            rv[pc.rvo + c] = b;
        }
    } else {
        mean = rm[pc.rmo + c], var = rv[pc.rvo + c];
    }
    float invstd = 1.0 / sqrt(var + pc.eps);
    float g = pc.has_g != 0 ? LD(gm, pc.gmo + c) : 1.0, b = pc.has_b != 0 ? LD(bt, pc.bto + c) : 0.0;
    for (uint e = l; e < M; e += nl) {
        uint k = ((e / S) * C + c) * S + e % S;
        precise float v = (LD(x, pc.xo + k) - mean) * invstd * g + b;
        ST(y, pc.yo + k, v);
    }
}

#elif defined(K_BATCH_NORM_GRAD_PARAMS)
/* out (4, C) f32: sum(dy xhat), sum(dy), mean, invstd (batch statistics in
 * train mode, running ones in eval mode). One group per channel. */
TENSOR_IN(0, T, x);
TENSOR_IN(1, T, dy);
TENSOR_IN(2, float, rm);
TENSOR_IN(3, float, rv);
TENSOR_OUT(4, float, outp);
PUSH {
    uint xo, dyo, rmo, rvo, outo, N, C, S;
    int train;
    float eps;
} pc;

void main() {
    uint c = loom_group();
    if (c >= pc.C) return;
    uint l = gl_LocalInvocationID.x, nl = gl_WorkGroupSize.x;
    uint M = pc.N * pc.S, C = pc.C, S = pc.S;
    float mean, var;
    BN_STATS(x, pc.xo, (pc.train != 0 ? M : 0u), C, S, c, mean, var);
    if (pc.train == 0) mean = rm[pc.rmo + c], var = rv[pc.rvo + c];
    float invstd = 1.0 / sqrt(var + pc.eps);
    float sd = 0.0, sdx = 0.0;
    for (uint e = l; e < M; e += nl) {
        uint k = ((e / S) * C + c) * S + e % S;
        float gv = LD(dy, pc.dyo + k);
        sd += gv;
        sdx += gv * (LD(x, pc.xo + k) - mean);
    }
    sd = group_sum(sd);
    sdx = group_sum(sdx);
    if (l == 0u) {
        outp[pc.outo + c] = sdx * invstd;
        outp[pc.outo + C + c] = sd;
        outp[pc.outo + 2u * C + c] = mean;
        outp[pc.outo + 3u * C + c] = invstd;
    }
}

#elif defined(K_BATCH_NORM_GRAD)
/* dx, one invocation per element: train: g invstd (dy - sum(dy)/M - xhat sum(dy xhat)/M);
 * eval: g invstd dy (stats (4, C) f32 from batch_norm_grad_params) */
TENSOR_IN(0, T, x);
TENSOR_IN(1, T, gm);
TENSOR_IN(2, T, dy);
TENSOR_IN(3, float, st);
TENSOR_OUT(4, T, dx);
PUSH {
    uint xo, gmo, dyo, sto, dxo, N, C, S;
    int train, has_g;
} pc;

void main() {
    uint k = loom_gid();
    if (k >= pc.N * pc.C * pc.S) return;
    uint C = pc.C, c = (k / pc.S) % C;
    float M = float(pc.N * pc.S);
    float sdx = st[pc.sto + c] / M, sd = st[pc.sto + C + c] / M;
    float mean = st[pc.sto + 2u * C + c], invstd = st[pc.sto + 3u * C + c];
    float g = pc.has_g != 0 ? LD(gm, pc.gmo + c) : 1.0, d = LD(dy, pc.dyo + k);
    float xh = (LD(x, pc.xo + k) - mean) * invstd;
    precise float v = pc.train != 0 ? g * invstd * (d - sd - xh * sdx) : g * invstd * d;
    ST(dx, pc.dxo + k, v);
}

/* ---- layer norm: x (R, D), one group per row ---- */

#elif defined(K_LAYER_NORM) || defined(K_LAYER_NORM_GRAD) || defined(K_LN_ROWSTATS)
/* mean and invstd of the row at element `base` of x (D) (every invocation gets them) */
#define LN_STATS(base, D, eps, mean, invstd)                                                      \
    {                                                                                             \
        uint l_ = ROW_L, nl_ = ROW_NL;                                                              \
        float sum_ = 0.0;                                                                         \
        for (uint i_ = l_; i_ < (D); i_ += nl_) sum_ += LD(x, (base) + i_);                       \
        float m_ = ROW_SUM(sum_) / float(D);                                                       \
        float q_ = 0.0;                                                                           \
        for (uint i_ = l_; i_ < (D); i_ += nl_) {                                                 \
            float d_ = LD(x, (base) + i_) - m_;                                                   \
            q_ += d_ * d_;                                                                        \
        }                                                                                         \
        mean = m_;                                                                                \
        invstd = 1.0 / sqrt(ROW_SUM(q_) / float(D) + (eps));                                       \
    }

#if defined(K_LAYER_NORM)
/* y[r, i] = (x[r, i] - mean_r) invstd_r gamma[i] + beta[i] */
TENSOR_IN(0, T, x);
TENSOR_IN(1, T, gm);
TENSOR_IN(2, T, bt);
TENSOR_OUT(3, T, y);
PUSH {
    uint xo, gmo, bto, yo, R, D;
    int has_g, has_b;
    float eps;
} pc;

void main() {
    uint r = ROW_ID();
    if (r >= pc.R) return;
    uint l = ROW_L, nl = ROW_NL, D = pc.D;
    uint xb = pc.xo + r * D, yb = pc.yo + r * D;
    float mean, invstd;
    LN_STATS(xb, D, pc.eps, mean, invstd);
    for (uint i = l; i < D; i += nl) {
        precise float v = (LD(x, xb + i) - mean) * invstd * (pc.has_g != 0 ? LD(gm, pc.gmo + i) : 1.0) +
                          (pc.has_b != 0 ? LD(bt, pc.bto + i) : 0.0);
        ST(y, yb + i, v);
    }
}

#elif defined(K_LAYER_NORM_GRAD)
/* dx = invstd (g dy - mean(g dy) - xhat mean(g dy xhat)) per row */
TENSOR_IN(0, T, x);
TENSOR_IN(1, T, gm);
TENSOR_IN(2, T, dy);
TENSOR_OUT(3, T, dx);
PUSH {
    uint xo, gmo, dyo, dxo, R, D;
    int has_g;
    float eps;
} pc;

void main() {
    uint r = ROW_ID();
    if (r >= pc.R) return;
    uint l = ROW_L, nl = ROW_NL, D = pc.D;
    uint xb = pc.xo + r * D, db = pc.dyo + r * D, ob = pc.dxo + r * D;
    float mean, invstd;
    LN_STATS(xb, D, pc.eps, mean, invstd);
    float a = 0.0, b = 0.0;
    for (uint i = l; i < D; i += nl) {
        float gd = LD(dy, db + i) * (pc.has_g != 0 ? LD(gm, pc.gmo + i) : 1.0);
        a += gd;
        b += gd * (LD(x, xb + i) - mean) * invstd;
    }
    a = ROW_SUM(a) / float(D);
    b = ROW_SUM(b) / float(D);
    for (uint i = l; i < D; i += nl) {
        float gd = LD(dy, db + i) * (pc.has_g != 0 ? LD(gm, pc.gmo + i) : 1.0);
        precise float v = invstd * (gd - a - (LD(x, xb + i) - mean) * invstd * b);
        ST(dx, ob + i, v);
    }
}

#else /* K_LN_ROWSTATS */
/* st (2, R) f32: mean and invstd of each row of x (R, D); one group per row */
TENSOR_IN(0, T, x);
TENSOR_OUT(1, float, st);
PUSH {
    uint xo, R, D;
    float eps;
} pc;

void main() {
    uint r = ROW_ID();
    if (r >= pc.R) return;
    float mean, invstd;
    LN_STATS(pc.xo + r * pc.D, pc.D, pc.eps, mean, invstd);
    if (ROW_L == 0u) {
        st[r] = mean;
        st[pc.R + r] = invstd;
    }
}
#endif

#elif defined(K_LAYER_NORM_GRAD_PARAMS)
/* out (2, D): out[0, i] = sum_r dy xhat, out[1, i] = sum_r dy, with the row
 * statistics st (2, R) f32 from ln_rowstats; one group per column i */
TENSOR_IN(0, T, x);
TENSOR_IN(1, T, dy);
TENSOR_IN(2, float, st);
TENSOR_OUT(3, T, outp);
PUSH { uint xo, dyo, outo, R, D; } pc;

void main() {
    uint i = ROW_ID();
    if (i >= pc.D) return;
    uint l = ROW_L, nl = ROW_NL, R = pc.R, D = pc.D;
    float dg = 0.0, db = 0.0;
    for (uint r = l; r < R; r += nl) {
        uint k = r * D + i;
        float gv = LD(dy, pc.dyo + k);
        dg += gv * (LD(x, pc.xo + k) - st[r]) * st[R + r];
        db += gv;
    }
    dg = ROW_SUM(dg);
    db = ROW_SUM(db);
    if (l == 0u) {
        ST(outp, pc.outo + i, dg);
        ST(outp, pc.outo + D + i, db);
    }
}

#else
#error "norm.comp: define one of K_BATCH_NORM, K_BATCH_NORM_GRAD_PARAMS, K_BATCH_NORM_GRAD, K_LAYER_NORM, K_LAYER_NORM_GRAD, K_LN_ROWSTATS, K_LAYER_NORM_GRAD_PARAMS"
#endif
