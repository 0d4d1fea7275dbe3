/* backends/opencl/ops/reduce.c — host side of sum and mean (p[LOOM_P_REDUCE_MASK] = axes
 * mask): the geometry table for kernels/reduce.cl, one work-group per output. */
#include "../../../core/repro.h"
#include "../opencl.h"

static loom_status run_reduce(loom__cl_op *o, bool mean) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t g[23];
    int64_t rcount = loom__reduce_table(y, g);
    cl_mem gm;
    cl_kernel k;
    loom_status s;
    if ((s = loom__cl_meta(o, g, 23, &gm)) != LOOM_OK) return s;
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
