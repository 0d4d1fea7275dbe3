/* backends/opencl/kernels/loss.cl — cross-entropy (fused log-softmax, label
 * smoothing, ignore_index), its gradient, and mse; as backends/cpu/ops/loss.c
 * but with float sums (trees). A target outside [0, C) that is not
 * ignore_index is reported through the error slot (first bad row, by
 * atomic_min) and its row is skipped: nothing is read out of bounds. */

/* whether row i counts: false if ignored or bad (item 0 flags a bad row in err[slot]) */
inline bool ce_valid(int t, int ignore, long C, long i, __global int *err, int slot, int l) {
    if (t == ignore) return false;
    if (t < 0 || t >= C) {
        if (l == 0) atomic_min(err + slot, (int)i);
        return false;
    }
    return true;
}

/* logits x (N, C), targets (N) -> part (N): loss_i (0 for skipped rows);
 * loss_i = -(1 - eps) logp[t] - eps (mean_c x - lse), lse = m + log sum exp(x - m) */
__kernel void ce_rows(__global const T *x, ulong xo, __global const int *tg, ulong to, __global float *part, long C,
                      int ignore, float eps, __global int *err, int slot, __local float *s) {
    long i = get_group_id(0);
    int l = get_local_id(0), nl = get_local_size(0);
    int t = tg[to + i];
    bool ok = ce_valid(t, ignore, C, i, err, slot, l);
    long n = ok ? C : 0; /* skipped rows still reach every barrier */
    x += xo + i * C;
    float m = ok ? LD(x, 0) : 0.0f;
    for (long c = l; c < n; c += nl) m = LD(x, c) > m ? LD(x, c) : m;
    m = group_max(s, m);
    float se = 0.0f, sx = 0.0f;
    for (long c = l; c < n; c += nl) se += exp(LD(x, c) - m), sx += LD(x, c);
    se = group_sum(s, se);
    sx = group_sum(s, sx);
    if (l == 0) {
        float lse = m + log(se);
        part[i] = ok ? -(1.0f - eps) * (LD(x, t) - lse) - eps * (sx / (float)C - lse) : 0.0f;
    }
}

/* y () = sum(part) / count of the rows that count (0 if none) */
__kernel void ce_final(__global const float *part, __global const int *tg, ulong to, __global T *y, ulong yo, long N,
                       long C, int ignore, __local float *s) {
    int l = get_local_id(0), nl = get_local_size(0);
    float sum = 0.0f, cnt = 0.0f;
    for (long i = l; i < N; i += nl) {
        int t = tg[to + i];
        sum += part[i];
        cnt += t != ignore && t >= 0 && t < C ? 1.0f : 0.0f;
    }
    sum = group_sum(s, sum);
    cnt = group_sum(s, cnt);
    if (l == 0) ST(y + yo, 0, cnt > 0.0f ? sum / cnt : 0.0f);
}

/* scale[0] = dloss / count (0 if no row counts) */
__kernel void ce_scale(__global const int *tg, ulong to, __global const T *dl, ulong dlo, __global float *scale, long N,
                       long C, int ignore, __local float *s) {
    int l = get_local_id(0), nl = get_local_size(0);
    float cnt = 0.0f;
    for (long i = l; i < N; i += nl) {
        int t = tg[to + i];
        cnt += t != ignore && t >= 0 && t < C ? 1.0f : 0.0f;
    }
    cnt = group_sum(s, cnt);
    if (l == 0) scale[0] = cnt > 0.0f ? LD(dl + dlo, 0) / cnt : 0.0f;
}

/* dx (N, C) = (softmax(x) - q) * scale, q the smoothed one-hot (on at t, off
 * elsewhere); 0 on skipped rows */
__kernel void ce_grad_rows(__global const T *x, ulong xo, __global const int *tg, ulong to,
                           __global const float *scale, __global T *dx, ulong dxo, long C, int ignore, float on,
                           float off, __global int *err, int slot, __local float *s) {
    long i = get_group_id(0);
    int l = get_local_id(0), nl = get_local_size(0);
    int t = tg[to + i];
    x += xo + i * C, dx += dxo + i * C;
    bool ok = ce_valid(t, ignore, C, i, err, slot, l);
    long n = ok ? C : 0; /* skipped rows still reach every barrier */
    float m = ok ? LD(x, 0) : 0.0f;
    for (long c = l; c < n; c += nl) m = LD(x, c) > m ? LD(x, c) : m;
    m = group_max(s, m);
    float se = 0.0f;
    for (long c = l; c < n; c += nl) se += exp(LD(x, c) - m);
    se = group_sum(s, se);
    float inv = 1.0f / se, k = scale[0];
    for (long c = l; c < C; c += nl) ST(dx, c, ok ? (exp(LD(x, c) - m) * inv - (c == t ? on : off)) * k : 0.0f);
}

/* y () = mean((a - b)^2) over n elements, one work-group */
__kernel void mse(__global const T *a, ulong ao, __global const T *b, ulong bo, __global T *y, ulong yo, long n,
                  __local float *s) {
    int l = get_local_id(0), nl = get_local_size(0);
    a += ao, b += bo;
    float sum = 0.0f;
    for (long i = l; i < n; i += nl) {
        float d = LD(a, i) - LD(b, i);
        sum += d * d;
    }
    sum = group_sum(s, sum);
    if (l == 0) ST(y + yo, 0, sum / (float)n);
}
