/* backends/opencl/kernels/attention.cl — attention, attention_grad and
 * causal_mask, as backends/cpu/ops/attention.c computes them (formulas in
 * core/ops/attention.c) and shaders/attention.comp organises them.
 * q (BH, Tq, D), k and v (BH, Tk, D) per batch * head, row-major; lse
 * (BH, Tq) f32 whatever T is.
 *
 * attention: one work-group per query row; keys in chunks of the group's
 * size: item l scores key j0 + l (a sequential dot product over D), the
 * chunk's max and sum (group reductions) update the row's running max m and
 * sum s (online softmax), the chunk's probabilities go through local memory
 * into the output accumulator (local, element d owned by item d mod size),
 * rescaled by exp(m_old - m_new). attention_grad_q: one group per query row,
 * chunks of keys, ds through local memory into dq += ds k; attention_grad_kv:
 * one group per key row, chunks of query rows, dk += ds q or dv += p dy.
 * Local arrays: acc, row, row2 (D floats each), coef and red (the group's
 * size). Every item reaches every barrier (loop bounds are uniform).
 *
 * The GEMM form (f32, ops/attention.c; LOOM_OPENCL_ATTN_GEMM): the score
 * matrices S = Q K^T of every batch * head in a node-owned float buffer (BH,
 * Tq, Tk), made and used by the batched GEMM, with these row kernels between
 * (one item per score row; masked keys j > i get probability 0):
 * attn_rows (the forward's softmax: P = exp(scale S - lse) in place, lse
 * written), attn_p (the gradient's P from lse), attn_ds (ds = scale P (dP -
 * delta) in place over dP, delta = dy . y of the row). */

inline float attn_dot(__global const T *x, __local const float *row, long D) {
    float s = 0.0f;
    for (long d = 0; d < D; d++) s += LD(x, d) * row[d];
    return s;
}

/* y (BH, Tq, D) and lse (BH, Tq) */
__kernel void attention(__global const T *q, ulong qo, __global const T *k, ulong ko, __global const T *v, ulong vo,
                        __global float *lse, ulong lo, __global T *y, ulong yo, long Tq, long Tk, long D, int causal,
                        float scale, __local float *acc, __local float *row, __local float *coef,
                        __local float *red) {
    long r = get_group_id(0), bh = r / Tq, i = r % Tq;
    int l = get_local_id(0), nl = get_local_size(0);
    q += qo + r * D, k += ko + bh * Tk * D, v += vo + bh * Tk * D, y += yo + r * D;
    for (long d = l; d < D; d += nl) row[d] = LD(q, d), acc[d] = 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    long kend = causal && i + 1 < Tk ? i + 1 : Tk;
    float m = -INFINITY, s = 0.0f;
    for (long j0 = 0; j0 < kend; j0 += nl) {
        long j = j0 + l;
        float sc = j < kend ? attn_dot(k + j * D, row, D) * scale : -INFINITY;
        float mn = fmax(m, group_max(red, sc));
        float p = j < kend ? exp(sc - mn) : 0.0f;
        float corr = exp(m - mn); /* 0 on the first chunk */
        s = s * corr + group_sum(red, p);
        m = mn;
        coef[l] = p;
        barrier(CLK_LOCAL_MEM_FENCE);
        long nc = kend - j0 < nl ? kend - j0 : nl;
        for (long d = l; d < D; d += nl) {
            float a = acc[d] * corr;
            for (long c = 0; c < nc; c++) a += coef[c] * LD(v, (j0 + c) * D + d);
            acc[d] = a;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float inv = 1.0f / s;
    for (long d = l; d < D; d += nl) ST(y, d, acc[d] * inv);
    if (l == 0) lse[lo + r] = m + log(s);
}

/* dq (BH, Tq, D): one group per query row r */
__kernel void attention_grad_q(__global const T *q, ulong qo, __global const T *k, ulong ko, __global const T *v,
                               ulong vo, __global const T *o, ulong oo, __global const T *dy, ulong dyo,
                               __global const float *lse, ulong lo, __global T *dq, ulong xo, long Tq, long Tk,
                               long D, int causal, float scale, __local float *acc, __local float *row,
                               __local float *row2, __local float *coef, __local float *red) {
    long r = get_group_id(0), bh = r / Tq, i = r % Tq;
    int l = get_local_id(0), nl = get_local_size(0);
    q += qo + r * D, o += oo + r * D, dy += dyo + r * D, dq += xo + r * D;
    k += ko + bh * Tk * D, v += vo + bh * Tk * D;
    float part = 0.0f;
    for (long d = l; d < D; d += nl) {
        row[d] = LD(q, d), row2[d] = LD(dy, d), acc[d] = 0.0f;
        part += LD(dy, d) * LD(o, d);
    }
    float delta = group_sum(red, part); /* its barriers publish row and row2 */
    float ls = lse[lo + r];
    long kend = causal && i + 1 < Tk ? i + 1 : Tk;
    for (long j0 = 0; j0 < kend; j0 += nl) {
        long j = j0 + l;
        float ds = 0.0f;
        if (j < kend) {
            float p = exp(attn_dot(k + j * D, row, D) * scale - ls);
            ds = p * (attn_dot(v + j * D, row2, D) - delta);
        }
        coef[l] = ds;
        barrier(CLK_LOCAL_MEM_FENCE);
        long nc = kend - j0 < nl ? kend - j0 : nl;
        for (long d = l; d < D; d += nl) {
            float a = acc[d];
            for (long c = 0; c < nc; c++) a += coef[c] * LD(k, (j0 + c) * D + d);
            acc[d] = a;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (long d = l; d < D; d += nl) ST(dq, d, acc[d] * scale);
}

/* dk (dk != 0) or dv (BH, Tk, D): one group per key row r */
__kernel void attention_grad_kv(__global const T *q, ulong qo, __global const T *k, ulong ko, __global const T *v,
                                ulong vo, __global const T *o, ulong oo, __global const T *dy, ulong dyo,
                                __global const float *lse, ulong lo, __global T *dx, ulong xo, long Tq, long Tk,
                                long D, int causal, int dk, float scale, __local float *acc, __local float *row,
                                __local float *row2, __local float *coef, __local float *red) {
    long r = get_group_id(0), bh = r / Tk, j = r % Tk;
    int l = get_local_id(0), nl = get_local_size(0);
    q += qo + bh * Tq * D, o += oo + bh * Tq * D, dy += dyo + bh * Tq * D, lse += lo + bh * Tq;
    dx += xo + r * D;
    for (long d = l; d < D; d += nl) row[d] = LD(k, ko + r * D + d), row2[d] = LD(v, vo + r * D + d), acc[d] = 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (long c0 = causal ? j : 0; c0 < Tq; c0 += nl) { /* the query rows that see key j */
        long i = c0 + l;
        float cf = 0.0f;
        if (i < Tq) {
            float p = exp(attn_dot(q + i * D, row, D) * scale - lse[i]);
            if (dk) {
                float dp = 0.0f, delta = 0.0f;
                for (long d = 0; d < D; d++) {
                    float g = LD(dy, i * D + d);
                    dp += g * row2[d], delta += g * LD(o, i * D + d);
                }
                cf = p * (dp - delta);
            } else {
                cf = p;
            }
        }
        coef[l] = cf;
        barrier(CLK_LOCAL_MEM_FENCE);
        long nc = Tq - c0 < nl ? Tq - c0 : nl;
        __global const T *src = dk ? q : dy;
        for (long d = l; d < D; d += nl) {
            float a = acc[d];
            for (long c = 0; c < nc; c++) a += coef[c] * LD(src, (c0 + c) * D + d);
            acc[d] = a;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float sc = dk ? scale : 1.0f;
    for (long d = l; d < D; d += nl) ST(dx, d, acc[d] * sc);
}

/* y = x with value where key c > query i; x (R, Tq, Tk) */
__kernel void causal_mask(__global const T *x, ulong xo, __global T *y, ulong yo, long n, long Tq, long Tk,
                          float value) {
    long e = get_global_id(0);
    if (e >= n) return;
    long c = e % Tk, i = (e / Tk) % Tq;
    if (c > i)
        ST(y, yo + e, value);
    else
        ST(y, yo + e, LD(x, xo + e));
}

/* the GEMM form's softmax rows: S -> P in place; forward: lse written, else read */
inline void attn_softmax_row(__global float *sm, __global float *lse, long r, long Tq, long Tk, int causal, float scale,
                             int forward) {
    long i = r % Tq, n = causal && i + 1 < Tk ? i + 1 : Tk;
    __global float *s = sm + r * Tk;
    float ls;
    if (forward) {
        float m = -INFINITY, sum = 0.0f;
        for (long j = 0; j < n; j++) m = fmax(m, s[j] * scale);
        for (long j = 0; j < n; j++) sum += exp(s[j] * scale - m);
        ls = m + log(sum);
        lse[r] = ls;
    } else {
        ls = lse[r];
    }
    for (long j = 0; j < Tk; j++) s[j] = j < n ? exp(s[j] * scale - ls) : 0.0f;
}

__kernel void attn_rows(__global float *sm, __global float *lse, ulong lo, long rows, long Tq, long Tk, int causal,
                        float scale) {
    long r = get_global_id(0);
    if (r < rows) attn_softmax_row(sm, lse + lo, r, Tq, Tk, causal, scale, 1);
}

__kernel void attn_p(__global float *sm, __global float *lse, ulong lo, long rows, long Tq, long Tk, int causal,
                     float scale) {
    long r = get_global_id(0);
    if (r < rows) attn_softmax_row(sm, lse + lo, r, Tq, Tk, causal, scale, 0);
}

__kernel void attn_ds(__global const float *pm, __global float *dm, __global const T *y, ulong yo, __global const T *dy,
                      ulong dyo, long rows, long Tq, long Tk, long D, int causal, float scale) {
    long r = get_global_id(0);
    if (r >= rows) return;
    long i = r % Tq, n = causal && i + 1 < Tk ? i + 1 : Tk;
    float delta = 0.0f;
    for (long d = 0; d < D; d++) delta += LD(dy + dyo, r * D + d) * LD(y + yo, r * D + d);
    __global const float *p = pm + r * Tk;
    __global float *g = dm + r * Tk;
    for (long j = 0; j < Tk; j++) g[j] = j < n ? scale * p[j] * (g[j] - delta) : 0.0f;
}
