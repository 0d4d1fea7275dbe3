/* tests/fuzz/fuzz_tokens.c — libFuzzer target for raw token files
 * (loader/tokens.c: loom_source_open_tokens). The first three bytes choose
 * the width (2 or 4), seq_len (1..16) and vocab_size (0 = none, or 1..255 *
 * 257); the rest is the file. A failure must name the file; a success must
 * give samples whose ids are all within the vocabulary. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_init("fuzz_tokens");
    if (size < 3) return 0;
    char path[300];
    snprintf(path, sizeof path, "%s/tokens.bin", fz_dir);
    fz_put("fuzz_tokens", path, data + 3, size - 3);
    loom_tokens_desc d = {.width = data[0] & 1 ? 4 : 2, .seq_len = 1 + data[1] % 16, .vocab_size = (int64_t)data[2] * 257};
    loom_source *src = NULL;
    loom_status s = loom_source_open_tokens(fz_ctx, path, &d, &src);
    if (s != LOOM_OK) {
        if (src) fz_fail("fuzz_tokens", "a source on failure");
        if (!strstr(loom_last_error(fz_ctx), path)) fz_fail("fuzz_tokens", "message does not name the file");
        return 0;
    }
    if (src->n < 1 || src->kind != LOOM_SAMPLE_I32) fz_fail("fuzz_tokens", "an empty or non-I32 source");
    size_t per = (size_t)src->c * (size_t)src->h * (size_t)src->w;
    int32_t *ids = malloc(per * sizeof *ids);
    for (int64_t i = 0; ids && i < src->n && i < 8; i++) {
        int32_t label;
        if (src->get(src, fz_ctx, i, ids, &label) != LOOM_OK) fz_fail("fuzz_tokens", "get failed on an opened file");
        for (size_t k = 0; k < per; k++)
            if (ids[k] < 0 || (d.vocab_size && ids[k] >= d.vocab_size)) fz_fail("fuzz_tokens", "an id out of range");
    }
    free(ids);
    loom_source_destroy(src);
    return 0;
}
