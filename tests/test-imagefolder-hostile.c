/* tests/test-imagefolder-hostile.c — the ImageFolder source and the image
 * decoders (loader/imagefolder.c) against trees and files a hostile user
 * could hand them: a symlink loop in the tree, a FIFO named like an image
 * (at open and put in place after it), a tiny BMP declaring a huge image
 * with a garbage compression field, PNG/JPEG/BMP headers over the pixel
 * limit, a JPEG that libjpeg-turbo only warns about. Each must end fast
 * with an error naming the file (an alarm guards against a hang).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "loom/loader.h"
#include "testutil.h"
#include "imgwrite.h"

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "test-imagefolder-hostile: timed out (a walk or a read blocks)\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(2);
    _exit(1);
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

static void write_img(const char *rel, int h, int w) {
    uint8_t *px = calloc((size_t)h * w * 3, 1);
    for (int k = 0; k < h * w * 3; k++) px[k] = (uint8_t)(k * 7);
    write_rgb(rel, px, h, w);
    free(px);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ln -s . train/a/l1; ln -s . train/a/l2: an error naming the link, fast */
static void test_symlink_loop(loom_ctx *ctx) {
    mkdirs("loop/train/a"), mkdirs("loop/train/b");
    write_img("loop/train/a/1.png", 4, 4), write_img("loop/train/a/2.png", 4, 4);
    write_img("loop/train/b/3.png", 4, 4);
    char root[512], l1[512], l2[512];
    path_of("loop/train", root, sizeof root);
    path_of("loop/train/a/l1", l1, sizeof l1), path_of("loop/train/a/l2", l2, sizeof l2);
    CHECK(symlink(".", l1) == 0 && symlink(".", l2) == 0, "symlinks");
    double t0 = now_s();
    loom_source *src = NULL;
    loom_status st = loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root}, &src);
    double dt = now_s() - t0;
    const char *e = loom_last_error(ctx);
    CHECK(st == LOOM_ERR_FORMAT && !src && strstr(e, l1) && strstr(e, "symlink loop"),
          "symlink loop: %s '%s' (%lld samples)", loom_status_str(st), e, src ? (long long)src->n : 0LL);
    CHECK(dt < 5, "symlink loop: %.1f s", dt);
    printf("  symlink loop -> %s\n", e);
    loom_source_destroy(src);
    /* a class folder linking back to the root */
    char lr[512];
    path_of("loop/train/b/up", lr, sizeof lr);
    unlink(l1), unlink(l2);
    CHECK(symlink("..", lr) == 0, "symlink ..");
    src = NULL;
    st = loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root}, &src);
    CHECK(st == LOOM_ERR_FORMAT && !src && strstr(loom_last_error(ctx), lr), "link to the root: %s '%s'",
          loom_status_str(st), loom_last_error(ctx));
    loom_source_destroy(src);
}

/* a FIFO named x.jpg: skipped and counted at open; put in place of an image
 * after open, an error when read; never a hang */
static void test_fifo(loom_ctx *ctx) {
    mkdirs("fifo/a"), mkdirs("fifo/b");
    write_img("fifo/a/1.png", 4, 4), write_img("fifo/b/2.png", 4, 4);
    char root[512], x[512];
    path_of("fifo", root, sizeof root);
    path_of("fifo/a/x.jpg", x, sizeof x);
    CHECK(mkfifo(x, 0600) == 0, "mkfifo");
    loom_source *src = NULL;
    CHECK_OK(ctx, loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root}, &src));
    if (!src) return;
    CHECK(src->n == 2 && loom_imagefolder_not_regular(src) == 1, "FIFO at open: %lld samples, %lld not regular",
          (long long)src->n, (long long)loom_imagefolder_not_regular(src));
    char p[512];
    path_of("fifo/b/2.png", p, sizeof p);
    unlink(p);
    CHECK(mkfifo(p, 0600) == 0, "mkfifo in place of an image");
    uint8_t *px = NULL;
    int64_t h, w;
    int32_t label;
    loom_status st = src->get_image(src, ctx, 1, NULL, &px, &h, &w, &label);
    CHECK(st == LOOM_ERR_IO && !px && strstr(loom_last_error(ctx), p) && strstr(loom_last_error(ctx), "not a regular"),
          "FIFO read: %s '%s'", loom_status_str(st), loom_last_error(ctx));
    printf("  FIFO -> %s\n", loom_last_error(ctx));
    free(px);
    loom_source_destroy(src);
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

static void put_le32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24); }
static void put_be32(uint8_t *p, uint32_t v) { p[3] = (uint8_t)v, p[2] = (uint8_t)(v >> 8), p[1] = (uint8_t)(v >> 16), p[0] = (uint8_t)(v >> 24); }

static uint32_t crc32_of(const uint8_t *b, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t k = 0; k < n; k++) {
        c ^= b[k];
        for (int j = 0; j < 8; j++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return ~c;
}

/* A PNG chunk at p (length, type, data, CRC); returns its size. */
static size_t png_chunk(uint8_t *p, const char *type, const uint8_t *data, uint32_t len) {
    put_be32(p, len);
    memcpy(p + 4, type, 4);
    if (len) memcpy(p + 8, data, len);
    put_be32(p + 8 + len, crc32_of(p + 4, len + 4));
    return 12 + (size_t)len;
}

/* A PNG of w x h RGB pixels whose image data is idat (not valid deflate). */
static size_t png_header(uint8_t *out, uint32_t w, uint32_t h, const uint8_t *idat, uint32_t nidat) {
    memcpy(out, "\x89PNG\r\n\x1a\n", 8);
    uint8_t ihdr[13] = {0};
    put_be32(ihdr, w), put_be32(ihdr + 4, h);
    ihdr[8] = 8, ihdr[9] = 2;
    size_t n = 8 + png_chunk(out + 8, "IHDR", ihdr, 13);
    if (nidat) n += png_chunk(out + n, "IDAT", idat, nidat);
    return n + png_chunk(out + n, "IEND", NULL, 0);
}

static void expect_decode_error(loom_ctx *ctx, const char *what, const uint8_t *b, size_t n, const loom_decode_hint *hint,
                                loom_status want, const char *words) {
    uint8_t *px = NULL;
    int64_t h = 0, w = 0;
    loom_status st = loom_image_decode(ctx, what, b, n, hint, &px, &h, &w);
    const char *e = loom_last_error(ctx);
    CHECK(st == want && !px && strstr(e, what) && strstr(e, words), "%s: %s '%s' (expected %s with '%s')", what,
          loom_status_str(st), st == LOOM_OK ? "" : e, loom_status_str(want), words);
    if (st != LOOM_OK) printf("  %s -> %s\n", what, e);
    free(px);
}

/* Declared sizes checked against the file and the pixel limit before any
 * pixel buffer is allocated. */
static void test_sizes(loom_ctx *ctx) {
    /* 55 bytes declaring 10093594 x 12 at 24 bits, compression 0xffffffff */
    uint8_t bmp[55] = {'B', 'M'};
    put_le32(bmp + 2, 55), put_le32(bmp + 10, 54), put_le32(bmp + 14, 40);
    put_le32(bmp + 18, 10093594), put_le32(bmp + 22, 12);
    bmp[26] = 1, bmp[28] = 24;
    put_le32(bmp + 30, 0xFFFFFFFFu);
    expect_decode_error(ctx, "bomb.bmp", bmp, sizeof bmp, NULL, LOOM_ERR_UNSUPPORTED, "compression");
    put_le32(bmp + 30, 0); /* uncompressed: the rows are not in the file */
    expect_decode_error(ctx, "bomb0.bmp", bmp, sizeof bmp, NULL, LOOM_ERR_FORMAT, "truncated BMP");

    uint8_t png[256];
    size_t n = png_header(png, 60000, 60000, NULL, 0);
    expect_decode_error(ctx, "huge.png", png, n, NULL, LOOM_ERR_UNSUPPORTED, "image too large: PNG of 60000x60000");
    /* within the limit, but 16 bytes of data cannot hold 10000 x 10000 pixels */
    const uint8_t z[16] = {0x78, 0x9c};
    n = png_header(png, 10000, 10000, z, sizeof z);
    expect_decode_error(ctx, "thin.png", png, n, NULL, LOOM_ERR_FORMAT, "cannot hold 10000x10000");

    /* the limit is configurable: through the hint, and an ImageFolder's desc */
    mkdirs("lim/a");
    write_img("lim/a/1.png", 4, 5);
    write_img("lim/a/2.bmp", 4, 5);
    size_t m = 0;
    uint8_t *b = read_bytes("lim/a/1.png", &m);
    expect_decode_error(ctx, "small.png", b, m, &(loom_decode_hint){.max_pixels = 19}, LOOM_ERR_UNSUPPORTED,
                        "image too large: PNG of 5x4 pixels (the limit is 19 pixels)");
    free(b);
    char root[512];
    path_of("lim", root, sizeof root);
    for (int64_t lim = 19; lim <= 20; lim++) {
        loom_source *src = NULL;
        CHECK_OK(ctx, loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root, .max_pixels = lim}, &src));
        for (int64_t i = 0; src && i < 2; i++) {
            uint8_t *px = NULL;
            int64_t h, w;
            int32_t label;
            loom_status st = src->get_image(src, ctx, i, NULL, &px, &h, &w, &label);
            CHECK(lim == 20 ? st == LOOM_OK : st == LOOM_ERR_UNSUPPORTED && strstr(loom_last_error(ctx), "too large"),
                  "max_pixels %lld, sample %lld: %s", (long long)lim, (long long)i, loom_status_str(st));
            free(px);
        }
        loom_source_destroy(src);
    }
}

#ifdef LOOM_HAVE_TURBOJPEG
/* 451 extraneous bytes before the end marker: libjpeg-turbo decodes with a
 * warning; an error unless warnings are accepted (skip_bad) */
static void test_jpeg_warning(loom_ctx *ctx) {
    mkdirs("warn/a");
    write_img("warn/a/x.jpg", 16, 16);
    size_t n = 0;
    uint8_t *b = read_bytes("warn/a/x.jpg", &n);
    if (!b || n < 4 || b[n - 2] != 0xFF || b[n - 1] != 0xD9) {
        CHECK(false, "a JPEG ending in FF D9");
        free(b);
        return;
    }
    uint8_t *c = malloc(n + 451);
    memcpy(c, b, n - 2);
    memset(c + n - 2, 0x33, 451);
    memcpy(c + n - 2 + 451, b + n - 2, 2);
    write_bytes("warn/a/x.jpg", c, n + 451);
    expect_decode_error(ctx, "extra.jpg", c, n + 451, NULL, LOOM_ERR_FORMAT, "extraneous bytes");
    uint8_t *px = NULL;
    int64_t h = 0, w = 0;
    CHECK_OK(ctx, loom_image_decode(ctx, "extra.jpg", c, n + 451, &(loom_decode_hint){.accept_warnings = true}, &px, &h, &w));
    CHECK(px && h == 16 && w == 16, "accepted warning: %lldx%lld", (long long)h, (long long)w);
    free(px);
    char root[512];
    path_of("warn", root, sizeof root);
    for (int skip = 0; skip < 2; skip++) {
        loom_source *src = NULL;
        CHECK_OK(ctx, loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root, .skip_bad = skip}, &src));
        if (!src) continue;
        int32_t label;
        px = NULL;
        loom_status st = src->get_image(src, ctx, 0, NULL, &px, &h, &w, &label);
        CHECK(skip ? st == LOOM_OK && loom_imagefolder_skipped(src) == 0 : st == LOOM_ERR_FORMAT,
              "ImageFolder, skip_bad %d: %s", skip, loom_status_str(st));
        free(px);
        loom_source_destroy(src);
    }
    free(b), free(c);
}
#endif

int main(void) {
    signal(SIGALRM, on_alarm);
    alarm(60);
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    if (!tu_tmpdir("imagefolder-hostile", tmp, sizeof tmp)) return 1;
    test_symlink_loop(ctx);
    test_fifo(ctx);
    test_sizes(ctx);
#ifdef LOOM_HAVE_TURBOJPEG
    test_jpeg_warning(ctx);
#endif
    tu_rm_rf(tmp);
    loom_ctx_destroy(ctx);
    return tu_summary();
}
