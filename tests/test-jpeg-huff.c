/* tests/test-jpeg-huff.c — loom's baseline Huffman decoder (loader/jpeg_huff.c)
 * against libjpeg-turbo's own, through loom_image_decode.
 *
 * 1. JPEGs written here with libjpeg's compressor in many kinds: gray and
 *    YCbCr at 4:4:4, 4:2:2, 4:2:0, 4:4:0 and 4:1:1, sizes from 1x1 to
 *    500x375, qualities 5 to 100 (100 gives the longest values), standard
 *    and optimised Huffman tables, restart intervals of 0, 1, 5 MCUs and of
 *    a row. Each decoded whole, DCT-scaled 1/2 and 1/8, and in a region,
 *    with the decoder on and off: the same pixels, and on took every scan
 *    and gave none back.
 * 2. Damaged copies (truncated data, flipped bits, bytes before the end
 *    marker, a restart marker out of turn, a marker inside the data, a
 *    stuffed zero changed): the same status with the decoder on and off,
 *    with and without accept_warnings, and the same pixels when decoded.
 * Skips (77) when loom was built without jpegint.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../loader/jpeg_huff.h"
#include "loom/loader.h"
#include "loom/source.h"
#include "testutil.h"

#if defined(LOOM_HAVE_LIBJPEG) && defined(LOOM_HAVE_JPEGINT)
#include <jpeglib.h>

static uint32_t rng_state = 2024;
static uint32_t rnd(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

/* Ramps, noise and hard edges: large coefficients at every frequency. */
static uint8_t *picture(int h, int w, int c) {
    uint8_t *p = malloc((size_t)h * w * c);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < c; k++) {
                int v = (x * 5 + y * 3 + k * 60) % 256;
                if (((x / 3) ^ (y / 5)) & 1) v = 255 - v;
                p[((size_t)y * w + x) * c + k] = (uint8_t)(v / 2 + rnd() % 128);
            }
    return p;
}

typedef struct kind {
    int gray, hs, vs;            /* luma sampling factors (chroma 1x1) */
    int quality, optimize, restart, restart_rows;
} kind;

static unsigned char *compress(const uint8_t *px, int h, int w, const kind *k, unsigned long *n) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    unsigned char *out = NULL;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, &out, n);
    c.image_width = (JDIMENSION)w, c.image_height = (JDIMENSION)h;
    c.input_components = k->gray ? 1 : 3, c.in_color_space = k->gray ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, k->quality, TRUE);
    c.optimize_coding = k->optimize ? TRUE : FALSE;
    c.restart_interval = (unsigned)k->restart, c.restart_in_rows = k->restart_rows;
    if (!k->gray) c.comp_info[0].h_samp_factor = k->hs, c.comp_info[0].v_samp_factor = k->vs;
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)(px + (size_t)c.next_scanline * w * c.input_components);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    return out;
}

typedef struct box_hint {
    int64_t box[4];
} box_hint;

static bool give_box(void *user, int64_t h, int64_t w, int64_t box[4]) {
    box_hint *q = user;
    box[0] = q->box[0] * h / 100, box[1] = q->box[1] * w / 100, box[2] = q->box[2] * h / 100, box[3] = q->box[3] * w / 100;
    if (box[2] <= box[0]) box[2] = box[0] + 1;
    if (box[3] <= box[1]) box[3] = box[1] + 1;
    return true;
}

/* Decode with the decoder on and off: same status, same pixels. Returns
 * the status with it on. */
static loom_status both(loom_ctx *ctx, const char *what, const unsigned char *b, size_t n, const loom_decode_hint *hint) {
    uint8_t *px[2] = {NULL, NULL};
    int64_t h[2] = {0, 0}, w[2] = {0, 0};
    loom_status st[2];
    for (int on = 0; on < 2; on++) {
        loom__jpeg_huff_force(on);
        st[on] = loom_image_decode(ctx, what, b, n, hint, &px[on], &h[on], &w[on]);
    }
    loom__jpeg_huff_force(-1);
    CHECK(st[0] == st[1], "%s: status %s with the decoder off, %s on (%s)", what, loom_status_str(st[0]), loom_status_str(st[1]),
          loom_last_error(ctx));
    if (st[0] == LOOM_OK && st[1] == LOOM_OK) {
        CHECK(h[0] == h[1] && w[0] == w[1], "%s: %lldx%lld off, %lldx%lld on", what, (long long)h[0], (long long)w[0],
              (long long)h[1], (long long)w[1]);
        size_t bytes = (size_t)h[0] * (size_t)w[0] * 3, diff = 0;
        for (size_t i = 0; h[0] == h[1] && w[0] == w[1] && i < bytes; i++) diff += px[0][i] != px[1][i];
        CHECK(diff == 0, "%s: %zu of %zu bytes differ", what, diff, bytes);
    }
    free(px[0]), free(px[1]);
    return st[1];
}

static void test_valid(loom_ctx *ctx) {
    const int samp[][3] = {{1, 0, 0}, {0, 1, 1}, {0, 2, 1}, {0, 2, 2}, {0, 1, 2}, {0, 4, 1}};
    const int sizes[][2] = {{1, 1}, {8, 8}, {13, 7}, {33, 17}, {48, 64}, {97, 131}, {375, 500}};
    const int quals[] = {5, 50, 90, 100};
    const int restarts[][2] = {{0, 0}, {1, 0}, {5, 0}, {0, 1}};
    int files = 0;
    for (int s = 0; s < 6; s++)
        for (int z = 0; z < 7; z++)
            for (int q = 0; q < 4; q++)
                for (int r = 0; r < 4; r++) {
                    kind k = {samp[s][0], samp[s][1], samp[s][2], quals[q], (z + q + r) & 1, restarts[r][0], restarts[r][1]};
                    if (z == 6 && (q & 1)) continue; /* the largest size at two qualities */
                    int hh = sizes[z][0], ww = sizes[z][1];
                    uint8_t *px = picture(hh, ww, k.gray ? 1 : 3);
                    unsigned long n = 0;
                    unsigned char *b = compress(px, hh, ww, &k, &n);
                    char what[160];
                    snprintf(what, sizeof what, "%s %dx%d h%dv%d q%d opt%d rst%d/%d", k.gray ? "gray" : "ycc", hh, ww, k.hs,
                             k.vs, k.quality, k.optimize, k.restart, k.restart_rows);
                    long t0, g0, t1, g1;
                    loom__jpeg_huff_counts(&t0, &g0);
                    CHECK(both(ctx, what, b, n, NULL) == LOOM_OK, "%s: %s", what, loom_last_error(ctx));
                    /* DCT-scaled (the hint allows 1/2 or 1/8), and a region */
                    loom_decode_hint half = {.min_h = (hh + 1) / 2, .min_w = (ww + 1) / 2},
                                     eighth = {.min_h = 1, .min_w = 1};
                    box_hint bh = {{(int64_t)(rnd() % 50), (int64_t)(rnd() % 50), 50 + (int64_t)(rnd() % 51), 50 + (int64_t)(rnd() % 51)}};
                    loom_decode_hint region = {.region = give_box, .user = &bh};
                    CHECK(both(ctx, what, b, n, &half) == LOOM_OK, "%s (1/2): %s", what, loom_last_error(ctx));
                    CHECK(both(ctx, what, b, n, &eighth) == LOOM_OK, "%s (1/8): %s", what, loom_last_error(ctx));
                    CHECK(both(ctx, what, b, n, &region) == LOOM_OK, "%s (region): %s", what, loom_last_error(ctx));
                    loom__jpeg_huff_counts(&t1, &g1);
                    CHECK(t1 - t0 == 4 && g1 == g0, "%s: the decoder took %ld of 4 scans, gave back %ld", what, t1 - t0,
                          g1 - g0);
                    free(px);
                    free(b);
                    files++;
                }
    printf("valid: %d files, each whole, 1/2, 1/8 and in a region\n", files);
}

/* the offset of the scan's data (after SOS's header) and of the end marker */
static void scan_span(const unsigned char *b, size_t n, size_t *d0, size_t *d1) {
    size_t i = 2;
    while (i + 4 <= n && b[i] == 0xFF && b[i + 1] != 0xDA) i += 2 + ((size_t)b[i + 2] << 8 | b[i + 3]);
    *d0 = i + 2 + ((size_t)b[i + 2] << 8 | b[i + 3]);
    *d1 = n - 2;
}

static void damaged(loom_ctx *ctx, const char *what, const unsigned char *b, size_t n, int *ok, int *bad) {
    loom_decode_hint warn = {.accept_warnings = true};
    loom_status a = both(ctx, what, b, n, NULL), c = both(ctx, what, b, n, &warn);
    *ok += a == LOOM_OK || c == LOOM_OK;
    *bad += a != LOOM_OK;
}

static void test_damaged(loom_ctx *ctx) {
    int ok = 0, bad = 0, cases = 0;
    for (int r = 0; r < 3; r++) {
        kind k = {0, 2, 2, 90, r == 1, r == 2 ? 3 : 0, 0};
        uint8_t *px = picture(64, 80, 3);
        unsigned long n = 0;
        unsigned char *b = compress(px, 64, 80, &k, &n);
        size_t d0, d1;
        scan_span(b, n, &d0, &d1);
        unsigned char *m = malloc(n + 64);
        char what[96];
        /* the data cut short at several points, the end marker kept */
        for (int cut = 1; cut < 8; cut++) {
            size_t at = d0 + (d1 - d0) * (size_t)cut / 8;
            memcpy(m, b, at);
            m[at] = 0xFF, m[at + 1] = 0xD9;
            snprintf(what, sizeof what, "rst%d cut at %d/8", k.restart, cut);
            damaged(ctx, what, m, at + 2, &ok, &bad), cases++;
        }
        /* bits flipped in the data */
        for (int f = 0; f < 40; f++) {
            memcpy(m, b, n);
            size_t at = d0 + rnd() % (d1 - d0);
            m[at] ^= (unsigned char)(1u << (rnd() % 8));
            snprintf(what, sizeof what, "rst%d bit flipped at %zu", k.restart, at);
            damaged(ctx, what, m, n, &ok, &bad), cases++;
        }
        /* bytes between the data and the end marker */
        for (int extra = 1; extra <= 9; extra += 4) {
            memcpy(m, b, d1);
            for (int i = 0; i < extra; i++) m[d1 + (size_t)i] = (unsigned char)(0x11 * (i + 1));
            m[d1 + (size_t)extra] = 0xFF, m[d1 + (size_t)extra + 1] = 0xD9;
            snprintf(what, sizeof what, "rst%d %d bytes before the end marker", k.restart, extra);
            damaged(ctx, what, m, d1 + (size_t)extra + 2, &ok, &bad), cases++;
        }
        /* a marker inside the data (a stuffed zero changed), a restart out of turn */
        for (size_t i = d0; i + 1 < d1; i++) {
            if (b[i] != 0xFF) continue;
            memcpy(m, b, n);
            if (b[i + 1] == 0) m[i + 1] = 0xC4, snprintf(what, sizeof what, "rst%d marker at %zu", k.restart, i);
            else m[i + 1] = (unsigned char)(0xD0 + ((b[i + 1] - 0xD0 + 3) & 7)), snprintf(what, sizeof what, "rst%d restart out of turn at %zu", k.restart, i);
            damaged(ctx, what, m, n, &ok, &bad), cases++;
            if (cases % 3) i += 40; /* a sample of them */
        }
        free(m);
        free(b);
        free(px);
    }
    printf("damaged: %d files (%d decoded with accept_warnings, %d refused without)\n", cases, ok, bad);
    CHECK(bad > 0 && ok > 0, "the damaged files were neither all refused nor all decoded (%d, %d)", bad, ok);
}

int main(void) {
    loom_ctx *ctx = NULL;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    test_valid(ctx);
    test_damaged(ctx);
    loom_ctx_destroy(ctx);
    return tu_summary();
}

#else
int main(void) { return tu_skip("loom was built without jpegint.h (libjpeg-turbo's module interface)"); }
#endif
