/* tools/info.c — `loom info`: version, backends (built / available / why
 * not), their devices and capabilities, and the op table per backend. */
#include <stdio.h>
#include <string.h>

#include "loom/loom.h"

int loom_cmd_info(int argc, char **argv) {
    bool ops = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-ops")) {
            ops = false;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: loom info [--no-ops]\n"
                   "  --no-ops   leave out the op table (the dtypes of each op on each backend)\n");
            return 0;
        } else {
            fprintf(stderr, "loom info: unknown option '%s'\nusage: loom info [--no-ops]\n", argv[i]);
            return 2;
        }
    }
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) {
        fprintf(stderr, "loom info: out of memory\n");
        return 1;
    }
    printf("loom %s\n", loom_version());
    const char *names[16];
    int n = loom_backend_list(names, 16);
    printf("backends built:");
    for (int i = 0; i < n; i++) printf(" %s", names[i]);
    /* the GPU backends loom knows, less the ones in this build */
    static const char *const known[] = {"cuda", "vulkan", "opencl"};
    static const char *const why_not[] = {"nvcc and the CUDA toolkit not found at build time, or LOOM_CUDA=OFF",
                                          "Vulkan headers, glslangValidator or spirv-val not found at build time, "
                                          "or LOOM_VULKAN=OFF",
                                          "OpenCL not found at build time, or LOOM_OPENCL=OFF"};
    printf("\nbackends not built:");
    int n_missing = 0;
    for (int k = 0; k < 3; k++) {
        bool built = false;
        for (int i = 0; i < n && i < 16; i++) built |= !strcmp(names[i], known[k]);
        if (!built) printf("%s %s (%s)", n_missing++ ? ";" : "", known[k], why_not[k]);
    }
    printf("%s\n", n_missing ? "" : " none");
    loom_backend *bes[16] = {0};
    for (int i = 0; i < n; i++) {
        const char *why = NULL;
        if (!loom_backend_available(ctx, names[i], &why)) {
            printf("\n%s: built, not available (%s)\n", names[i], why);
            continue;
        }
        if (loom_backend_create(ctx, names[i], NULL, &bes[i]) != LOOM_OK) {
            printf("\n%s: built, failed to start: %s\n", names[i], loom_last_error(ctx));
            continue;
        }
        printf("\n");
        loom_backend_describe(bes[i], stdout);
    }
    if (ops) {
        printf("\nop table (dtypes per backend):\n%-26s", "op");
        for (int i = 0; i < n; i++)
            if (bes[i]) printf(" %-22s", names[i]);
        printf("\n");
        for (int op = 0; op < loom_op_count(); op++) {
            printf("%-26s", loom_op_name(op));
            for (int i = 0; i < n; i++) {
                if (!bes[i]) continue;
                char buf[64] = "";
                for (int dt = 0; dt < LOOM_DTYPE_COUNT; dt++)
                    if (loom_backend_supports(bes[i], op, (loom_dtype)dt)) {
                        if (*buf) strcat(buf, ",");
                        strcat(buf, loom_dtype_name((loom_dtype)dt));
                    }
                printf(" %-22s", *buf ? buf : "not supported");
            }
            printf("\n");
        }
    }
    for (int i = 0; i < n; i++) loom_backend_destroy(bes[i]);
    loom_ctx_destroy(ctx);
    return 0;
}
