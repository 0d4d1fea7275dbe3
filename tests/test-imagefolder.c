/* tests/test-imagefolder.c — the ImageFolder source (loader/imagefolder.c).
 *
 * Each run writes a tiny ImageFolder under a fresh temp directory: PNG and
 * BMP with stb_image_write, JPEG with TurboJPEG (or stb_image_write without
 * it), of several sizes and classes. Checks: class order and indices, file
 * order, decoded pixels (PNG/BMP exact, JPEG within a tolerance), TurboJPEG's
 * scaled decode under a hint, the loader on variable-size images (one size
 * after the pipeline, identical batches for 0 and 2 workers), and bad input:
 * truncated JPEG, PNG with a bad CRC, zero-byte file, unsupported format,
 * empty class folder, missing directory — each an error naming the file —
 * and skip_bad counting them instead.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loom/loader.h"
#include "loom/train.h"
#include "testutil.h"
#include "imgwrite.h"

/* A smooth RGB ramp (JPEG keeps it well), within 0..255 for h <= 48, w <= 64. */
static uint8_t pix(int seed, int64_t y, int64_t x, int ch) { return (uint8_t)(20 + seed * 5 + y * 2 + x + ch * 20); }

static uint8_t *pattern(int seed, int h, int w) {
    uint8_t *p = malloc((size_t)h * w * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) p[((size_t)y * w + x) * 3 + c] = pix(seed, y, x, c);
    return p;
}

static void write_img(const char *rel, int seed, int h, int w) {
    uint8_t *px = pattern(seed, h, w);
    write_rgb(rel, px, h, w);
    free(px);
}

static void write_bytes(const char *rel, const void *b, size_t n) {
    char p[512];
    path_of(rel, p, sizeof p);
    FILE *f = fopen(p, "wb");
    if (f) {
        if (n) fwrite(b, 1, n, f);
        fclose(f);
    }
}

static uint8_t *read_bytes(const char *rel, size_t *n) {
    char p[512];
    path_of(rel, p, sizeof p);
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*n);
    if (fread(b, 1, *n, f) != *n) *n = 0;
    fclose(f);
    return b;
}

/* One expected sample of the good folder. */
typedef struct want {
    const char *rel;
    int label, seed, h, w;
    bool jpeg;
} want;

static void test_good(loom_ctx *ctx) {
    const want ws[] = {
        {"good/ant/z.bmp", 0, 1, 5, 7, false},
        {"good/cat/a.png", 1, 2, 9, 4, false},
        {"good/cat/b.bmp", 1, 3, 6, 6, false},
        {"good/cat/sub/c.png", 1, 4, 3, 8, false},
        {"good/dog/x.jpg", 2, 5, 48, 64, true},
        {"good/dog/y.PNG", 2, 6, 10, 12, false},
    };
    int n = (int)(sizeof ws / sizeof ws[0]);
    mkdirs("good/ant"), mkdirs("good/cat/sub"), mkdirs("good/dog"), mkdirs("good/.hidden");
    for (int k = 0; k < n; k++) write_img(ws[k].rel, ws[k].seed, ws[k].h, ws[k].w);
    write_bytes("good/dog/notes.txt", "not an image", 12);
    write_img("good/.hidden/h.png", 9, 4, 4);

    char root[512];
    path_of("good", root, sizeof root);
    loom_source *src = NULL;
    CHECK_OK(ctx, loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root}, &src));
    if (!src) return;
    CHECK(src->n == n && src->num_classes == 3 && src->c == 3 && src->h == 0 && src->w == 0 && src->get_image,
          "n %lld classes %d c %d h %lld w %lld", (long long)src->n, src->num_classes, src->c, (long long)src->h,
          (long long)src->w);
    const char *cls[3] = {"ant", "cat", "dog"};
    for (int k = 0; k < 3; k++)
        CHECK(loom_imagefolder_class(src, k) && !strcmp(loom_imagefolder_class(src, k), cls[k]), "class %d is %s", k,
              loom_imagefolder_class(src, k));
    CHECK(!loom_imagefolder_class(src, 3), "class 3 exists");
    for (int i = 0; i < n && i < src->n; i++) {
        char p[512];
        path_of(ws[i].rel, p, sizeof p);
        const char *got = loom_imagefolder_path(src, i);
        CHECK(got && !strcmp(got, p), "sample %d: path %s, expected %s", i, got, p);
        uint8_t *px = NULL;
        int64_t h = 0, w = 0;
        int32_t label = -1;
        loom_status st = src->get_image(src, ctx, i, NULL, &px, &h, &w, &label);
        CHECK(st == LOOM_OK, "get %s: %s", p, loom_last_error(ctx));
        if (st != LOOM_OK) continue;
        CHECK(label == ws[i].label && h == ws[i].h && w == ws[i].w, "%s: label %d %lldx%lld, expected %d %dx%d", p, label,
              (long long)h, (long long)w, ws[i].label, ws[i].h, ws[i].w);
        if (h == ws[i].h && w == ws[i].w) {
            int maxd = 0;
            double sum = 0;
            for (int64_t y = 0; y < h; y++)
                for (int64_t x = 0; x < w; x++)
                    for (int c = 0; c < 3; c++) {
                        int d = abs((int)px[(y * w + x) * 3 + c] - (int)pix(ws[i].seed, y, x, c));
                        maxd = d > maxd ? d : maxd;
                        sum += d;
                    }
            double mean = sum / (double)(h * w * 3);
            if (ws[i].jpeg) {
                CHECK(maxd <= 8 && mean <= 2.0, "%s: JPEG max diff %d, mean %.3f (tolerance 8 / 2)", p, maxd, mean);
                printf("JPEG decode: max |diff| %d, mean %.3f\n", maxd, mean);
            } else {
                CHECK(maxd == 0, "%s: max diff %d (expected exact)", p, maxd);
            }
        }
        free(px);
    }

    /* the scaled decode: a hint of 16x12 on the 64x48 JPEG */
    uint8_t *px = NULL;
    int64_t h = 0, w = 0;
    int32_t label;
    loom_decode_hint hint = {.min_h = 12, .min_w = 16};
    CHECK_OK(ctx, src->get_image(src, ctx, 4, &hint, &px, &h, &w, &label));
#ifdef LOOM_HAVE_TURBOJPEG
    CHECK(h == 12 && w == 16, "hint 12x16: decoded %lldx%lld (expected 1/4 scale, 12x16)", (long long)h, (long long)w);
    free(px), px = NULL;
    hint = (loom_decode_hint){.min_h = 13, .min_w = 16};
    CHECK_OK(ctx, src->get_image(src, ctx, 4, &hint, &px, &h, &w, &label));
    CHECK(h == 24 && w == 32, "hint 13x16: decoded %lldx%lld (expected 1/2 scale, 24x32)", (long long)h, (long long)w);
    if (px && h == 24 && w == 32) {
        /* a 2x2 box of the pattern, within JPEG + scaling tolerance */
        int maxd = 0;
        for (int y = 0; y < 24; y++)
            for (int x = 0; x < 32; x++)
                for (int c = 0; c < 3; c++) {
                    int ref = (pix(5, 2 * y, 2 * x, c) + pix(5, 2 * y + 1, 2 * x, c) + pix(5, 2 * y, 2 * x + 1, c) +
                               pix(5, 2 * y + 1, 2 * x + 1, c) + 2) / 4;
                    int d = abs((int)px[(y * 32 + x) * 3 + c] - ref);
                    maxd = d > maxd ? d : maxd;
                }
        CHECK(maxd <= 8, "1/2-scale JPEG: max diff %d from the 2x2 box mean", maxd);
        printf("JPEG 1/2-scale decode: max |diff| %d from the 2x2 mean\n", maxd);
    }
#else
    CHECK(h == 48 && w == 64, "no TurboJPEG: full size expected, got %lldx%lld", (long long)h, (long long)w);
#endif
    free(px);

    /* the loader: images of five sizes -> Resize((8, 8)); 0 and 2 workers agree */
    loom_tf_step steps[2] = {{.kind = LOOM_TF_RESIZE, .h = 8, .w = 8}, {.kind = LOOM_TF_RANDOM_HFLIP}};
    float *first = NULL;
    int32_t ys[8] = {0};
    for (int pass = 0; pass < 2; pass++) {
        loom_loader *ld = NULL;
        loom_loader_desc d = {.src = src, .batch = 4, .shuffle = true, .seed = 3, .steps = steps, .nsteps = 2,
                              .workers = pass == 0 ? LOOM_WORKERS_SYNC : 2};
        CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
        if (!ld) break;
        int c;
        int64_t oh, ow;
        loom_loader_shape(ld, &c, &oh, &ow);
        CHECK(c == 3 && oh == 8 && ow == 8, "loader shape %dx%lldx%lld", c, (long long)oh, (long long)ow);
        size_t per = 3 * 8 * 8;
        if (pass == 0) first = calloc((size_t)n * per, sizeof *first);
        int got = 0;
        for (;;) {
            loom_loader_batch b;
            loom_status st = loom_loader_next(ld, &b);
            CHECK(st == LOOM_OK, "loader next: %s", loom_last_error(ctx));
            if (st != LOOM_OK || b.count == 0) break;
            for (int k = 0; k < b.count && got < n; k++, got++) {
                if (pass == 0) {
                    memcpy(first + (size_t)got * per, b.x + (size_t)k * per, per * sizeof(float));
                    ys[got] = b.y[k];
                } else {
                    CHECK(!memcmp(first + (size_t)got * per, b.x + (size_t)k * per, per * sizeof(float)) && ys[got] == b.y[k],
                          "sample %d differs between 0 and 2 workers", got);
                }
            }
        }
        CHECK(got == n, "loader delivered %d samples (expected %d)", got, n);
        loom_loader_destroy(ld);
    }
    free(first);

    /* without a size-fixing step the loader refuses the variable sizes */
    loom_loader *ld = NULL;
    loom_status st = loom_loader_create(ctx, &(loom_loader_desc){.src = src, .batch = 2, .steps = steps + 1, .nsteps = 1}, &ld);
    CHECK(st == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "differ in size"), "no resize: %s (%s)",
          loom_status_str(st), loom_last_error(ctx));
    loom_loader_destroy(ld);
    /* CenterCrop(4) cannot take the 3x8 image (sample 3): the error says which */
    loom_tf_step cc = {.kind = LOOM_TF_CENTER_CROP, .h = 4, .w = 4};
    CHECK_OK(ctx, loom_loader_create(ctx, &(loom_loader_desc){.src = src, .batch = 8, .steps = &cc, .nsteps = 1,
                                                              .workers = LOOM_WORKERS_SYNC},
                                     &ld));
    if (ld) {
        loom_loader_batch b;
        st = loom_loader_next(ld, &b);
        CHECK(st == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "sample 3"), "CenterCrop(4) on 3x8: %s (%s)",
              loom_status_str(st), loom_last_error(ctx));
        loom_loader_destroy(ld);
    }
    loom_source_destroy(src);
}

/* Bad files: name -> the words the error must hold. */
typedef struct badcase {
    const char *rel, *words;
} badcase;

static void test_bad(loom_ctx *ctx) {
    mkdirs("bad/a"), mkdirs("bad/b");
    write_img("bad/a/good1.png", 1, 4, 4);
    write_img("bad/a/t.jpg", 2, 32, 32);
    size_t n = 0;
    uint8_t *b = read_bytes("bad/a/t.jpg", &n);
    if (b) write_bytes("bad/a/t.jpg", b, n / 2); /* truncated in the headers */
    free(b);
    write_img("bad/a/t2.jpg", 2, 48, 64);
    b = read_bytes("bad/a/t2.jpg", &n);
    if (b) write_bytes("bad/a/t2.jpg", b, n - 64); /* truncated in the entropy-coded data */
    free(b);
    write_img("bad/a/u.png", 3, 8, 8);
    b = read_bytes("bad/a/u.png", &n);
    if (b && n > 60) {
        b[n - 20] ^= 0x5a; /* inside IDAT data (IEND is the last 12 bytes) */
        write_bytes("bad/a/u.png", b, n);
    }
    free(b);
    write_bytes("bad/b/empty.png", "", 0);
    write_bytes("bad/b/anim.gif", "GIF89a\x01\x00\x01\x00\x00\x00\x00;", 14);
    write_bytes("bad/b/text.jpg", "hello, world", 12);
    write_img("bad/b/good2.bmp", 4, 3, 3);
    /* in file order: a/good1.png a/t.jpg a/t2.jpg a/u.png b/anim.gif b/empty.png b/good2.bmp b/text.jpg */
    const badcase bc[] = {{"bad/a/t.jpg", "truncated"}, {"bad/a/t2.jpg", "truncated"}, {"bad/a/u.png", "CRC"},
                          {"bad/b/anim.gif", "GIF"}, {"bad/b/empty.png", "empty"},
                          {"bad/b/text.jpg", "not a JPEG, PNG or BMP"}};
    const int64_t bad_idx[] = {1, 2, 3, 4, 5, 7};
    const int nbad = 6, nall = 8;
    char root[512];
    path_of("bad", root, sizeof root);
    loom_source *src = NULL;
    CHECK_OK(ctx, loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root}, &src));
    if (src) {
        CHECK(src->n == nall, "bad folder: %lld samples (expected %d)", (long long)src->n, nall);
        for (int k = 0; k < nbad; k++) {
            char p[512];
            path_of(bc[k].rel, p, sizeof p);
            uint8_t *px = NULL;
            int64_t h, w;
            int32_t label;
            loom_status st = src->get_image(src, ctx, bad_idx[k], NULL, &px, &h, &w, &label);
            const char *e = loom_last_error(ctx);
            CHECK(st != LOOM_OK && strstr(e, p) && strstr(e, bc[k].words), "%s: %s: '%s' (expected an error naming it, "
                  "with '%s')", bc[k].rel, loom_status_str(st), e, bc[k].words);
            printf("  %s -> %s\n", bc[k].rel, e);
            free(px);
        }
        /* through the loader: the error names the file, nothing hangs */
        loom_tf_step rs = {.kind = LOOM_TF_RESIZE, .h = 4, .w = 4};
        loom_loader *ld = NULL;
        CHECK_OK(ctx, loom_loader_create(ctx, &(loom_loader_desc){.src = src, .batch = nall, .steps = &rs, .nsteps = 1,
                                                                  .workers = 2},
                                         &ld));
        if (ld) {
            loom_loader_batch bt;
            loom_status st = loom_loader_next(ld, &bt);
            char p[512];
            path_of("bad/a/t.jpg", p, sizeof p);
            CHECK(st != LOOM_OK && strstr(loom_last_error(ctx), p), "loader on bad files: %s (%s)", loom_status_str(st),
                  loom_last_error(ctx));
            loom_loader_destroy(ld);
        }
        loom_source_destroy(src);
    }

    /* skip_bad: each bad sample becomes the next good one; counted once */
    src = NULL;
    CHECK_OK(ctx, loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root, .skip_bad = true}, &src));
    if (src) {
        const int64_t expect_from[8] = {0, 6, 6, 6, 6, 6, 6, 0}; /* the good sample each index reads */
        for (int pass = 0; pass < 2; pass++)
            for (int64_t i = 0; i < nall; i++) {
                uint8_t *px = NULL;
                int64_t h = 0, w = 0;
                int32_t label = -1;
                loom_status st = src->get_image(src, ctx, i, NULL, &px, &h, &w, &label);
                int64_t want_h = expect_from[i] == 0 ? 4 : 3;
                CHECK(st == LOOM_OK && h == want_h && label == (expect_from[i] == 0 ? 0 : 1),
                      "skip_bad sample %lld: %s, %lldx%lld label %d", (long long)i, loom_status_str(st), (long long)h,
                      (long long)w, label);
                free(px);
            }
        CHECK(loom_imagefolder_skipped(src) == nbad, "skipped %lld (expected %d)", (long long)loom_imagefolder_skipped(src),
              nbad);
        printf("skip_bad: %lld bad files skipped\n", (long long)loom_imagefolder_skipped(src));
        loom_source_destroy(src);
    }

    /* an empty class folder, a missing directory, no class folders, a file as root */
    mkdirs("empty/a"), mkdirs("empty/zz");
    write_img("empty/a/i.png", 1, 2, 2);
    write_bytes("empty/zz/readme.txt", "x", 1);
    struct {
        const char *rel, *named, *words;
        loom_status st;
    } oc[] = {{"empty", "empty/zz", "no image", LOOM_ERR_FORMAT},
              {"missing", "missing", "No such file", LOOM_ERR_IO},
              {"empty/zz", "empty/zz", "no class folders", LOOM_ERR_FORMAT},
              {"empty/a/i.png", "empty/a/i.png", "not a directory", LOOM_ERR_IO}};
    for (int k = 0; k < 4; k++) {
        char p[512], named[512];
        path_of(oc[k].rel, p, sizeof p);
        path_of(oc[k].named, named, sizeof named);
        src = NULL;
        loom_status st = loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = p, .skip_bad = true}, &src);
        const char *e = loom_last_error(ctx);
        CHECK(st == oc[k].st && !src && strstr(e, named) && strstr(e, oc[k].words), "open %s: %s '%s'", oc[k].rel,
              loom_status_str(st), e);
        printf("  open %s -> %s\n", oc[k].rel, e);
        loom_source_destroy(src);
    }
}

/* loom_image_decode on memory: a BMP whole and cut short; loom_source_open_dir's ImageFolder detection. */
static void test_decode_and_dir(loom_ctx *ctx) {
    mkdirs("mem");
    write_img("mem/a.bmp", 7, 5, 6);
    size_t n = 0;
    uint8_t *b = read_bytes("mem/a.bmp", &n), *px = NULL;
    int64_t h = 0, w = 0;
    CHECK_OK(ctx, loom_image_decode(ctx, "a.bmp", b, n, NULL, &px, &h, &w));
    CHECK(px && h == 5 && w == 6 && px[(4 * 6 + 5) * 3 + 2] == pix(7, 4, 5, 2), "BMP from memory: %lldx%lld", (long long)h,
          (long long)w);
    free(px), px = NULL;
    loom_status st = loom_image_decode(ctx, "a.bmp", b, n - 7, NULL, &px, &h, &w);
    CHECK(st == LOOM_ERR_FORMAT && !px && strstr(loom_last_error(ctx), "a.bmp: truncated BMP"), "BMP cut short: %s (%s)",
          loom_status_str(st), loom_last_error(ctx));
    memset(b + 2, 0, 4); /* no declared size: the pixel rows still must fit */
    st = loom_image_decode(ctx, "a.bmp", b, n - 7, NULL, &px, &h, &w);
    CHECK(st == LOOM_ERR_FORMAT && !px && strstr(loom_last_error(ctx), "pixels at 24 bits need"), "BMP rows cut short: %s (%s)",
          loom_status_str(st), loom_last_error(ctx));
    free(b);

    /* DIR/train + DIR/val, and DIR itself as the train split */
    mkdirs("split/train/x"), mkdirs("split/train/y"), mkdirs("split/val/x"), mkdirs("split/val/y");
    write_img("split/train/x/1.png", 1, 2, 2), write_img("split/train/y/1.png", 2, 2, 2);
    write_img("split/train/y/2.png", 3, 2, 2), write_img("split/val/x/1.png", 4, 2, 2), write_img("split/val/y/1.png", 5, 2, 2);
    char root[512];
    path_of("split", root, sizeof root);
    loom_source *src = NULL;
    CHECK_OK(ctx, loom_source_open_dir(ctx, root, true, &src));
    CHECK(src && src->get_image && src->n == 3 && strstr(src->name, "split/train"), "open_dir train: %s",
          src ? src->name : "-");
    loom_source_destroy(src), src = NULL;
    CHECK_OK(ctx, loom_source_open_dir(ctx, root, false, &src));
    CHECK(src && src->get_image && src->n == 2 && strstr(src->name, "split/val"), "open_dir val: %s", src ? src->name : "-");
    loom_source_destroy(src), src = NULL;
    path_of("good", root, sizeof root);
    CHECK_OK(ctx, loom_source_open_dir(ctx, root, true, &src));
    CHECK(src && src->get_image && src->n == 6, "open_dir on a plain ImageFolder");
    loom_source_destroy(src), src = NULL;
    st = loom_source_open_dir(ctx, root, false, &src);
    CHECK(st != LOOM_OK && !src && strstr(loom_last_error(ctx), "val/ or test/"), "open_dir test split of a plain "
          "ImageFolder: %s (%s)", loom_status_str(st), loom_last_error(ctx));
}

/* loom_train on an ImageFolder source through random transforms drawn anew
 * each epoch (desc.data.train_source): it trains (finite loss, the steps it
 * should), is reproducible for a seed, and a dataset that does not match the
 * source's output shape is a clear error */
static void test_train_source(loom_ctx *ctx) {
    mkdirs("tr/a"), mkdirs("tr/b");
    char rel[64];
    for (int k = 0; k < 8; k++) {
        snprintf(rel, sizeof rel, "tr/%s/%d.png", k % 2 ? "b" : "a", k);
        write_img(rel, k, 10 + k, 12 + (k % 3));
    }
    char root[512];
    path_of("tr", root, sizeof root);
    loom_source *src = NULL;
    CHECK_OK(ctx, loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root}, &src));
    if (!src) return;
    loom_tf_step steps[8];
    int ns = 0;
    CHECK_OK(ctx, loom_tf_parse(ctx, "Resize((10, 10)), RandomCrop(8, padding=2), hflip", steps, 8, &ns));
    /* the in-memory dataset gives shapes and counts only */
    loom_dataset ds = {.n = 8, .c = 3, .h = 8, .w = 8, .num_classes = 2};
    ds.pixels = calloc(8 * 3 * 8 * 8, 1), ds.labels = calloc(8, sizeof *ds.labels);
    double loss[2];
    for (int r = 0; r < 2; r++) {
        loom_trainer_desc d = {.data = {.train = &ds, .batch = 4, .mean = 0.5f, .std = 0.25f,
                                        .workers = r ? 2 : LOOM_WORKERS_SYNC, .train_source = src, .train_steps = steps,
                                        .train_nsteps = ns},
                               .model.net.arch = "mlp", .run = {.backend = "cpu", .epochs = 3, .seed = 5}};
        loom_train_result res;
        CHECK_OK(ctx, loom_train(ctx, &d, &res));
        loss[r] = res.train_loss;
        CHECK(isfinite(res.train_loss) && res.steps == 6, "source training: loss %g, %lld steps (6)", res.train_loss,
              (long long)res.steps);
    }
    CHECK(loss[0] == loss[1], "the same seed gives the same training with 0 and 2 workers (%.9g vs %.9g)", loss[0],
          loss[1]);
    ds.h = ds.w = 10;
    loom_trainer_desc d = {.data = {.train = &ds, .batch = 4, .train_source = src, .train_steps = steps, .train_nsteps = ns},
                           .model.net.arch = "mlp", .run = {.backend = "cpu", .epochs = 1}};
    loom_train_result res;
    CHECK(loom_train(ctx, &d, &res) == LOOM_ERR_SHAPE && strstr(loom_last_error(ctx), "3x8x8"),
          "a dataset shaped unlike the source's output is refused: %s", loom_last_error(ctx));
    free(ds.pixels), free(ds.labels);
    loom_source_destroy(src);
}

int main(void) {
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    if (!tu_tmpdir("imagefolder", tmp, sizeof tmp)) return 1;
#ifdef LOOM_HAVE_TURBOJPEG
    printf("JPEG: TurboJPEG\n");
#else
    printf("JPEG: stb_image\n");
#endif
    test_good(ctx);
    test_bad(ctx);
    test_decode_and_dir(ctx);
    test_train_source(ctx);
    tu_rm_rf(tmp);
    loom_ctx_destroy(ctx);
    return tu_summary();
}
