/* tests/test-npy.c — the .npy reader and writer (loader/npy.c).
 *
 * - fixtures written by numpy (tests/gen_npy_fixtures.py, committed under
 *   tests/data/npy): every dtype in format 1.0, f4/u1 in 2.0 and 3.0, a 0-d
 *   scalar and an empty (0, 3) array read back with the right shape, dtype
 *   and values; Fortran order, big-endian, bool and 9-dim files refused
 * - loom_npy_write produces numpy's bytes exactly (each fixture rewritten
 *   from its values compares equal byte for byte) and round trips each dtype
 * - one bad file per rule, each a clear status whose message names the file
 *   and the problem; on failure the output is untouched
 * Scratch files go to ./test-npy.d (ctest runs in the build tree).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loom/loader.h"
#include "testutil.h"

#define TDIR "test-npy.d"

static loom_ctx *ctx;
static char datadir[1024];

static char *tpath(const char *name) {
    static char buf[8][1100];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, sizeof buf[0], TDIR "/%s", name);
    return p;
}

static char *fixture(const char *name) {
    static char buf[4][1100];
    static int k;
    char *p = buf[k++ % 4];
    snprintf(p, sizeof buf[0], "%s/%s", datadir, name);
    return p;
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)sz + 1);
    *n = fread(b, 1, (size_t)sz, f);
    fclose(f);
    return b;
}

static void put(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(p, 1, n, f) == n, "write %s", path);
    if (f) fclose(f);
}

/* Element k of each fixture, as gen_npy_fixtures.py computes it. */
static double expect(loom_npy_dtype dt, int64_t k) {
    switch (dt) {
    case LOOM_NPY_U1: return (double)((k * 37 + 5) % 256);
    case LOOM_NPY_I4: return (double)((k - 6) * 1000003);
    case LOOM_NPY_I8: return (double)((k - 2) * ((int64_t)1 << 40) + k);
    case LOOM_NPY_F2: return (double)(k - 4) / 4;
    case LOOM_NPY_F4: return (double)(k - 5) * 0.375;
    case LOOM_NPY_F8: return (double)k / 3.0;
    default: return NAN;
    }
}

static double elem(const loom_npy *a, int64_t k) {
    const uint8_t *p = (const uint8_t *)a->data + (size_t)k * loom_npy_dtype_size(a->dtype);
    switch (a->dtype) {
    case LOOM_NPY_U1: return *p;
    case LOOM_NPY_I4: { int32_t v; memcpy(&v, p, 4); return v; }
    case LOOM_NPY_I8: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case LOOM_NPY_F2: { uint16_t v; memcpy(&v, p, 2); return loom_f16_to_f32(v); }
    case LOOM_NPY_F4: { float v; memcpy(&v, p, 4); return v; }
    case LOOM_NPY_F8: { double v; memcpy(&v, p, 8); return v; }
    default: return NAN;
    }
}

static const struct {
    const char *file;
    loom_npy_dtype dt;
    int version, ndim;
    int64_t shape[3];
} good[] = {
    {"u1.npy", LOOM_NPY_U1, 1, 3, {2, 3, 4}},    {"i4.npy", LOOM_NPY_I4, 1, 2, {3, 4}},
    {"i8.npy", LOOM_NPY_I8, 1, 1, {5}},          {"f2.npy", LOOM_NPY_F2, 1, 2, {2, 5}},
    {"f4.npy", LOOM_NPY_F4, 1, 3, {3, 2, 2}},    {"f8.npy", LOOM_NPY_F8, 1, 1, {7}},
    {"f4_v2.npy", LOOM_NPY_F4, 2, 3, {3, 2, 2}}, {"f4_v3.npy", LOOM_NPY_F4, 3, 3, {3, 2, 2}},
    {"u1_v2.npy", LOOM_NPY_U1, 2, 3, {2, 3, 4}},
};

static void test_fixtures(void) {
    for (size_t t = 0; t < sizeof good / sizeof good[0]; t++) {
        loom_npy a = {0};
        CHECK_OK(ctx, loom_npy_read(ctx, fixture(good[t].file), &a));
        bool shape_ok = a.ndim == good[t].ndim;
        int64_t count = 1;
        for (int i = 0; shape_ok && i < a.ndim; i++) shape_ok = a.shape[i] == good[t].shape[i], count *= a.shape[i];
        CHECK(shape_ok && a.dtype == good[t].dt && a.version == good[t].version && a.count == count &&
                  a.bytes == (size_t)count * loom_npy_dtype_size(a.dtype),
              "%s: ndim %d dtype %s version %d count %lld", good[t].file, a.ndim, loom_npy_dtype_name(a.dtype),
              a.version, (long long)a.count);
        int bad = 0;
        for (int64_t k = 0; shape_ok && k < a.count; k++) bad += elem(&a, k) != expect(a.dtype, k);
        CHECK(shape_ok && bad == 0, "%s: %d values differ from the formula", good[t].file, bad);
        /* the writer reproduces numpy's file byte for byte (format 1.0 only:
         * loom always writes 1.0) */
        if (a.version == 1 && shape_ok) {
            char out[64];
            snprintf(out, sizeof out, "rewrite-%s", good[t].file);
            CHECK_OK(ctx, loom_npy_write(ctx, tpath(out), a.dtype, a.ndim, a.shape, a.data));
            size_t n1 = 0, n2 = 0;
            uint8_t *b1 = slurp(fixture(good[t].file), &n1), *b2 = slurp(tpath(out), &n2);
            CHECK(b1 && b2 && n1 == n2 && !memcmp(b1, b2, n1), "%s: loom_npy_write differs from numpy (%zu vs %zu bytes)",
                  good[t].file, n2, n1);
            free(b1), free(b2);
        }
        loom_npy_free(&a);
    }
    loom_npy a = {0};
    CHECK_OK(ctx, loom_npy_read(ctx, fixture("scalar_f8.npy"), &a));
    CHECK(a.ndim == 0 && a.count == 1 && a.dtype == LOOM_NPY_F8 && a.data && elem(&a, 0) == 2.5, "scalar: ndim %d count %lld",
          a.ndim, (long long)a.count);
    CHECK_OK(ctx, loom_npy_write(ctx, tpath("scalar.npy"), LOOM_NPY_F8, 0, NULL, a.data));
    size_t n1 = 0, n2 = 0;
    uint8_t *b1 = slurp(fixture("scalar_f8.npy"), &n1), *b2 = slurp(tpath("scalar.npy"), &n2);
    CHECK(b1 && b2 && n1 == n2 && !memcmp(b1, b2, n1), "scalar: writer differs from numpy");
    free(b1), free(b2);
    loom_npy_free(&a);
    CHECK_OK(ctx, loom_npy_read(ctx, fixture("empty_i4.npy"), &a));
    CHECK(a.ndim == 2 && a.shape[0] == 0 && a.shape[1] == 3 && a.count == 0 && a.bytes == 0 && !a.data,
          "empty: ndim %d count %lld", a.ndim, (long long)a.count);
    loom_npy_free(&a);
}

/* Expect failure with status st and a message naming the file and holding
 * `needle`; *out must stay untouched. */
static void expect_fail(const char *path, loom_status st, const char *needle) {
    loom_npy a;
    memset(&a, 0xAB, sizeof a);
    loom_status got = loom_npy_read(ctx, path, &a);
    const char *msg = loom_last_error(ctx);
    CHECK(got == st, "%s: status %s, expected %s (%s)", path, loom_status_str(got), loom_status_str(st), msg);
    CHECK(strstr(msg, path) != NULL, "%s: the message does not name the file: %s", path, msg);
    CHECK(strstr(msg, needle) != NULL, "%s: the message lacks \"%s\": %s", path, needle, msg);
    unsigned char *p = (unsigned char *)&a;
    bool untouched = true;
    for (size_t i = 0; i < sizeof a; i++) untouched &= p[i] == 0xAB;
    CHECK(untouched, "%s: output changed on failure", path);
}

static void test_refused_fixtures(void) {
    expect_fail(fixture("fortran_f4.npy"), LOOM_ERR_UNSUPPORTED, "Fortran order");
    expect_fail(fixture("big_i4.npy"), LOOM_ERR_UNSUPPORTED, "big-endian");
    expect_fail(fixture("bool.npy"), LOOM_ERR_UNSUPPORTED, "'|b1' is not supported");
    expect_fail(fixture("wide.npy"), LOOM_ERR_UNSUPPORTED, "more than 8 dimensions");
}

/* A file made from a header string (version v, padded with spaces to 64
 * unless raw) followed by `data` bytes. */
static void make(const char *name, int v, const char *dict, size_t data) {
    size_t pre = v == 1 ? 10 : 12, dl = strlen(dict);
    size_t hl = dl + 1;
    hl += (64 - (pre + hl) % 64) % 64;
    size_t n = pre + hl + data;
    uint8_t *b = calloc(1, n);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (uint8_t)v, b[7] = 0;
    if (v == 1) {
        b[8] = (uint8_t)hl, b[9] = (uint8_t)(hl >> 8);
    } else {
        for (int i = 0; i < 4; i++) b[8 + i] = (uint8_t)(hl >> (8 * i));
    }
    memset(b + pre, ' ', hl);
    memcpy(b + pre, dict, dl);
    b[pre + hl - 1] = '\n';
    put(tpath(name), b, n);
    free(b);
}

#define D(descr, fo, shape) "{'descr': '" descr "', 'fortran_order': " fo ", 'shape': " shape ", }"

static void test_bad_files(void) {
    expect_fail(tpath("missing.npy"), LOOM_ERR_IO, "cannot open");
    expect_fail(TDIR, LOOM_ERR_IO, "not a regular file");
    put(tpath("zero.npy"), "", 0);
    expect_fail(tpath("zero.npy"), LOOM_ERR_FORMAT, "not a .npy file");
    put(tpath("magic.npy"), "\x93NUMPX\x01\x00\x10\x00", 10);
    expect_fail(tpath("magic.npy"), LOOM_ERR_FORMAT, "not a .npy file");
    put(tpath("ver4.npy"), "\x93NUMPY\x04\x00\x10\x00", 10);
    expect_fail(tpath("ver4.npy"), LOOM_ERR_UNSUPPORTED, "version 4.0");
    put(tpath("ver11.npy"), "\x93NUMPY\x01\x01\x10\x00", 10);
    expect_fail(tpath("ver11.npy"), LOOM_ERR_UNSUPPORTED, "version 1.1");
    put(tpath("pre2.npy"), "\x93NUMPY\x02\x00\x10\x00", 10);
    expect_fail(tpath("pre2.npy"), LOOM_ERR_FORMAT, "preamble");
    put(tpath("hlen.npy"), "\x93NUMPY\x01\x00\xff\x00{'descr'", 17);
    expect_fail(tpath("hlen.npy"), LOOM_ERR_FORMAT, "header length is 255");
    put(tpath("hbig.npy"), "\x93NUMPY\x02\x00\x00\x00\x00\x10", 12);
    expect_fail(tpath("hbig.npy"), LOOM_ERR_FORMAT, "over the");

    /* the header dict */
    make("nonl.npy", 1, D("<f4", "False", "(2,)"), 8);
    {
        size_t n = 0;
        uint8_t *b = slurp(tpath("nonl.npy"), &n);
        b[n - 8 - 1] = ' '; /* the newline before the 8 data bytes */
        put(tpath("nonl.npy"), b, n);
        free(b);
    }
    expect_fail(tpath("nonl.npy"), LOOM_ERR_FORMAT, "newline");
    make("nobrace.npy", 1, "'descr': '<f4'", 0);
    expect_fail(tpath("nobrace.npy"), LOOM_ERR_FORMAT, "expected '{'");
    make("nokey.npy", 1, "{'descr': '<f4', 'shape': (2,), }", 8);
    expect_fail(tpath("nokey.npy"), LOOM_ERR_FORMAT, "'fortran_order' is missing");
    make("extrakey.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8);
    expect_fail(tpath("extrakey.npy"), LOOM_ERR_FORMAT, "unexpected key 'x'");
    make("dupkey.npy", 1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", 8);
    expect_fail(tpath("dupkey.npy"), LOOM_ERR_FORMAT, "'descr' repeated");
    make("unquoted.npy", 1, "{descr: '<f4', 'fortran_order': False, 'shape': (2,)}", 8);
    expect_fail(tpath("unquoted.npy"), LOOM_ERR_FORMAT, "a quoted key");
    make("nocolon.npy", 1, "{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}", 8);
    expect_fail(tpath("nocolon.npy"), LOOM_ERR_FORMAT, "expected ':'");
    make("nocomma.npy", 1, "{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", 8);
    expect_fail(tpath("nocomma.npy"), LOOM_ERR_FORMAT, "',' or '}'");
    make("unterm.npy", 1, "{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", 8);
    expect_fail(tpath("unterm.npy"), LOOM_ERR_FORMAT, "malformed .npy header");
    make("fo.npy", 1, D("<f4", "0", "(2,)"), 8);
    expect_fail(tpath("fo.npy"), LOOM_ERR_FORMAT, "True or False");
    make("shint.npy", 1, D("<f4", "False", "(2)"), 8);
    expect_fail(tpath("shint.npy"), LOOM_ERR_FORMAT, "not a tuple");
    make("shlist.npy", 1, D("<f4", "False", "[2]"), 8);
    expect_fail(tpath("shlist.npy"), LOOM_ERR_FORMAT, "shape tuple");
    make("shneg.npy", 1, D("<f4", "False", "(-2,)"), 8);
    expect_fail(tpath("shneg.npy"), LOOM_ERR_FORMAT, "non-negative integer");
    make("shsep.npy", 1, D("<f4", "False", "(2 3)"), 8);
    expect_fail(tpath("shsep.npy"), LOOM_ERR_FORMAT, "',' or ')'");
    make("shhuge.npy", 1, D("<f4", "False", "(99999999999999999999,)"), 8);
    expect_fail(tpath("shhuge.npy"), LOOM_ERR_FORMAT, "too large");
    make("shprod.npy", 1, D("<f4", "False", "(100000000, 100000000, 100000000)"), 8);
    expect_fail(tpath("shprod.npy"), LOOM_ERR_FORMAT, "more than 2^");
    make("after.npy", 1, D("<f4", "False", "(2,)") " x", 8);
    expect_fail(tpath("after.npy"), LOOM_ERR_FORMAT, "only spaces after");
    make("struct.npy", 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", 8);
    expect_fail(tpath("struct.npy"), LOOM_ERR_UNSUPPORTED, "structured");
    make("descr.npy", 1, D("<u2", "False", "(2,)"), 4);
    expect_fail(tpath("descr.npy"), LOOM_ERR_UNSUPPORTED, "'<u2' is not supported");
    make("native.npy", 1, D("=f4", "False", "(2,)"), 8);
    expect_fail(tpath("native.npy"), LOOM_ERR_UNSUPPORTED, "byte order '='");
    make("pipe.npy", 1, D("|f4", "False", "(2,)"), 8);
    expect_fail(tpath("pipe.npy"), LOOM_ERR_UNSUPPORTED, "byte order '|'");
    make("big.npy", 2, D(">f8", "False", "(2,)"), 16);
    expect_fail(tpath("big.npy"), LOOM_ERR_UNSUPPORTED, "big-endian");
    /* the data */
    make("trunc.npy", 1, D("<f4", "False", "(2, 3)"), 23);
    expect_fail(tpath("trunc.npy"), LOOM_ERR_FORMAT, "truncated: 23 of 24 data bytes");
    make("trail.npy", 3, D("<f4", "False", "(2, 3)"), 25);
    expect_fail(tpath("trail.npy"), LOOM_ERR_FORMAT, "1 trailing bytes");
    make("trunc0.npy", 2, D("<i8", "False", "(4,)"), 0);
    expect_fail(tpath("trunc0.npy"), LOOM_ERR_FORMAT, "truncated: 0 of 32");

    /* accepted variations: double quotes, any key order, no trailing comma,
     * extra spaces, '<u1', Python 2's long suffix, Fortran order in 1-D */
    make("ok1.npy", 2, "{ \"shape\" : ( 2 , 3 ) , \"fortran_order\":False,\"descr\":\"<u1\" }", 6);
    make("ok2.npy", 1, "{'descr': '|u1', 'fortran_order': True, 'shape': (6L,)}", 6);
    const char *oks[] = {"ok1.npy", "ok2.npy"};
    for (int i = 0; i < 2; i++) {
        loom_npy a = {0};
        CHECK_OK(ctx, loom_npy_read(ctx, tpath(oks[i]), &a));
        CHECK(a.dtype == LOOM_NPY_U1 && a.count == 6, "%s: dtype %s count %lld", oks[i], loom_npy_dtype_name(a.dtype),
              (long long)a.count);
        loom_npy_free(&a);
    }
}

/* Every dtype written then read back; also shapes with 0 and 8 dims. */
static void test_round_trip(void) {
    for (int dt = 0; dt < LOOM_NPY_DTYPE_COUNT; dt++) {
        int64_t shape[3] = {3, 1, 5};
        size_t es = loom_npy_dtype_size((loom_npy_dtype)dt), n = 15;
        uint8_t *src = malloc(n * es);
        for (size_t i = 0; i < n * es; i++) src[i] = (uint8_t)(i * 131 + (size_t)dt * 7 + 1);
        char name[32];
        snprintf(name, sizeof name, "rt-%s.npy", loom_npy_dtype_name((loom_npy_dtype)dt));
        CHECK_OK(ctx, loom_npy_write(ctx, tpath(name), (loom_npy_dtype)dt, 3, shape, src));
        loom_npy a = {0};
        CHECK_OK(ctx, loom_npy_read(ctx, tpath(name), &a));
        CHECK(a.dtype == (loom_npy_dtype)dt && a.ndim == 3 && a.shape[0] == 3 && a.shape[1] == 1 && a.shape[2] == 5 &&
                  a.bytes == n * es && a.data && !memcmp(a.data, src, n * es),
              "%s: round trip", name);
        loom_npy_free(&a);
        free(src);
    }
    int64_t shape8[8] = {1, 2, 1, 2, 1, 2, 1, 3};
    uint8_t px[24];
    for (int i = 0; i < 24; i++) px[i] = (uint8_t)(200 + i);
    CHECK_OK(ctx, loom_npy_write(ctx, tpath("rt8.npy"), LOOM_NPY_U1, 8, shape8, px));
    loom_npy a = {0};
    CHECK_OK(ctx, loom_npy_read(ctx, tpath("rt8.npy"), &a));
    CHECK(a.ndim == 8 && a.count == 24 && a.data && !memcmp(a.data, px, 24), "8-dim round trip");
    loom_npy_free(&a);
    int64_t zero[2] = {0, 4};
    CHECK_OK(ctx, loom_npy_write(ctx, tpath("rt0.npy"), LOOM_NPY_F4, 2, zero, NULL));
    CHECK_OK(ctx, loom_npy_read(ctx, tpath("rt0.npy"), &a));
    CHECK(a.ndim == 2 && a.count == 0 && !a.data, "empty round trip");
    loom_npy_free(&a);
    /* writer argument errors */
    CHECK(loom_npy_write(ctx, tpath("bad.npy"), LOOM_NPY_DTYPE_COUNT, 1, shape8, px) == LOOM_ERR_INVALID_ARG,
          "writer: bad dtype");
    CHECK(loom_npy_write(ctx, tpath("bad.npy"), LOOM_NPY_U1, 9, shape8, px) == LOOM_ERR_INVALID_ARG, "writer: 9 dims");
    int64_t neg[1] = {-1};
    CHECK(loom_npy_write(ctx, tpath("bad.npy"), LOOM_NPY_U1, 1, neg, px) == LOOM_ERR_INVALID_ARG, "writer: negative dim");
    CHECK(loom_npy_write(ctx, TDIR "/no/such/dir/x.npy", LOOM_NPY_U1, 1, shape8, px) == LOOM_ERR_IO &&
              strstr(loom_last_error(ctx), "no/such/dir"),
          "writer: unwritable path: %s", loom_last_error(ctx));
}

int main(void) {
    snprintf(datadir, sizeof datadir, "%s", __FILE__);
    char *slash = strrchr(datadir, '/');
    snprintf(slash ? slash + 1 : datadir, sizeof datadir - (size_t)(slash ? slash + 1 - datadir : 0), "data/npy");
    mkdir(TDIR, 0755);
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    test_fixtures();
    test_refused_fixtures();
    test_bad_files();
    test_round_trip();
    loom_ctx_destroy(ctx);
    return tu_summary();
}
