/* shaders/attention.comp — attention, attention_grad and causal_mask, as
 * backends/cpu/ops/attention.c computes them (core/ops/attention.c has the
 * formulas). q (BH, Tq, D), k and v (BH, Tk, D) per batch * head, row-major;
 * lse (BH, Tq) f32 whatever T is.
 *
 * K_ATTENTION: one work-group per query row. Keys go in chunks of the
 * group's size: invocation l scores key j0 + l (a sequential dot product
 * over D), the chunk's max and sum come from group reductions and update
 * the row's running max m and sum s (online softmax); the chunk's
 * probabilities go through shared memory, and the output accumulator (in
 * shared memory, element d owned by invocation d mod size) is rescaled and
 * gets p v. The score matrix is never stored.
 * K_ATTENTION_GRAD: dq: one group per query row, chunks of keys, ds[i, j]
 * through shared memory into dq[i] += ds k[j]; dk, dv: one group per key
 * row, chunks of query rows, dk[j] += ds q[i] or dv[j] += p dy[i].
 * D is at most ATTN_MAX_D (the host checks). Needs LOOM_GROUP_REDUCE.
 * K_CAUSAL_MASK: elementwise over x (R, Tq, Tk).
 * The GEMM form (f32, ops/attention.c; LOOM_VULKAN_ATTN_GEMM): the score
 * matrices S = Q K^T of every batch * head in a node-owned f32 buffer (BH,
 * Tq, Tk) made by the batched GEMM, these row kernels between the GEMMs (one
 * invocation per score row; the masked keys j > i get probability 0):
 *   K_ATTN_ROWS  the forward's softmax: S -> P = exp(scale S - lse) in
 *                place, lse written (the maximum first, then the sum)
 *   K_ATTN_P     the gradient's P = exp(scale S - lse) in place, from lse
 *   K_ATTN_DS    ds = scale P (dP - delta) in place over dP, delta = dy . y
 *                of the row; dq = ds K and dk = ds^T Q by the GEMM. */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define ATTN_MAX_D 512
#define NEG_INF uintBitsToFloat(0xff800000u)

#if defined(K_ATTENTION) || defined(K_ATTENTION_GRAD)
shared float acc[ATTN_MAX_D]; /* the output row being accumulated */
shared float row[ATTN_MAX_D]; /* this group's q (forward, dq) or k (dk, dv) row */
shared float row2[ATTN_MAX_D]; /* dy (dq) or v (dk) row */
shared float coef[LOOM_MAX_LOCAL]; /* per chunk: p or ds of each key (or query) */

/* dot of x[xb ..] and shared `row` over D */
#define DOT_ROW(x, xb, D, out)                                   \
    {                                                            \
        precise float s_ = 0.0;                                  \
        for (uint d_ = 0u; d_ < D; d_++) s_ += LD(x, xb + d_) * row[d_]; \
        out = s_;                                                \
    }
#endif

#if defined(K_ATTENTION)
TENSOR_IN(0, T, q);
TENSOR_IN(1, T, k);
TENSOR_IN(2, T, v);
TENSOR_OUT(3, float, lse);
TENSOR_OUT(4, T, y);
PUSH { uint qo, ko, vo, lo, yo, BH, Tq, Tk, D, causal; float scale; } pc;

void main() {
    uint r = loom_group(); /* bh * Tq + i */
    if (r >= pc.BH * pc.Tq) return;
    uint l = gl_LocalInvocationID.x, nl = gl_WorkGroupSize.x, D = pc.D;
    uint bh = r / pc.Tq, i = r % pc.Tq;
    uint kb = pc.ko + bh * pc.Tk * D, vb = pc.vo + bh * pc.Tk * D;
    for (uint d = l; d < D; d += nl) row[d] = LD(q, pc.qo + r * D + d), acc[d] = 0.0;
    barrier();
    uint kend = pc.causal != 0u && i + 1u < pc.Tk ? i + 1u : pc.Tk;
    float m = NEG_INF, s = 0.0;
    for (uint j0 = 0u; j0 < kend; j0 += nl) {
        uint j = j0 + l;
        float sc = NEG_INF;
        if (j < kend) {
            float dt;
            DOT_ROW(k, kb + j * D, D, dt);
            sc = dt * pc.scale;
        }
        float mn = max(m, group_max(sc));
        float p = j < kend ? exp(sc - mn) : 0.0;
        float corr = exp(m - mn); /* 0 on the first chunk */
        s = s * corr + group_sum(p);
        m = mn;
        coef[l] = p;
        barrier();
        uint nc = kend - j0 < nl ? kend - j0 : nl;
        for (uint d = l; d < D; d += nl) {
            precise float a = acc[d] * corr;
            for (uint c = 0u; c < nc; c++) a += coef[c] * LD(v, vb + (j0 + c) * D + d);
            acc[d] = a;
        }
        barrier();
    }
    float inv = 1.0 / s;
    for (uint d = l; d < D; d += nl) ST(y, pc.yo + r * D + d, acc[d] * inv);
    if (l == 0u) lse[pc.lo + r] = m + log(s);
}
#endif

#if defined(K_ATTENTION_GRAD)
TENSOR_IN(0, T, q);
TENSOR_IN(1, T, k);
TENSOR_IN(2, T, v);
TENSOR_IN(3, T, o);
TENSOR_IN(4, T, dy);
TENSOR_IN(5, float, lse);
TENSOR_OUT(6, T, dx);
PUSH { uint qo, ko, vo, oo, dyo, lo, xo, BH, Tq, Tk, D, causal, which; float scale; } pc;

/* dq of query row r = bh * Tq + i */
void grad_q(uint r) {
    uint l = gl_LocalInvocationID.x, nl = gl_WorkGroupSize.x, D = pc.D;
    uint bh = r / pc.Tq, i = r % pc.Tq;
    uint kb = pc.ko + bh * pc.Tk * D, vb = pc.vo + bh * pc.Tk * D;
    float part = 0.0;
    for (uint d = l; d < D; d += nl) {
        row[d] = LD(q, pc.qo + r * D + d), row2[d] = LD(dy, pc.dyo + r * D + d), acc[d] = 0.0;
        part += row2[d] * LD(o, pc.oo + r * D + d);
    }
    float delta = group_sum(part); /* its barriers publish row and row2 */
    float ls = lse[pc.lo + r];
    uint kend = pc.causal != 0u && i + 1u < pc.Tk ? i + 1u : pc.Tk;
    for (uint j0 = 0u; j0 < kend; j0 += nl) {
        uint j = j0 + l;
        float ds = 0.0;
        if (j < kend) {
            float sq, dp = 0.0;
            DOT_ROW(k, kb + j * D, D, sq);
            for (uint d = 0u; d < D; d++) dp += row2[d] * LD(v, vb + j * D + d);
            ds = exp(sq * pc.scale - ls) * (dp - delta);
        }
        coef[l] = ds;
        barrier();
        uint nc = kend - j0 < nl ? kend - j0 : nl;
        for (uint d = l; d < D; d += nl) {
            precise float a = acc[d];
            for (uint c = 0u; c < nc; c++) a += coef[c] * LD(k, kb + (j0 + c) * D + d);
            acc[d] = a;
        }
        barrier();
    }
    for (uint d = l; d < D; d += nl) ST(dx, pc.xo + r * D + d, acc[d] * pc.scale);
}

/* dk or dv of key row r = bh * Tk + j */
void grad_kv(uint r, bool dk) {
    uint l = gl_LocalInvocationID.x, nl = gl_WorkGroupSize.x, D = pc.D;
    uint bh = r / pc.Tk, j = r % pc.Tk;
    for (uint d = l; d < D; d += nl) {
        row[d] = LD(k, pc.ko + r * D + d), row2[d] = LD(v, pc.vo + r * D + d), acc[d] = 0.0;
    }
    barrier();
    uint i0 = pc.causal != 0u ? j : 0u; /* rows that see key j */
    for (uint c0 = i0; c0 < pc.Tq; c0 += nl) {
        uint i = c0 + l, qr = bh * pc.Tq + i;
        float cf = 0.0;
        if (i < pc.Tq) {
            float sq;
            DOT_ROW(q, pc.qo + qr * D, D, sq);
            float p = exp(sq * pc.scale - lse[pc.lo + qr]);
            if (dk) {
                float dp = 0.0, delta = 0.0;
                for (uint d = 0u; d < D; d++) {
                    float g = LD(dy, pc.dyo + qr * D + d);
                    dp += g * row2[d], delta += g * LD(o, pc.oo + qr * D + d);
                }
                cf = p * (dp - delta);
            } else {
                cf = p;
            }
        }
        coef[l] = cf;
        barrier();
        uint nc = pc.Tq - c0 < nl ? pc.Tq - c0 : nl;
        for (uint d = l; d < D; d += nl) {
            precise float a = acc[d];
            uint rb = bh * pc.Tq + c0;
            if (dk)
                for (uint c = 0u; c < nc; c++) a += coef[c] * LD(q, pc.qo + (rb + c) * D + d);
            else
                for (uint c = 0u; c < nc; c++) a += coef[c] * LD(dy, pc.dyo + (rb + c) * D + d);
            acc[d] = a;
        }
        barrier();
    }
    float sc = dk ? pc.scale : 1.0;
    for (uint d = l; d < D; d += nl) ST(dx, pc.xo + r * D + d, acc[d] * sc);
}

void main() {
    uint r = loom_group();
    uint rows = pc.BH * (pc.which == LOOM_K_ATTN_DQ ? pc.Tq : pc.Tk);
    if (r >= rows) return;
    if (pc.which == LOOM_K_ATTN_DQ)
        grad_q(r);
    else
        grad_kv(r, pc.which == LOOM_K_ATTN_DK);
}
#endif

#if defined(K_ATTN_ROWS) || defined(K_ATTN_P)
TENSOR_OUT(0, float, sm); /* (rows, Tk), node-owned */
#if defined(K_ATTN_ROWS)
TENSOR_OUT(1, float, lse);
#else
TENSOR_IN(1, float, lse);
#endif
PUSH { uint lo, rows, Tq, Tk, causal; float scale; } pc;

void main() {
    uint r = loom_gid();
    if (r >= pc.rows) return;
    uint i = r % pc.Tq, n = pc.causal != 0u && i + 1u < pc.Tk ? i + 1u : pc.Tk, b = r * pc.Tk;
#if defined(K_ATTN_ROWS)
    float m = NEG_INF, sum = 0.0;
    for (uint j = 0u; j < n; j++) m = max(m, sm[b + j] * pc.scale);
    for (uint j = 0u; j < n; j++) sum += exp(sm[b + j] * pc.scale - m);
    float ls = m + log(sum);
    lse[pc.lo + r] = ls;
#else
    float ls = lse[pc.lo + r];
#endif
    for (uint j = 0u; j < pc.Tk; j++) sm[b + j] = j < n ? exp(sm[b + j] * pc.scale - ls) : 0.0;
}
#endif

#if defined(K_ATTN_DS)
TENSOR_IN(0, float, pm);  /* P (rows, Tk) */
TENSOR_OUT(1, float, dm); /* dP -> ds */
TENSOR_IN(2, T, y);
TENSOR_IN(3, T, dy);
PUSH { uint yo, dyo, rows, Tq, Tk, D, causal; float scale; } pc;

void main() {
    uint r = loom_gid();
    if (r >= pc.rows) return;
    uint i = r % pc.Tq, n = pc.causal != 0u && i + 1u < pc.Tk ? i + 1u : pc.Tk, b = r * pc.Tk;
    float delta = 0.0;
    for (uint d = 0u; d < pc.D; d++) delta += LD(dy, pc.dyo + r * pc.D + d) * LD(y, pc.yo + r * pc.D + d);
    for (uint j = 0u; j < pc.Tk; j++) dm[b + j] = j < n ? pc.scale * pm[b + j] * (dm[b + j] - delta) : 0.0;
}
#endif

#if defined(K_CAUSAL_MASK)
TENSOR_IN(0, T, x);
TENSOR_OUT(1, T, y);
PUSH { uint xo, yo, n, Tq, Tk; float value; } pc;

void main() {
    uint e = loom_gid();
    if (e >= pc.n) return;
    uint c = e % pc.Tk, i = (e / pc.Tk) % pc.Tq;
    if (c > i)
        ST(y, pc.yo + e, pc.value);
    else
        ST(y, pc.yo + e, LD(x, pc.xo + e));
}
#endif
