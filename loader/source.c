/* loader/source.c — datasets behind the loom_source interface: in-memory
 * IDX datasets (wrapped or owned), .npy image/label arrays, and the choice
 * among them (and packed shards, ImageFolders) for a directory.
 *
 * Every `get` here only reads immutable memory, so any number of threads may
 * call it at once.
 */
#include <sys/stat.h>

#include "../core/impl.h"
#include "loom/loader.h"

size_t loom_source_sample_bytes(const loom_source *src) {
    size_t e = (size_t)src->c * (size_t)src->h * (size_t)src->w;
    return src->kind == LOOM_SAMPLE_U8 ? e : e * 4; /* F32 floats, I32 ids */
}

loom_status loom_source_error(loom_ctx *ctx, loom_status st, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return loom__err(ctx, st, "%s", msg);
}

void loom_source_destroy(loom_source *src) {
    if (src && src->destroy) src->destroy(src);
}

/* ---- in-memory datasets (IDX) ------------------------------------------- */

typedef struct mem_impl {
    const loom_dataset *ds;
    loom_dataset owned; /* open_idx: the data, freed with the source */
} mem_impl;

/* pixels (C, H, W) -> data (H, W, C) */
static loom_status mem_get(const loom_source *src, loom_ctx *ctx, int64_t i, void *data, int32_t *label) {
    const loom_dataset *ds = ((const mem_impl *)src->impl)->ds;
    if (i < 0 || i >= ds->n)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: sample %lld out of range (%lld samples)", src->name,
                         (long long)i, (long long)ds->n);
    size_t hw = (size_t)ds->h * (size_t)ds->w, c = (size_t)ds->c;
    const uint8_t *px = ds->pixels + (size_t)i * hw * c;
    uint8_t *out = data;
    if (c == 1) {
        memcpy(out, px, hw);
    } else {
        for (size_t k = 0; k < c; k++)
            for (size_t p = 0; p < hw; p++) out[p * c + k] = px[k * hw + p];
    }
    *label = ds->labels[i];
    return LOOM_OK;
}

static void mem_destroy(loom_source *src) {
    mem_impl *m = src->impl;
    loom_dataset_free(&m->owned);
    free(m);
    free(src);
}

static loom_status mem_make(loom_ctx *ctx, const loom_dataset *ds, const char *name, loom_source **out) {
    *out = NULL;
    if (!ds || ds->n < 1 || ds->c < 1 || ds->h < 1 || ds->w < 1 || !ds->pixels || !ds->labels)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "source: the dataset is empty or has no pixels/labels");
    loom_source *s = calloc(1, sizeof *s);
    mem_impl *m = calloc(1, sizeof *m);
    if (!s || !m) {
        free(s), free(m);
        return loom__err(ctx, LOOM_ERR_OOM, "source: out of memory");
    }
    m->ds = ds;
    *s = (loom_source){.name = name, .n = ds->n, .kind = LOOM_SAMPLE_U8, .c = ds->c, .h = ds->h, .w = ds->w,
                       .num_classes = ds->num_classes, .get = mem_get, .destroy = mem_destroy, .impl = m};
    *out = s;
    return LOOM_OK;
}

loom_status loom_source_wrap(loom_ctx *ctx, const loom_dataset *ds, loom_source **out) {
    return mem_make(ctx, ds, "dataset", out);
}

static loom_status own_dataset(loom_ctx *ctx, loom_dataset *d, const char *name, loom_source **out) {
    loom_status st = mem_make(ctx, d, name, out);
    if (st != LOOM_OK) {
        loom_dataset_free(d);
        return st;
    }
    mem_impl *m = (*out)->impl;
    m->owned = *d;
    m->ds = &m->owned;
    return LOOM_OK;
}

loom_status loom_source_open_idx(loom_ctx *ctx, const char *images_path, const char *labels_path, loom_source **out) {
    *out = NULL;
    loom_dataset d = {0};
    loom_status st = loom_dataset_load_idx(ctx, images_path, labels_path, &d);
    if (st != LOOM_OK) return st;
    return own_dataset(ctx, &d, "IDX dataset", out);
}

/* ---- .npy arrays ------------------------------------------------------- */

typedef struct npy_impl {
    loom_npy x;
    int32_t *labels;
    char name[512];
} npy_impl;

static loom_status npy_get(const loom_source *src, loom_ctx *ctx, int64_t i, void *data, int32_t *label) {
    const npy_impl *m = src->impl;
    if (i < 0 || i >= src->n)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: sample %lld out of range (%lld samples)", src->name,
                         (long long)i, (long long)src->n);
    size_t per = (size_t)src->c * (size_t)src->h * (size_t)src->w;
    size_t esz = loom_npy_dtype_size(m->x.dtype);
    const uint8_t *p = (const uint8_t *)m->x.data + (size_t)i * per * esz;
    *label = m->labels[i];
    if (src->kind == LOOM_SAMPLE_U8) {
        memcpy(data, p, per);
        return LOOM_OK;
    }
    float *f = data;
    switch (m->x.dtype) {
    case LOOM_NPY_F4: memcpy(f, p, per * 4); break;
    case LOOM_NPY_F2:
        for (size_t k = 0; k < per; k++) {
            uint16_t v;
            memcpy(&v, p + 2 * k, 2);
            f[k] = loom_f16_to_f32(v);
        }
        break;
    case LOOM_NPY_F8:
        for (size_t k = 0; k < per; k++) {
            double v;
            memcpy(&v, p + 8 * k, 8);
            f[k] = (float)v;
        }
        break;
    default: return loom__err(ctx, LOOM_ERR_UNSUPPORTED, "%s: dtype %s", src->name, loom_npy_dtype_name(m->x.dtype));
    }
    return LOOM_OK;
}

static void npy_destroy(loom_source *src) {
    npy_impl *m = src->impl;
    loom_npy_free(&m->x);
    free(m->labels);
    free(m);
    free(src);
}

loom_status loom_source_open_npy(loom_ctx *ctx, const char *images_path, const char *labels_path, loom_source **out) {
    *out = NULL;
    npy_impl *m = calloc(1, sizeof *m);
    loom_source *s = calloc(1, sizeof *s);
    loom_npy y = {0};
    loom_status st = LOOM_OK;
    if (!m || !s) {
        st = loom__err(ctx, LOOM_ERR_OOM, "source: out of memory");
        goto fail;
    }
    snprintf(m->name, sizeof m->name, "%s", images_path);
    if ((st = loom_npy_read(ctx, images_path, &m->x)) != LOOM_OK) goto fail;
    if ((st = loom_npy_read(ctx, labels_path, &y)) != LOOM_OK) goto fail;
    const loom_npy *x = &m->x;
    *s = (loom_source){.name = m->name, .get = npy_get, .destroy = npy_destroy, .impl = m};
    bool is_u8 = x->dtype == LOOM_NPY_U1;
    bool is_float = x->dtype == LOOM_NPY_F2 || x->dtype == LOOM_NPY_F4 || x->dtype == LOOM_NPY_F8;
    if (!is_u8 && !is_float) {
        st = loom__err(ctx, LOOM_ERR_UNSUPPORTED, "%s: images of dtype %s (expected u1 images or f2/f4/f8 records)",
                       images_path, loom_npy_dtype_name(x->dtype));
        goto fail;
    }
    if (is_u8 && (x->ndim == 3 || (x->ndim == 4 && x->shape[3] >= 1 && x->shape[3] <= 4))) {
        s->kind = LOOM_SAMPLE_U8;
        s->h = x->shape[1], s->w = x->shape[2], s->c = x->ndim == 4 ? (int)x->shape[3] : 1;
    } else if (is_float && x->ndim >= 2 && x->ndim <= 4) {
        s->kind = LOOM_SAMPLE_F32;
        s->c = x->ndim == 3 ? 1 : (int)x->shape[1];
        s->h = x->ndim == 2 ? 1 : x->shape[x->ndim - 2];
        s->w = x->ndim == 2 ? 1 : x->shape[x->ndim - 1];
        if (x->ndim == 2 && x->shape[1] > INT32_MAX) s->c = 0;
    } else {
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: images have %d dimensions (expected u1 (N, H, W) or (N, H, W, C) with "
                       "C 1..4, or float (N, F), (N, H, W), (N, C, H, W))",
                       images_path, x->ndim);
        goto fail;
    }
    s->n = x->shape[0];
    if (s->n < 1 || s->c < 1 || s->h < 1 || s->w < 1) {
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: an empty dimension in the images' shape", images_path);
        goto fail;
    }
    if (y.ndim != 1 || (y.dtype != LOOM_NPY_U1 && y.dtype != LOOM_NPY_I4 && y.dtype != LOOM_NPY_I8)) {
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: labels must be a 1-d u1/i4/i8 array (got %d-d %s)", labels_path,
                       y.ndim, loom_npy_dtype_name(y.dtype));
        goto fail;
    }
    if (y.shape[0] != s->n) {
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s has %lld images but %s has %lld labels", images_path,
                       (long long)s->n, labels_path, (long long)y.shape[0]);
        goto fail;
    }
    if (!(m->labels = malloc((size_t)s->n * sizeof *m->labels))) {
        st = loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory", labels_path);
        goto fail;
    }
    for (int64_t i = 0; i < s->n; i++) {
        int64_t v;
        if (y.dtype == LOOM_NPY_U1) {
            v = ((const uint8_t *)y.data)[i];
        } else if (y.dtype == LOOM_NPY_I4) {
            int32_t t;
            memcpy(&t, (const uint8_t *)y.data + 4 * i, 4);
            v = t;
        } else {
            memcpy(&v, (const uint8_t *)y.data + 8 * i, 8);
        }
        if (v < 0 || v > INT32_MAX) {
            st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: label %lld of sample %lld (expected 0..2^31-1)", labels_path,
                           (long long)v, (long long)i);
            goto fail;
        }
        m->labels[i] = (int32_t)v;
        if (v + 1 > s->num_classes) s->num_classes = (int)(v + 1);
    }
    loom_npy_free(&y);
    *out = s;
    return LOOM_OK;
fail:
    loom_npy_free(&y);
    if (m) loom_npy_free(&m->x), free(m->labels);
    free(m);
    free(s);
    return st;
}

/* ---- a directory ------------------------------------------------------- */

static bool exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

loom_status loom_source_open_dir(loom_ctx *ctx, const char *dir, bool train, loom_source **out) {
    *out = NULL;
    char p[4096], q[4096];
    snprintf(p, sizeof p, "%s/%s-images-idx3-ubyte.gz", dir, train ? "train" : "t10k");
    snprintf(q, sizeof q, "%s/%s-images-idx3-ubyte", dir, train ? "train" : "t10k");
    if (exists(p) || exists(q)) {
        loom_dataset d = {0};
        loom_status st = loom_dataset_load_mnist(ctx, dir, train, &d);
        if (st != LOOM_OK) return st;
        return own_dataset(ctx, &d, "IDX dataset", out);
    }
    snprintf(p, sizeof p, "%s/%s-images.npy", dir, train ? "train" : "test");
    snprintf(q, sizeof q, "%s/%s-labels.npy", dir, train ? "train" : "test");
    if (exists(p)) return loom_source_open_npy(ctx, p, q, out);
    /* a packed shard: DIR itself, or DIR/train.shard (DIR/val.shard, DIR/test.shard) */
    struct stat sb;
    if (stat(dir, &sb) == 0 && S_ISREG(sb.st_mode)) return loom_source_open_shard(ctx, dir, out);
    const char *shard[2] = {train ? "train" : "val", train ? NULL : "test"};
    for (int k = 0; k < 2 && shard[k]; k++) {
        snprintf(p, sizeof p, "%s/%s.shard", dir, shard[k]);
        if (exists(p)) return loom_source_open_shard(ctx, p, out);
    }
    /* an ImageFolder: DIR/train and DIR/val (or DIR/test) when present, else DIR itself for train */
    const char *split[2] = {train ? "train" : "val", train ? NULL : "test"};
    for (int k = 0; k < 2 && split[k]; k++) {
        snprintf(p, sizeof p, "%s/%s", dir, split[k]);
        if (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            return loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = p}, out);
    }
    if (train && stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        loom_status st = loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = dir}, out);
        if (st != LOOM_ERR_FORMAT || strstr(loom_last_error(ctx), "no image")) return st;
    }
    return loom__err(ctx, LOOM_ERR_IO, "%s: no %s-images-idx3-ubyte[.gz] (IDX), no %s-images.npy, no %s.shard and no "
                     "ImageFolder (%s<class>/<image> folders) here",
                     dir, train ? "train" : "t10k", train ? "train" : "test", train ? "train" : "val",
                     train ? "[train/]" : "val/ or test/ with ");
}
