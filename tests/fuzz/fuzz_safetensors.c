/* tests/fuzz/fuzz_safetensors.c — libFuzzer target for the safetensors reader
 * (core/safetensors.c).
 *
 * Input bytes are parsed in place as a whole file (borrowed, so the sanitizer
 * sees any read past the input). A rejected input must leave *out NULL and a
 * message that starts with the file's name. An accepted one is walked: every
 * byte of every tensor is read, every name and metadata key is looked up,
 * and it is written back with loom_safetensors_write and read again, which
 * must give the same tensors and metadata.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom/loom.h"
#include "safetensors_impl.h" /* loom__safetensors_parse */

#define NAME "fuzz-input"

static loom_ctx *ctx;
static char out_path[256];

static void fail(const char *why) {
    fprintf(stderr, "fuzz_safetensors: invariant broken: %s (%s)\n", why, loom_last_error(ctx));
    abort();
}

static int same_tensor(const loom_st_tensor *a, const loom_st_tensor *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim || strcmp(a->name, b->name)) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->dims[d] != b->dims[d]) return 0;
    size_t n = loom_st_tensor_nbytes(a);
    return n == loom_st_tensor_nbytes(b) && (!n || !memcmp(a->data, b->data, n));
}

/* Write st back out and read it again: same tensors, same metadata. */
static void round_trip(const loom_safetensors *st) {
    int n = loom_safetensors_count(st), nm = loom_safetensors_meta_count(st);
    for (int i = 0; i < n; i++)
        if (!loom_safetensors_tensor(st, i)->name[0]) return; /* the writer refuses empty names */
    if (n < 0 || nm < 0) fail("a negative count");
    loom_st_tensor *t = malloc((n > 0 ? (size_t)n : 1) * sizeof *t);
    const char **meta = malloc((2 * (size_t)nm + 1) * sizeof *meta);
    for (int i = 0; i < n; i++) t[i] = *loom_safetensors_tensor(st, i);
    for (int i = 0; i < nm; i++) {
        meta[2 * i] = loom_safetensors_meta_key(st, i);
        meta[2 * i + 1] = loom_safetensors_meta(st, meta[2 * i]);
    }
    meta[2 * nm] = NULL;
    if (loom_safetensors_write(ctx, out_path, t, n, meta) != LOOM_OK) fail("writing a valid file back");
    loom_safetensors *r = NULL;
    if (loom_safetensors_open(ctx, out_path, &r) != LOOM_OK) fail("reading back what was written");
    if (loom_safetensors_count(r) != n || loom_safetensors_meta_count(r) != nm) fail("round trip: counts differ");
    for (int i = 0; i < n; i++) {
        const loom_st_tensor *b = loom_safetensors_find(r, t[i].name);
        if (!b || !same_tensor(&t[i], b)) fail("round trip: a tensor differs");
    }
    for (int i = 0; i < nm; i++) {
        const char *v = loom_safetensors_meta(r, meta[2 * i]);
        if (!v || strcmp(v, meta[2 * i + 1])) fail("round trip: metadata differs");
    }
    loom_safetensors_close(r);
    free(t);
    free(meta);
}

static void cleanup(void) { unlink(out_path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ctx) {
        loom_ctx_create(NULL, &ctx);
        atexit(cleanup);
        snprintf(out_path, sizeof out_path, "/tmp/loom-fuzz-safetensors-%ld.safetensors", (long)getpid());
    }
    loom_safetensors *st = (loom_safetensors *)&ctx; /* must be overwritten */
    loom_status s = loom__safetensors_parse(ctx, NAME, (uint8_t *)data, size, false, &st);
    if (s != LOOM_OK) {
        if (st) fail("*out not NULL after a failure");
        if (strncmp(loom_last_error(ctx), NAME ": ", strlen(NAME) + 2)) fail("message does not start with the file name");
        if (s != LOOM_ERR_FORMAT && s != LOOM_ERR_OOM) fail("unexpected status");
        return 0;
    }
    unsigned sum = 0;
    for (int i = 0; i < loom_safetensors_count(st); i++) {
        const loom_st_tensor *t = loom_safetensors_tensor(st, i);
        const uint8_t *p = t->data;
        for (size_t k = 0, n = loom_st_tensor_nbytes(t); k < n; k++) sum += p[k];
        if (loom_safetensors_find(st, t->name) != t) fail("find does not return the tensor by its name");
        if (t->ndim < 0 || t->ndim > LOOM_MAX_DIMS) fail("ndim out of range");
    }
    for (int i = 0; i < loom_safetensors_meta_count(st); i++)
        if (!loom_safetensors_meta(st, loom_safetensors_meta_key(st, i))) fail("metadata key not found");
    (void)sum;
    round_trip(st);
    loom_safetensors_close(st);
    return 0;
}
