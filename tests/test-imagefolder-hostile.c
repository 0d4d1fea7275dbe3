/* tests/test-imagefolder-hostile.c — the ImageFolder source and the image
 * decoders (loader/imagefolder.c) against trees and files a hostile user
 * could hand them: a symlink loop in the tree, a FIFO named like an image
 * (at open and put in place after it). Each must end fast
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

int main(void) {
    signal(SIGALRM, on_alarm);
    alarm(60);
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    if (!tu_tmpdir("imagefolder-hostile", tmp, sizeof tmp)) return 1;
    test_symlink_loop(ctx);
    test_fifo(ctx);
    tu_rm_rf(tmp);
    loom_ctx_destroy(ctx);
    return tu_summary();
}
