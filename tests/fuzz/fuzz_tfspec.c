/* tests/fuzz/fuzz_tfspec.c — libFuzzer target for the transform-spec
 * parser (loom_tf_parse, "Resize((32, 32)), RandomCrop(28, padding=4),
 * hflip"). The input is the spec, cut at its first NUL. A failure must say
 * something; a success must give 0..max steps, each of a known kind. */
#include "fuzz_util.h"

#define MAX_STEPS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_init("fuzz_tfspec");
    if (size > 4096) return 0;
    char *spec = malloc(size + 1);
    if (!spec) return 0;
    if (size) memcpy(spec, data, size);
    spec[size] = 0;
    loom_tf_step steps[MAX_STEPS];
    int n = -1;
    loom_status s = loom_tf_parse(fz_ctx, spec, steps, MAX_STEPS, &n);
    if (s != LOOM_OK) {
        if (!loom_last_error(fz_ctx)[0]) fz_fail("fuzz_tfspec", "an error without a message");
    } else if (n < 0 || n > MAX_STEPS) {
        fz_fail("fuzz_tfspec", "a step count out of range");
    }
    free(spec);
    return 0;
}
