/* backends/opencl/ops/reduce.c — host side of sum and mean (p[LOOM_P_REDUCE_MASK] = axes
 * mask): the geometry table for kernels/reduce.cl, one work-group per output, or
 * where each output's values are one contiguous run, per chunk of a run (run_flat). */
#include "../../../core/repro.h"
#include "../opencl.h"

/* reduce_flat: each output's run in S chunks (loom__reduce_chunks), one
 * work-group each, then their sums in order (reduce_parts). A scalar sum of
 * 1.6M floats on PoCL: 14.1 ms (one work-group decoding every element's
 * index) -> 0.24 ms. */
static loom_status run_flat(loom__cl_op *o, cl_mem gm, int64_t S, int64_t chunk, float div) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t nout = loom_tensor_numel(y);
    cl_mem part = NULL;
    cl_kernel k;
    loom_status s;
    if (S > 1 && (s = loom__cl_scratch(o, (size_t)(nout * S) * sizeof(float), &part)) != LOOM_OK) return s;
    if ((s = loom__cl_kernel(o, y->dtype, "reduce_flat", &k)) != LOOM_OK) return s;
    size_t local = loom__cl_row_local(o->cl, chunk);
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_mem(&ar, gm), loom__cl_arg_t(&ar, x), loom__cl_arg_mem(&ar, part ? part : gm), loom__cl_arg_t(&ar, y);
    loom__cl_arg_i64(&ar, S), loom__cl_arg_i64(&ar, chunk), loom__cl_arg_f32(&ar, div);
    loom__cl_arg_local(&ar, local * sizeof(float));
    if ((s = loom__cl_args_end(&ar)) != LOOM_OK || (s = loom__cl_launch_groups(o, k, nout * S, local)) != LOOM_OK)
        return s;
    if (S == 1) return LOOM_OK;
    if ((s = loom__cl_kernel(o, y->dtype, "reduce_parts", &k)) != LOOM_OK) return s;
    ar = loom__cl_args_begin(o, k);
    loom__cl_arg_mem(&ar, part), loom__cl_arg_t(&ar, y), loom__cl_arg_i64(&ar, S), loom__cl_arg_i64(&ar, nout);
    loom__cl_arg_f32(&ar, div);
    if ((s = loom__cl_args_end(&ar)) != LOOM_OK) return s;
    return loom__cl_launch_1d(o, k, nout);
}

static loom_status run_reduce(loom__cl_op *o, bool mean) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t g[23];
    int64_t rcount = loom__reduce_table(y, g);
    cl_mem gm;
    cl_kernel k;
    loom_status s;
    if ((s = loom__cl_meta(o, g, 23, &gm)) != LOOM_OK) return s;
    int64_t chunk, S = loom__reduce_chunks(g, &chunk);
    if (S > 0 && loom__env_switch("LOOM_OPENCL_REDUCE_FLAT") != 0)
        return run_flat(o, gm, S, chunk, mean ? (float)rcount : 1.0f);
    if ((s = loom__cl_kernel(o, y->dtype, "reduce", &k)) != LOOM_OK) return s;
    /* one item per output where there are enough outputs to fill the cores (loom__cl_row_local) */
    int64_t nout = loom_tensor_numel(y);
    size_t local = nout >= 64 ? loom__cl_row_local(o->cl, rcount) : loom__cl_reduce_local(o->cl, rcount);
    loom__cl_args ar = loom__cl_args_begin(o, k);
    loom__cl_arg_mem(&ar, gm), loom__cl_arg_t(&ar, x), loom__cl_arg_t(&ar, y);
    loom__cl_arg_f32(&ar, mean ? (float)rcount : 1.0f), loom__cl_arg_local(&ar, local * sizeof(float));
    if ((s = loom__cl_args_end(&ar)) != LOOM_OK) return s;
    return loom__cl_launch_groups(o, k, loom_tensor_numel(y), local);
}

loom_status loom__cl_sum(loom__cl_op *o) { return run_reduce(o, false); }
loom_status loom__cl_mean(loom__cl_op *o) { return run_reduce(o, true); }

/* ---- reproducible mode (core/repro.h; kernels/repro.cl, built only into
 * -DLOOM_REPRO programs): the canonical chunked sums ---- */

/* a work-group for a csum over n values: one item per chunk, up to the limit */
size_t loom__cl_chunk_local(const loom__cl *cl, int64_t n) {
    return loom__cl_reduce_local(cl, (n + LOOM__REPRO_CHUNK - 1) / LOOM__REPRO_CHUNK);
}

static loom_status reduce_repro(loom__cl_op *o, bool mean) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t g[23];
    int64_t count = loom__reduce_table(y, g);
    cl_mem gm;
    cl_kernel k;
    loom_status st;
    if ((st = loom__cl_meta(o, g, 23, &gm)) != LOOM_OK) return st;
    if ((st = loom__cl_kernel(o, y->dtype, "repro_reduce", &k)) != LOOM_OK) return st;
    size_t local = loom__cl_chunk_local(o->cl, count);
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_mem(&a, gm), loom__cl_arg_t(&a, x), loom__cl_arg_t(&a, y), loom__cl_arg_i32(&a, mean);
    loom__cl_arg_local(&a, local * sizeof(float));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    return loom__cl_launch_groups(o, k, loom_tensor_numel(y), local);
}
loom_status loom__cl_sum_repro(loom__cl_op *o) { return reduce_repro(o, false); }
loom_status loom__cl_mean_repro(loom__cl_op *o) { return reduce_repro(o, true); }
