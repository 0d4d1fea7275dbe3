/* tests/imgwrite.h — writing test images for the image tests (test-imagefolder,
 * test-shard): a temp-dir root, mkdir -p below it, and an RGB image written
 * by its extension (.png / .bmp through stb_image_write; anything else as a
 * JPEG of quality 95, through TurboJPEG when the library was built with it,
 * since stb_image_write's JPEG writer trips UBSan). Include once per test,
 * after testutil.h. */
#ifndef LOOM_TESTS_IMGWRITE_H
#define LOOM_TESTS_IMGWRITE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#ifdef LOOM_HAVE_TURBOJPEG
#include <turbojpeg.h>
#endif

/* the test's temp root (mkdtemp'd by main) */
static char tmp[256];

static void path_of(const char *rel, char *out, size_t n) { snprintf(out, n, "%s/%s", tmp, rel); }

/* mkdir -p tmp/rel */
static void mkdirs(const char *rel) {
    char p[512];
    path_of(rel, p, sizeof p);
    for (char *s = p + strlen(tmp) + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

/* tmp/rel <- px (h, w, 3) u8 in the format of rel's extension; prints a line on failure */
static void write_rgb(const char *rel, const uint8_t *px, int h, int w) {
    char p[512];
    path_of(rel, p, sizeof p);
    const char *ext = strrchr(rel, '.');
    int ok = 0;
    if (ext && !strcasecmp(ext, ".png")) {
        ok = stbi_write_png(p, w, h, 3, px, w * 3);
    } else if (ext && !strcasecmp(ext, ".bmp")) {
        ok = stbi_write_bmp(p, w, h, 3, px);
    } else {
#ifdef LOOM_HAVE_TURBOJPEG
        tjhandle tj = tjInitCompress();
        unsigned char *jb = NULL;
        unsigned long js = 0;
        if (tj && tjCompress2(tj, px, w, 0, h, TJPF_RGB, &jb, &js, TJSAMP_444, 95, 0) == 0) {
            FILE *f = fopen(p, "wb");
            ok = f && fwrite(jb, 1, js, f) == js;
            if (f) fclose(f);
        }
        tjFree(jb);
        if (tj) tjDestroy(tj);
#else
        ok = stbi_write_jpg(p, w, h, 3, px, 95);
#endif
    }
    if (!ok) printf("cannot write %s\n", p);
}

#endif
