/* backends/cpu/ops/resize.c — CPU kernel of resize_u8 (core/ops/resize.c),
 * the reference of the device resize: plain loops, the width pass over
 * every source row into a u8 scratch (one source row per work item), then
 * the height pass (one output row per work item), split across the thread
 * pool. Sums in 32-bit unsigned arithmetic (the GPUs' wrap-around where a
 * bad table overflows; exact for the tables of loom__tf_resize_taps). */
#include <stdlib.h>

#include "../cpu_impl.h"

typedef struct resize_job {
    const uint8_t *x;
    const int32_t *taps; /* (oh + ow, 2 + span) */
    uint8_t *tmp;        /* (N, H, OW, C) */
    uint8_t *y;          /* (N, OH, OW, C) */
    int64_t h, w, oh, ow, span;
    int c;
} resize_job;

/* one axis's row of the table for output i: first index clamped into [0, n),
 * count clamped into [0, span] and to the inputs left */
static const int32_t *tap_row(const resize_job *j, int64_t i, int64_t n, int64_t *first, int64_t *count) {
    const int32_t *r = j->taps + i * (2 + j->span);
    *first = r[0] < 0 ? 0 : r[0] >= n ? n - 1 : r[0];
    *count = r[1] < 0 ? 0 : r[1] > j->span ? j->span : r[1];
    if (*count > n - *first) *count = n - *first;
    return r + 2;
}

/* a sum started at 1 << (F - 1) (u32), to u8: arithmetic shift, clamp */
static uint8_t fix_u8(uint32_t acc) {
    int32_t a = (int32_t)acc >> LOOM_K_RESIZE_FIX_BITS;
    return (uint8_t)(a < 0 ? 0 : a > 255 ? 255 : a);
}

/* source rows [r0, r1) of (N, H): tmp (.., r, OW, C) through the column taps */
static void width_pass(void *v, int64_t r0, int64_t r1) {
    const resize_job *j = v;
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *s = j->x + r * j->w * j->c;
        for (int64_t ox = 0; ox < j->ow; ox++) {
            int64_t first, count;
            const int32_t *wt = tap_row(j, j->oh + ox, j->w, &first, &count);
            for (int k = 0; k < j->c; k++) {
                uint32_t acc = 1u << (LOOM_K_RESIZE_FIX_BITS - 1);
                for (int64_t t = 0; t < count; t++) acc += (uint32_t)wt[t] * s[(first + t) * j->c + k];
                j->tmp[(r * j->ow + ox) * j->c + k] = fix_u8(acc);
            }
        }
    }
}

/* output rows [r0, r1) of (N, OH): y through the row taps over tmp */
static void height_pass(void *v, int64_t r0, int64_t r1) {
    const resize_job *j = v;
    for (int64_t r = r0; r < r1; r++) {
        int64_t n = r / j->oh, oy = r % j->oh, first, count;
        const int32_t *wt = tap_row(j, oy, j->h, &first, &count);
        const uint8_t *t0 = j->tmp + (n * j->h + first) * j->ow * j->c;
        for (int64_t e = 0; e < j->ow * j->c; e++) {
            uint32_t acc = 1u << (LOOM_K_RESIZE_FIX_BITS - 1);
            for (int64_t t = 0; t < count; t++) acc += (uint32_t)wt[t] * t0[t * j->ow * j->c + e];
            j->y[r * j->ow * j->c + e] = fix_u8(acc);
        }
    }
}

loom_status loom__cpu_resize_u8(const loom__cpu_args *a) {
    const loom_tensor *t = a->node, *x = t->src[0];
    resize_job j = {
        .x = a->x[0],
        .taps = a->x[1],
        .y = a->y,
        .h = x->dims[1],
        .w = x->dims[2],
        .oh = t->dims[1],
        .ow = t->dims[2],
        .span = t->src[1]->dims[1] - 2,
        .c = (int)x->dims[3],
    };
    int64_t n = x->dims[0];
    size_t bytes = (size_t)(n * j.h * j.ow * j.c);
    if (!(j.tmp = malloc(bytes > 0 ? bytes : 1)))
        return loom__err(t->g->ctx, LOOM_ERR_OOM, "resize_u8: cannot allocate %zu bytes for the width pass (node '%s')",
                         bytes, t->name);
    loom__cpu_parallel(a->cpu, n * j.h, 4, width_pass, &j);
    loom__cpu_parallel(a->cpu, n * j.oh, 4, height_pass, &j);
    free(j.tmp);
    return LOOM_OK;
}
