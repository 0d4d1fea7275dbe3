/* tools/train_data.c — loading the data of a `loom train` run: an ImageFolder
 * split (or a packed shard) decoded once through the --transform steps, or
 * Fashion-MNIST / IDX. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train_data.h"

/* An ImageFolder split (or a packed shard) for `loom train`: the trainer takes in-memory
 * datasets, so the images are decoded once through the --transform steps
 * (loom's loader, in parallel; random steps draw from epoch 0) into a u8
 * (N, C, H, W) dataset. *found is false when DIR is not an ImageFolder (or
 * has no such split): nothing is loaded and no error is recorded. */
static loom_status load_folder(loom_ctx *ctx, const char *dir, bool train, const char *spec, bool skip_bad, int workers,
                               loom_dataset *out, bool *found, loom_source **keep_src, loom_tf_step *keep_steps,
                               int *keep_nsteps) {
    *found = false;
    static const char *const idx_or_npy[] = {"train-images-idx3-ubyte", "train-images-idx3-ubyte.gz", "train-images.npy"};
    char p[4096];
    for (int k = 0; k < 3; k++) {
        snprintf(p, sizeof p, "%s/%s", dir, idx_or_npy[k]);
        if (access(p, F_OK) == 0) return LOOM_OK; /* IDX or .npy: not an ImageFolder (and no need to load it here) */
    }
    loom_source *src = NULL;
    if (loom_source_open_dir(ctx, dir, train, &src) != LOOM_OK) return LOOM_OK;
    if (!src->get_image && src->kind != LOOM_SAMPLE_U8) { /* not images (an f32 .npy record set) */
        loom_source_destroy(src);
        return LOOM_OK;
    }
    *found = true; /* an ImageFolder, or a packed shard (images of one size: `loom pack`) */
    loom_status st = LOOM_OK;
    if (skip_bad && src->get_image) {
        char root[4096];
        snprintf(root, sizeof root, "%s", src->name);
        loom_source_destroy(src);
        src = NULL;
        if ((st = loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root, .skip_bad = true}, &src)) != LOOM_OK)
            return st;
    }
    loom_tf_step steps[32];
    int nsteps = 0;
    loom_loader *ld = NULL;
    if (!spec && src->get_image)
        st = loom_source_error(ctx, LOOM_ERR_INVALID_ARG, "%s is an ImageFolder (images of any size): --transform must make "
                               "them one size, e.g. --transform 'Resize((32, 32))'", src->name);
    if (st == LOOM_OK && spec) st = loom_tf_parse(ctx, spec, steps, 32, &nsteps);
    if (st == LOOM_OK)
        st = loom_loader_create(ctx, &(loom_loader_desc){.src = src, .batch = 64, .seed = 1, .workers = workers,
                                                         .steps = steps, .nsteps = nsteps},
                                &ld);
    loom_dataset ds = {0};
    if (st == LOOM_OK) {
        int c;
        int64_t h, w;
        loom_loader_shape(ld, &c, &h, &w);
        ds = (loom_dataset){.n = src->n, .c = c, .h = (int)h, .w = (int)w, .num_classes = src->num_classes};
        size_t per = (size_t)c * (size_t)h * (size_t)w;
        ds.pixels = malloc((size_t)ds.n * per);
        ds.labels = malloc((size_t)ds.n * sizeof *ds.labels);
        if (!ds.pixels || !ds.labels) st = loom_source_error(ctx, LOOM_ERR_OOM, "%s: out of memory", src->name);
        int64_t at = 0;
        while (st == LOOM_OK) {
            loom_loader_batch b;
            if ((st = loom_loader_next(ld, &b)) != LOOM_OK || b.count == 0) break;
            // x (count, c, h, w) = u / 255 -> pixels (count, c, h, w) u8
            for (size_t k = 0; k < (size_t)b.count * per; k++)
                ds.pixels[(size_t)at * per + k] = (uint8_t)lrintf(b.x[k] * 255.0f);
            memcpy(ds.labels + at, b.y, (size_t)b.count * sizeof *b.y);
            at += b.count;
        }
        if (st == LOOM_OK)
            printf("%s: %lld images, %d classes -> %dx%lldx%lld\n", src->name, (long long)src->n, src->num_classes, c,
                   (long long)h, (long long)w);
        if (st == LOOM_OK && loom_imagefolder_skipped(src) > 0)
            printf("%s: skipped %lld bad image(s) (--skip-bad-samples)\n", src->name,
                   (long long)loom_imagefolder_skipped(src));
    }
    loom_loader_destroy(ld);
    if (st == LOOM_OK && keep_src) { /* the training loader reads the source itself, new random draws each epoch */
        *keep_src = src;
        memcpy(keep_steps, steps, (size_t)nsteps * sizeof *steps);
        *keep_nsteps = nsteps;
    } else {
        loom_source_destroy(src);
    }
    if (st == LOOM_OK) *out = ds;
    else loom_dataset_free(&ds);
    return st;
}

loom_status loom__train_load_data(loom_ctx *ctx, const loom__train_data_opts *c, loom__run_data *rd) {
    loom_status st = c->data_dir ? load_folder(ctx, c->data_dir, true, c->transform, c->skip_bad, c->workers, &rd->train,
                                               &rd->folder, &rd->train_src, rd->train_steps, &rd->train_nsteps)
                                 : LOOM_OK;
    if (st == LOOM_OK && rd->folder)
        st = load_folder(ctx, c->data_dir, false, c->transform, c->skip_bad, c->workers, &rd->test, &rd->folder_test, NULL,
                         NULL, NULL);
    if (st == LOOM_OK && !rd->folder && (c->transform || c->skip_bad))
        st = loom_source_error(ctx, LOOM_ERR_INVALID_ARG, "--transform and --skip-bad-samples are for an ImageFolder "
                               "--data-dir");
    if (st == LOOM_OK && !rd->folder) st = loom_dataset_load_mnist(ctx, c->data_dir, true, &rd->train);
    if (st == LOOM_OK && !rd->folder) st = loom_dataset_load_mnist(ctx, c->data_dir, false, &rd->test);
    return st;
}

void loom__train_free_data(loom__run_data *rd) {
    loom_source_destroy(rd->train_src);
    loom_dataset_free(&rd->train);
    loom_dataset_free(&rd->test);
}

