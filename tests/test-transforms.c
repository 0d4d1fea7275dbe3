/* tests/test-transforms.c — image transforms (loader/transforms.c) against
 * torchvision outputs in tests/data/transforms (tests/gen_transform_fixtures.py).
 *
 * - resize (bilinear, antialias=True), shrinking, enlarging, one axis, mixed:
 *   every u8 value within 1 of torchvision (max difference printed)
 * - resize's shorter-side form (with and without max_size): the same shapes
 * - center_crop (odd margins: Python's half-to-even round), hflip, vflip: exact
 * - to_tensor alone, with ImageNet mean/std (f32 exact, f16 and bf16 bit-exact),
 *   and a 1-channel image with one mean/std: exact
 * - the resize weights a context caches: the same bytes as a fresh context's
 * - errors: zero size, crop larger than the image, std 0, channel count 2,
 *   mismatched channels, nstat neither 1 nor c, bad dtype, max_size <= size
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/loader.h"
#include "loom/transforms.h"
#include "testutil.h"

static loom_ctx *ctx;
static char datadir[1024];
static int64_t n_off, n_vals; /* resize: values that differ from torchvision, values compared */

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

/* Run op on src into a buffer of the fixture's shape; compare within tol.
 * Returns the max abs difference (or -1). */
static int compare_u8(const char *what, loom_status (*op)(loom_ctx *, const loom_image *, const loom_image *),
                      loom_image *src, const char *fixture, int tol) {
    loom_npy ref;
    if (!load(fixture, &ref)) return -1;
    loom_image dst = {malloc((size_t)ref.count), ref.shape[0], ref.shape[1], (int)ref.shape[2]};
    CHECK_OK(ctx, op(ctx, src, &dst));
    int maxd = 0;
    for (int64_t i = 0; i < ref.count; i++) {
        int d = abs((int)dst.data[i] - (int)((uint8_t *)ref.data)[i]);
        if (d > maxd) maxd = d;
        if (tol) n_off += d != 0, n_vals++;
    }
    CHECK(maxd <= tol, "%s %s: max |diff| %d > %d", what, fixture, maxd, tol);
    free(dst.data);
    loom_npy_free(&ref);
    return maxd;
}

static void test_geometry(loom_image *a, loom_image *b) {
    static const char *resize_a[] = {"5x7", "4x12", "10x5", "16x20", "6x17", "8x9", "3x2"};
    static const char *resize_b[] = {"3x4", "20x15", "9x3", "5x4"};
    char name[64];
    int worst = 0;
    for (size_t i = 0; i < sizeof resize_a / sizeof *resize_a; i++) {
        snprintf(name, sizeof name, "resize_a_%s.npy", resize_a[i]);
        int d = compare_u8("resize", loom_tf_resize, a, name, 1);
        if (d > worst) worst = d;
    }
    for (size_t i = 0; i < sizeof resize_b / sizeof *resize_b; i++) {
        snprintf(name, sizeof name, "resize_b_%s.npy", resize_b[i]);
        int d = compare_u8("resize", loom_tf_resize, b, name, 1);
        if (d > worst) worst = d;
    }
    printf("resize: max |diff| vs torchvision over all cases: %d (%lld of %lld values differ)\n", worst, (long long)n_off,
           (long long)n_vals);

    static const char *crop_a[] = {"7x9", "5x7", "10x12", "1x1"}, *crop_b[] = {"4x4", "8x6", "9x7"};
    for (size_t i = 0; i < sizeof crop_a / sizeof *crop_a; i++) {
        snprintf(name, sizeof name, "crop_a_%s.npy", crop_a[i]);
        compare_u8("center_crop", loom_tf_center_crop, a, name, 0);
    }
    for (size_t i = 0; i < sizeof crop_b / sizeof *crop_b; i++) {
        snprintf(name, sizeof name, "crop_b_%s.npy", crop_b[i]);
        compare_u8("center_crop", loom_tf_center_crop, b, name, 0);
    }
    compare_u8("hflip", loom_tf_hflip, a, "hflip_a.npy", 0);
    compare_u8("vflip", loom_tf_vflip, a, "vflip_a.npy", 0);
    compare_u8("hflip", loom_tf_hflip, b, "hflip_b.npy", 0);
    compare_u8("vflip", loom_tf_vflip, b, "vflip_b.npy", 0);

    loom_npy sz;
    if (!load("sizes.npy", &sz)) return;
    const int64_t *r = sz.data;
    for (int64_t i = 0; i < sz.shape[0]; i++, r += 6) {
        int64_t oh = 0, ow = 0;
        CHECK_OK(ctx, loom_tf_resize_size(ctx, r[0], r[1], r[2], r[3], &oh, &ow));
        CHECK(oh == r[4] && ow == r[5], "resize_size(%lld x %lld, %lld, max %lld) = %lld x %lld, torchvision %lld x %lld",
              (long long)r[0], (long long)r[1], (long long)r[2], (long long)r[3], (long long)oh, (long long)ow,
              (long long)r[4], (long long)r[5]);
    }
    loom_npy_free(&sz);
}

static void compare_tensor(loom_image *src, const float *mean, const float *std, int nstat, loom_dtype dt,
                           const char *fixture) {
    loom_npy ref;
    if (!load(fixture, &ref)) return;
    size_t bytes = (size_t)ref.count * loom_dtype_size(dt);
    CHECK(ref.count == src->h * src->w * src->c && ref.bytes == bytes, "%s: size", fixture);
    void *out = calloc(1, bytes);
    CHECK_OK(ctx, loom_tf_to_tensor(ctx, src, mean, std, nstat, out, dt));
    int64_t bad = 0, first = -1;
    for (size_t i = 0; i < bytes; i++)
        if (((uint8_t *)out)[i] != ((uint8_t *)ref.data)[i]) bad++, first = first < 0 ? (int64_t)i : first;
    CHECK(bad == 0, "to_tensor %s (%s): %lld bytes differ, first at byte %lld", fixture, loom_dtype_name(dt),
          (long long)bad, (long long)first);
    free(out);
    loom_npy_free(&ref);
}

static void test_tensor(loom_image *a, loom_image *b) {
    const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
    compare_tensor(a, NULL, NULL, 0, LOOM_F32, "tt_a.npy");
    compare_tensor(a, mean, std, 3, LOOM_F32, "ttn_a.npy");
    compare_tensor(a, mean, std, 3, LOOM_F16, "ttn_a_f16.npy");
    compare_tensor(a, mean, std, 3, LOOM_BF16, "ttn_a_bf16.npy");
    const float m1 = 0.5f, s1 = 0.25f;
    compare_tensor(b, &m1, &s1, 1, LOOM_F32, "ttn_b.npy");
}

static void expect_err(loom_status st, const char *what) {
    CHECK(st == LOOM_ERR_INVALID_ARG, "%s: expected INVALID_ARG, got %s", what, loom_status_str(st));
    if (st != LOOM_OK) printf("  (%s -> \"%s\")\n", what, loom_last_error(ctx));
}

static void test_errors(loom_image *a) {
    uint8_t buf[1024];
    float out[1024];
    loom_image d = {buf, 0, 5, 3};
    expect_err(loom_tf_resize(ctx, a, &d), "resize to 0x5");
    d.h = 4, d.c = 1;
    expect_err(loom_tf_resize(ctx, a, &d), "resize 3 channels into 1");
    d.h = 11, d.w = 4, d.c = 3;
    expect_err(loom_tf_center_crop(ctx, a, &d), "crop 11x4 of 10x12");
    d.h = 0, d.w = 4;
    expect_err(loom_tf_center_crop(ctx, a, &d), "crop 0x4");
    d.h = 10, d.w = 11;
    expect_err(loom_tf_hflip(ctx, a, &d), "hflip into another size");
    loom_image two = {a->data, 10, 6, 2};
    d.h = 10, d.w = 6, d.c = 2;
    expect_err(loom_tf_vflip(ctx, &two, &d), "2-channel image");
    const float mean[3] = {0.5f, 0.5f, 0.5f}, std0[3] = {0.2f, 0.0f, 0.2f}, std[3] = {1, 1, 1};
    expect_err(loom_tf_to_tensor(ctx, a, mean, std0, 3, out, LOOM_F32), "std 0");
    expect_err(loom_tf_to_tensor(ctx, a, mean, std, 2, out, LOOM_F32), "2 mean/std for 3 channels");
    expect_err(loom_tf_to_tensor(ctx, a, mean, std, 3, out, LOOM_I32), "i32 output");
    expect_err(loom_tf_to_tensor(ctx, &two, NULL, NULL, 0, out, LOOM_F32), "2-channel to_tensor");
    int64_t oh, ow;
    expect_err(loom_tf_resize_size(ctx, 10, 12, 0, 0, &oh, &ow), "shorter side 0");
    expect_err(loom_tf_resize_size(ctx, 10, 12, 8, 8, &oh, &ow), "max_size == size");
}

/* The resize weights a context keeps (its last four axes): ten target
 * sizes, twice over on one context (every lookup after the fourth size
 * evicts), give the bytes a fresh context gives each time. */
static void test_weight_cache(const loom_image *a) {
    static const int64_t sizes[10][2] = {{7, 9}, {13, 5}, {40, 31}, {9, 7}, {5, 13}, {31, 40}, {7, 9}, {64, 3}, {3, 64}, {13, 5}};
    loom_ctx *fresh = NULL;
    int64_t differ = 0;
    for (int round = 0; round < 2; round++)
        for (int k = 0; k < 10; k++) {
            int64_t h = sizes[k][0], w = sizes[k][1];
            uint8_t *p = malloc((size_t)(h * w * a->c)), *q = malloc((size_t)(h * w * a->c));
            loom_image dp = {p, h, w, a->c}, dq = {q, h, w, a->c};
            CHECK_OK(ctx, loom_tf_resize(ctx, a, &dp));
            if (loom_ctx_create(NULL, &fresh) == LOOM_OK) {
                CHECK_OK(fresh, loom_tf_resize(fresh, a, &dq));
                loom_ctx_destroy(fresh);
            }
            differ += memcmp(p, q, (size_t)(h * w * a->c)) != 0;
            free(p), free(q);
        }
    CHECK(differ == 0, "resize: %lld of 20 results on one context differ from a fresh context's", (long long)differ);
}

int main(void) {
    snprintf(datadir, sizeof datadir, "%s", __FILE__);
    char *slash = strrchr(datadir, '/');
    snprintf(slash ? slash + 1 : datadir, sizeof datadir - (size_t)(slash ? slash + 1 - datadir : 0), "data/transforms");
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    loom_npy sa, sb;
    if (load("src_a.npy", &sa) && load("src_b.npy", &sb)) {
        loom_image a = image_of(&sa), b = image_of(&sb);
        test_geometry(&a, &b);
        test_tensor(&a, &b);
        test_errors(&a);
        test_weight_cache(&a);
        loom_npy_free(&sa);
        loom_npy_free(&sb);
    }
    loom_ctx_destroy(ctx);
    return tu_summary();
}
