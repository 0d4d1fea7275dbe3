/* shaders/optim.comp — the optimizer's effect ops on f32 params and states
 * (semantics and the hyper layout in core/ops/optim.c; host:
 * backends/vulkan/ops/optim.c), matching the f32 path of
 * backends/cpu/ops/optim.c operation for operation, as
 * backends/opencl/kernels/optim.cl does. Factors the CPU forms in double from
 * f[] alone arrive as floats rounded once on the host; those that need
 * hyper[] (read here, on the device) are formed in float so that they round
 * the same way: lr / bc1 and sqrt(bc2) with the device's division and square
 * root (correctly rounded on lavapipe and most GPUs; Vulkan only promises
 * 2.5 ulp), and 1 - lr wd with an exact product and sum (fma, two-sum).
 * Every result is `precise` (no contraction: the CPU rounds a * b + c twice).
 * The placeholder output y () is set to 0 by invocation 0. f32 only: one
 * variant per kernel, no storage suffix. */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#if defined(K_SGD_STEP)
/* flags (LOOM_K_OPT_*): momentum buffer, nesterov, zero grad, coef given.
 * V4: four elements per invocation, one vec4 per load and store (n: vec4s;
 * p, grad and buf offsets multiples of 4; the same operations on each
 * component), for CPU-hosted drivers that loop over their lanes per load.
 * V8: eight, one 32-byte word (u64vec4) per load and store, two vec4 halves
 * through the same step (n: words; offsets multiples of 8; shaderInt64):
 * half V4's lane loops (lavapipe, the cnn's first linear layer on an AMD
 * EPYC Zen 3, all the cnn's steps under --profile: 8.5-9.5 -> 5.1-6.3 ms) */
#if defined(V8)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define W u64vec4
#define IX(o) ((o) / 8u + i)
#elif defined(V4)
#define W vec4
#define IX(o) ((o) / 4u + i)
#else
#define W float
#define IX(o) ((o) + i)
#endif
TENSOR_OUT(0, W, p);
TENSOR_OUT(1, W, gr);
TENSOR_IN(2, float, hy);
TENSOR_OUT(3, W, buf);
TENSOR_IN(4, float, cf);
TENSOR_OUT(5, float, y);
PUSH { uint po, go, ho, bo, co, yo, n, flags; float mom, damp1, wd; } pc;

#if defined(V8)
#define E vec4
vec4 lo4(u64vec4 w) { return vec4(uintBitsToFloat(unpackUint2x32(w.x)), uintBitsToFloat(unpackUint2x32(w.y))); }
vec4 hi4(u64vec4 w) { return vec4(uintBitsToFloat(unpackUint2x32(w.z)), uintBitsToFloat(unpackUint2x32(w.w))); }
u64vec4 word(vec4 a, vec4 b) {
    return u64vec4(packUint2x32(floatBitsToUint(a.xy)), packUint2x32(floatBitsToUint(a.zw)),
                   packUint2x32(floatBitsToUint(b.xy)), packUint2x32(floatBitsToUint(b.zw)));
}
#else
#define E W
#endif

/* one step of elements (pv, gv, bv): the parameter and (with a buffer) the buffer updated */
void step(inout E pv, E gv, inout E bv, float lr, float mult, bool first) {
    precise E g = gv * mult;
    if (pc.wd != 0.0) g = g + pc.wd * pv;
    if ((pc.flags & uint(LOOM_K_OPT_BUF)) != 0u) {
        precise E b = first ? g : pc.mom * bv + pc.damp1 * g;
        bv = b;
        g = (pc.flags & uint(LOOM_K_OPT_NESTEROV)) != 0u ? g + pc.mom * b : b;
    }
    precise E np = pv - lr * g;
    pv = np;
}

void main() {
    uint i = loom_gid();
    if (i == 0u) y[pc.yo] = 0.0;
    if (i >= pc.n) return;
    if (hy[pc.ho + LOOM_G_HYPER_APPLY] < 0.0) { /* skipped (loss scaling found inf/NaN): only clear the accumulator */
        if ((pc.flags & uint(LOOM_K_OPT_ZERO_GRAD)) != 0u) gr[IX(pc.go)] = W(0);
        return;
    }
    if (hy[pc.ho + LOOM_G_HYPER_APPLY] == 0.0) return;
    float lr = hy[pc.ho + LOOM_G_HYPER_LR];
    precise float mult = hy[pc.ho + LOOM_G_HYPER_GMULT] * ((pc.flags & uint(LOOM_K_OPT_COEF)) != 0u ? cf[pc.co] : 1.0);
    bool first = hy[pc.ho + LOOM_G_HYPER_FIRST] != 0.0;
    bool hb = (pc.flags & uint(LOOM_K_OPT_BUF)) != 0u;
    W pw = p[IX(pc.po)], gw = gr[IX(pc.go)], bw = hb ? buf[IX(pc.bo)] : W(0);
#if defined(V8)
    vec4 p0 = lo4(pw), p1 = hi4(pw), b0 = lo4(bw), b1 = hi4(bw);
    step(p0, lo4(gw), b0, lr, mult, first);
    step(p1, hi4(gw), b1, lr, mult, first);
    if (hb) buf[IX(pc.bo)] = word(b0, b1);
    p[IX(pc.po)] = word(p0, p1);
#else
    step(pw, gw, bw, lr, mult, first);
    if (hb) buf[IX(pc.bo)] = bw;
    p[IX(pc.po)] = pw;
#endif
    if ((pc.flags & uint(LOOM_K_OPT_ZERO_GRAD)) != 0u) gr[IX(pc.go)] = W(0);
}

#elif defined(K_ADAM_STEP)
/* 1 - lr * (wd_hi + wd_lo), rounded once from a nearly exact value */
float one_minus_prod(float lr, float wd_hi, float wd_lo) {
    precise float ph = lr * wd_hi;
    precise float pl = fma(lr, wd_hi, -ph) + lr * wd_lo; /* lr * wd = ph + pl */
    precise float s = 1.0 - ph;
    precise float bb = s - 1.0;
    precise float e = (1.0 - (s - bb)) + (-ph - bb); /* 1 - ph = s + e exactly */
    precise float r = s + (e - pl);
    return r;
}

/* flags (LOOM_K_OPT_*): BUF = decoupled weight decay (AdamW), zero grad, coef given */
TENSOR_OUT(0, float, p);
TENSOR_OUT(1, float, gr);
TENSOR_IN(2, float, hy);
TENSOR_OUT(3, float, m);
TENSOR_OUT(4, float, v);
TENSOR_IN(5, float, cf);
TENSOR_OUT(6, float, y);
PUSH {
    uint po, go, ho, mo, vo, co, yo, n, flags;
    float b1, b2, eps, wd, omb1, omb2, wd_hi, wd_lo;
} pc;

void main() {
    uint i = loom_gid();
    if (i == 0u) y[pc.yo] = 0.0;
    if (i >= pc.n) return;
    if (hy[pc.ho + LOOM_G_HYPER_APPLY] < 0.0) { /* skipped (loss scaling found inf/NaN): only clear the accumulator */
        if ((pc.flags & uint(LOOM_K_OPT_ZERO_GRAD)) != 0u) gr[pc.go + i] = 0.0;
        return;
    }
    if (hy[pc.ho + LOOM_G_HYPER_APPLY] == 0.0) return;
    float lr = hy[pc.ho + LOOM_G_HYPER_LR];
    precise float mult = hy[pc.ho + LOOM_G_HYPER_GMULT] * ((pc.flags & uint(LOOM_K_OPT_COEF)) != 0u ? cf[pc.co] : 1.0);
    float decay = one_minus_prod(lr, pc.wd_hi, pc.wd_lo);
    precise float step = lr / hy[pc.ho + LOOM_G_HYPER_BC1];
    precise float bc2s = sqrt(hy[pc.ho + LOOM_G_HYPER_BC2]);
    precise float g = gr[pc.go + i] * mult;
    precise float pv = p[pc.po + i];
    if (pc.wd != 0.0) {
        if ((pc.flags & uint(LOOM_K_OPT_BUF)) != 0u) pv = pv * decay;
        else g = g + pc.wd * pv;
    }
    precise float mv = pc.b1 * m[pc.mo + i] + pc.omb1 * g;
    precise float vv = pc.b2 * v[pc.vo + i] + pc.omb2 * g * g;
    m[pc.mo + i] = mv;
    v[pc.vo + i] = vv;
    precise float np = pv - step * mv / (sqrt(vv) / bc2s + pc.eps);
    p[pc.po + i] = np;
    if ((pc.flags & uint(LOOM_K_OPT_ZERO_GRAD)) != 0u) gr[pc.go + i] = 0.0;
}

#elif defined(K_ACCUMULATE)
/* acc (n) += grad */
TENSOR_OUT(0, float, acc);
TENSOR_IN(1, float, g);
TENSOR_OUT(2, float, y);
PUSH { uint ao, go, yo, n; } pc;

void main() {
    uint i = loom_gid();
    if (i == 0u) y[pc.yo] = 0.0;
    if (i >= pc.n) return;
    precise float s = acc[pc.ao + i] + g[pc.go + i];
    acc[pc.ao + i] = s;
}

#elif defined(K_CLIP_COEF)
/* y () = min(1, max_norm / (sqrt(sumsq) * hyper[GMULT] + 1e-6)); sumsq () of
 * dtype sdt (LOOM_K_DT_F32 / LOOM_K_DT_F16 / LOOM_K_DT_BF16) read as 32-bit words (the CPU forms
 * this in double; float here, as OpenCL) */
TENSOR_IN(0, uint, ss);
TENSOR_IN(1, float, hy);
TENSOR_OUT(2, float, y);
PUSH { uint so, ho, yo, sdt; float max_norm; } pc;

void main() {
    if (loom_gid() != 0u) return;
    float s;
    if (pc.sdt == uint(LOOM_K_DT_F32)) {
        s = uintBitsToFloat(ss[pc.so]);
    } else {
        uint h = (ss[pc.so >> 1] >> ((pc.so & 1u) * 16u)) & 0xffffu;
        s = pc.sdt == uint(LOOM_K_DT_F16) ? f16_to_f32(h) : bf16_to_f32(h);
    }
    precise float c = pc.max_norm / (sqrt(s) * hy[pc.ho + LOOM_G_HYPER_GMULT] + 1e-6);
    y[pc.yo] = c < 1.0 ? c : 1.0;
}

#else
#error "optim.comp: define one of K_SGD_STEP, K_ADAM_STEP, K_ACCUMULATE, K_CLIP_COEF"
#endif
