/* tests/test-augment.c — the random transforms (RandomResizedCrop,
 * ColorJitter, RandomAffine, RandomErasing, RandomOrder).
 *
 * (a) their functional pieces with FIXED parameters against torchvision
 *     outputs in tests/data/augment (tests/gen_augment_fixtures.py; the
 *     parameter tables below repeat the script's): resized_crop, adjust_*
 *     and affine within 1 per u8 value (max difference and the count of
 *     differing values printed), erase exact;
 * (b) their random draws (loader/pipeline_draw.c, Philox (seed, "AUGM" + epoch,
 *     16 i + k)): a function of (seed, epoch, sample) only, inside the
 *     documented ranges, torchvision's fallbacks; the parser; and loader
 *     batches bitwise identical for 0 (synchronous), 2 and 4 workers with
 *     every new transform in the pipeline, and equal to the pipeline replayed
 *     sample by sample (RandomErasing: once loader/pool.c calls
 *     loom__tf_run_tensor; until then a PENDING line is printed).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../loader/loader_impl.h"
#include "loom/loader.h"
#include "loom/transforms.h"
#include "testutil.h"

static loom_ctx *ctx;
static char datadir[1024];

static bool load(const char *name, loom_npy *a) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", datadir, name);
    loom_status st = loom_npy_read(ctx, path, a);
    CHECK(st == LOOM_OK, "read %s: %s", path, loom_last_error(ctx));
    return st == LOOM_OK;
}

static loom_image image_of(loom_npy *a) {
    loom_image im = {(uint8_t *)a->data, a->shape[0], a->shape[1], (int)a->shape[2]};
    return im;
}

/* per family: worst |diff|, values differing, values compared */
typedef struct tally {
    const char *name;
    int worst;
    int64_t off, n;
} tally;

/* Compare dst with the fixture within tol; frees dst.data. */
static void compare(tally *t, loom_image *dst, const char *fixture, int tol) {
    loom_npy ref;
    if (!load(fixture, &ref)) return;
    CHECK(ref.count == dst->h * dst->w * dst->c && ref.shape[0] == dst->h && ref.shape[1] == dst->w,
          "%s %s: shape (%lld, %lld) vs loom %lldx%lld", t->name, fixture, (long long)ref.shape[0],
          (long long)ref.shape[1], (long long)dst->h, (long long)dst->w);
    if (ref.count == dst->h * dst->w * dst->c) {
        int maxd = 0;
        for (int64_t i = 0; i < ref.count; i++) {
            int d = abs((int)dst->data[i] - (int)((uint8_t *)ref.data)[i]);
            if (d > maxd) maxd = d;
            t->off += d != 0, t->n++;
        }
        CHECK(maxd <= tol, "%s %s: max |diff| %d > %d", t->name, fixture, maxd, tol);
        if (maxd > t->worst) t->worst = maxd;
    }
    free(dst->data);
    loom_npy_free(&ref);
}

static void report(const tally *t) {
    printf("%-12s max |diff| vs torchvision %d (%lld of %lld values differ)\n", t->name, t->worst, (long long)t->off,
           (long long)t->n);
}

static loom_image alloc_like(const loom_image *s, int64_t h, int64_t w) {
    loom_image d = {malloc((size_t)(h * w * s->c)), h, w, s->c};
    return d;
}

/* the tables of tests/gen_augment_fixtures.py */
static const int64_t RCROP[][6] = {{0, 0, 13, 17, 8, 8}, {2, 3, 9, 11, 20, 16}, {5, 1, 6, 14, 6, 5}, {1, 4, 7, 5, 7, 5},
                                   {0, 6, 13, 3, 4, 9}};
static const int64_t RCROP_B[][6] = {{0, 0, 11, 9, 5, 5}, {3, 2, 6, 5, 12, 10}};
static const double COLOR[] = {0.0, 0.45, 0.8, 1.0, 1.37, 2.5};
static const double HUE[] = {-0.5, -0.27, -0.05, 0.0, 0.13, 0.31, 0.5};
static const struct {
    double angle, tx, ty, scale, shx, shy;
    bool nearest;
    int fill;
} AFFINE[] = {
    {0.0, 0, 0, 1.0, 0.0, 0.0, false, 0},     {17.0, 0, 0, 1.0, 0.0, 0.0, false, 0},
    {-33.5, 2, -1, 0.9, 0.0, 0.0, false, 0},  {10.0, 1, 2, 1.15, 8.0, -5.0, false, 127},
    {90.0, 0, 0, 1.0, 0.0, 0.0, true, 0},     {23.0, -3, 1, 0.8, 12.0, 4.0, true, 200},
    {-7.0, 0, 0, 1.3, -20.0, 0.0, false, 255},
};
#define LEN(a) (sizeof(a) / sizeof *(a))

static void test_functional(loom_image *imgs[2]) {
    tally trc = {"resized_crop", 0, 0, 0}, tb = {"brightness", 0, 0, 0}, tc = {"contrast", 0, 0, 0},
          ts = {"saturation", 0, 0, 0}, th = {"hue", 0, 0, 0}, ta = {"affine", 0, 0, 0};
    char name[64];
    for (int s = 0; s < 2; s++) {
        loom_image *src = imgs[s];
        char sn = s ? 'b' : 'a';
        size_t nr = s ? LEN(RCROP_B) : LEN(RCROP);
        for (size_t k = 0; k < nr; k++) {
            const int64_t *r = s ? RCROP_B[k] : RCROP[k];
            loom_image d = alloc_like(src, r[4], r[5]);
            CHECK_OK(ctx, loom_tf_resized_crop(ctx, src, r[0], r[1], r[2], r[3], &d));
            snprintf(name, sizeof name, "rcrop_%c_%zu.npy", sn, k);
            compare(&trc, &d, name, 1);
        }
        for (size_t k = 0; k < LEN(COLOR); k++) {
            loom_image d = alloc_like(src, src->h, src->w);
            CHECK_OK(ctx, loom_tf_adjust_brightness(ctx, src, &d, COLOR[k]));
            snprintf(name, sizeof name, "bright_%c_%zu.npy", sn, k);
            compare(&tb, &d, name, 1);
            d = alloc_like(src, src->h, src->w);
            CHECK_OK(ctx, loom_tf_adjust_contrast(ctx, src, &d, COLOR[k]));
            snprintf(name, sizeof name, "contrast_%c_%zu.npy", sn, k);
            compare(&tc, &d, name, 1);
            d = alloc_like(src, src->h, src->w);
            CHECK_OK(ctx, loom_tf_adjust_saturation(ctx, src, &d, COLOR[k]));
            snprintf(name, sizeof name, "satur_%c_%zu.npy", sn, k);
            compare(&ts, &d, name, 1);
        }
        for (size_t k = 0; k < LEN(HUE); k++) {
            loom_image d = alloc_like(src, src->h, src->w);
            CHECK_OK(ctx, loom_tf_adjust_hue(ctx, src, &d, HUE[k]));
            snprintf(name, sizeof name, "hue_%c_%zu.npy", sn, k);
            compare(&th, &d, name, 1);
        }
        for (size_t k = 0; k < LEN(AFFINE); k++) {
            loom_image d = alloc_like(src, src->h, src->w);
            uint8_t fill[3] = {(uint8_t)AFFINE[k].fill, (uint8_t)AFFINE[k].fill, (uint8_t)AFFINE[k].fill};
            CHECK_OK(ctx, loom_tf_affine(ctx, src, &d, AFFINE[k].angle, AFFINE[k].tx, AFFINE[k].ty, AFFINE[k].scale,
                                         AFFINE[k].shx, AFFINE[k].shy, AFFINE[k].nearest, fill));
            snprintf(name, sizeof name, "affine_%c_%zu.npy", sn, k);
            compare(&ta, &d, name, 1);
        }
    }
    report(&trc), report(&tb), report(&tc), report(&ts), report(&th), report(&ta);

    loom_npy in, ref;
    if (load("erase_in_a.npy", &in) && load("erase_a.npy", &ref)) {
        const float v[3] = {-1.0f, 0.0f, 2.5f};
        CHECK_OK(ctx, loom_tf_erase(ctx, in.data, 3, in.shape[1], in.shape[2], 2, 3, 5, 7, v, 3));
        CHECK(!memcmp(in.data, ref.data, (size_t)ref.count * sizeof(float)), "erase: bitwise equal to torchvision");
        loom_npy_free(&in), loom_npy_free(&ref);
    }
    /* errors */
    loom_image d = alloc_like(imgs[0], 4, 4);
    CHECK(loom_tf_resized_crop(ctx, imgs[0], 10, 0, 5, 5, &d) == LOOM_ERR_INVALID_ARG, "resized_crop: box outside");
    CHECK(loom_tf_adjust_hue(ctx, imgs[0], &d, 0.1) == LOOM_ERR_INVALID_ARG, "adjust_hue: shape mismatch");
    free(d.data);
    d = alloc_like(imgs[0], imgs[0]->h, imgs[0]->w);
    CHECK(loom_tf_adjust_hue(ctx, imgs[0], &d, 0.6) == LOOM_ERR_INVALID_ARG, "adjust_hue: factor 0.6");
    CHECK(loom_tf_adjust_brightness(ctx, imgs[0], &d, -0.1) == LOOM_ERR_INVALID_ARG, "brightness: factor < 0");
    CHECK(loom_tf_affine(ctx, imgs[0], &d, 0, 0, 0, 0, 0, 0, false, NULL) == LOOM_ERR_INVALID_ARG, "affine: scale 0");
    free(d.data);
}

/* ---- (b) the random draws --------------------------------------------------- */

static loom_tf_step parse1(const char *spec) {
    loom_tf_step s[4];
    int n = 0;
    memset(s, 0, sizeof s);
    CHECK_OK(ctx, loom_tf_parse(ctx, spec, s, 4, &n));
    CHECK(n == 1, "%s: one step (got %d)", spec, n);
    return s[0];
}

static void draw(const loom_tf_step *s, uint64_t seed, int64_t epoch, int64_t i, int64_t h, int64_t w, double out[8]) {
    loom__aug_rng r;
    loom__aug_init(&r, seed, epoch, i);
    loom__tf_draw(s, &r, h, w, out);
}

static void test_draws(void) {
    const int N = 4000;
    double o[8], o2[8];
    /* RandomResizedCrop on 37x53: box inside, area within scale (up to rounding), ratio within range */
    loom_tf_step rrc = parse1("RandomResizedCrop(16, scale=(0.2, 0.9), ratio=(0.5, 2.0))");
    int bad = 0, fallback = 0, differ = 0;
    double amin = 1e9, amax = 0, rmin = 1e9, rmax = 0;
    for (int i = 0; i < N; i++) {
        draw(&rrc, 7, 3, i, 37, 53, o);
        draw(&rrc, 7, 3, i, 37, 53, o2);
        bad += memcmp(o, o2, sizeof o) != 0;
        double top = o[0], left = o[1], h = o[2], w = o[3];
        bad += !(top >= 0 && left >= 0 && h >= 1 && w >= 1 && top + h <= 37 && left + w <= 53);
        double a = h * w / (37.0 * 53), rt = w / h;
        amin = fmin(amin, a), amax = fmax(amax, a), rmin = fmin(rmin, rt), rmax = fmax(rmax, rt);
        draw(&rrc, 8, 3, i, 37, 53, o2);
        differ += memcmp(o, o2, sizeof o) != 0;
    }
    CHECK(bad == 0, "RandomResizedCrop: %d draws not repeatable or outside the image", bad);
    CHECK(amin > 0.2 * 0.85 && amax < 0.9 * 1.15 && rmin > 0.5 * 0.85 && rmax < 2.0 * 1.15,
          "RandomResizedCrop: area %.3f..%.3f (scale 0.2..0.9), ratio %.3f..%.3f (0.5..2) up to rounding", amin, amax, rmin,
          rmax);
    CHECK(differ > N * 9 / 10, "RandomResizedCrop: another seed changes the draws (%d of %d)", differ, N);
    printf("RandomResizedCrop draws: area %.3f..%.3f, ratio %.3f..%.3f\n", amin, amax, rmin, rmax);
    /* fallback: no attempt fits a 3x100 strip with ratio (0.9, 1.1) -> centre crop, h 3, w round(3 * 1.1) */
    loom_tf_step fb = parse1("RandomResizedCrop(8, scale=(0.5, 1.0), ratio=(0.9, 1.1))");
    for (int i = 0; i < 50; i++) {
        draw(&fb, 1, 0, i, 3, 100, o);
        if (o[2] == 3 && o[3] == 3 && o[0] == 0 && o[1] == 48) fallback++;
    }
    CHECK(fallback == 50, "RandomResizedCrop fallback: centre 3x3 box at (0, 48) in %d of 50", fallback);

    /* ColorJitter: a permutation, factors in range; off adjustments still drawn */
    loom_tf_step cj = parse1("ColorJitter(0.4, (0.5, 1.5), 0.25, 0.1)");
    CHECK(cj.jitter_on[0] && fabs(cj.jitter[0][0] - 0.6) < 1e-12 && fabs(cj.jitter[0][1] - 1.4) < 1e-12 &&
              cj.jitter[1][0] == 0.5 && cj.jitter[1][1] == 1.5 && cj.jitter[3][0] == -0.1 && cj.jitter[3][1] == 0.1,
          "ColorJitter ranges parsed as torchvision's");
    int first[4] = {0};
    bad = 0;
    for (int i = 0; i < N; i++) {
        draw(&cj, 11, 0, i, 8, 8, o);
        int seen = 0;
        for (int k = 0; k < 4; k++) seen |= 1 << (int)o[k];
        bad += seen != 15;
        first[(int)o[0]]++;
        for (int k = 0; k < 4; k++) bad += !(o[4 + k] >= cj.jitter[k][0] && o[4 + k] <= cj.jitter[k][1]);
    }
    CHECK(bad == 0, "ColorJitter: %d draws not a permutation or out of range", bad);
    for (int k = 0; k < 4; k++)
        CHECK(first[k] > N / 4 - N / 20 && first[k] < N / 4 + N / 20, "ColorJitter: %d first %d times of %d", k, first[k], N);

    /* RandomAffine: angle, integer translation within a W / b H, scale, shears */
    loom_tf_step af = parse1("RandomAffine(15, translate=(0.1, 0.2), scale=(0.9, 1.1), shear=(-5, 5, -3, 3))");
    bad = 0;
    for (int i = 0; i < N; i++) {
        draw(&af, 5, 2, i, 30, 40, o);
        bad += !(o[0] >= -15 && o[0] <= 15 && o[1] == floor(o[1]) && fabs(o[1]) <= 4 && o[2] == floor(o[2]) &&
                 fabs(o[2]) <= 6 && o[3] >= 0.9 && o[3] <= 1.1 && fabs(o[4]) <= 5 && fabs(o[5]) <= 3);
    }
    CHECK(bad == 0, "RandomAffine: %d draws out of range", bad);
    CHECK(af.nearest && !parse1("RandomAffine(5, interpolation=bilinear)").nearest,
          "RandomAffine: NEAREST by default (torchvision), bilinear on request");
    loom_tf_step af0 = parse1("RandomAffine((-3, 7))");
    draw(&af0, 5, 2, 1, 30, 40, o);
    CHECK(o[0] >= -3 && o[0] <= 7 && o[1] == 0 && o[2] == 0 && o[3] == 1 && o[4] == 0 && o[5] == 0,
          "RandomAffine without translate/scale/shear: identity but the angle");

    /* RandomErasing: about p of the samples erased, boxes strictly inside */
    loom_tf_step er = parse1("RandomErasing(p=0.3, scale=(0.05, 0.2), ratio=(0.5, 2), value=(1, 2, 3))");
    int erased = 0;
    bad = 0;
    for (int i = 0; i < N; i++) {
        draw(&er, 9, 0, i, 20, 24, o);
        if (!o[0]) continue;
        erased++;
        bad += !(o[1] >= 0 && o[2] >= 0 && o[3] >= 1 && o[4] >= 1 && o[3] < 20 && o[4] < 24 && o[1] + o[3] <= 20 &&
                 o[2] + o[4] <= 24);
    }
    CHECK(bad == 0 && erased > N * 0.27 && erased < N * 0.33, "RandomErasing: %d of %d erased (p 0.3), %d bad boxes",
          erased, N, bad);

    /* RandomOrder: a permutation of its steps, every order seen */
    loom_tf_step steps[8];
    int n = 0;
    CHECK_OK(ctx, loom_tf_parse(ctx, "RandomOrder([hflip(p=1), vflip(p=1), ColorJitter(0.5)]); Resize(5)", steps, 8, &n));
    CHECK(n == 5 && steps[0].kind == LOOM_TF_RANDOM_ORDER && steps[0].count == 3 && steps[3].kind == LOOM_TF_COLOR_JITTER &&
              steps[4].kind == LOOM_TF_RESIZE,
          "RandomOrder parsed as a step + its 3 steps (n %d)", n);
    int orders[27] = {0};
    for (int i = 0; i < 600; i++) {
        draw(&steps[0], 2, 0, i, 8, 8, o);
        orders[(int)o[0] * 9 + (int)o[1] * 3 + (int)o[2]]++;
    }
    int seen = 0;
    for (int k = 0; k < 27; k++) seen += orders[k] > 50;
    CHECK(seen == 6, "RandomOrder: all 6 orders of 3 steps drawn often (%d)", seen);

    /* the stream beyond 64 words does not reach the next sample's */
    loom__aug_rng r1, r2;
    loom__aug_init(&r1, 3, 0, 10);
    loom__aug_init(&r2, 3, 0, 11);
    uint32_t w1[80], w2[64];
    for (int k = 0; k < 80; k++) w1[k] = loom__aug_u32(&r1);
    for (int k = 0; k < 64; k++) w2[k] = loom__aug_u32(&r2);
    CHECK(memcmp(w1 + 64, w2, 16 * sizeof(uint32_t)) != 0, "words 64.. of sample 10 are not sample 11's");

    /* parse errors */
    const char *badspecs[] = {"ColorJitter(hue=0.7)", "RandomAffine(translate=(0.1, 0.1))", "RandomResizedCrop()",
                              "RandomResizedCrop(8, scale=(0.9, 0.1))", "RandomErasing(value=random)",
                              "RandomOrder(hflip)", "RandomAffine(10, interpolation=bicubic)", "ColorJitter(-1)"};
    for (size_t k = 0; k < LEN(badspecs); k++)
        CHECK(loom_tf_parse(ctx, badspecs[k], steps, 8, &n) == LOOM_ERR_INVALID_ARG, "parse error: %s", badspecs[k]);
    /* plan errors: erasing not last; a RandomOrder whose orders end at different sizes (parse) */
    int64_t oh, ow;
    size_t mb;
    CHECK_OK(ctx, loom_tf_parse(ctx, "RandomErasing(); hflip", steps, 8, &n));
    CHECK(loom__tf_plan(ctx, steps, n, 3, 10, 10, &oh, &ow, &mb) == LOOM_ERR_INVALID_ARG, "plan: erasing before hflip");
    CHECK_OK(ctx, loom_tf_parse(ctx, "RandomOrder([Resize(4), hflip])", steps, 8, &n));
    CHECK(loom__tf_plan(ctx, steps, n, 3, 10, 10, &oh, &ow, &mb) == LOOM_OK && oh == 4 && ow == 4,
          "plan: RandomOrder([Resize(4), hflip]) on 10x10: every order ends at 4x4");
    CHECK(loom_tf_parse(ctx, "RandomOrder([Resize((4, 4)), CenterCrop(3)])", steps, 8, &n) == LOOM_ERR_INVALID_ARG &&
              strstr(loom_last_error(ctx), "4x4") && strstr(loom_last_error(ctx), "3x3"),
          "parse: RandomOrder([Resize((4, 4)), CenterCrop(3)]) ends at 3x3 or 4x4: %s", loom_last_error(ctx));
    /* torchvision's meaning: Resize(int) is the shorter side, Resize((h, w)) both sides */
    CHECK_OK(ctx, loom_tf_parse(ctx, "Resize(8); Resize((6, 7))", steps, 8, &n));
    CHECK(n == 2 && steps[0].short_side && steps[0].h == 8 && !steps[1].short_side && steps[1].h == 6 && steps[1].w == 7,
          "Resize(8) is the shorter side, Resize((6, 7)) is 6x7");
    CHECK_OK(ctx, loom_tf_parse(ctx, "Resize(8)", steps, 8, &n));
    CHECK(loom__tf_plan(ctx, steps, n, 3, 10, 20, &oh, &ow, &mb) == LOOM_OK && oh == 8 && ow == 16,
          "Resize(8) of 10x20: %lldx%lld (expected 8x16)", (long long)oh, (long long)ow);
}

/* ---- (b) loader batches: synchronous == 2 workers ---------------------------- */

typedef struct dump {
    float *x;
    int32_t *y;
    size_t nx, ny;
} dump;

static loom_status run_loader(const loom_source *src, const loom_tf_step *steps, int ns, int workers, int64_t epoch,
                              dump *d) {
    const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
    loom_loader_desc desc = {.src = src, .batch = 16, .shuffle = true, .seed = 77, .workers = workers, .steps = steps,
                             .nsteps = ns, .mean = mean, .std = sd, .nstat = 3};
    loom_loader *ld = NULL;
    loom_status st = loom_loader_create(ctx, &desc, &ld);
    if (st != LOOM_OK) return st;
    int c;
    int64_t h, w;
    loom_loader_shape(ld, &c, &h, &w);
    size_t per = (size_t)c * (size_t)(h * w);
    memset(d, 0, sizeof *d);
    d->x = malloc((size_t)src->n * per * sizeof(float));
    d->y = malloc((size_t)src->n * sizeof(int32_t));
    loom_loader_begin(ld, epoch, 0, 0);
    for (;;) {
        loom_loader_batch b;
        if ((st = loom_loader_next(ld, &b)) != LOOM_OK || b.count == 0) break;
        memcpy(d->x + d->nx, b.x, (size_t)b.count * per * sizeof(float));
        memcpy(d->y + d->ny, b.y, (size_t)b.count * sizeof(int32_t));
        d->nx += (size_t)b.count * per, d->ny += (size_t)b.count;
    }
    loom_loader_destroy(ld);
    return st;
}

/* epoch 1 in sample order, synchronous */
static loom_status run_loader_order(const loom_source *src, const loom_tf_step *steps, int ns, dump *d) {
    const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
    loom_loader_desc desc = {.src = src, .batch = 16, .seed = 77, .workers = LOOM_WORKERS_SYNC, .steps = steps,
                             .nsteps = ns, .mean = mean, .std = sd, .nstat = 3};
    loom_loader *ld = NULL;
    loom_status st = loom_loader_create(ctx, &desc, &ld);
    if (st != LOOM_OK) return st;
    size_t per = 3 * 16 * 16;
    memset(d, 0, sizeof *d);
    d->x = malloc((size_t)src->n * per * sizeof(float));
    d->y = malloc((size_t)src->n * sizeof(int32_t));
    loom_loader_begin(ld, 1, 0, 0);
    for (;;) {
        loom_loader_batch b;
        if ((st = loom_loader_next(ld, &b)) != LOOM_OK || b.count == 0) break;
        memcpy(d->x + d->nx, b.x, (size_t)b.count * per * sizeof(float));
        d->nx += (size_t)b.count * per;
    }
    loom_loader_destroy(ld);
    return st;
}

static void test_loader(void) {
    loom_dataset ds;
    memset(&ds, 0, sizeof ds);
    int64_t n = 70;
    ds.n = n, ds.c = 3, ds.h = 21, ds.w = 26, ds.num_classes = 10;
    size_t per = (size_t)(ds.c * ds.h * ds.w);
    ds.pixels = malloc((size_t)n * per);
    ds.labels = malloc((size_t)n * sizeof *ds.labels);
    uint32_t x = 12345;
    for (size_t i = 0; i < (size_t)n * per; i++) x = x * 1664525u + 1013904223u, ds.pixels[i] = (uint8_t)(x >> 24);
    for (int64_t i = 0; i < n; i++) ds.labels[i] = (int32_t)(i % 10);
    loom_source *src = NULL;
    CHECK_OK(ctx, loom_source_wrap(ctx, &ds, &src));
    if (!src) return;
    static const char *spec =
        "RandomResizedCrop(16, scale=(0.3, 1.0)); RandomOrder([hflip, ColorJitter(0.3, 0.3, 0.3, 0.05)]); "
        "RandomAffine(12, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=5, interpolation=bilinear, fill=(10, 20, 30)); "
        "RandomErasing(p=0.5, value=0)";
    loom_tf_step steps[16];
    int ns = 0;
    CHECK_OK(ctx, loom_tf_parse(ctx, spec, steps, 16, &ns));
    dump a, b, c;
    CHECK_OK(ctx, run_loader(src, steps, ns, LOOM_WORKERS_SYNC, 1, &a));
    CHECK_OK(ctx, run_loader(src, steps, ns, 2, 1, &b));
    CHECK_OK(ctx, run_loader(src, steps, ns, 2, 2, &c));
    CHECK(a.nx == b.nx && a.ny == b.ny && a.nx == (size_t)n * 3 * 16 * 16 && !memcmp(a.x, b.x, a.nx * sizeof(float)) &&
              !memcmp(a.y, b.y, a.ny * sizeof(int32_t)),
          "every new transform: batches bitwise equal for 0 (synchronous) and 2 workers (%zu floats)", a.nx);
    CHECK(c.nx == a.nx && memcmp(a.x, c.x, a.nx * sizeof(float)) != 0, "another epoch draws other parameters");
    dump d4;
    CHECK_OK(ctx, run_loader(src, steps, ns, 4, 1, &d4));
    CHECK(d4.nx == a.nx && !memcmp(a.x, d4.x, a.nx * sizeof(float)) && !memcmp(a.y, d4.y, a.ny * sizeof(int32_t)),
          "4 workers: bitwise equal too");
    free(d4.x), free(d4.y);
    /* the pipeline replayed sample by sample (loom__tf_run, ToTensor + Normalize as the pool's table, then
     * loom__tf_run_tensor) gives the loader's floats: the loader really runs the new steps */
    dump q;
    CHECK_OK(ctx, run_loader_order(src, steps, ns, &q));
    int64_t oh, ow;
    size_t mb;
    CHECK_OK(ctx, loom__tf_plan(ctx, steps, ns, 3, 21, 26, &oh, &ow, &mb));
    uint8_t *ba = malloc(mb), *bb = malloc(mb);
    float *full = malloc((size_t)n * 3 * 256 * sizeof(float)), *noerase = malloc((size_t)n * 3 * 256 * sizeof(float));
    const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
    for (int64_t i = 0; i < n; i++) {
        int32_t lab;
        CHECK_OK(ctx, src->get(src, ctx, i, ba, &lab));
        loom_image img = {ba, 21, 26, 3};
        loom__aug_rng r;
        loom__aug_init(&r, 77, 1, i);
        CHECK_OK(ctx, loom__tf_run(ctx, steps, ns, &r, &img, ba, bb));
        float *y = full + i * 3 * 256;
        for (int k = 0; k < 3; k++)
            for (int p = 0; p < 256; p++) y[k * 256 + p] = ((float)img.data[p * 3 + k] / 255.0f - mean[k]) / sd[k];
        memcpy(noerase + i * 3 * 256, y, 3 * 256 * sizeof(float));
        CHECK_OK(ctx, loom__tf_run_tensor(ctx, steps, ns, &r, y, 3, 16, 16));
    }
    size_t bytes = (size_t)n * 3 * 256 * sizeof(float);
    bool same_full = q.nx * sizeof(float) == bytes && !memcmp(q.x, full, bytes);
    bool same_noerase = q.nx * sizeof(float) == bytes && !memcmp(q.x, noerase, bytes);
    CHECK(same_full || same_noerase, "the loader's batches are the pipeline replayed sample by sample");
    if (!same_full && same_noerase)
        printf("PENDING: the loader does not apply RandomErasing yet (loader/pool.c must call loom__tf_run_tensor "
               "after its ToTensor + Normalize); the image steps match the replay\n");
    else
        printf("loader == replay of every step, RandomErasing included (%s)\n", same_full ? "yes" : "no");
    free(ba), free(bb), free(full), free(noerase), free(q.x), free(q.y);
    free(a.x), free(a.y), free(b.x), free(b.y), free(c.x), free(c.y);
    loom_source_destroy(src);
    free(ds.pixels), free(ds.labels);
}

int main(void) {
    snprintf(datadir, sizeof datadir, "%s", __FILE__);
    char *slash = strrchr(datadir, '/');
    snprintf(slash ? slash + 1 : datadir, sizeof datadir - (size_t)(slash ? slash + 1 - datadir : 0), "data/augment");
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    loom_npy sa, sb;
    if (load("src_a.npy", &sa) && load("src_b.npy", &sb)) {
        loom_image a = image_of(&sa), b = image_of(&sb);
        loom_image *imgs[2] = {&a, &b};
        test_functional(imgs);
        loom_npy_free(&sa);
        loom_npy_free(&sb);
    }
    test_draws();
    test_loader();
    loom_ctx_destroy(ctx);
    return tu_summary();
}
