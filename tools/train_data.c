/* tools/train_data.c — loading the data of a `loom train` run: Fashion-MNIST
 * or an IDX directory into memory, or any other dataset the loader opens
 * from a directory (.npy arrays, a packed shard, an ImageFolder) decoded once
 * through the --transform steps (IDX: the steps augment the training images
 * anew every epoch). An error is the loader's own (the file and
 * what is wrong with it), never a generic "not found". The class count is the
 * dataset's declared one (ImageFolder: its class folders; a shard: its
 * header; IDX and .npy: the largest training label + 1) or --classes N, and
 * every label of both splits is checked against it. Also the checks of a
 * run against its data: resuming a finished run, --grad-accum past an epoch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_num.h"
#include "train_data.h"

static bool exists(const char *dir, const char *name, bool want_dir) {
    char p[4096];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0 && (want_dir ? S_ISDIR(sb.st_mode) : true);
}

/* IDX files for the split (read by loom_dataset_load_mnist, as before). */
static bool is_idx(const char *dir, bool train) {
    return exists(dir, train ? "train-images-idx3-ubyte" : "t10k-images-idx3-ubyte", false) ||
           exists(dir, train ? "train-images-idx3-ubyte.gz" : "t10k-images-idx3-ubyte.gz", false);
}

/* Does DIR hold a test split (what loom_source_open_dir looks for with train
 * false)? Without one the run has no test set; with one, its errors count. */
static bool has_test_split(const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) == 0 && S_ISREG(sb.st_mode)) return false; /* a shard file: training only */
    return is_idx(dir, false) || exists(dir, "test-images.npy", false) || exists(dir, "val.shard", false) ||
           exists(dir, "test.shard", false) || exists(dir, "val", true) || exists(dir, "test", true);
}

/* An ImageFolder test split must name its classes as the training split does
 * (labels are indices into the sorted class folders). */
static loom_status same_classes(loom_ctx *ctx, const loom_source *train, const loom_source *test) {
    if (!train || !loom_imagefolder_class(train, 0) || !loom_imagefolder_class(test, 0)) return LOOM_OK;
    for (int k = 0; k < train->num_classes || k < test->num_classes; k++) {
        const char *a = loom_imagefolder_class(train, k), *b = loom_imagefolder_class(test, k);
        if (!a || !b || strcmp(a, b))
            return loom_source_error(ctx, LOOM_ERR_FORMAT, "%s: the class folders differ from %s's: class %d is '%s' "
                                     "there and '%s' here (%d and %d classes)", test->name, train->name, k,
                                     a ? a : "(none)", b ? b : "(none)", train->num_classes, test->num_classes);
    }
    return LOOM_OK;
}

/* A split of DIR through the loader into a u8 (N, C, H, W) dataset: an
 * ImageFolder (decoded through the --transform steps: the trainer takes
 * in-memory datasets; random steps draw from epoch 0), .npy images or a
 * packed shard. keep_src: the training split's source is kept, for the
 * training loader to draw the random steps anew every epoch. */
static loom_status load_source(loom_ctx *ctx, const loom__train_data_opts *o, bool train, const loom_source *names,
                               loom_dataset *out, loom_source **keep_src, loom_tf_step *keep_steps, int *keep_nsteps) {
    loom_source *src = NULL;
    loom_status st = loom_source_open_dir(ctx, o->data_dir, train, &src);
    if (st != LOOM_OK) return st;
    if (!src->get_image && src->kind != LOOM_SAMPLE_U8) {
        st = loom_source_error(ctx, LOOM_ERR_UNSUPPORTED, "%s: %s records: loom train trains on u8 images (.npy u1 "
                               "(N, H, W) or (N, H, W, C), IDX, a shard or an ImageFolder)", src->name,
                               src->kind == LOOM_SAMPLE_F32 ? "float" : "token");
        loom_source_destroy(src);
        return st;
    }
    if (o->skip_bad && !src->get_image)
        st = loom_source_error(ctx, LOOM_ERR_INVALID_ARG, "--skip-bad-samples is for an ImageFolder; %s is not one",
                               src->name);
    if (st == LOOM_OK && o->skip_bad) {
        char root[4096];
        snprintf(root, sizeof root, "%s", src->name);
        loom_source_destroy(src);
        src = NULL;
        st = loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root, .skip_bad = true}, &src);
    }
    if (st == LOOM_OK) st = same_classes(ctx, names, src);
    loom_tf_step steps[32];
    int nsteps = 0;
    loom_loader *ld = NULL;
    if (st == LOOM_OK && !o->transform && src->get_image)
        st = loom_source_error(ctx, LOOM_ERR_INVALID_ARG, "%s is an ImageFolder (images of any size): --transform must make "
                               "them one size, e.g. --transform 'Resize((32, 32))'", src->name);
    if (st == LOOM_OK && o->transform) st = loom_tf_parse(ctx, o->transform, steps, 32, &nsteps);
    if (st == LOOM_OK)
        st = loom_loader_create(ctx, &(loom_loader_desc){.src = src, .batch = 64, .seed = 1, .workers = o->workers,
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
    if (st == LOOM_OK && keep_src) {
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

/* IDX with --transform: the in-memory training images through the steps,
 * drawn anew every epoch (the trainer's loader applies them: Philox of
 * (seed, epoch, sample)); the test images are not transformed, so the steps
 * must keep the image size. --val-split is made here, before the source
 * wraps the training part, as the trainer would make it. */
static loom_status idx_augment(loom_ctx *ctx, const loom__train_data_opts *o, loom__run_data *rd) {
    const char *dir = o->data_dir ? o->data_dir : "Fashion-MNIST";
    loom_status st = loom_tf_parse(ctx, o->transform, rd->train_steps, 32, &rd->train_nsteps);
    if (st == LOOM_OK && o->val_split > 0) { /* the trainer's own split: same samples, same seed */
        int64_t nv = (int64_t)llround(o->val_split * (double)rd->train.n);
        if (nv < 1 || nv >= rd->train.n)
            st = loom_source_error(ctx, LOOM_ERR_INVALID_ARG, "--val-split %g of %s's %lld training images leaves %lld "
                                   "for validation", o->val_split, dir, (long long)rd->train.n, (long long)nv);
        else
            st = loom_dataset_split(ctx, &rd->train, nv, o->seed, &rd->val);
    }
    if (st == LOOM_OK) st = loom_source_wrap(ctx, &rd->train, &rd->train_src);
    loom_loader *ld = NULL;
    if (st == LOOM_OK)
        st = loom_loader_create(ctx, &(loom_loader_desc){.src = rd->train_src, .batch = 1, .seed = 1,
                                                         .workers = LOOM_WORKERS_SYNC, .steps = rd->train_steps,
                                                         .nsteps = rd->train_nsteps},
                                &ld);
    if (st == LOOM_OK) {
        int ch;
        int64_t h, w;
        loom_loader_shape(ld, &ch, &h, &w);
        if (ch != rd->train.c || h != rd->train.h || w != rd->train.w)
            st = loom_source_error(ctx, LOOM_ERR_INVALID_ARG, "--transform '%s' turns %s's %dx%dx%d training images "
                                   "into %dx%lldx%lld: on IDX data the steps augment the training images and must keep "
                                   "their size (the test images are not transformed), e.g. 'RandomCrop(%d, padding=4); "
                                   "RandomHorizontalFlip()'", o->transform, dir, rd->train.c, rd->train.h, rd->train.w,
                                   ch, (long long)h, (long long)w, rd->train.h);
    }
    loom_loader_destroy(ld);
    if (st == LOOM_OK)
        printf("%s: %lld training images augmented anew every epoch by '%s'\n", dir, (long long)rd->train.n,
               o->transform);
    return st;
}

/* Every label of ds in 0..classes-1: an error names the split and the sample. */
static loom_status check_labels(loom_ctx *ctx, const char *dir, const char *split, const loom_dataset *ds, int classes,
                                const char *why) {
    for (int64_t i = 0; i < ds->n; i++)
        if (ds->labels[i] < 0 || ds->labels[i] >= classes)
            return loom_source_error(ctx, LOOM_ERR_FORMAT, "%s: %s sample %lld has label %d, but the model has %d "
                                     "classes (0..%d: %s)", dir, split, (long long)i, (int)ds->labels[i], classes,
                                     classes - 1, why);
    return LOOM_OK;
}

/* The class count (--classes, else the training set's) on both sets, every
 * label checked; a warning when the largest label leaves classes empty. */
static loom_status settle_classes(loom_ctx *ctx, const loom__train_data_opts *o, loom__run_data *rd, bool declared) {
    const char *dir = o->data_dir ? o->data_dir : "Fashion-MNIST";
    int classes = rd->train.num_classes;
    const char *why = declared ? "the dataset's class count" : "the largest training label + 1";
    if (o->classes > 0) {
        if (declared && o->classes != classes)
            return loom_source_error(ctx, LOOM_ERR_INVALID_ARG, "--classes %d, but %s declares %d classes", o->classes, dir,
                                     classes);
        classes = o->classes, why = "--classes";
    }
    loom_status st = check_labels(ctx, dir, "training", &rd->train, classes, why);
    bool test = !rd->folder || rd->folder_test;
    if (st == LOOM_OK && test) st = check_labels(ctx, dir, "test", &rd->test, classes, why);
    if (st != LOOM_OK) return st;
    if (!declared && o->classes <= 0) {
        int used = 0;
        char *seen = calloc((size_t)classes, 1);
        for (int64_t i = 0; seen && i < rd->train.n; i++) used += !seen[rd->train.labels[i]]++;
        if (seen && used < classes)
            fprintf(stderr, "loom train: warning: %s: training labels go up to %d but only %d of those %d classes have "
                    "samples (--classes N sets the count and checks every label)\n", dir, classes - 1, used, classes);
        free(seen);
    }
    rd->train.num_classes = rd->test.num_classes = classes;
    return LOOM_OK;
}

loom_status loom__train_load_data(loom_ctx *ctx, const loom__train_data_opts *c, loom__run_data *rd) {
    loom_status st = LOOM_OK;
    bool idx = !c->data_dir || is_idx(c->data_dir, true);
    if (idx && c->skip_bad)
        st = loom_source_error(ctx, LOOM_ERR_INVALID_ARG, "--skip-bad-samples is for an ImageFolder --data-dir");
    if (st == LOOM_OK && idx) {
        st = loom_dataset_load_mnist(ctx, c->data_dir, true, &rd->train);
        if (st == LOOM_OK) st = loom_dataset_load_mnist(ctx, c->data_dir, false, &rd->test);
        if (st == LOOM_OK && c->transform) st = idx_augment(ctx, c, rd);
        return st == LOOM_OK ? settle_classes(ctx, c, rd, false) : st;
    }
    if (st != LOOM_OK) return st;
    rd->folder = true; /* images through the loader: the normalisation of photos, a test set only when present */
    st = load_source(ctx, c, true, NULL, &rd->train, &rd->train_src, rd->train_steps, &rd->train_nsteps);
    if (st == LOOM_OK && has_test_split(c->data_dir)) {
        rd->folder_test = true;
        st = load_source(ctx, c, false, rd->train_src, &rd->test, NULL, NULL, NULL);
    }
    /* an ImageFolder's class folders and a shard's header declare the count; .npy labels do not */
    bool declared = !exists(c->data_dir, "train-images.npy", false);
    return st == LOOM_OK ? settle_classes(ctx, c, rd, declared) : st;
}

void loom__train_free_data(loom__run_data *rd) {
    loom_source_destroy(rd->train_src);
    loom_dataset_free(&rd->train);
    loom_dataset_free(&rd->test);
    loom_dataset_free(&rd->val);
}

bool loom__train_resume_done(loom_ctx *ctx, const char *path, long long epochs) {
    loom_safetensors *f = NULL;
    if (!path || loom_safetensors_open(ctx, path, &f) != LOOM_OK) return false; /* the trainer reports the error */
    const char *v = loom_safetensors_meta(f, "loom.epoch");
    long long ep = 0;
    bool done = v && loom_cli_int(v, 0, INT32_MAX - 1, &ep) && ep >= epochs;
    if (done)
        printf("%s: the run is at epoch %lld of %lld: nothing left to train (a larger --epochs continues it)\n", path, ep,
               epochs);
    loom_safetensors_close(f);
    return done;
}

int loom__train_check_accum(long long accum, long long batch, long long max_steps, long long epochs, int64_t train_n) {
    long long batches = train_n / batch;
    if (max_steps > 0 && max_steps < batches) batches = max_steps;
    if (accum <= batches) return -1;
    if (batches * epochs < accum) {
        fprintf(stderr, "loom train: --grad-accum %lld: the run has %lld batches (%lld per epoch x %lld epochs): no "
                "optimizer step would be taken\n", accum, batches * epochs, batches, epochs);
        return 2;
    }
    fprintf(stderr, "loom train: warning: --grad-accum %lld is more than the %lld batches of an epoch: an optimizer "
            "step gathers batches across epochs (the first after %lld batches, in epoch %lld)\n", accum, batches, accum,
            (accum + batches - 1) / batches);
    return -1;
}
