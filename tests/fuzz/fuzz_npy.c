/* tests/fuzz/fuzz_npy.c — libFuzzer target for the .npy parser
 * (loader/npy.c: loom_npy_parse). A failure must name the input and leave
 * the output empty; a success must describe data that lies inside the
 * buffer it returns (every byte is read). */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_init("fuzz_npy");
    loom_npy a;
    memset(&a, 0, sizeof a);
    loom_status s = loom_npy_parse(fz_ctx, "fuzz-input", data, size, &a);
    if (s != LOOM_OK) {
        if (a.data) fz_fail("fuzz_npy", "data left on failure");
        if (!strstr(loom_last_error(fz_ctx), "fuzz-input")) fz_fail("fuzz_npy", "message does not name the input");
        return 0;
    }
    size_t n = loom_npy_dtype_size(a.dtype);
    for (int k = 0; k < a.ndim; k++) {
        if (a.shape[k] < 0) fz_fail("fuzz_npy", "a negative dimension");
        n *= (size_t)a.shape[k];
    }
    if (n > size) fz_fail("fuzz_npy", "more data than input bytes");
    unsigned sum = 0;
    for (size_t i = 0; i < n; i++) sum += ((const uint8_t *)a.data)[i];
    (void)sum;
    loom_npy_free(&a);
    return 0;
}
