/* backends/vulkan/ops/reduce.c — host side of sum and mean (p[LOOM_P_REDUCE_MASK] = axes
 * mask): the geometry table for shaders/reduce.comp, one work-group per
 * output element (one invocation each where loom__vk_rows says and there are
 * at least 64) (parameters: core/ops/reduce.c); the reproducible variants
 * feed the same table to shaders/repro.comp's K_SUM. */
#include "../../../core/repro.h"
#include "../vulkan.h"

/* repro: shaders/repro.comp's chunked sum (core/repro.h), one invocation per chunk */
static loom_status run_reduce(loom__vk_op *o, bool mean, bool repro) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t g[23];
    int64_t rcount = loom__reduce_table(y, g);
    loom__buffer *gm;
    loom_status s = loom__vk_meta(o, g, 23, &gm);
    if (s != LOOM_OK) return s;
    int64_t nout = loom_tensor_numel(y);
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
