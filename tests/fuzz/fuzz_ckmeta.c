/* tests/fuzz/fuzz_ckmeta.c — libFuzzer target for checkpoint metadata as
 * loom_checkpoint_load reads it (core/checkpoint.c: the plan step, the
 * tensors matched by name). The input, split at NUL bytes, is the value of
 * loom.plan_step followed by key/value pairs; a file with one tensor "w"
 * (f32 [2]) and that metadata is written (strings that are not valid UTF-8
 * are refused by the writer: nothing to load) and loaded into a plan with
 * a parameter "w". A failure must name the file and leave "w" unchanged; a
 * success must load it. */
#include "fuzz_util.h"

static loom_backend *be;
static loom_graph *g;
static loom_plan *plan;
static loom_tensor *w;

#define MAX_META 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_init("fuzz_ckmeta");
    if (!plan) {
        loom_backend_desc bd = {0};
        bd.threads = 1;
        loom_init zero = {LOOM_INIT_ZEROS, 0, 0};
        if (loom_backend_create(fz_ctx, "cpu", &bd, &be) != LOOM_OK ||
            loom_graph_create(fz_ctx, &(loom_graph_desc){.seed = 1}, &g) != LOOM_OK ||
            !(w = loom_param(g, "w", LOOM_F32, 1, (int64_t[]){2}, &zero)) ||
            loom_plan_compile(g, be, NULL, &plan) != LOOM_OK)
            fz_fail("fuzz_ckmeta", "cannot build the plan");
    }
    if (size > 65536) return 0;
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);
    buf[size] = 0;
    const char *meta[2 * MAX_META + 1];
    int nm = 0;
    meta[nm++] = LOOM_CHECKPOINT_PLAN_STEP_KEY;
    for (char *p = buf; nm < 2 * MAX_META && p <= buf + size; p += strlen(p) + 1) meta[nm++] = p;
    if (nm % 2) nm--; /* a key without its value */
    meta[nm] = NULL;
    char path[300];
    snprintf(path, sizeof path, "%s/ck.safetensors", fz_dir);
    const float val[2] = {1.5f, -2.0f};
    loom_st_tensor t = {"w", LOOM_F32, 1, {2}, val};
    if (loom_safetensors_write(fz_ctx, path, &t, 1, meta) != LOOM_OK) {
        free(buf);
        return 0;
    }
    const float zeros[2] = {0, 0};
    loom_plan_write(plan, w, zeros, sizeof zeros);
    loom_checkpoint_report rep;
    loom_safetensors *mf = NULL;
    loom_status s = loom_checkpoint_load(plan, path, &(loom_checkpoint_load_desc){.weights_only = size & 1}, &rep, &mf);
    float got[2];
    loom_plan_read(plan, w, got, sizeof got);
    if (s != LOOM_OK) {
        if (mf) fz_fail("fuzz_ckmeta", "the file is handed out on failure");
        if (!strstr(loom_last_error(fz_ctx), path)) fz_fail("fuzz_ckmeta", "message does not name the file");
        if (got[0] != 0 || got[1] != 0) fz_fail("fuzz_ckmeta", "a failed load changed the plan");
    } else {
        if (got[0] != val[0] || got[1] != val[1] || rep.loaded != 1) fz_fail("fuzz_ckmeta", "the tensor was not loaded");
        for (int k = 0; k < loom_safetensors_meta_count(mf); k++)
            if (!loom_safetensors_meta(mf, loom_safetensors_meta_key(mf, k))) fz_fail("fuzz_ckmeta", "a key without value");
        loom_safetensors_close(mf);
    }
    free(buf);
    return 0;
}
