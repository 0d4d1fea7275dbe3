/* tests/test-safetensors-bad.c — bad safetensors files (core/safetensors.c
 * and the JSON reader under it, core/json.c).
 *
 * - one bad file per validation rule, each checked for its status, a piece
 *   of its message and the file's name (from a file and from memory)
 * - nesting far deeper than the schema is refused without recursing
 * - every truncation and thousands of byte corruptions of a valid file fail
 *   cleanly (or parse in bounds)
 *
 * Files go to ./test-safetensors-bad.d (ctest runs in the build tree).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loom/loom.h"
#include "testutil.h"

#define TDIR "test-safetensors-bad.d"
#include "safetensors_testutil.h"

/* ---- one bad file per rule ---- */
#define T1(body) "{\"a\":{" body "}}"
static const uint8_t f32x3[12] = {0};

static void test_bad(void) {
    size_t n;
    uint8_t short5[5] = {1, 0, 0, 0, 0};
    bad_img("short file", short5, 5, LOOM_ERR_FORMAT, "too short");
    bad_img("empty file", short5, 0, LOOM_ERR_FORMAT, "too short");

    uint8_t *img = mk_raw(100, "{}", NULL, 0, &n);
    bad_img("header past the end", img, n, LOOM_ERR_FORMAT, "runs past the end of the file");
    free(img);
    img = mk_raw(200u * 1000 * 1000, "{}", NULL, 0, &n);
    bad_img("header over 100 MB", img, n, LOOM_ERR_FORMAT, "limit");
    free(img);
    img = mk_raw(UINT64_MAX, "{}", NULL, 0, &n);
    bad_img("header length 2^64-1", img, n, LOOM_ERR_FORMAT, "limit");
    free(img);

    /* invalid JSON, with the byte offset */
    const char *j = T1("\"dtype\":\"F32\" \"shape\":[3],\"data_offsets\":[0,12]");
    char needle[64];
    snprintf(needle, sizeof needle, "byte %zu:", (size_t)(strstr(j, "\"shape") - j) + 8);
    bad("missing comma", j, f32x3, 12, needle);
    bad("missing comma (what)", j, f32x3, 12, "expected ',' or '}'");
    bad("missing colon", T1("\"dtype\" \"F32\",\"shape\":[3],\"data_offsets\":[0,12]"), f32x3, 12, "expected ':'");
    bad("trailing comma", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},}", f32x3, 12,
        "expected a string");
    bad("unterminated string", "{\"a", NULL, 0, "unterminated string");
    bad("unterminated object", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}", f32x3, 12,
        "the end of the header");
    bad("bad escape", "{\"a\\q\":{}}", NULL, 0, "unknown escape");
    bad("short \\u", "{\"a\\u12\":{}}", NULL, 0, "four hex digits");
    bad("lone low surrogate", "{\"a\\udc00\":{}}", NULL, 0, "unpaired low surrogate");
    bad("lone high surrogate", "{\"a\\ud800x\":{}}", NULL, 0, "without its low half");
    bad("raw control character", "{\"a\tb\":{}}", NULL, 0, "control character");
    bad("invalid UTF-8", "{\"a\xff\":{}}", NULL, 0, "UTF-8");
    bad("overlong UTF-8", "{\"a\xc0\xaf\":{}}", NULL, 0, "UTF-8");
    bad("NUL in a name", "{\"a\\u0000b\":{}}", NULL, 0, "NUL");
    bad("no opening brace", " {}", NULL, 0, "must start with '{'");
    bad("array header", "[]", NULL, 0, "must start with '{'");
    bad("empty header", "", NULL, 0, "must start with '{'");
    bad("leading zero", T1("\"dtype\":\"F32\",\"shape\":[03],\"data_offsets\":[0,12]"), f32x3, 12, "leading zero");
    bad("fraction", T1("\"dtype\":\"F32\",\"shape\":[3.0],\"data_offsets\":[0,12]"), f32x3, 12, "must be an integer");
    bad("exponent", T1("\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,1.2e1]"), f32x3, 12, "must be an integer");
    bad("huge number", T1("\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,12]"), f32x3, 12,
        "too large");
    bad("string as dim", T1("\"dtype\":\"F32\",\"shape\":[\"3\"],\"data_offsets\":[0,12]"), f32x3, 12,
        "expected a non-negative integer");
    bad("trailing garbage", "{}x", NULL, 0, "after the header's JSON object");
    bad("second object", "{}{}", NULL, 0, "after the header's JSON object");
    uint8_t nulpad[8 + 8] = {8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', 0, 0, 0, 0};
    bad_img("NUL padding", nulpad, sizeof nulpad, LOOM_ERR_FORMAT, "byte 0x00 after the header's JSON object");

    /* schema */
    bad("unknown dtype", T1("\"dtype\":\"Q7\",\"shape\":[3],\"data_offsets\":[0,12]"), f32x3, 12, "unknown dtype \"Q7\"");
    bad("foreign dtype", T1("\"dtype\":\"I64\",\"shape\":[3],\"data_offsets\":[0,24]"), NULL, 0, "not supported by loom");
    bad("lowercase dtype", T1("\"dtype\":\"f32\",\"shape\":[3],\"data_offsets\":[0,12]"), f32x3, 12, "unknown dtype");
    bad("dtype not a string", T1("\"dtype\":4,\"shape\":[3],\"data_offsets\":[0,12]"), f32x3, 12, "expected a string");
    bad("six dims", T1("\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1],\"data_offsets\":[0,1]"), "x", 1,
        "more than 5 dimensions");
    bad("negative dim", T1("\"dtype\":\"F32\",\"shape\":[-3],\"data_offsets\":[0,12]"), f32x3, 12, "negative");
    bad("negative offset", T1("\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[-1,12]"), f32x3, 12, "negative");
    bad("shape not an array", T1("\"dtype\":\"F32\",\"shape\":3,\"data_offsets\":[0,12]"), f32x3, 12,
        "must be an array of integers");
    bad("one offset", T1("\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[12]"), f32x3, 12, "[begin, end]");
    bad("three offsets", T1("\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12,12]"), f32x3, 12, "[begin, end]");
    bad("missing offsets", T1("\"dtype\":\"F32\",\"shape\":[3]"), f32x3, 12, "missing \"data_offsets\"");
    bad("missing dtype", T1("\"shape\":[3],\"data_offsets\":[0,12]"), f32x3, 12, "missing \"dtype\"");
    bad("unknown field", T1("\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12],\"x\":1"), f32x3, 12,
        "unknown field \"x\"");
    bad("field twice", T1("\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]"), f32x3, 12,
        "given twice");
    bad("entry not an object", "{\"a\":[1,2]}", NULL, 0, "expected an object");
    bad("size mismatch", T1("\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]"), f32x3, 8,
        "span 8 bytes but F32 [3] needs 12");
    bad("reversed offsets", T1("\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,0]"), f32x3, 4, "end before they begin");
    bad("offsets out of range", T1("\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[4,16]"), f32x3, 12,
        "run past the end of the data");
    bad("shape overflow", T1("\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]"), f32x3, 8,
        "too large");
    bad("overlap",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
        f32x3, 12, "overlap");
    bad("empty tensor inside another",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},"
        "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}",
        f32x3, 12, "overlap");
    bad("gap",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
        f32x3, 12, "belong to no tensor");
    bad("trailing data", T1("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]"), f32x3, 12,
        "after the last tensor");
    bad("data but no tensors", "{}", f32x3, 4, "after the last tensor");
    bad("duplicate name",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
        f32x3, 8, "'a' appears twice");
    bad("metadata number", "{\"__metadata__\":{\"epoch\":3}}", NULL, 0, "not a string");
    bad("metadata null", "{\"__metadata__\":{\"k\":null}}", NULL, 0, "not a string");
    bad("metadata object", "{\"__metadata__\":{\"k\":{}}}", NULL, 0, "not a string");
    bad("metadata not an object", "{\"__metadata__\":\"x\"}", NULL, 0, "must be an object of strings");
    bad("metadata twice", "{\"__metadata__\":{},\"__metadata__\":{}}", NULL, 0, "__metadata__ appears twice");
    bad("metadata key twice", "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", NULL, 0, "\"k\" appears twice");

    /* deep nesting must not recurse */
    size_t depth = 200000;
    char *deep = malloc(depth + 64);
    strcpy(deep, "{\"a\":");
    memset(deep + 5, '[', depth);
    deep[5 + depth] = 0;
    bad("deep arrays", deep, NULL, 0, "expected an object");
    strcpy(deep, "{\"a\":{\"shape\":");
    memset(deep + 14, '[', depth);
    deep[14 + depth] = 0;
    bad("deep shape", deep, NULL, 0, "found '['");
    strcpy(deep, "{\"__metadata__\":{\"k\":");
    memset(deep + 21, '{', depth);
    deep[21 + depth] = 0;
    bad("deep metadata", deep, NULL, 0, "not a string");
    free(deep);

    /* open errors */
    loom_safetensors *st = NULL;
    loom_status s = loom_safetensors_open(ctx, tpath("does-not-exist.safetensors"), &st);
    CHECK(s == LOOM_ERR_IO && !st && strstr(loom_last_error(ctx), "does-not-exist.safetensors") &&
              strstr(loom_last_error(ctx), "cannot open"),
          "missing file: %s: %s", loom_status_str(s), loom_last_error(ctx));
    s = loom_safetensors_open(ctx, TDIR, &st);
    CHECK(s == LOOM_ERR_IO && !st && strstr(loom_last_error(ctx), "not a regular file"), "directory: %s: %s",
          loom_status_str(s), loom_last_error(ctx));
}

/* Every truncation of a valid file fails; byte corruptions fail or parse. */
static void test_corruption(void) {
    loom_st_tensor t[3] = {
        {.name = "w", .dtype = LOOM_F32, .ndim = 2, .dims = {3, 2}},
        {.name = "b", .dtype = LOOM_BF16, .ndim = 1, .dims = {3}},
        {.name = "n", .dtype = LOOM_U8, .ndim = 0},
    };
    uint8_t d0[24], d1[6], d2[1];
    fill_random(d0, 24, 1), fill_random(d1, 6, 2), fill_random(d2, 1, 3);
    t[0].data = d0, t[1].data = d1, t[2].data = d2;
    const char *meta[] = {"k", "v", NULL};
    const char *path = tpath("small.safetensors");
    CHECK_OK(ctx, loom_safetensors_write(ctx, path, t, 3, meta));
    size_t n = 0;
    uint8_t *img = read_file(path, &n);
    if (!img) return;
    int trunc_ok = 0;
    for (size_t len = 0; len < n; len++) {
        uint8_t *c = malloc(len ? len : 1);
        memcpy(c, img, len);
        loom_safetensors *st = NULL;
        loom_status s = loom__safetensors_parse(ctx, "cut", c, len, false, &st);
        if (s == LOOM_ERR_FORMAT && !st && !strncmp(loom_last_error(ctx), "cut: ", 5)) trunc_ok++;
        loom_safetensors_close(st);
        free(c);
    }
    CHECK(trunc_ok == (int)n, "all %zu truncations fail with a format error naming the file (%d did)", n, trunc_ok);

    static const uint8_t flips[] = {0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xFF};
    int parsed = 0, failed = 0, odd = 0;
    for (size_t pos = 0; pos < n; pos++)
        for (size_t f = 0; f < sizeof flips; f++) {
            uint8_t *c = malloc(n);
            memcpy(c, img, n);
            c[pos] ^= flips[f];
            loom_safetensors *st = NULL;
            loom_status s = loom__safetensors_parse(ctx, "flip", c, n, false, &st);
            if (s == LOOM_OK) {
                parsed++;
                unsigned sum = 0; /* touch every byte of every tensor */
                for (int i = 0; i < loom_safetensors_count(st); i++) {
                    const loom_st_tensor *x = loom_safetensors_tensor(st, i);
                    for (size_t k = 0; k < loom_st_tensor_nbytes(x); k++) sum += ((const uint8_t *)x->data)[k];
                    if (loom_safetensors_find(st, x->name) != x) odd++;
                }
                (void)sum;
            } else if (s == LOOM_ERR_FORMAT && !st && !strncmp(loom_last_error(ctx), "flip: ", 6)) {
                failed++;
            } else {
                odd++;
            }
            loom_safetensors_close(st);
            free(c);
        }
    CHECK(odd == 0, "byte flips: %d odd outcomes", odd);
    printf("corruption: %zu truncations all rejected; %d byte flips: %d still valid (data/padding bytes), %d rejected\n",
           n, parsed + failed, parsed, failed);
    free(img);
}

int main(void) {
    mkdir(TDIR, 0777);
    if (!tu_cpu_open(1, &ctx, &be)) return 1;
    test_bad();
    test_corruption();
    int rc = tu_summary();
    tu_cpu_close(ctx, be);
    return rc;
}
