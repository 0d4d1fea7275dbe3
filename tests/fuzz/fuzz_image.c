/* tests/fuzz/fuzz_image.c — libFuzzer target for the image decoders of the
 * ImageFolder source (loader/imagefolder.c: loom_image_decode; JPEG, PNG,
 * BMP, and the checks in front of stb_image / TurboJPEG).
 *
 * The input is decoded from memory, with no hint and with a 1/2..1/8 scale
 * hint. A failure must name the input and leave no buffer; a success must
 * give a non-empty image whose every byte can be read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/loom.h"

static loom_ctx *ctx;

static void fail(const char *why) {
    fprintf(stderr, "fuzz_image: invariant broken: %s (%s)\n", why, loom_last_error(ctx));
    abort();
}

static void decode(const uint8_t *data, size_t size, const loom_decode_hint *hint) {
    uint8_t *px = (uint8_t *)1;
    int64_t h = -1, w = -1;
    loom_status s = loom_image_decode(ctx, "fuzz-input", data, size, hint, &px, &h, &w);
    if (s != LOOM_OK) {
        if (px) fail("a buffer is left on failure");
        if (!strstr(loom_last_error(ctx), "fuzz-input")) fail("message does not name the input");
        return;
    }
    if (!px || h < 1 || w < 1) fail("success without an image");
    unsigned sum = 0;
    for (size_t k = 0; k < (size_t)h * (size_t)w * 3; k++) sum += px[k];
    if (sum == 0xFFFFFFFFu) fprintf(stderr, "(unlikely sum)\n");
    free(px);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ctx && loom_ctx_create(NULL, &ctx) != LOOM_OK) abort();
    decode(data, size, NULL);
    decode(data, size, &(loom_decode_hint){.min_h = 4, .min_w = 4});
    return 0;
}
