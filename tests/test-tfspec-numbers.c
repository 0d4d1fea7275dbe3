/* tests/test-tfspec-numbers.c — numbers in a transform spec (loom_tf_parse,
 * loader/pipeline_spec.c) are decimal, as Python writes them: hex, inf and
 * nan (which strtod takes) are refused naming the spot; decimal forms
 * (ints, points, exponents, signs) still parse. */
#include <string.h>

#include "loom/loader.h"
#include "testutil.h"

int main(void) {
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    const char *bad[] = {"Resize(0x1c)", "Resize((0x10, 8))", "CenterCrop(inf)", "RandomHorizontalFlip(nan)",
                         "ColorJitter(0x1p-2)", "RandomCrop(8, padding=0X2)", "Resize((8, infinity))"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        loom_tf_step steps[8];
        int n = -1;
        loom_status st = loom_tf_parse(ctx, bad[k], steps, 8, &n);
        CHECK(st != LOOM_OK, "'%s' is refused (%s, %d steps)", bad[k], loom_status_str(st), n);
        if (st != LOOM_OK) printf("  %s -> %s\n", bad[k], loom_last_error(ctx));
    }
    const struct {
        const char *spec;
        int64_t h, w;
    } good[] = {{"Resize(28)", 28, 28}, {"Resize((16, 12))", 16, 12}, {"CenterCrop(2.4e1)", 24, 24},
                {"RandomCrop(+8, padding=2)", 8, 8}};
    for (size_t k = 0; k < sizeof good / sizeof *good; k++) {
        loom_tf_step steps[8];
        int n = -1;
        CHECK_OK(ctx, loom_tf_parse(ctx, good[k].spec, steps, 8, &n));
        CHECK(n == 1 && steps[0].h == good[k].h && steps[0].w == good[k].w, "'%s': %d steps, %lldx%lld", good[k].spec, n,
              n > 0 ? (long long)steps[0].h : 0LL, n > 0 ? (long long)steps[0].w : 0LL);
    }
    loom_ctx_destroy(ctx);
    return tu_summary();
}
