/* loader/batch_iter.c — a simple in-memory batch iterator (shuffled per epoch
 * from (seed, epoch), normalised to f32) and the seeded train/val split. The
 * threaded prefetching loader replaces this behind the same calls. */
#include "../core/impl.h"
#include "loom/data.h"

struct loom_batch_iter {
    const loom_dataset *ds;
    loom_batch_iter_desc d;
    int64_t *order;
    int64_t pos;
    float lut[256]; /* pixel -> normalised value */
};

loom_status loom_batch_iter_create(loom_ctx *ctx, const loom_dataset *ds, const loom_batch_iter_desc *desc,
                                   loom_batch_iter **out) {
    *out = NULL;
    if (!ds || !desc || desc->batch < 1)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "batch iterator: batch size must be >= 1 (got %d)",
                         desc ? desc->batch : 0);
    if (ds->n < 1) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "batch iterator: the dataset is empty");
    loom_batch_iter *it = calloc(1, sizeof *it);
    if (!it || !(it->order = malloc((size_t)ds->n * sizeof *it->order))) {
        free(it);
        return loom__err(ctx, LOOM_ERR_OOM, "batch iterator: out of memory");
    }
    it->ds = ds;
    it->d = *desc;
    float std = desc->std > 0 ? desc->std : 1.0f;
    for (int i = 0; i < 256; i++) it->lut[i] = ((float)i / 255.0f - desc->mean) / std;
    loom_batch_iter_begin(it, 0);
    *out = it;
    return LOOM_OK;
}

void loom_batch_iter_destroy(loom_batch_iter *it) {
    if (!it) return;
    free(it->order);
    free(it);
}

void loom_batch_iter_begin(loom_batch_iter *it, int64_t epoch) {
    for (int64_t i = 0; i < it->ds->n; i++) it->order[i] = i;
    if (it->d.shuffle) loom__shuffle(it->order, it->ds->n, it->d.seed, LOOM__STREAM_EPOCH_ORDER + (uint64_t)epoch);
    it->pos = 0;
}

int64_t loom_batch_iter_batches(const loom_batch_iter *it) {
    int64_t n = it->ds->n, b = it->d.batch;
    return it->d.drop_last ? n / b : (n + b - 1) / b;
}

int64_t loom_batch_iter_pos(const loom_batch_iter *it) { return it->pos; }
void loom_batch_iter_seek(loom_batch_iter *it, int64_t pos) {
    it->pos = pos < 0 ? 0 : pos > it->ds->n ? it->ds->n : pos;
}

int loom_batch_iter_next(loom_batch_iter *it, float *x, int32_t *y) {
    const loom_dataset *ds = it->ds;
    int64_t left = ds->n - it->pos;
    int count = left < it->d.batch ? (int)left : it->d.batch;
    if (count <= 0 || (it->d.drop_last && count < it->d.batch)) return 0;
    size_t per = (size_t)ds->c * (size_t)ds->h * (size_t)ds->w;
    for (int i = 0; i < count; i++) {
        int64_t s = it->order[it->pos + i];
        const uint8_t *px = ds->pixels + (size_t)s * per;
        float *dst = x + (size_t)i * per;
        for (size_t k = 0; k < per; k++) dst[k] = it->lut[px[k]];
        y[i] = ds->labels[s];
    }
    it->pos += count;
    return count;
}

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
