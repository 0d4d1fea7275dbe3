/* backends/opencl/kernels/correct.cl — correct_count (core/ops/correct.c), as
 * backends/cpu/ops/correct.c: one work-group; each item takes rows l, l + nl,
 * ..., finds the first maximum of the row and compares it with the target;
 * the counts are summed over the group (integers: exact in f32). The logits
 * are read through ld_any (f32, f16 or bf16; xdt), the count is f32. */
__kernel void correct_count(__global const uchar *x, ulong xo, int xdt, __global const int *tg, ulong to,
                            __global float *y, ulong yo, long N, long C, __local float *s) {
    int l = get_local_id(0), nl = get_local_size(0);
    __global const uchar *xb = x + xo * (xdt == LOOM_K_DT_F32 ? 4 : 2);
    float cnt = 0.0f;
    for (long i = l; i < N; i += nl) {
        long best = 0;
        float bv = ld_any(xb, xdt, i * C);
        for (long c = 1; c < C; c++) {
            float v = ld_any(xb, xdt, i * C + c);
            if (v > bv) bv = v, best = c;
        }
        cnt += tg[to + i] == best ? 1.0f : 0.0f;
    }
    cnt = group_sum(s, cnt);
    if (l == 0) y[yo] = cnt;
}
