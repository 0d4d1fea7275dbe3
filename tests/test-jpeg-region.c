/* tests/test-jpeg-region.c — decoding only the part of a JPEG that the
 * pipeline reads (loom_decode_hint.region; loader/imagefolder.c with
 * libjpeg-turbo's jpeg_skip_scanlines / jpeg_crop_scanline, and
 * loom__tf_region in loader/pipeline_plan.c).
 *
 * 1. loom_image_decode with a region against the whole decode: every pixel
 *    inside the region the same, for 4:4:4, 4:2:2, 4:2:0, 4:4:0 and gray
 *    JPEGs of odd sizes, random regions (edges included), at full size and
 *    DCT-scaled 1/2 and 1/4; pixels outside are zero (the part path ran) except
 *    for progressive JPEGs, which are decoded whole.
 * 2. loom__tf_region on the guide's and the light pipeline's first steps (and
 *    a RandomOrder's drawn orders, and a crop before a nearest RandomAffine):
 *    the box it gives holds every source pixel the fused pass reads (the
 *    pass run on an image with everything outside the box scrambled gives
 *    the same bytes), and it is smaller than the image.
 * 3. The loader on an ImageFolder of such JPEGs: batches with region decode
 *    (the default) bit for bit those with LOOM_LOADER_REGION=0, for the guide,
 *    the light and the guide's RandomOrder pipelines, 0 and 2 workers, two epochs.
 * Skips (77) when loom was built without libjpeg-turbo's libjpeg API.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../loader/loader_impl.h"
#include "loom/loader.h"
#include "loom/transforms.h"
#include "testutil.h"
#include "imgwrite.h"

#if defined(LOOM_HAVE_TURBOJPEG) && defined(LOOM_HAVE_LIBJPEG)

static uint32_t rng_state = 12345;
static uint32_t rnd(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

/* Noise over a ramp: every block has detail, so upsampling edges show. */
static uint8_t *picture(int h, int w) {
    uint8_t *p = malloc((size_t)h * w * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) p[((size_t)y * w + x) * 3 + c] = (uint8_t)((x * 3 + y * 2 + c * 70) / 3 + rnd() % 64);
    return p;
}

static unsigned char *compress(const uint8_t *px, int h, int w, int samp, int flags, unsigned long *n) {
    tjhandle tj = tjInitCompress();
    unsigned char *jb = NULL;
    *n = 0;
    if (!tj || tjCompress2(tj, px, w, 0, h, TJPF_RGB, &jb, n, samp, 90, flags) != 0) {
        tjFree(jb);
        jb = NULL;
    }
    if (tj) tjDestroy(tj);
    return jb;
}

typedef struct want_box {
    int64_t box[4];
    int calls;
} want_box;

static bool give_box(void *user, int64_t h, int64_t w, int64_t box[4]) {
    want_box *q = user;
    q->calls++;
    (void)h, (void)w;
    memcpy(box, q->box, sizeof q->box);
    return true;
}

static void test_decode(loom_ctx *ctx) {
    const int samps[] = {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_440, TJSAMP_GRAY};
    const char *sname[] = {"4:4:4", "4:2:2", "4:2:0", "4:4:0", "gray"};
    const int sizes[][2] = {{375, 500}, {97, 131}, {64, 48}};
    int parts = 0, regions = 0;
    for (int si = 0; si < 5; si++)
        for (int z = 0; z < 3; z++)
            for (int prog = 0; prog < 2; prog++) {
                int H = sizes[z][0], W = sizes[z][1];
                uint8_t *px = picture(H, W);
                unsigned long n;
                unsigned char *jb = compress(px, H, W, samps[si], prog ? TJFLAG_PROGRESSIVE : 0, &n);
                free(px);
                CHECK(jb != NULL, "compress %s %dx%d", sname[si], H, W);
                if (!jb) continue;
                for (int scale = 1; scale <= 4; scale *= 2) {
                    loom_decode_hint full_hint = {.min_h = scale > 1 ? H / scale : 0, .min_w = scale > 1 ? W / scale : 0};
                    uint8_t *full = NULL;
                    int64_t fh = 0, fw = 0;
                    CHECK_OK(ctx, loom_image_decode(ctx, "full.jpg", jb, n, &full_hint, &full, &fh, &fw));
                    if (!full) continue;
                    for (int r = 0; r < 12; r++) {
                        want_box q = {{0}, 0};
                        int64_t y0 = r == 0 ? 0 : rnd() % fh, x0 = r == 1 ? 0 : rnd() % fw;
                        int64_t y1 = r == 2 ? fh : y0 + 1 + rnd() % (fh - y0), x1 = r == 3 ? fw : x0 + 1 + rnd() % (fw - x0);
                        if (r == 4) y0 = 0, x0 = 0, y1 = fh, x1 = fw - 1;
                        if (r == 5) x0 = fw - 1, x1 = fw;
                        q.box[0] = y0, q.box[1] = x0, q.box[2] = y1, q.box[3] = x1;
                        loom_decode_hint hint = full_hint;
                        hint.region = give_box, hint.user = &q;
                        uint8_t *part = NULL;
                        int64_t ph = 0, pw = 0;
                        CHECK_OK(ctx, loom_image_decode(ctx, "part.jpg", jb, n, &hint, &part, &ph, &pw));
                        if (!part) continue;
                        CHECK(ph == fh && pw == fw && q.calls == 1, "%s: part %lldx%lld, whole %lldx%lld, %d calls", sname[si],
                              (long long)ph, (long long)pw, (long long)fh, (long long)fw, q.calls);
                        long diff = 0, zeroed = 0;
                        for (int64_t y = 0; y < fh; y++)
                            for (int64_t x = 0; x < fw; x++) {
                                const uint8_t *a = full + (y * fw + x) * 3, *b = part + (y * fw + x) * 3;
                                if (y >= y0 && y < y1 && x >= x0 && x < x1) diff += memcmp(a, b, 3) != 0;
                                else zeroed += memcmp(a, b, 3) != 0 && !b[0] && !b[1] && !b[2];
                            }
                        CHECK(diff == 0, "%s%s %dx%d 1/%d, region rows %lld..%lld cols %lld..%lld: %ld pixels differ from the "
                              "whole decode", sname[si], prog ? " progressive" : "", H, W, scale, (long long)y0, (long long)y1,
                              (long long)x0, (long long)x1, diff);
                        /* the part path leaves the outside zero (but for a margin); a progressive file is decoded whole */
                        CHECK(!prog || zeroed == 0, "%s progressive: %ld pixels outside the region zeroed", sname[si], zeroed);
                        if (!prog) parts += zeroed > 0, regions++;
                        free(part);
                    }
                    free(full);
                }
                tjFree(jb);
            }
    printf("decode: %d regions of baseline JPEGs compared, %d through the part path (and progressive ones whole)\n", regions, parts);
    CHECK(parts > regions / 2, "the part path ran for %d of %d regions", parts, regions);
}

/* 2: the box holds everything the fused pass reads. */
static void test_region(loom_ctx *ctx) {
    const char *specs[] = {"Resize(64); RandomCrop(56); hflip; ColorJitter(0.2, 0.2, 0.2); "
                           "RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1))",
                           "RandomResizedCrop(48); hflip", "CenterCrop(40); vflip", "RandomCrop(50); hflip; vflip",
                           "Resize((60, 70)); RandomCrop(33)",
                           /* the guide's own: a drawn order that crops before its jitter and affine reads the crop */
                           "Resize((64, 64)); RandomOrder([RandomCrop(56), hflip, ColorJitter(0.2, 0.2, 0.2), "
                           "RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1))])",
                           "Resize(64); RandomCrop(56); RandomAffine(15, shear=5); vflip; ColorJitter(0.3, 0.3)"};
    const int H = 93, W = 121;
    uint8_t *img = picture(H, W), *scr = malloc((size_t)H * W * 3);
    size_t cap = 4 << 20;
    uint8_t *a = malloc(cap), *b = malloc(cap), *ra = malloc(cap), *rb = malloc(cap);
    int smaller = 0, total = 0;
    for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
        loom_tf_step steps[16];
        int ns = 0;
        CHECK_OK(ctx, loom_tf_parse(ctx, specs[s], steps, 16, &ns));
        int boxed = 0;
        for (int i = 0; i < 40; i++) {
            loom__aug_rng rng;
            loom__aug_init(&rng, 7, 1, i);
            int64_t box[4];
            bool got = loom__tf_region(ctx, steps, ns, &rng, 3, H, W, box);
            total++;
            if (!got) continue;
            smaller++, boxed++;
            /* scramble everything outside the box */
            memcpy(scr, img, (size_t)H * W * 3);
            for (int64_t y = 0; y < H; y++)
                for (int64_t x = 0; x < W; x++)
                    if (!(y >= box[0] && y < box[2] && x >= box[1] && x < box[3]))
                        for (int c = 0; c < 3; c++) scr[(y * W + x) * 3 + c] = (uint8_t)rnd();
            loom_image p = {img, H, W, 3}, q = {scr, H, W, 3};
            loom__aug_rng r1, r2;
            loom__aug_init(&r1, 7, 1, i);
            loom__aug_init(&r2, 7, 1, i);
            CHECK_OK(ctx, loom__tf_run_fused(ctx, steps, ns, &r1, &p, a, b, NULL));
            CHECK_OK(ctx, loom__tf_run_fused(ctx, steps, ns, &r2, &q, ra, rb, NULL));
            CHECK(p.h == q.h && p.w == q.w && !memcmp(p.data, q.data, (size_t)(p.h * p.w * 3)),
                  "'%s' sample %d: the pass reads outside its box %lld..%lld x %lld..%lld", specs[s], i, (long long)box[0],
                  (long long)box[2], (long long)box[1], (long long)box[3]);
        }
        /* the RandomOrder: about a third of the orders crop first; the rest need the whole image */
        bool ordered = strstr(specs[s], "RandomOrder") != NULL;
        CHECK(ordered ? boxed >= 4 && boxed <= 36 : boxed == 40 || s == 0, "'%s': %d of 40 samples got a box", specs[s], boxed);
    }
    printf("region: %d of %d samples with a box smaller than the image\n", smaller, total);
    CHECK(smaller > total / 2, "only %d of %d samples got a box", smaller, total);
    free(img), free(scr), free(a), free(b), free(ra), free(rb);
}

/* 3: the loader, region decode on and off. */
static float *epochs_of(loom_ctx *ctx, loom_source *src, const char *spec, int workers, const char *region, size_t *len) {
    setenv("LOOM_LOADER_REGION", region, 1);
    loom_tf_step steps[16];
    int ns = 0;
    CHECK_OK(ctx, loom_tf_parse(ctx, spec, steps, 16, &ns));
    float mean = 0.5f, sd = 0.25f;
    loom_loader_desc d = {.src = src, .batch = 5, .shuffle = true, .seed = 11, .steps = steps, .nsteps = ns,
                          .workers = workers, .mean = &mean, .std = &sd, .nstat = 1};
    loom_loader *ld = NULL;
    CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
    unsetenv("LOOM_LOADER_REGION");
    if (!ld) return NULL;
    int c;
    int64_t oh, ow;
    loom_loader_shape(ld, &c, &oh, &ow);
    size_t per = (size_t)c * (size_t)(oh * ow), cap = 2 * (size_t)src->n * per, at = 0;
    float *all = calloc(cap, sizeof *all);
    for (int e = 0; e < 2; e++) {
        if (e) loom_loader_begin(ld, e, 0, 0);
        for (;;) {
            loom_loader_batch bt;
            if (loom_loader_next(ld, &bt) != LOOM_OK) {
                CHECK(false, "loader: %s", loom_last_error(ctx));
                break;
            }
            if (bt.count == 0) break;
            memcpy(all + at, bt.x, (size_t)bt.count * per * sizeof *all);
            at += (size_t)bt.count * per;
        }
    }
    loom_loader_destroy(ld);
    *len = at;
    return all;
}

static void test_loader(loom_ctx *ctx) {
    const int samps[] = {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_GRAY};
    mkdirs("set/c0"), mkdirs("set/c1"), mkdirs("set/c2");
    for (int i = 0; i < 12; i++) {
        int h = 70 + (int)(rnd() % 60), w = 70 + (int)(rnd() % 90);
        uint8_t *px = picture(h, w);
        unsigned long n;
        unsigned char *jb = compress(px, h, w, samps[i % 4], i == 5 ? TJFLAG_PROGRESSIVE : 0, &n);
        free(px);
        char rel[64];
        snprintf(rel, sizeof rel, "set/c%d/%02d.jpg", i % 3, i);
        char p[512];
        path_of(rel, p, sizeof p);
        FILE *f = fopen(p, "wb");
        if (f && jb) fwrite(jb, 1, n, f);
        if (f) fclose(f);
        tjFree(jb);
    }
    char root[512];
    path_of("set", root, sizeof root);
    loom_source *src = NULL;
    CHECK_OK(ctx, loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root}, &src));
    if (!src) return;
    const char *specs[] = {"Resize(64); RandomCrop(56); hflip; ColorJitter(0.2, 0.2, 0.2); "
                           "RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1))",
                           "RandomResizedCrop(48); hflip",
                           "Resize((64, 64)); RandomOrder([RandomCrop(56), hflip, ColorJitter(0.2, 0.2, 0.2), "
                           "RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1))])"};
    for (int s = 0; s < 3; s++)
        for (int wk = 0; wk < 2; wk++) {
            int workers = wk ? 2 : LOOM_WORKERS_SYNC;
            size_t n1 = 0, n0 = 0;
            float *on = epochs_of(ctx, src, specs[s], workers, "1", &n1);
            float *off = epochs_of(ctx, src, specs[s], workers, "0", &n0);
            CHECK(on && off && n1 == n0 && n1 > 0 && !memcmp(on, off, n1 * sizeof *on),
                  "'%s', %d workers: batches with region decode differ from whole decode", specs[s], workers);
            free(on), free(off);
        }
    printf("loader: region decode on = off for 3 pipelines x {0, 2} workers x 2 epochs\n");
    loom_source_destroy(src);
}

int main(void) {
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    if (!tu_tmpdir("jpeg-region", tmp, sizeof tmp)) return 1;
    test_decode(ctx);
    test_region(ctx);
    test_loader(ctx);
    tu_rm_rf(tmp);
    loom_ctx_destroy(ctx);
    return tu_summary();
}

#else

int main(void) { return tu_skip("loom was built without libjpeg-turbo's libjpeg API (libjpeg62-turbo-dev)"); }

#endif
