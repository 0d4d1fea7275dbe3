/* tests/test-idx.c — the IDX reader (loader/idx.c): loom_dataset_load_idx
 * and loom_dataset_load_mnist.
 *
 * - small image/label files, plain and gzip (written with zlib), 3-D and 4-D
 *   images, round trip exactly
 * - one bad file per rule, each a clear status whose message names the file:
 *   missing file, wrong magic, unsupported element type, wrong number of
 *   dimensions, a zero dimension, dimensions whose product overflows,
 *   truncated header, truncated dimension list, truncated data, trailing
 *   bytes, corrupt and truncated gzip streams, image/label count mismatch;
 *   on failure the output dataset is untouched
 * - the real Fashion-MNIST in /usr/share/datasets/fashion-mnist when present
 *   (train 60000, test 10000, 28x28, 10 balanced classes); skipped otherwise.
 * Files go to ./test-idx.d (ctest runs in the build tree).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>

#include "loom/loom.h"
#include "testutil.h"

#define TDIR "test-idx.d"

static loom_ctx *ctx;

static char *tpath(const char *name) {
    static char buf[8][512];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 512, TDIR "/%s", name);
    return p;
}

/* An IDX image in memory: magic (00 00 type ndim), big-endian dims, data. */
typedef struct bytes {
    uint8_t *p;
    size_t n;
} bytes;

static bytes idx_bytes(uint8_t type, int ndim, const uint32_t *dims, const uint8_t *data, size_t dn) {
    bytes b;
    b.n = 4 + 4 * (size_t)ndim + dn;
    b.p = malloc(b.n);
    b.p[0] = 0, b.p[1] = 0, b.p[2] = type, b.p[3] = (uint8_t)ndim;
    for (int i = 0; i < ndim; i++)
        for (int k = 0; k < 4; k++) b.p[4 + 4 * i + k] = (uint8_t)(dims[i] >> (24 - 8 * k));
    if (dn) memcpy(b.p + 4 + 4 * ndim, data, dn);
    return b;
}

static void put_plain(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(p, 1, n, f) == n, "write %s", path);
    if (f) fclose(f);
}

static void put_gz(const char *path, const void *p, size_t n) {
    gzFile f = gzopen(path, "wb9");
    CHECK(f && gzwrite(f, p, (unsigned)n) == (int)n, "gzwrite %s", path);
    if (f) gzclose(f);
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)sz + 1);
    *n = fread(b, 1, (size_t)sz, f);
    fclose(f);
    return b;
}

/* Images (3, 2, 4) and labels (3). */
static const uint32_t img_dims[3] = {3, 2, 4};
static uint8_t img_data[24];
static const uint8_t lab_data[3] = {0, 9, 4};

static void good_files(void) {
    for (int i = 0; i < 24; i++) img_data[i] = (uint8_t)(i * 7);
    bytes im = idx_bytes(0x08, 3, img_dims, img_data, 24);
    bytes lb = idx_bytes(0x08, 1, (uint32_t[]){3}, lab_data, 3);
    put_plain(tpath("img"), im.p, im.n);
    put_plain(tpath("lab"), lb.p, lb.n);
    put_gz(tpath("img.gz"), im.p, im.n);
    put_gz(tpath("lab.gz"), lb.p, lb.n);
    free(im.p), free(lb.p);
}

static void test_good(void) {
    const char *pairs[][2] = {{"img", "lab"}, {"img.gz", "lab.gz"}, {"img.gz", "lab"}};
    for (int k = 0; k < 3; k++) {
        loom_dataset ds = {0};
        CHECK_OK(ctx, loom_dataset_load_idx(ctx, tpath(pairs[k][0]), tpath(pairs[k][1]), &ds));
        CHECK(ds.n == 3 && ds.c == 1 && ds.h == 2 && ds.w == 4 && ds.num_classes == 10, "%s: n %lld c %d h %d w %d classes %d",
              pairs[k][0], (long long)ds.n, ds.c, ds.h, ds.w, ds.num_classes);
        CHECK(ds.pixels && !memcmp(ds.pixels, img_data, 24), "%s: pixels round trip", pairs[k][0]);
        CHECK(ds.labels && ds.labels[0] == 0 && ds.labels[1] == 9 && ds.labels[2] == 4, "%s: labels round trip",
              pairs[k][0]);
        loom_dataset_free(&ds);
    }
    /* (N, C, H, W) images */
    uint8_t px[24];
    for (int i = 0; i < 24; i++) px[i] = (uint8_t)(255 - i);
    bytes im = idx_bytes(0x08, 4, (uint32_t[]){2, 3, 2, 2}, px, 24);
    bytes lb = idx_bytes(0x08, 1, (uint32_t[]){2}, (const uint8_t[]){1, 1}, 2);
    put_gz(tpath("img4.gz"), im.p, im.n);
    put_plain(tpath("lab2"), lb.p, lb.n);
    free(im.p), free(lb.p);
    loom_dataset ds = {0};
    CHECK_OK(ctx, loom_dataset_load_idx(ctx, tpath("img4.gz"), tpath("lab2"), &ds));
    CHECK(ds.n == 2 && ds.c == 3 && ds.h == 2 && ds.w == 2 && ds.num_classes == 2 && ds.pixels && !memcmp(ds.pixels, px, 24),
          "4-D images: n %lld c %d h %d w %d", (long long)ds.n, ds.c, ds.h, ds.w);
    loom_dataset_free(&ds);
}

/* Loading (images, labels) must fail with `want`, a message naming `names`
 * and holding `needle`, and leave the output untouched. */
static void expect_fail(const char *label, const char *images, const char *labels, loom_status want, const char *names,
                        const char *needle) {
    loom_dataset ds;
    memset(&ds, 0x5A, sizeof ds);
    loom_dataset before = ds;
    loom_status s = loom_dataset_load_idx(ctx, images, labels, &ds);
    const char *msg = loom_last_error(ctx);
    CHECK(s == want, "%s: status '%s', expected '%s' (%s)", label, loom_status_str(s), loom_status_str(want), msg);
    CHECK(strstr(msg, names), "%s: message '%s' does not name %s", label, msg, names);
    CHECK(strstr(msg, needle), "%s: message '%s' lacks '%s'", label, msg, needle);
    CHECK(!memcmp(&ds, &before, sizeof ds), "%s: the output is untouched on failure", label);
}

/* Write b (plain) as `name` and expect loading it as images to fail. */
static void bad_images(const char *label, const char *name, bytes b, const char *needle) {
    put_plain(tpath(name), b.p, b.n);
    free(b.p);
    expect_fail(label, tpath(name), tpath("lab"), LOOM_ERR_FORMAT, tpath(name), needle);
}

static void test_bad(void) {
    expect_fail("missing images", tpath("nope"), tpath("lab"), LOOM_ERR_IO, tpath("nope"), "cannot open");
    expect_fail("missing labels", tpath("img"), tpath("nope"), LOOM_ERR_IO, tpath("nope"), "cannot open");

    bytes b = idx_bytes(0x08, 3, img_dims, img_data, 24);
    b.p[0] = 0x1f, b.p[1] = 0x8c; /* not gzip magic either */
    bad_images("wrong magic", "magic", b, "not an IDX file");
    bad_images("float elements", "type", idx_bytes(0x0D, 3, img_dims, img_data, 24), "0x0d is not supported");
    bad_images("int elements", "type2", idx_bytes(0x0C, 3, img_dims, img_data, 24), "not supported");
    bad_images("2-D images", "ndim2", idx_bytes(0x08, 2, (uint32_t[]){3, 8}, img_data, 24), "2 dimensions, expected 3..4");
    bad_images("5-D images", "ndim5", idx_bytes(0x08, 5, (uint32_t[]){3, 1, 2, 2, 2}, img_data, 24),
               "5 dimensions, expected 3..4");
    bad_images("zero dimension", "zero", idx_bytes(0x08, 3, (uint32_t[]){3, 0, 4}, img_data, 0), "dimension 1 is 0");
    bad_images("huge dimension", "huge", idx_bytes(0x08, 3, (uint32_t[]){3, 0x80000000u, 4}, img_data, 0),
               "expected 1..2^28");
    /* 2^28 * 2^8 * 2^28 overflows int64 if multiplied unchecked */
    bad_images("product overflow", "overflow", idx_bytes(0x08, 3, (uint32_t[]){1u << 28, 1u << 8, 1u << 28}, img_data, 0),
               "more than 2^36 elements");
    /* a few bytes that claim 800 MB: must fail as truncated, quickly */
    bad_images("claims 800 MB", "claims", idx_bytes(0x08, 3, (uint32_t[]){1u << 20, 28, 28}, img_data, 24),
               "truncated: 24 of 822083584");
    bytes h = idx_bytes(0x08, 3, img_dims, img_data, 24);
    h.n = 3;
    bad_images("truncated magic", "short", h, "truncated");
    h = idx_bytes(0x08, 3, img_dims, img_data, 24);
    h.n = 10;
    bad_images("truncated dimension list", "shortdims", h, "truncated in the dimension list");
    h = idx_bytes(0x08, 3, img_dims, img_data, 24);
    h.n -= 4;
    bad_images("truncated data", "shortdata", h, "truncated: 20 of 24 data bytes");
    bytes t = idx_bytes(0x08, 3, img_dims, img_data, 24);
    bytes t2 = {malloc(t.n + 5), t.n + 5};
    memcpy(t2.p, t.p, t.n);
    memset(t2.p + t.n, 0, 5);
    free(t.p);
    bad_images("trailing bytes", "trailing", t2, "trailing bytes after 24 data bytes");
    put_plain(tpath("empty"), "", 0);
    expect_fail("empty file", tpath("empty"), tpath("lab"), LOOM_ERR_FORMAT, tpath("empty"), "truncated");

    /* labels: wrong rank, count mismatch */
    bytes l2 = idx_bytes(0x08, 2, (uint32_t[]){3, 1}, lab_data, 3);
    put_plain(tpath("lab-2d"), l2.p, l2.n);
    free(l2.p);
    expect_fail("2-D labels", tpath("img"), tpath("lab-2d"), LOOM_ERR_FORMAT, tpath("lab-2d"), "2 dimensions, expected 1..1");
    bytes l4 = idx_bytes(0x08, 1, (uint32_t[]){4}, (const uint8_t[]){1, 2, 3, 4}, 4);
    put_plain(tpath("lab4"), l4.p, l4.n);
    free(l4.p);
    expect_fail("count mismatch", tpath("img"), tpath("lab4"), LOOM_ERR_FORMAT, tpath("img"), "has 3 images but");
    expect_fail("count mismatch (labels named)", tpath("img"), tpath("lab4"), LOOM_ERR_FORMAT, tpath("lab4"), "4 labels");

    /* gzip: a corrupt deflate stream, a truncated one, a bad trailer CRC.
     * The payload is large enough that the deflate data is not stored raw. */
    size_t big_n = 4 + 12 + 100 * 28 * 28;
    uint8_t *big = malloc(big_n);
    bytes bi = idx_bytes(0x08, 3, (uint32_t[]){100, 28, 28}, NULL, 0);
    memcpy(big, bi.p, bi.n);
    free(bi.p);
    for (size_t i = 16; i < big_n; i++) big[i] = (uint8_t)((i * i) >> 3);
    put_gz(tpath("big.gz"), big, big_n);
    bytes bl = idx_bytes(0x08, 1, (uint32_t[]){100}, big, 100);
    put_plain(tpath("lab100"), bl.p, bl.n);
    free(bl.p);
    loom_dataset ds = {0};
    CHECK_OK(ctx, loom_dataset_load_idx(ctx, tpath("big.gz"), tpath("lab100"), &ds));
    CHECK(ds.n == 100 && ds.pixels && !memcmp(ds.pixels, big + 16, big_n - 16), "larger gzip file round trips");
    loom_dataset_free(&ds);
    size_t gn = 0;
    uint8_t *gz = slurp(tpath("big.gz"), &gn);
    if (gz && gn > 64) {
        uint8_t *c = malloc(gn);
        memcpy(c, gz, gn);
        for (size_t i = gn / 3; i < gn / 3 + 16; i++) c[i] ^= 0xA5;
        put_plain(tpath("corrupt.gz"), c, gn);
        expect_fail("corrupt gzip stream", tpath("corrupt.gz"), tpath("lab100"), LOOM_ERR_FORMAT, tpath("corrupt.gz"),
                    "corrupt gzip");
        put_plain(tpath("cut.gz"), gz, gn / 2);
        expect_fail("truncated gzip stream", tpath("cut.gz"), tpath("lab100"), LOOM_ERR_FORMAT, tpath("cut.gz"), ": ");
        printf("truncated gzip: %s\n", loom_last_error(ctx));
        memcpy(c, gz, gn);
        c[gn - 6] ^= 0xFF; /* the CRC32 in the trailer */
        put_plain(tpath("crc.gz"), c, gn);
        expect_fail("gzip CRC mismatch", tpath("crc.gz"), tpath("lab100"), LOOM_ERR_FORMAT, tpath("crc.gz"), ": ");
        printf("bad CRC: %s\n", loom_last_error(ctx));
        free(c);
    }
    free(gz);
    free(big);

    /* a directory where the file should be */
    expect_fail("a directory", TDIR, tpath("lab"), LOOM_ERR_IO, TDIR, "not a regular file");
}

static void test_mnist_dir_errors(void) {
    loom_dataset ds = {0};
    loom_status s = loom_dataset_load_mnist(ctx, TDIR "/no-such-dir", true, &ds);
    CHECK(s == LOOM_ERR_IO && strstr(loom_last_error(ctx), "no-such-dir") && strstr(loom_last_error(ctx), "train-images"),
          "missing MNIST directory: %s: %s", loom_status_str(s), loom_last_error(ctx));
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void test_fashion_mnist(void) {
    const char *dir = "/usr/share/datasets/fashion-mnist";
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        fprintf(stderr, "test-idx: SKIP (this part only): %s is absent (apt-get install dataset-fashion-mnist)\n", dir);
        return;
    }
    for (int train = 1; train >= 0; train--) {
        loom_dataset ds = {0};
        double t0 = now_s();
        CHECK_OK(ctx, loom_dataset_load_mnist(ctx, NULL, train, &ds));
        double el = now_s() - t0;
        int64_t want = train ? 60000 : 10000;
        CHECK(ds.n == want && ds.c == 1 && ds.h == 28 && ds.w == 28 && ds.num_classes == 10,
              "fashion-mnist %s: n %lld %dx%dx%d classes %d", train ? "train" : "test", (long long)ds.n, ds.c, ds.h, ds.w,
              ds.num_classes);
        int64_t hist[10] = {0};
        double mean = 0;
        for (int64_t i = 0; i < ds.n; i++)
            if (ds.labels[i] >= 0 && ds.labels[i] < 10) hist[ds.labels[i]]++;
        for (int64_t i = 0; i < ds.n * 28 * 28; i++) mean += ds.pixels[i];
        mean /= (double)(ds.n * 28 * 28) * 255.0;
        bool balanced = true;
        for (int c = 0; c < 10; c++) balanced &= hist[c] == want / 10;
        CHECK(balanced, "fashion-mnist %s: every class has %lld samples", train ? "train" : "test", (long long)want / 10);
        CHECK(mean > 0.25 && mean < 0.32, "fashion-mnist pixel mean %.4f (0.2860 train / 0.2868 test expected)", mean);
        printf("fashion-mnist %s: %lld images %dx%d, %d classes, pixel mean %.4f, loaded in %.2f s\n",
               train ? "train" : "test", (long long)ds.n, ds.h, ds.w, ds.num_classes, mean, el);
        loom_dataset_free(&ds);
    }
}

int main(void) {
    mkdir(TDIR, 0777);
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    good_files();
    test_good();
    test_bad();
    test_mnist_dir_errors();
    test_fashion_mnist();
    loom_ctx_destroy(ctx);
    return tu_summary();
}
