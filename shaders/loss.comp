/* shaders/loss.comp — cross-entropy (fused log-softmax, label smoothing,
 * ignore_index), its gradient, and mse; as backends/cpu/ops/loss.c and
 * backends/opencl/kernels/loss.cl, with float sums (trees). A target outside
 * [0, C) that is not ignore_index is reported through the node's error slot
 * (the first bad row, by atomicMin) and its row is skipped: nothing is read
 * out of bounds. Needs LOOM_GROUP_REDUCE. The rows kernels run a work-group
 * per row, or with ROWS (ce_rows_rows, ce_grad_rows_rows: CPU devices) one
 * invocation per row (common.glsl's ROW_* macros). */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#if defined(K_CE_ROWS) || defined(K_CE_GRAD_ROWS)
#if defined(K_CE_ROWS)
ERR_SLOTS(3);
#else
ERR_SLOTS(4);
#endif
/* whether row i counts: false if ignored or bad (invocation 0 reports a bad row) */
bool ce_valid(int t, int ignore, uint C, uint i, uint slot) {
    if (t == ignore) return false;
    if (t < 0 || uint(t) >= C) {
        if (ROW_L == 0u) atomicMin(err_slots[slot], int(i));
        return false;
    }
    return true;
}
#endif

#if defined(K_CE_ROWS)
/* logits x (N, C), targets tg (N) -> part (N) f32: loss_i (0 for skipped rows);
 * loss_i = -(1 - eps) logp[t] - eps (mean_c x - lse), lse = m + log sum exp(x - m) */
TENSOR_IN(0, T, x);
TENSOR_IN(1, int, tg);
TENSOR_OUT(2, float, part);
PUSH { uint xo, to, N, C; int ignore; float eps; uint slot; } pc;

void main() {
    uint i = ROW_ID();
    if (i >= pc.N) return; /* the whole group */
    uint l = ROW_L, nl = ROW_NL;
    int t = tg[pc.to + i];
    bool ok = ce_valid(t, pc.ignore, pc.C, i, pc.slot);
    uint n = ok ? pc.C : 0u; /* skipped rows still reach every barrier */
    uint xb = pc.xo + i * pc.C;
    float m = ok ? LD(x, xb) : 0.0;
    for (uint c = l; c < n; c += nl) m = LD(x, xb + c) > m ? LD(x, xb + c) : m;
    m = ROW_MAX(m);
    float se = 0.0, sx = 0.0;
    for (uint c = l; c < n; c += nl) se += exp(LD(x, xb + c) - m), sx += LD(x, xb + c);
    se = ROW_SUM(se);
    sx = ROW_SUM(sx);
    if (l == 0u) {
        precise float v = 0.0;
        if (ok) {
            precise float lse = m + log(se);
            v = -(1.0 - pc.eps) * (LD(x, xb + uint(t)) - lse) - pc.eps * (sx / float(pc.C) - lse);
        }
        part[i] = v;
    }
}

#elif defined(K_CE_FINAL)
/* y () = sum(part) / count of the rows that count (0 if none); one work-group */
TENSOR_IN(0, float, part);
TENSOR_IN(1, int, tg);
TENSOR_OUT(2, T, y);
PUSH { uint to, yo, N, C; int ignore; } pc;

void main() {
    uint l = gl_LocalInvocationID.x, nl = gl_WorkGroupSize.x;
    float sum = 0.0, cnt = 0.0;
    for (uint i = l; i < pc.N; i += nl) {
        int t = tg[pc.to + i];
        sum += part[i];
        cnt += t != pc.ignore && t >= 0 && uint(t) < pc.C ? 1.0 : 0.0;
    }
    sum = group_sum(sum);
    cnt = group_sum(cnt);
    if (l == 0u) ST(y, pc.yo, cnt > 0.0 ? sum / cnt : 0.0);
}

#elif defined(K_CE_SCALE)
/* scale[0] f32 = dloss / count (0 if no row counts); one work-group */
TENSOR_IN(0, int, tg);
TENSOR_IN(1, T, dl);
TENSOR_OUT(2, float, scale);
PUSH { uint to, dlo, N, C; int ignore; } pc;

void main() {
    uint l = gl_LocalInvocationID.x, nl = gl_WorkGroupSize.x;
    float cnt = 0.0;
    for (uint i = l; i < pc.N; i += nl) {
        int t = tg[pc.to + i];
        cnt += t != pc.ignore && t >= 0 && uint(t) < pc.C ? 1.0 : 0.0;
    }
    cnt = group_sum(cnt);
    if (l == 0u) scale[0] = cnt > 0.0 ? LD(dl, pc.dlo) / cnt : 0.0;
}

#elif defined(K_CE_GRAD_ROWS)
/* dx (N, C) = (softmax(x) - q) * scale, q the smoothed one-hot (on at t, off
 * elsewhere); 0 on skipped rows */
TENSOR_IN(0, T, x);
TENSOR_IN(1, int, tg);
TENSOR_IN(2, float, scale);
TENSOR_OUT(3, T, dx);
PUSH { uint xo, to, dxo, N, C; int ignore; float on, off; uint slot; } pc;

void main() {
    uint i = ROW_ID();
    if (i >= pc.N) return; /* the whole group */
    uint l = ROW_L, nl = ROW_NL;
    int t = tg[pc.to + i];
    bool ok = ce_valid(t, pc.ignore, pc.C, i, pc.slot);
    uint n = ok ? pc.C : 0u; /* skipped rows still reach every barrier */
    uint xb = pc.xo + i * pc.C, db = pc.dxo + i * pc.C;
    float m = ok ? LD(x, xb) : 0.0;
    for (uint c = l; c < n; c += nl) m = LD(x, xb + c) > m ? LD(x, xb + c) : m;
    m = ROW_MAX(m);
    float se = 0.0;
    for (uint c = l; c < n; c += nl) se += exp(LD(x, xb + c) - m);
    se = ROW_SUM(se);
    float inv = 1.0 / se, k = scale[0];
    for (uint c = l; c < pc.C; c += nl) {
        precise float v = (exp(LD(x, xb + c) - m) * inv - (int(c) == t ? pc.on : pc.off)) * k;
        ST(dx, db + c, ok ? v : 0.0);
    }
}

#elif defined(K_MSE)
/* y () = mean((a - b)^2) over n elements; one work-group */
TENSOR_IN(0, T, a);
TENSOR_IN(1, T, b);
TENSOR_OUT(2, T, y);
PUSH { uint ao, bo, yo, n; } pc;

void main() {
    uint l = gl_LocalInvocationID.x, nl = gl_WorkGroupSize.x;
    precise float sum = 0.0;
    for (uint i = l; i < pc.n; i += nl) {
        precise float d = LD(a, pc.ao + i) - LD(b, pc.bo + i);
        sum += d * d;
    }
    sum = group_sum(sum);
    if (l == 0u) ST(y, pc.yo, sum / float(pc.n));
}

#else
#error "loss.comp: define one of K_CE_ROWS, K_CE_FINAL, K_CE_SCALE, K_CE_GRAD_ROWS, K_MSE"
#endif
