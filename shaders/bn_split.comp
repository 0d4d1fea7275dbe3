/* shaders/bn_split.comp — batch norm in training, split for CPU devices
 * (backends/vulkan/ops/norm.c; LOOM_VULKAN_BN_SPLIT), as the bn_colsum /
 * bn_finish / bn_apply kernels of backends/opencl/kernels/norm.cl. norm.comp
 * runs one work-group per channel that reads x three times (the mean, the
 * squared deviations, the output; the parameter gradient: twice for the
 * statistics, once with dy) and meets at barriers; here x (and dy) are read
 * once for all the sums, with no barrier:
 *   K_BN_COLSUM  one invocation per (c, vec4 i) of an image's C x S block:
 *                the sums over the N images of d = x - x[0, c, 0] and d^2
 *                (WITH_DY: also dy and dy d), the vec4's four lanes added,
 *                into cs (2 or 4, C, S/4) f32; neighbouring invocations read
 *                neighbouring texels
 *   K_BN_FINISH  one invocation per channel: the column sums -> mean and
 *                biased variance (shifted by s = x[0, c, 0]: mean = s + E[d],
 *                var = E[d^2] - E[d]^2, s one of the channel's own values),
 *                then (MODE_GRAD) out (4, C) = sum(dy xhat), sum(dy), mean,
 *                invstd as norm.comp's batch_norm_grad_params, or st (C) =
 *                vec4(mean, invstd, gamma, beta) (1 and 0 where absent: the
 *                apply's one load per channel) and the running statistics
 *   K_BN_APPLY   one invocation per vec4: y = (x - mean) invstd gamma + beta;
 *                FUSE (a fused group, core/fuse.h): then the add of a
 *                same-shape tensor and/or relu, each output written, as the
 *                add and relu kernels would one after the other
 *   K_BN_APPLY_POOL  (a fused group) one invocation per 2x2 window of even
 *                planes, a window row per vec2: the apply, then max pooling
 *                (loom_arg4) and, with has_relu, relu of the maximum
 * f32 only, planes of a multiple of 4 elements (S % 4 == 0), one vec4 per
 * load; TEXEL (the *_t variants): x and dy (the applies: x and st) read
 * through R32G32B32A32_SFLOAT texel views (bindings 10 and 11, one texel =
 * one vec4 of the storage form), which lavapipe gathers; bn_apply_pool_t
 * reads x one element per texel (R32_SFLOAT: a window's four values, four
 * gathers). lavapipe loads storage buffers lane by lane: the apply's four
 * per-channel loads as one vec4, then as a gather, took the cnn's batch norm
 * (--profile) on an AMD EPYC (Zen 3) from 24.5 to 10.5-13.7 ms per step. The channel of a vec4 comes from
 * loom_udiv22 (the host keeps N C S / 4 below 2^22). */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#if defined(TEXEL)
layout(set = 0, binding = 10) uniform samplerBuffer x_t;
#define XV(i) texelFetch(x_t, int(i))
#if defined(K_BN_COLSUM)
layout(set = 0, binding = 11) uniform samplerBuffer dy_t;
#define DYV(i) texelFetch(dy_t, int(i))
#else
layout(set = 0, binding = 11) uniform samplerBuffer st_t;
#define STV(c) texelFetch(st_t, int(c))
#endif
#else
#define XV(i) x[i]
#define DYV(i) dy[i]
#define STV(c) st[c]
#endif

#if defined(K_BN_COLSUM)
TENSOR_IN(0, vec4, x);
TENSOR_IN(1, vec4, dy); /* x again without WITH_DY (not read) */
TENSOR_OUT(2, float, cs);
PUSH { uint xo, dyo, N, C, S; } pc;

void main() {
    uint at = loom_gid(), S4 = pc.S / 4u, plane = pc.C * S4; /* at = c S4 + i */
    if (at >= plane) return;
    uint xo4 = pc.xo / 4u, c = loom_udiv22(at, S4);
    float s = XV(xo4 + c * S4).x;
    vec4 a = vec4(0.0), b = vec4(0.0);
#if defined(WITH_DY)
    uint dyo4 = pc.dyo / 4u;
    vec4 e = vec4(0.0), f = vec4(0.0);
#endif
    for (uint n = 0u, k = at; n < pc.N; n++, k += plane) {
        vec4 d = XV(xo4 + k) - s;
        a += d, b += d * d;
#if defined(WITH_DY)
        vec4 g = DYV(dyo4 + k);
        e += g, f += g * d;
#endif
    }
    cs[at] = (a.x + a.y) + (a.z + a.w);
    cs[plane + at] = (b.x + b.y) + (b.z + b.w);
#if defined(WITH_DY)
    cs[2u * plane + at] = (e.x + e.y) + (e.z + e.w);
    cs[3u * plane + at] = (f.x + f.y) + (f.z + f.w);
#endif
}

#elif defined(K_BN_FINISH)
TENSOR_IN(0, float, x);
TENSOR_IN(1, float, cs);
#if defined(MODE_GRAD)
TENSOR_OUT(2, float, outp); /* the node's (4, C) */
PUSH { uint xo, outo, N, C, S; float eps; } pc;
#else
TENSOR_OUT(2, float, rm);   /* x when there are no running statistics (not written) */
TENSOR_OUT(3, float, rv);
TENSOR_OUT(4, vec4, st);    /* (C) scratch: mean, invstd, gamma, beta */
TENSOR_IN(5, float, gm);    /* x when absent (has_g == 0, not read) */
TENSOR_IN(6, float, bt);
PUSH { uint xo, rmo, rvo, gmo, bto, N, C, S; int has_run; float eps, momentum; int has_g, has_b; } pc;
#endif

void main() {
    uint c = loom_gid(), C = pc.C, S4 = pc.S / 4u, plane = C * S4;
    if (c >= C) return;
    float a = 0.0, b = 0.0;
#if defined(MODE_GRAD)
    float e = 0.0, f = 0.0;
#endif
    for (uint i = c * S4; i < (c + 1u) * S4; i++) {
        a += cs[i], b += cs[plane + i];
#if defined(MODE_GRAD)
        e += cs[2u * plane + i], f += cs[3u * plane + i];
#endif
    }
    float M = float(pc.N * pc.S), s = x[pc.xo + c * pc.S], md = a / M;
    float mean = s + md, var = max(b / M - md * md, 0.0), invstd = 1.0 / sqrt(var + pc.eps);
#if defined(MODE_GRAD)
    /* sum(dy (x - mean)) = sum(dy d) - (mean - s) sum(dy) */
    outp[pc.outo + c] = (f - md * e) * invstd;
    outp[pc.outo + C + c] = e;
    outp[pc.outo + 2u * C + c] = mean;
    outp[pc.outo + 3u * C + c] = invstd;
#else
    st[c] = vec4(mean, invstd, pc.has_g != 0 ? gm[pc.gmo + c] : 1.0, pc.has_b != 0 ? bt[pc.bto + c] : 0.0);
    if (pc.has_run != 0) {
        precise float ra = (1.0 - pc.momentum) * rm[pc.rmo + c] + pc.momentum * mean;
        precise float rb = (1.0 - pc.momentum) * rv[pc.rvo + c] + pc.momentum * (var * M / (M - 1.0));
        rm[pc.rmo + c] = ra;
        rv[pc.rvo + c] = rb;
    }
#endif
}

#elif defined(K_BN_APPLY)
TENSOR_IN(0, vec4, x);
TENSOR_IN(1, vec4, st); /* bn_finish's (C): mean, invstd, gamma, beta */
TENSOR_OUT(2, vec4, y);
#if defined(FUSE)
TENSOR_IN(3, vec4, other); /* the add's other operand; x when there is no add (not read) */
TENSOR_OUT(4, vec4, ya);   /* the add's output; x when there is no add (not written) */
TENSOR_OUT(5, vec4, yr);   /* relu's output; x when there is no relu (not written) */
PUSH { uint xo, yo, oo, ao, ro, N, C, S; int has_add, has_relu; } pc;
#else
PUSH { uint xo, yo, N, C, S; } pc;
#endif

void main() {
    uint k = loom_gid(), S4 = pc.S / 4u;
    if (k >= pc.N * pc.C * S4) return;
    uint p = loom_udiv22(k, S4), C = pc.C, c = p - loom_udiv22(p, C) * C;
    vec4 q = STV(c);
    float mean = q.x, invstd = q.y, g = q.z, b = q.w;
    precise vec4 v = (XV(pc.xo / 4u + k) - mean) * invstd * g + b;
    y[pc.yo / 4u + k] = v;
#if defined(FUSE)
    vec4 last = v;
    if (pc.has_add != 0) {
        precise vec4 a = v + other[pc.oo / 4u + k];
        ya[pc.ao / 4u + k] = a;
        last = a;
    }
    if (pc.has_relu != 0) { /* activation.comp's relu: NaN stays NaN */
        vec4 r;
        for (int q = 0; q < 4; q++) r[q] = last[q] > 0.0 || isnan(last[q]) ? last[q] : 0.0;
        yr[pc.ro / 4u + k] = r;
    }
#endif
}

#elif defined(K_BN_APPLY_POOL)
TENSOR_IN(0, vec2, x);
TENSOR_IN(1, vec4, st);   /* bn_finish's (C): mean, invstd, gamma, beta */
TENSOR_OUT(2, vec2, y);
TENSOR_OUT(3, float, yp); /* the pooled maxima */
TENSOR_OUT(4, float, yr); /* relu's output; x when there is no relu (not written) */
PUSH { uint xo, yo, po, ro, windows, C, OHW, W, OW; int has_relu; } pc;
#if defined(TEXEL) /* x one element per texel */
#define XROW(at) vec2(texelFetch(x_t, int(at)).x, texelFetch(x_t, int(at) + 1).x)
#else
#define XROW(at) x[(at) / 2u]
#endif

void main() {
    uint k = loom_gid();
    if (k >= pc.windows) return;
    uint p = loom_udiv22(k, pc.OHW), C = pc.C, c = p - loom_udiv22(p, C) * C;
    uint r = loom_udiv22(k, pc.OW), j = k - r * pc.OW; /* r: the window row over all planes */
    uint top = r * 2u * pc.W + 2u * j;
    vec4 q = STV(c);
    float mean = q.x, invstd = q.y, g = q.z, b = q.w;
    precise vec2 v0 = (XROW(pc.xo + top) - mean) * invstd * g + b;
    precise vec2 v1 = (XROW(pc.xo + top + pc.W) - mean) * invstd * g + b;
    y[(pc.yo + top) / 2u] = v0;
    y[(pc.yo + top + pc.W) / 2u] = v1;
    int w = loom_arg4(v0.x, v0.y, v1.x, v1.y);
    float m = w == 0 ? v0.x : w == 1 ? v0.y : w == 2 ? v1.x : v1.y;
    yp[pc.po + k] = m;
    if (pc.has_relu != 0) yr[pc.ro + k] = m > 0.0 || isnan(m) ? m : 0.0;
}

#else
#error "bn_split.comp: define K_BN_COLSUM, K_BN_FINISH, K_BN_APPLY or K_BN_APPLY_POOL"
#endif
