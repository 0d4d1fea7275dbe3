/* shaders/repro.comp — reproducible mode's canonical kernels (f32 only) for
 * the reductions: sum/mean, batch norm and its gradients, cross-entropy and
 * its gradient, in exactly the order and arithmetic of core/repro.h (the
 * CPU's loom__cpu_*_repro kernels are the reference; the GEMM is gemm.comp
 * with REPRO). Host: the *_repro variants in backends/vulkan/ops/norm.c,
 * loss.c and reduce.c.
 *
 * A csum over n values runs as chunks of RCH = LOOM__REPRO_CHUNK values: the
 * work-group's invocation l sums chunk cb + l alone, in order, from 0; then
 * invocation 0 adds the chunk sums in order (t = p0; t = t + p1 ...), for
 * groups of gl_WorkGroupSize.x chunks at a time. Everything is `precise`
 * (no contraction: a product and a sum are two roundings, as the spec says;
 * fma() is never used: Vulkan does not promise it is fused). */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define RCH uint(LOOM_K_REPRO_CHUNK)

shared float rp_part[LOOM_MAX_LOCAL];

/* loom__repro_exp / loom__repro_log of core/repro.h, step for step: a copy,
 * because GLSL cannot include that header (it has no C casts or memcpy,
 * and reserves names with "__"); C and OpenCL C share the one source. */
float repro_exp(float x) {
    if (isnan(x)) return x;
    if (x > 88.72283) return uintBitsToFloat(0x7f800000u);
    if (x < -87.33654) return 0.0;
    precise float t = x * 1.44269504;
    precise float k = floor(t + 0.5);
    precise float u = k * 0.693359375;
    precise float r = x - u;
    precise float v = k * 2.12194440e-4;
    r = r + v;
    precise float q = 1.9875691500e-4;
    q = q * r;
    q = q + 1.3981999507e-3;
    q = q * r;
    q = q + 8.3334519073e-3;
    q = q * r;
    q = q + 4.1665795894e-2;
    q = q * r;
    q = q + 1.6666665459e-1;
    q = q * r;
    q = q + 5.0000001201e-1;
    precise float r2 = r * r;
    precise float p = q * r2;
    p = p + r;
    p = p + 1.0;
    int ki = int(k), k1 = ki >> 1, k2 = ki - k1;
    precise float y = p * uintBitsToFloat(uint(k1 + 127) << 23);
    y = y * uintBitsToFloat(uint(k2 + 127) << 23);
    return y < 1.17549435e-38 ? 0.0 : y;
}

float repro_log(float x) {
    if (isnan(x) || isinf(x) && x > 0.0) return x;
    if (x < 0.0) return uintBitsToFloat(0x7fc00000u);
    if (x < 1.17549435e-38) return uintBitsToFloat(0xff800000u);
    uint u = floatBitsToUint(x);
    precise float e = float(int(u >> 23) - 126);
    precise float m = uintBitsToFloat((u & 0x007fffffu) | 0x3f000000u);
    if (m < 0.707106781) {
        e = e - 1.0;
        m = m + m;
        m = m - 1.0;
    } else {
        m = m - 1.0;
    }
    precise float z = m * m;
    precise float q = 7.0376836292e-2;
    q = q * m;
    q = q - 1.1514610310e-1;
    q = q * m;
    q = q + 1.1676998740e-1;
    q = q * m;
    q = q - 1.2420140846e-1;
    q = q * m;
    q = q + 1.4249322787e-1;
    q = q * m;
    q = q - 1.6668057665e-1;
    q = q * m;
    q = q + 2.0000714765e-1;
    q = q * m;
    q = q - 2.4999993993e-1;
    q = q * m;
    q = q + 3.3333331174e-1;
    precise float y = q * m;
    y = y * z;
    precise float a = e * 2.12194440e-4;
    y = y - a;
    precise float b = z * 0.5;
    y = y - b;
    precise float r = m + y;
    precise float c = e * 0.693359375;
    return r + c;
}

/* RP_CSUM(n, STEP, out): out (every invocation) = the chunked sum of n terms;
 * STEP is a statement that updates `p` with term k (p = p + v, or
 * p = p + a*b in two `precise` steps). Call from uniform control flow. */
#define RP_CSUM(n, STEP, out)                                                          \
    {                                                                                  \
        uint nl_ = gl_WorkGroupSize.x, l_ = gl_LocalInvocationID.x;                    \
        uint nch_ = ((n) + RCH - 1u) / RCH;                                            \
        precise float t_ = 0.0;                                                        \
        for (uint cb_ = 0u; cb_ == 0u || cb_ < nch_; cb_ += nl_) {                     \
            precise float p = 0.0;                                                     \
            uint ch_ = cb_ + l_;                                                       \
            if (ch_ < nch_) {                                                          \
                uint e_ = min(ch_ * RCH + RCH, (n));                                   \
                for (uint k = ch_ * RCH; k < e_; k++) { STEP; }                        \
            }                                                                          \
            rp_part[l_] = p;                                                           \
            barrier();                                                                 \
            if (l_ == 0u) {                                                            \
                uint m_ = nch_ > cb_ ? min(nl_, nch_ - cb_) : 0u;                      \
                for (uint i_ = 0u; i_ < m_; i_++) t_ = cb_ + i_ == 0u ? rp_part[i_] : t_ + rp_part[i_]; \
                rp_part[0] = t_;                                                       \
            }                                                                          \
            barrier();                                                                 \
            t_ = rp_part[0];                                                           \
            barrier();                                                                 \
        }                                                                              \
        out = t_;                                                                      \
    }

#if defined(K_SUM)
/* y (nout): csum over the reduced elements (row-major over the reduced axes),
 * / div (float(count) for mean, 1 for sum: t / 1 = t); g = the reduce table
 * of core (loom__reduce_table); one work-group per output; the bindings and
 * push constants of reduce.comp (ops/reduce.c runs both) */
TENSOR_IN(0, int, g);
TENSOR_IN(1, float, x);
TENSOR_OUT(2, float, y);
PUSH { uint xo, yo, nout; float div; } pc;

uint red_off(uint base, uint e) {
    int nred = g[11];
    uint off = base, q = e;
    for (int i = nred - 1; i >= 0; i--) {
        uint dim = uint(g[12 + i]);
        off += (q % dim) * uint(g[17 + i]);
        q /= dim;
    }
    return off;
}

void main() {
    uint o = loom_group();
    if (o >= pc.nout) return; /* the whole group */
    int nkeep = g[0];
    uint base = 0u, r = o;
    for (int i = nkeep - 1; i >= 0; i--) {
        uint dim = uint(g[1 + i]);
        base += (r % dim) * uint(g[6 + i]);
        r /= dim;
    }
    uint count = uint(g[22]);
    precise float t;
    RP_CSUM(count, p = p + x[pc.xo + red_off(base, k)], t);
    if (gl_LocalInvocationID.x == 0u) {
        precise float v = t / pc.div;
        y[pc.yo + o] = v;
    }
}

#elif defined(K_BN_FWD) || defined(K_BN_DSTATS)
/* batch norm over x (N, C, S), one work-group per channel c; element k of
 * the channel (k = n*S + s) is at (n*C + c)*S + s */
#if defined(K_BN_FWD)
TENSOR_IN(0, float, x);
TENSOR_IN(1, float, gamma);
TENSOR_IN(2, float, beta);
TENSOR_OUT(3, float, rmean);
TENSOR_OUT(4, float, rvar);
TENSOR_OUT(5, float, y);
PUSH { uint xo, go, bo, rmo, rvo, yo, N, C, S; int train, has_g, has_b, run; float eps, mo_a, mo_b, unbias; } pc;
#else
TENSOR_IN(0, float, x);
TENSOR_IN(1, float, dy);
TENSOR_IN(2, float, rmean);
TENSOR_IN(3, float, rvar);
TENSOR_OUT(4, float, y);
PUSH { uint xo, dyo, rmo, rvo, yo, N, C, S; int train; float eps; } pc;
#endif

uint at(uint c, uint k) { return (k / pc.S * pc.C + c) * pc.S + k % pc.S; }

void main() {
    uint c = loom_group();
    if (c >= pc.C) return; /* the whole group */
    uint M = pc.N * pc.S;
    precise float Mf = float(M), mean, var;
    if (pc.train != 0) {
        precise float s;
        RP_CSUM(M, p = p + x[pc.xo + at(c, k)], s);
        mean = s / Mf;
        precise float q;
        RP_CSUM(M, precise float d_ = x[pc.xo + at(c, k)] - mean; precise float dd_ = d_ * d_; p = p + dd_, q);
        var = q / Mf;
    } else {
        mean = rmean[pc.rmo + c], var = rvar[pc.rvo + c];
    }
    precise float invstd = 1.0 / sqrt(var + pc.eps);
#if defined(K_BN_FWD)
    if (gl_LocalInvocationID.x == 0u && pc.train != 0 && pc.run != 0) {
        precise float a = pc.mo_a * rmean[pc.rmo + c];
        precise float b = pc.mo_b * mean;
        rmean[pc.rmo + c] = a + b;
        precise float vu = var * pc.unbias;
        precise float a2 = pc.mo_a * rvar[pc.rvo + c];
        precise float b2 = pc.mo_b * vu;
        rvar[pc.rvo + c] = a2 + b2;
    }
    float gm = pc.has_g != 0 ? gamma[pc.go + c] : 1.0, bt = pc.has_b != 0 ? beta[pc.bo + c] : 0.0;
    for (uint k = gl_LocalInvocationID.x; k < M; k += gl_WorkGroupSize.x) {
        uint i = at(c, k);
        precise float xh = (x[pc.xo + i] - mean) * invstd;
        precise float v = xh * gm;
        y[pc.yo + i] = v + bt;
    }
#else
    precise float sdx, sdy;
    RP_CSUM(M, uint i_ = at(c, k); precise float xh_ = (x[pc.xo + i_] - mean) * invstd; precise float pr_ = dy[pc.dyo + i_] * xh_; p = p + pr_, sdx);
    RP_CSUM(M, p = p + dy[pc.dyo + at(c, k)], sdy);
    if (gl_LocalInvocationID.x == 0u) {
        y[pc.yo + c] = sdx;
        y[pc.yo + pc.C + c] = sdy;
        y[pc.yo + 2u * pc.C + c] = mean;
        y[pc.yo + 3u * pc.C + c] = invstd;
    }
#endif
}

#elif defined(K_BN_DX)
/* dx (N, C, S) from x, gamma?, dy and the (4, C) statistics; one invocation per element */
TENSOR_IN(0, float, x);
TENSOR_IN(1, float, gamma);
TENSOR_IN(2, float, dy);
TENSOR_IN(3, float, st);
TENSOR_OUT(4, float, dx);
PUSH { uint xo, go, dyo, sto, dxo, N, C, S; int train, has_g; } pc;

void main() {
    uint i = loom_gid();
    if (i >= pc.N * pc.C * pc.S) return;
    uint c = (i / pc.S) % pc.C;
    precise float Mf = float(pc.N * pc.S);
    float sdx = st[pc.sto + c], sdy = st[pc.sto + pc.C + c], mean = st[pc.sto + 2u * pc.C + c];
    float invstd = st[pc.sto + 3u * pc.C + c];
    precise float gi = (pc.has_g != 0 ? gamma[pc.go + c] : 1.0) * invstd;
    precise float v;
    if (pc.train != 0) {
        precise float a1 = sdy / Mf, a2 = sdx / Mf;
        precise float xh = (x[pc.xo + i] - mean) * invstd;
        precise float u = dy[pc.dyo + i] - a1;
        precise float w = xh * a2;
        v = gi * (u - w);
    } else {
        v = gi * dy[pc.dyo + i];
    }
    dx[pc.dxo + i] = v;
}

#elif defined(K_CE_ROWS) || defined(K_CE_GRAD_ROWS)
/* one invocation per row of logits x (N, C); targets tg (N); a target outside
 * [0, C) that is not ignore_index goes to the error slot (the first bad row)
 * and its row is skipped */
#if defined(K_CE_ROWS)
TENSOR_IN(0, float, x);
TENSOR_IN(1, int, tg);
TENSOR_OUT(2, float, part);
ERR_SLOTS(3);
PUSH { uint xo, to, N, C; int ignore; float a1, a2; uint slot; } pc;
#else
TENSOR_IN(0, float, x);
TENSOR_IN(1, int, tg);
TENSOR_IN(2, float, scale);
TENSOR_OUT(3, float, dx);
ERR_SLOTS(4);
PUSH { uint xo, to, dxo, N, C; int ignore; float on, off; uint slot; } pc;
#endif

/* the row's max (first of equals) and se = csum(exp(x - m)), sequentially */
void row_stats(uint xb, out float m, out float se) {
    float mx = x[xb];
    for (uint c = 1u; c < pc.C; c++) mx = x[xb + c] > mx ? x[xb + c] : mx;
    precise float t = 0.0, p = 0.0;
    uint n = 0u;
    bool any = false;
    for (uint c = 0u; c < pc.C; c++) {
        p = p + repro_exp(x[xb + c] - mx);
        if (++n == RCH) {
            t = any ? t + p : p;
            any = true, p = 0.0, n = 0u;
        }
    }
    if (n > 0u || !any) t = any ? t + p : p;
    m = mx, se = t;
}

void main() {
    uint i = loom_gid();
    if (i >= pc.N) return;
    int t = tg[pc.to + i];
    bool bad = t != pc.ignore && (t < 0 || uint(t) >= pc.C);
    if (bad) atomicMin(err_slots[pc.slot], int(i));
    bool ok = t != pc.ignore && !bad;
    uint xb = pc.xo + i * pc.C;
#if defined(K_CE_ROWS)
    precise float l = 0.0;
    if (ok) {
        float m, se;
        row_stats(xb, m, se);
        precise float st = 0.0, p = 0.0;
        uint n = 0u;
        bool any = false;
        for (uint c = 0u; c < pc.C; c++) {
            p = p + x[xb + c];
            if (++n == RCH) {
                st = any ? st + p : p;
                any = true, p = 0.0, n = 0u;
            }
        }
        if (n > 0u || !any) st = any ? st + p : p;
        precise float lse = m + repro_log(se);
        precise float d1 = x[xb + uint(t)] - lse;
        precise float d2 = st / float(pc.C) - lse;
        precise float u = pc.a1 * d1;
        precise float w = pc.a2 * d2;
        l = -u - w;
    }
    part[i] = l;
#else
    uint db = pc.dxo + i * pc.C;
    if (!ok) {
        for (uint c = 0u; c < pc.C; c++) dx[db + c] = 0.0;
        return;
    }
    float m, se;
    row_stats(xb, m, se);
    precise float inv = 1.0 / se;
    float s = scale[0];
    for (uint c = 0u; c < pc.C; c++) {
        precise float e = repro_exp(x[xb + c] - m) * inv;
        precise float d = e - (int(c) == t ? pc.on : pc.off);
        dx[db + c] = d * s;
    }
#endif
}

#elif defined(K_CE_FINAL)
/* y () = csum(part[0..N)) / count (0 if no row counts); one work-group */
TENSOR_IN(0, float, part);
TENSOR_IN(1, int, tg);
TENSOR_OUT(2, float, y);
PUSH { uint to, yo, N, C; int ignore; } pc;
shared uint rp_count;

void main() {
    uint l = gl_LocalInvocationID.x;
    if (l == 0u) rp_count = 0u;
    barrier();
    uint cnt = 0u;
    for (uint i = l; i < pc.N; i += gl_WorkGroupSize.x) {
        int t = tg[pc.to + i];
        cnt += t != pc.ignore && t >= 0 && uint(t) < pc.C ? 1u : 0u;
    }
    atomicAdd(rp_count, cnt);
    barrier();
    precise float s;
    RP_CSUM(pc.N, p = p + part[k], s);
    if (l == 0u) {
        precise float v = rp_count > 0u ? s / float(rp_count) : 0.0;
        y[pc.yo] = v;
    }
}

#else
#error "repro.comp: define one of K_SUM, K_BN_FWD, K_BN_DSTATS, K_BN_DX, K_CE_ROWS, K_CE_GRAD_ROWS, K_CE_FINAL"
#endif
