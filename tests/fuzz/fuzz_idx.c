/* tests/fuzz/fuzz_idx.c — libFuzzer target for the IDX reader
 * (loader/idx.c), plain and gzip.
 *
 * The input is written to a file and loaded twice: as the image file against
 * a fixed valid label file (2 labels), and as the label file against a fixed
 * valid image file (2 images of 2x2). A failure must name the input file and
 * leave the output dataset untouched; a success must hold 2 samples.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom/loom.h"

static loom_ctx *ctx;
static char in_path[256], img_path[256], lab_path[256];

static void fail(const char *why) {
    fprintf(stderr, "fuzz_idx: invariant broken: %s (%s)\n", why, loom_last_error(ctx));
    abort();
}

static void put(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) fail("cannot write a temporary file");
    fclose(f);
}

static void load(const char *images, const char *labels) {
    loom_dataset ds;
    memset(&ds, 0x5A, sizeof ds);
    loom_dataset before = ds;
    loom_status s = loom_dataset_load_idx(ctx, images, labels, &ds);
    if (s != LOOM_OK) {
        if (memcmp(&ds, &before, sizeof ds)) fail("output changed on failure");
        if (!strstr(loom_last_error(ctx), in_path)) fail("message does not name the input file");
        return;
    }
    if (ds.n != 2 || ds.c < 1 || ds.h < 1 || ds.w < 1) fail("accepted a dataset of the wrong size");
    unsigned sum = 0;
    for (int64_t i = 0; i < ds.n * ds.c * ds.h * ds.w; i++) sum += ds.pixels[i];
    for (int64_t i = 0; i < ds.n; i++) sum += (unsigned)ds.labels[i];
    (void)sum;
    loom_dataset_free(&ds);
}

/* the three files go at exit (the replay program runs in ctest) */
static void cleanup(void) { unlink(in_path), unlink(img_path), unlink(lab_path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ctx) {
        loom_ctx_create(NULL, &ctx);
        atexit(cleanup);
        long pid = (long)getpid();
        snprintf(in_path, sizeof in_path, "/tmp/loom-fuzz-idx-%ld.in", pid);
        snprintf(img_path, sizeof img_path, "/tmp/loom-fuzz-idx-%ld.images", pid);
        snprintf(lab_path, sizeof lab_path, "/tmp/loom-fuzz-idx-%ld.labels", pid);
        const uint8_t img[] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8};
        const uint8_t lab[] = {0, 0, 8, 1, 0, 0, 0, 2, 3, 7};
        put(img_path, img, sizeof img);
        put(lab_path, lab, sizeof lab);
    }
    put(in_path, data, size);
    load(in_path, lab_path);
    load(img_path, in_path);
    return 0;
}
