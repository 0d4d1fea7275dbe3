/* bench/device_resize.c — what moving a leading Resize to the device
 * (resize_u8, loader/device_aug.c) saves the loader's host, and what the
 * device kernels cost: images of one size (default 375x500x3, the guide's
 * 500x375 JPEGs, random pixels in memory: no decode) to Resize((256, 256)).
 *
 *   host    loom_tf_resize per image, one thread (the work that moves)
 *   loader  per image of a synchronous device_augment loader, with the guide's
 *           device steps after the Resize: the Resize on the device (the
 *           default now) and kept on the host (a no-op RandomOrder after it)
 *   device  one plan of resize_u8 on a batch, per backend present (best of 3
 *           runs, the result read back)
 *
 * usage: bench-device_resize [--batch N] [--backends cpu,vulkan,opencl]
 * ends with: RESULT host_resize_ms=... loader_dev_ms=... loader_host_ms=...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loom/loom.h"
#include "../loader/device_aug.h"

enum { H = 375, W = 500, C = 3, OH = 256, OW = 256 };

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int fail(loom_ctx *ctx, const char *what) {
    fprintf(stderr, "device_resize: %s: %s\n", what, loom_last_error(ctx));
    return 1;
}

/* best per-image ms of 3 epochs of a synchronous device_augment loader */
static double loader_ms(loom_ctx *ctx, loom_source *src, const char *spec) {
    loom_tf_step st[8];
    int ns = 0;
    loom_loader *ld = NULL;
    if (loom_tf_parse(ctx, spec, st, 8, &ns) != LOOM_OK) return -1;
    loom_loader_desc d = {.src = src, .batch = 16, .workers = LOOM_WORKERS_SYNC, .steps = st, .nsteps = ns,
                          .device_augment = true};
    if (loom_loader_create(ctx, &d, &ld) != LOOM_OK) return -1;
    double best = 1e30;
    for (int e = 0; e < 3; e++) {
        loom_loader_begin(ld, e, 0, 0);
        double t0 = now_s();
        int n = 0;
        for (loom_loader_batch b; loom_loader_next(ld, &b) == LOOM_OK && b.count > 0;) n += b.count;
        double t = (now_s() - t0) * 1e3 / (n > 0 ? n : 1);
        best = t < best ? t : best;
    }
    loom_loader_destroy(ld);
    return best;
}

/* best ms of 3 runs of resize_u8 on a batch of nb images, read back */
static double device_ms(loom_ctx *ctx, loom_backend *be, const uint8_t *px, int nb) {
    int64_t row;
    int32_t *tab = NULL;
    loom_graph *g = NULL;
    loom_plan *p = NULL;
    size_t out = (size_t)nb * OH * OW * C;
    uint8_t *y8 = malloc(out);
    double best = -1;
    if (y8 && loom__dev_resize_table(ctx, H, W, OH, OW, &row, &tab) == LOOM_OK &&
        loom_graph_create(ctx, NULL, &g) == LOOM_OK) {
        loom_tensor *x = loom_input(g, "x", LOOM_U8, 4, (int64_t[]){nb, H, W, C});
        loom_tensor *t = loom_constant(g, "taps", LOOM_I32, 2, (int64_t[]){OH + OW, row}, tab);
        loom_tensor *y = loom_resize_u8(g, x, t, OH, OW);
        if (y) loom_keep(y);
        if (y && loom_plan_compile(g, be, NULL, &p) == LOOM_OK &&
            loom_plan_write(p, x, px, (size_t)nb * H * W * C) == LOOM_OK && loom_plan_run(p) == LOOM_OK) {
            best = 1e30;
            for (int r = 0; r < 3; r++) {
                double t0 = now_s();
                if (loom_plan_run(p) != LOOM_OK || loom_plan_read(p, y, y8, out) != LOOM_OK) break;
                double ms = (now_s() - t0) * 1e3;
                best = ms < best ? ms : best;
            }
        }
    }
    loom_plan_destroy(p);
    loom_graph_destroy(g);
    free(tab), free(y8);
    return best;
}

int main(int argc, char **argv) {
    int nb = 64;
    const char *list = "cpu,vulkan,opencl";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--batch") && i + 1 < argc) nb = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--backends") && i + 1 < argc) list = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--batch N] [--backends cpu,vulkan,opencl]\n", argv[0]);
            return 2;
        }
    }
    if (nb < 1) return 2;
    loom_ctx *ctx = NULL;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    size_t in = (size_t)H * W * C;
    uint8_t *px = malloc(in * (size_t)nb), *o = malloc((size_t)OH * OW * C);
    int32_t *labels = calloc((size_t)nb, sizeof *labels);
    if (!px || !o || !labels) return 1;
    uint32_t s = 1;
    for (size_t i = 0; i < in * (size_t)nb; i++) s = s * 1664525u + 1013904223u, px[i] = (uint8_t)(s >> 24);

    int reps = 200;
    double t0 = now_s();
    for (int r = 0; r < reps; r++) {
        loom_image a = {px + (size_t)(r % nb) * in, H, W, C}, b = {o, OH, OW, C};
        if (loom_tf_resize(ctx, &a, &b) != LOOM_OK) return fail(ctx, "loom_tf_resize");
    }
    double host = (now_s() - t0) * 1e3 / reps;
    printf("host    loom_tf_resize %dx%dx%d -> %dx%d: %.3f ms per image\n", H, W, C, OH, OW, host);

    loom_dataset ds = {.n = nb, .c = C, .h = H, .w = W, .num_classes = 10, .pixels = px, .labels = labels};
    loom_source *src = NULL;
    if (loom_source_wrap(ctx, &ds, &src) != LOOM_OK) return fail(ctx, "source");
    const char *tail = "RandomCrop(224); RandomHorizontalFlip(); ColorJitter(0.4, 0.4, 0.4)";
    char dev[256], kept[256];
    snprintf(dev, sizeof dev, "Resize((%d, %d)); %s", OH, OW, tail);
    snprintf(kept, sizeof kept, "Resize((%d, %d)); RandomOrder([RandomVerticalFlip(p=0.0)]); %s", OH, OW, tail);
    double ld_dev = loader_ms(ctx, src, dev), ld_host = loader_ms(ctx, src, kept);
    if (ld_dev < 0 || ld_host < 0) return fail(ctx, "loader");
    printf("loader  %.3f ms per image, Resize on the device: %s\n", ld_dev, dev);
    printf("loader  %.3f ms per image, Resize on the host:   %s\n", ld_host, kept);

    for (const char *p = list; *p;) {
        char be_name[32];
        size_t len = strcspn(p, ",");
        snprintf(be_name, sizeof be_name, "%.*s", (int)len, p);
        p += len + (p[len] == ',');
        loom_backend *be = NULL;
        if (loom_backend_create(ctx, be_name, NULL, &be) != LOOM_OK) {
            printf("device  %-7s not here: %s\n", be_name, loom_last_error(ctx));
            continue;
        }
        double t = device_ms(ctx, be, px, nb);
        if (t < 0) return fail(ctx, be_name);
        printf("device  %-7s resize_u8 of %d images (+ read back): %.1f ms, %.3f ms per image\n", be_name, nb, t, t / nb);
        loom_backend_destroy(be);
    }
    printf("RESULT host_resize_ms=%.3f loader_dev_ms=%.3f loader_host_ms=%.3f\n", host, ld_dev, ld_host);
    loom_source_destroy(src);
    free(px), free(o), free(labels);
    loom_ctx_destroy(ctx);
    return 0;
}
