/* tests/fuzz/fuzz_walk.c — libFuzzer target for the ImageFolder walk
 * (loader/imagefolder.c: loom_source_open_imagefolder and get_image) over
 * a tree the input builds. Each pair of bytes (op, arg) makes one entry
 * under class folder c<arg % 4>: a folder, a subfolder, a valid 2x2 PNG, a
 * file of the next input bytes named .jpg/.png/.bmp, a symlink to '.',
 * to '..', to a sibling class, or a FIFO named like an image. The tree is
 * opened (skip_bad and a small pixel limit chosen by the first byte) and
 * its first samples read. Nothing may hang or crash; a failure must say
 * something; a success must give images of at least 1x1 pixel. */
#include "fuzz_util.h"

#include <sys/stat.h>
#include <unistd.h>

static const uint8_t png2x2[] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x02,
    0x00, 0x00, 0x00, 0x02, 0x08, 0x02, 0x00, 0x00, 0x00, 0xfd, 0xd4, 0x9a, 0x73, 0x00, 0x00, 0x00, 0x16, 0x49, 0x44, 0x41,
    0x54, 0x78, 0x9c, 0x63, 0x60, 0x60, 0x64, 0x62, 0x66, 0x61, 0x65, 0x60, 0x63, 0xe7, 0xe0, 0xe4, 0xe2, 0x06, 0x00, 0x01,
    0x3b, 0x00, 0x43, 0xc2, 0x5d, 0xd5, 0x4b, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_init("fuzz_walk");
    if (size < 1 || size > 4096) return 0;
    char root[300], p[1024], q[512];
    snprintf(root, sizeof root, "%s/root", fz_dir);
    fz_rm_rf(root);
    mkdir(root, 0777);
    static const char *const ext[3] = {"jpg", "png", "bmp"};
    size_t i = 1;
    for (int ops = 0; i + 1 < size && ops < 64; ops++) {
        uint8_t op = data[i] % 9, arg = data[i + 1];
        i += 2;
        int c = arg % 4;
        snprintf(q, sizeof q, "%s/c%d", root, c);
        mkdir(q, 0777);
        switch (op) {
        case 0: break; /* the class folder alone */
        case 1:
            snprintf(p, sizeof p, "%s/s%d", q, arg / 4 % 3);
            mkdir(p, 0777);
            break;
        case 2:
            snprintf(p, sizeof p, "%s/%s%u.png", q, arg & 64 ? "s0/" : "", arg);
            fz_put_quiet(p, png2x2, sizeof png2x2);
            break;
        case 3: {
            size_t n = i < size ? data[i] % 64 : 0;
            if (i < size) i++;
            if (n > size - i) n = size - i;
            snprintf(p, sizeof p, "%s/r%u.%s", q, arg, ext[arg % 3]);
            fz_put_quiet(p, data + i, n);
            i += n;
            break;
        }
        case 4: snprintf(p, sizeof p, "%s/l%u", q, arg), (void)!symlink(".", p); break;
        case 5: snprintf(p, sizeof p, "%s/u%u", q, arg), (void)!symlink("..", p); break;
        case 6:
            snprintf(p, sizeof p, "%s/x%u", q, arg);
            snprintf(q, sizeof q, "../c%d", (c + 1) % 4);
            (void)!symlink(q, p);
            break;
        case 7: snprintf(p, sizeof p, "%s/f%u.jpg", q, arg), mkfifo(p, 0600); break;
        default: snprintf(p, sizeof p, "%s/d%u.png", q, arg), (void)!symlink("nowhere", p); break;
        }
    }
    loom_imagefolder_desc d = {.root = root, .skip_bad = data[0] & 1, .max_pixels = 1 + (int64_t)(data[0] >> 1) * 64};
    loom_source *src = NULL;
    loom_status s = loom_source_open_imagefolder(fz_ctx, &d, &src);
    if (s != LOOM_OK) {
        if (src) fz_fail("fuzz_walk", "a source on failure");
        if (!loom_last_error(fz_ctx)[0]) fz_fail("fuzz_walk", "an error without a message");
        return 0;
    }
    if (src->n < 1) fz_fail("fuzz_walk", "an empty source");
    for (int64_t k = 0; k < src->n && k < 8; k++) {
        uint8_t *px = NULL;
        int64_t h = 0, w = 0;
        int32_t label = -1;
        s = src->get_image(src, fz_ctx, k, NULL, &px, &h, &w, &label);
        if (s == LOOM_OK && (h < 1 || w < 1 || !px || label < 0 || label >= src->num_classes))
            fz_fail("fuzz_walk", "a bad sample");
        if (s == LOOM_OK) {
            unsigned sum = 0;
            for (int64_t j = 0; j < h * w * 3; j++) sum += px[j];
            (void)sum;
        }
        free(px);
    }
    loom_source_destroy(src);
    return 0;
}
