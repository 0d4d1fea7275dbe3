/* tests/test-random-order.c — RandomOrder with torchvision's meaning
 * (loader/pipeline_plan.c, loader/pipeline_draw.c, loader/pipeline.c): any
 * steps, each sample's order drawn from its own stream, refused only when
 * two orders end at different sizes:
 *   (a) the guide's spec parses; specs whose orders disagree on size are
 *       refused by the parser, the message naming both orders and sizes;
 *       an order that fails on an image size says which order;
 *   (b) the fused executor against the steps one by one, on smooth random
 *       images, for many samples (most of the 24 orders of the guide's four
 *       steps): bit for bit, and the stream left at the same word;
 *   (c) the loader on a JPEG ImageFolder with the guide's spec: batches
 *       bitwise equal for 0, 1, 2 and auto workers and with fusion off.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../loader/pipeline_impl.h"
#include "loom/loader.h"
#include "loom/transforms.h"
#include "testutil.h"
#include "imgwrite.h"

static const char *guide_spec = "Resize((256, 256)); RandomOrder([RandomCrop(224), RandomHorizontalFlip(), "
                                "ColorJitter(0.2, 0.2, 0.2), RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1))])";

/* ---- (a) parsing and planning ------------------------------------------- */

static void test_parse(loom_ctx *ctx) {
    loom_tf_step s[16];
    int n = 0;
    CHECK_OK(ctx, loom_tf_parse(ctx, guide_spec, s, 16, &n));
    CHECK(n == 6 && s[1].kind == LOOM_TF_RANDOM_ORDER && s[1].count == 4 && s[2].kind == LOOM_TF_RANDOM_CROP &&
              s[5].kind == LOOM_TF_RANDOM_AFFINE,
          "the guide's spec: Resize + RandomOrder of 4 steps (n %d)", n);
    int64_t oh, ow;
    size_t mb;
    CHECK(loom__tf_plan(ctx, s, n, 3, 375, 500, &oh, &ow, &mb) == LOOM_OK && oh == 224 && ow == 224 &&
              mb == (size_t)375 * 500 * 3,
          "the guide's spec on 375x500: %lldx%lld, %zu bytes at most", (long long)oh, (long long)ow, mb);
    /* the buffers hold the largest image of any order */
    CHECK_OK(ctx, loom_tf_parse(ctx, "Resize((10, 10)); RandomOrder([Resize((30, 30)), RandomCrop(30, pad_if_needed=True)])",
                                s, 16, &n));
    CHECK(loom__tf_plan(ctx, s, n, 3, 8, 8, &oh, &ow, &mb) == LOOM_OK && oh == 30 && ow == 30 && mb == 30 * 30 * 3,
          "both orders of resize and padded crop end at 30x30 (%lldx%lld, %zu bytes)", (long long)oh, (long long)ow, mb);

    /* orders that disagree on size: refused by the parser, both orders named */
    const struct {
        const char *spec, *words[4];
    } bad[] = {
        {"Resize((256, 256)); RandomOrder([RandomCrop(224), Resize((240, 240))])",
         {"RandomCrop (step 3), Resize (step 4)", "224x224", "Resize (step 4), RandomCrop (step 3)", "240x240"}},
        /* the input is not known: two large probe sizes, as the loader plans */
        {"RandomOrder([Resize(64), CenterCrop(32)]); hflip", {"Resize (step 2), CenterCrop (step 3)", "32x32", "64x64", "one size"}},
        {"CenterCrop(100); RandomOrder([hflip, Resize(50), RandomResizedCrop(20)])", {"RandomOrder (step 2)", "50x50", "20x20", "order"}},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        loom_status st = loom_tf_parse(ctx, bad[k].spec, s, 16, &n);
        const char *m = loom_last_error(ctx);
        bool all = st == LOOM_ERR_INVALID_ARG;
        for (int w = 0; w < 4; w++) all = all && strstr(m, bad[k].words[w]);
        CHECK(all, "'%s' refused naming both orders: %s", bad[k].spec, m);
    }
    /* orders of the same size, whatever the input: accepted */
    const char *good[] = {"RandomOrder([Resize(64), hflip, ColorJitter(0.1)])",
                          "RandomOrder([Resize((32, 32)), Resize((32, 32)), vflip])",
                          "RandomOrder([RandomCrop(24, pad_if_needed=True), CenterCrop(24)])", "RandomOrder([])"};
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++)
        CHECK(loom_tf_parse(ctx, good[k], s, 16, &n) == LOOM_OK, "'%s' parses: %s", good[k], loom_last_error(ctx));
    /* an order that cannot run on this size: the plan says which order */
    CHECK_OK(ctx, loom_tf_parse(ctx, "Resize((20, 20)); RandomOrder([CenterCrop(16), Resize((12, 12))])", s, 16, &n));
    loom_status st = loom__tf_plan(ctx, s, n, 3, 30, 30, &oh, &ow, &mb);
    CHECK(st == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "in the order Resize (step 4), CenterCrop (step 3)"),
          "an order that fails names itself: %s", loom_last_error(ctx));
    /* too many steps that change the size to plan every order */
    CHECK_OK(ctx, loom_tf_parse(ctx, "RandomOrder([Resize(9), Resize(9), Resize(9), Resize(9), Resize(9), Resize(9), "
                                     "Resize(9)])",
                                s, 16, &n));
    st = loom__tf_plan(ctx, s, n, 3, 30, 30, &oh, &ow, &mb);
    CHECK(st == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "7 steps that change the size"), "7 resizes: %s",
          loom_last_error(ctx));
    /* nested orders and erasing stay refused */
    CHECK_OK(ctx, loom_tf_parse(ctx, "RandomOrder([RandomOrder([hflip])])", s, 16, &n));
    CHECK(loom__tf_plan(ctx, s, n, 3, 8, 8, &oh, &ow, &mb) == LOOM_ERR_INVALID_ARG &&
              strstr(loom_last_error(ctx), "may not hold RandomOrder"),
          "nested RandomOrder: %s", loom_last_error(ctx));
}

/* ---- (b) fused == one by one --------------------------------------------- */

/* smooth colour fields with mild grain: JPEG-like content */
static uint8_t *smooth(uint32_t seed, int h, int w) {
    uint8_t *p = malloc((size_t)h * w * 3);
    uint32_t r = seed * 2654435761u + 1;
    double f[3][3];
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < 3; k++) f[c][k] = (double)((r = r * 1664525u + 1013904223u) >> 8) / (1 << 24);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                r = r * 1664525u + 1013904223u;
                double v = 128 + 90 * f[c][0] * ((double)x / w - 0.5) + 80 * f[c][1] * ((double)y / h - 0.5) +
                           40 * f[c][2] * ((double)(x * y) / (h * w) - 0.25) + (double)(r >> 29);
                p[((size_t)y * w + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
    return p;
}

/* spec on h x w images, samples x 2 seeds: fused == unfused; *orders: the
 * distinct first-four-word orders seen (the order is drawn after `skip` words) */
static void fused_vs_steps(loom_ctx *ctx, const char *spec, int h, int w, int samples, int *orders) {
    loom_tf_step s[16];
    int n = 0;
    CHECK_OK(ctx, loom_tf_parse(ctx, spec, s, 16, &n));
    int64_t oh, ow;
    size_t mb;
    CHECK_OK(ctx, loom__tf_plan(ctx, s, n, 3, h, w, &oh, &ow, &mb));
    uint8_t *src = smooth((uint32_t)(h * 7 + w), h, w), *a1 = malloc(mb), *b1 = malloc(mb), *a2 = malloc(mb),
            *b2 = malloc(mb);
    int64_t off = 0, total = 0, stream_bad = 0;
    bool seen[24] = {false};
    for (int seed = 1; seed <= 2; seed++)
        for (int i = 0; i < samples; i++) {
            loom_image u = {src, h, w, 3}, f = u;
            loom__aug_rng r1, r2;
            loom__aug_init(&r1, (uint64_t)seed, 0, i);
            loom__aug_init(&r2, (uint64_t)seed, 0, i);
            /* which order: the perm is the first draw when nothing before the RandomOrder draws */
            loom__aug_rng r0 = r1;
            int perm[4];
            loom__aug_perm(&r0, perm, 4);
            seen[perm[0] * 6 + (perm[1] - (perm[1] > perm[0])) * 2 +
                 (perm[2] - (perm[2] > perm[0]) - (perm[2] > perm[1]))] = true;
            if (loom__tf_run(ctx, s, n, &r1, &u, a1, b1) != LOOM_OK || loom__tf_run_fused(ctx, s, n, &r2, &f, a2, b2, NULL) != LOOM_OK) {
                CHECK(0, "%s: run: %s", spec, loom_last_error(ctx));
                continue;
            }
            if (u.h != oh || u.w != ow || f.h != oh || f.w != ow) {
                CHECK(0, "%s: sizes %lldx%lld / %lldx%lld (expected %lldx%lld)", spec, (long long)u.h, (long long)u.w,
                      (long long)f.h, (long long)f.w, (long long)oh, (long long)ow);
                continue;
            }
            stream_bad += r1.k != r2.k;
            for (int64_t p = 0; p < oh * ow * 3; p++) off += u.data[p] != f.data[p];
            total += oh * ow * 3;
        }
    int distinct = 0;
    for (int k = 0; k < 24; k++) distinct += seen[k];
    *orders = distinct;
    CHECK(off == 0 && total > 0, "%s: fused == one by one bit for bit (%lld of %lld values differ)", spec, (long long)off,
          (long long)total);
    CHECK(stream_bad == 0, "%s: the stream ends at the same word (%lld samples differ)", spec, (long long)stream_bad);
    printf("%-60.60s %d orders, %lld values, %lld differ\n", spec, distinct, (long long)total, (long long)off);
    free(src), free(a1), free(b1), free(a2), free(b2);
}

static void test_fused(loom_ctx *ctx) {
    int orders = 0;
    fused_vs_steps(ctx, guide_spec, 375, 500, 48, &orders);
    CHECK(orders >= 20, "most of the 24 orders of the guide's 4 steps were run (%d)", orders);
    /* bilinear affine, crops and a resized crop in any order; a flip and jitter between them */
    fused_vs_steps(ctx,
                   "Resize((96, 96)); RandomOrder([RandomCrop(80), hflip, RandomResizedCrop(80), "
                   "RandomAffine(10, interpolation=bilinear), ColorJitter(0.3, 0.3, 0.3, 0.05)]); vflip",
                   120, 90, 32, &orders);
    /* a short-side resize inside the order (the size depends on the input), crops before it */
    fused_vs_steps(ctx, "RandomOrder([Resize(64), hflip, CenterCrop(64)]); RandomCrop(48); ColorJitter(0.2, 0.2)", 90, 120, 24,
                   &orders);
}

/* ---- (c) the loader: every worker count, fused or not --------------------- */

static void test_loader(loom_ctx *ctx) {
    static const int sz[][2] = {{60, 80}, {90, 70}, {64, 64}, {33, 120}, {100, 75}, {48, 52}, {77, 61}, {40, 90}};
    int n = (int)(sizeof sz / sizeof sz[0]);
    mkdirs("ro/train/a"), mkdirs("ro/train/b");
    for (int k = 0; k < n; k++) {
        char rel[64];
        snprintf(rel, sizeof rel, "ro/train/%c/i%d.jpg", k % 2 ? 'b' : 'a', k);
        uint8_t *px = smooth((uint32_t)k + 11, sz[k][0], sz[k][1]);
        write_rgb(rel, px, sz[k][0], sz[k][1]);
        free(px);
    }
    char root[512];
    path_of("ro/train", root, sizeof root);
    loom_source *src = NULL;
    CHECK_OK(ctx, loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root}, &src));
    if (!src) return;
    loom_tf_step s[16];
    int ns = 0;
    CHECK_OK(ctx, loom_tf_parse(ctx, guide_spec, s, 16, &ns));
    static const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
    const size_t per = 3 * 224 * 224;
    float *first = calloc((size_t)n * per, sizeof *first);
    int32_t ys[8];
    const int workers[] = {LOOM_WORKERS_SYNC, 1, 2, LOOM_WORKERS_AUTO, LOOM_WORKERS_SYNC};
    const char *names[] = {"0 workers", "1 worker", "2 workers", "auto workers", "0 workers, no fusion"};
    for (int pass = 0; pass < 5; pass++) {
        loom_loader *ld = NULL;
        loom_loader_desc d = {.src = src, .batch = 3, .shuffle = true, .seed = 5, .steps = s, .nsteps = ns,
                              .workers = workers[pass], .mean = mean, .std = sd, .nstat = 3, .no_fuse = pass == 4};
        CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
        if (!ld) break;
        int got = 0, same = 0;
        for (int epoch = 0; epoch < 1; epoch++)
            for (;;) {
                loom_loader_batch b;
                loom_status st = loom_loader_next(ld, &b);
                CHECK(st == LOOM_OK, "loader next (%s): %s", names[pass], loom_last_error(ctx));
                if (st != LOOM_OK || b.count == 0) break;
                for (int k = 0; k < b.count && got < n; k++, got++) {
                    const float *x = b.x + (size_t)k * per;
                    if (pass == 0) {
                        memcpy(first + (size_t)got * per, x, per * sizeof(float));
                        ys[got] = b.y[k];
                    } else {
                        same += !memcmp(first + (size_t)got * per, x, per * sizeof(float)) && ys[got] == b.y[k];
                    }
                }
            }
        CHECK(got == n, "%s: %d samples (expected %d)", names[pass], got, n);
        if (pass > 0) CHECK(same == n, "%s: %d of %d samples bitwise equal to 0 workers'", names[pass], same, n);
        loom_loader_destroy(ld);
    }
    free(first);
    loom_source_destroy(src);
}

int main(void) {
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    if (!tu_tmpdir("random-order", tmp, sizeof tmp)) return 1;
    test_parse(ctx);
    test_fused(ctx);
    test_loader(ctx);
    tu_rm_rf(tmp);
    loom_ctx_destroy(ctx);
    return tu_summary();
}
