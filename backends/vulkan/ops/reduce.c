/* backends/vulkan/ops/reduce.c — host side of sum and mean (p[LOOM_P_REDUCE_MASK] = axes
 * mask): the geometry table for shaders/reduce.comp, one work-group per
 * output element (one invocation each where loom__vk_rows says and there are
 * at least 64), or per chunk of each output's contiguous run (run_flat)
 * (parameters: core/ops/reduce.c); the reproducible variants
 * feed the same table to shaders/repro.comp's K_SUM. */
#include "../../../core/repro.h"
#include "../vulkan.h"

/* K_REDUCE_FLAT: each output's run in S chunks (loom__reduce_chunks), one
 * work-group each, then K_REDUCE_PARTS adds their sums in order: a scalar
 * sum of many values spreads over the cores and decodes no index per
 * element (lavapipe, 1.6M floats: 36.7 -> 1.7 ms) */
static loom_status run_flat(loom__vk_op *o, loom__buffer *gm, int64_t S, int64_t chunk, float div) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t nout = loom_tensor_numel(y);
    loom__buffer *part;
    loom_status s = loom__vk_scratch(o, (size_t)(nout * S) * sizeof(float), &part);
    if (s != LOOM_OK) return s;
    loom__vk_call c;
    loom__vk_begin(o, &c, "reduce_flat", y->dtype);
    loom__vk_buf(&c, gm, LOOM__VK_R);
    loom__vk_in(&c, x), loom__vk_out(&c, y);
    loom__vk_buf(&c, part, LOOM__VK_W);
    loom__vk_u32(&c, (uint32_t)nout), loom__vk_f32(&c, div), loom__vk_u32(&c, (uint32_t)S);
    loom__vk_u32(&c, (uint32_t)chunk);
    if ((s = loom__vk_run_groups(&c, nout * S, loom__vk_reduce_local(o->vk, chunk))) != LOOM_OK || S == 1) return s;
    loom__vk_begin(o, &c, "reduce_parts", y->dtype);
    loom__vk_buf(&c, part, LOOM__VK_R);
    loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)nout), loom__vk_f32(&c, div), loom__vk_u32(&c, (uint32_t)S);
    return loom__vk_run_1d(&c, nout);
}

/* repro: shaders/repro.comp's chunked sum (core/repro.h), one invocation per chunk */
static loom_status run_reduce(loom__vk_op *o, bool mean, bool repro) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t g[23];
    int64_t rcount = loom__reduce_table(y, g);
    loom__buffer *gm;
    loom_status s = loom__vk_meta(o, g, 23, &gm);
    if (s != LOOM_OK) return s;
    int64_t nout = loom_tensor_numel(y);
    /* contiguous runs, unless the one-invocation-per-output form serves: many
     * outputs of short runs on a CPU device (lavapipe: 2048 runs of 784 in
     * 5.8 ms, 17 in chunks; 64 runs of 25088: 11.5 ms, 2.3 in chunks) */
    bool rows_serve = nout >= 64 && rcount <= 4096 && loom__vk_rows(o);
    int64_t chunk, S = loom__reduce_chunks(g, &chunk);
    if (!repro && S > 0 && !rows_serve && loom__env_switch("LOOM_VULKAN_REDUCE_FLAT") != 0)
        return run_flat(o, gm, S, chunk, mean ? (float)rcount : 1.0f);
    loom__vk_call c;
    /* one invocation per output element where there are enough of them to fill the lanes */
    bool rows = !repro && nout >= 64 && loom__vk_rows(o);
    loom__vk_begin(o, &c, repro ? "repro_sum" : rows ? "reduce_rows" : "reduce", y->dtype);
    loom__vk_buf(&c, gm, LOOM__VK_R);
    loom__vk_in(&c, x), loom__vk_out(&c, y);
    loom__vk_u32(&c, (uint32_t)nout), loom__vk_f32(&c, mean ? (float)rcount : 1.0f);
    if (rows) return loom__vk_run_1d(&c, nout);
    int64_t items = repro ? (rcount + LOOM__REPRO_CHUNK - 1) / LOOM__REPRO_CHUNK : rcount;
    return loom__vk_run_groups(&c, nout, loom__vk_reduce_local(o->vk, items));
}

loom_status loom__vk_sum(loom__vk_op *o) { return run_reduce(o, false, false); }
loom_status loom__vk_mean(loom__vk_op *o) { return run_reduce(o, true, false); }
loom_status loom__vk_sum_repro(loom__vk_op *o) { return run_reduce(o, false, true); }
loom_status loom__vk_mean_repro(loom__vk_op *o) { return run_reduce(o, true, true); }
