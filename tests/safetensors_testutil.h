/* tests/safetensors_testutil.h — helpers shared by the safetensors tests
 * (test-safetensors.c, test-safetensors-bad.c).
 *
 * defines: ctx, be (the test's context and CPU backend), tpath (a file in
 *          TDIR, which the test defines before including this), write_file,
 *          read_file, same_file, temp_files_left, fill_random, mk_raw / mk
 *          (safetensors images built by hand), bad_img / bad (an image that
 *          must fail to open), good_img (one that must open).
 *
 * Header-only, like testutil.h: each test program is one translation unit.
 */
#ifndef LOOM_SAFETENSORS_TESTUTIL_H
#define LOOM_SAFETENSORS_TESTUTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/loom.h"
#include "safetensors_impl.h" /* loom__safetensors_parse */
#include "testutil.h"

#ifndef TDIR
#error "define TDIR (the test's file directory) before including safetensors_testutil.h"
#endif

static loom_ctx *ctx;
static loom_backend *be;

static inline char *tpath(const char *name) {
    static char buf[8][512];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 512, TDIR "/%s", name);
    return p;
}

static inline bool write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static inline uint8_t *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(sz > 0 ? (size_t)sz : 1);
    *n = b ? fread(b, 1, (size_t)sz, f) : 0;
    fclose(f);
    return b;
}

static inline bool same_file(const char *path, const uint8_t *want, size_t n) {
    size_t got_n = 0;
    uint8_t *got = read_file(path, &got_n);
    bool ok = got && got_n == n && memcmp(got, want, n) == 0;
    free(got);
    return ok;
}

/* Temporary files ("<name>.tmp.<pid>.<k>") left in TDIR. */
static inline int temp_files_left(void) {
    DIR *d = opendir(TDIR);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(d);
    return n;
}

static inline void fill_random(void *p, size_t n, uint64_t seed) {
    uint8_t *b = p;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t w[4];
        loom_philox(seed, 99, i / 4, w);
        for (size_t k = 0; k < 4 && i + k < n; k++) b[i + k] = (uint8_t)(w[0] >> (8 * k));
    }
}

/* A safetensors image: an explicit header length, the JSON, the data. */
static inline uint8_t *mk_raw(uint64_t hl, const char *json, const void *data, size_t dn, size_t *n) {
    size_t jl = strlen(json);
    *n = 8 + jl + dn;
    uint8_t *b = malloc(*n);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(hl >> (8 * i));
    memcpy(b + 8, json, jl);
    if (dn) memcpy(b + 8 + jl, data, dn);
    return b;
}
static inline uint8_t *mk(const char *json, const void *data, size_t dn, size_t *n) {
    return mk_raw(strlen(json), json, data, dn, n);
}

/* The image must fail to open with status `want` and a message holding
 * `needle` and the file's name, from a file and from memory alike. */
static inline void bad_img(const char *label, const uint8_t *img, size_t n, loom_status want, const char *needle) {
    const char *path = tpath("bad.safetensors");
    CHECK(write_file(path, img, n), "%s: cannot write %s", label, path);
    loom_safetensors *st = NULL;
    loom_status s = loom_safetensors_open(ctx, path, &st);
    const char *msg = loom_last_error(ctx);
    CHECK(s == want, "%s: status '%s', expected '%s' (%s)", label, loom_status_str(s), loom_status_str(want), msg);
    CHECK(!st, "%s: *out must be NULL on failure", label);
    CHECK(strstr(msg, needle), "%s: message '%s' lacks '%s'", label, msg, needle);
    CHECK(strstr(msg, path), "%s: message '%s' does not name the file", label, msg);
    loom_safetensors_close(st);
    uint8_t *copy = malloc(n ? n : 1); /* exact size: ASan sees any overread */
    memcpy(copy, img, n);
    s = loom__safetensors_parse(ctx, "in-memory", copy, n, false, &st);
    CHECK(s == want && !st && strstr(loom_last_error(ctx), needle), "%s: in memory: %s: %s", label, loom_status_str(s),
          loom_last_error(ctx));
    loom_safetensors_close(st);
    free(copy);
}

static inline void bad(const char *label, const char *json, const void *data, size_t dn, const char *needle) {
    size_t n;
    uint8_t *img = mk(json, data, dn, &n);
    bad_img(label, img, n, LOOM_ERR_FORMAT, needle);
    free(img);
}

static inline loom_safetensors *good_img(const char *label, const uint8_t *img, size_t n) {
    const char *path = tpath("good.safetensors");
    CHECK(write_file(path, img, n), "%s: cannot write", label);
    loom_safetensors *st = NULL;
    CHECK_OK(ctx, loom_safetensors_open(ctx, path, &st));
    if (!st) printf("  (%s)\n", label);
    return st;
}

#endif
