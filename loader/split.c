/* loader/split.c — the seeded train/validation split of an in-memory
 * dataset (loom_dataset_split, see loom/data.h). */
#include "../core/impl.h"
#include "loom/data.h"

loom_status loom_dataset_split(loom_ctx *ctx, loom_dataset *ds, int64_t count, uint64_t seed, loom_dataset *val) {
    if (count <= 0 || count >= ds->n)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "dataset split: %lld validation samples out of %lld",
                         (long long)count, (long long)ds->n);
    size_t per = (size_t)ds->c * (size_t)ds->h * (size_t)ds->w;
    int64_t *order = malloc((size_t)ds->n * sizeof *order);
    uint8_t *px = malloc((size_t)ds->n * per);
    int32_t *lb = malloc((size_t)ds->n * sizeof *lb);
    loom_dataset v = *ds;
    v.pixels = malloc((size_t)count * per);
    v.labels = malloc((size_t)count * sizeof *v.labels);
    if (!order || !px || !lb || !v.pixels || !v.labels) {
        free(order), free(px), free(lb), free(v.pixels), free(v.labels);
        return loom__err(ctx, LOOM_ERR_OOM, "dataset split: out of memory");
    }
    for (int64_t i = 0; i < ds->n; i++) order[i] = i;
    loom__shuffle(order, ds->n, seed, 0x53504c4954ull);
    int64_t keep = ds->n - count;
    for (int64_t i = 0; i < ds->n; i++) {
        int64_t s = order[i];
        if (i < keep) {
            memcpy(px + (size_t)i * per, ds->pixels + (size_t)s * per, per);
            lb[i] = ds->labels[s];
        } else {
            memcpy(v.pixels + (size_t)(i - keep) * per, ds->pixels + (size_t)s * per, per);
            v.labels[i - keep] = ds->labels[s];
        }
    }
    free(order);
    free(ds->pixels);
    free(ds->labels);
    ds->pixels = px;
    ds->labels = lb;
    ds->n = keep;
    v.n = count;
    *val = v;
    return LOOM_OK;
}
