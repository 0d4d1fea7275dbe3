/* tests/test-safetensors.c — the safetensors format (core/safetensors.c) and
 * plan checkpoints (core/checkpoint.c).
 *
 * - round trip of every dtype, of 0-dim, 5-dim and empty tensors, with names
 *   and metadata that need JSON escaping; the written layout (padded header,
 *   every tensor aligned to its element size)
 * - files as other writers make them: unpadded headers, whitespace, \u
 *   escapes, tensors listed out of data order
 * - the writer's argument checks and its atomicity: a failed write (missing
 *   directory, a directory in the way, the file-size limit hit mid-write)
 *   leaves the previous file byte-identical and no temporary file behind
 * - checkpoints: two plans of one graph round trip bitwise (params, states,
 *   plan step, metadata); mismatch, missing and unexpected reporting
 *
 * Bad files are tests/test-safetensors-bad.c; the atomic writer under the
 * format is tests/test-outfile.c.
 * With `--python SCRIPT` it runs the interoperability check against the
 * Python safetensors package instead (ctest: safetensors-python), which is
 * skipped (exit 77) when python3 or the package is missing.
 * Files go to ./test-safetensors.d (ctest runs in the build tree).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "impl.h" /* struct loom_graph: the checkpoint test walks the nodes */
#include "loom/loom.h"
#include "testutil.h"

#define TDIR "test-safetensors.d"
#include "safetensors_testutil.h"

/* ---- round trip ---- */
typedef struct spec {
    const char *name;
    loom_dtype dt;
    int ndim;
    int64_t dims[LOOM_MAX_DIMS];
} spec;

static const spec specs[] = {
    {"scalar.f32", LOOM_F32, 0, {0}},
    {"conv1.weight", LOOM_F32, 4, {4, 1, 3, 3}},
    {"h.f16", LOOM_F16, 2, {3, 5}},
    {"h.bf16", LOOM_BF16, 1, {7}},
    {"d.f64", LOOM_F64, 3, {2, 3, 1}},
    {"idx.i32", LOOM_I32, 1, {5}},
    {"px.u8", LOOM_U8, 2, {3, 3}},
    {"five.u8", LOOM_U8, 5, {1, 2, 1, 2, 3}},
    {"empty.f32", LOOM_F32, 2, {4, 0}},
    {"scalar.f64", LOOM_F64, 0, {0}},
    {"name \"quoted\" \\ slash/ tab\t nl\n ctl\x01 \xc3\xa9 \xf0\x9f\x99\x82", LOOM_F16, 1, {2}},
};
#define NSPEC ((int)(sizeof specs / sizeof *specs))

static const char *const round_meta[] = {
    "epoch", "3",
    "note", "quote \" backslash \\ newline \n tab \t ctl \x1f utf8 \xc3\xa9\xf0\x9f\x99\x82 slash /",
    "empty", "",
    "key \"with\" escapes\n", "v",
    NULL,
};

static void test_round_trip(void) {
    loom_st_tensor t[NSPEC];
    void *data[NSPEC];
    for (int i = 0; i < NSPEC; i++) {
        t[i] = (loom_st_tensor){.name = specs[i].name, .dtype = specs[i].dt, .ndim = specs[i].ndim};
        memcpy(t[i].dims, specs[i].dims, sizeof t[i].dims);
        size_t nb = loom_st_tensor_nbytes(&t[i]);
        data[i] = malloc(nb ? nb : 1);
        fill_random(data[i], nb, (uint64_t)i + 1);
        t[i].data = nb ? data[i] : NULL; /* empty tensors may pass NULL */
    }
    const char *path = tpath("round.safetensors");
    CHECK_OK(ctx, loom_safetensors_write(ctx, path, t, NSPEC, round_meta));

    /* the raw layout: header padded with spaces to a multiple of 8 */
    size_t fn = 0;
    uint8_t *raw = read_file(path, &fn);
    uint64_t hl = 0;
    for (int i = 7; raw && fn >= 8 && i >= 0; i--) hl = hl << 8 | raw[i];
    CHECK(raw && hl % 8 == 0 && 8 + hl <= fn, "header length %llu is a multiple of 8", (unsigned long long)hl);
    if (raw && hl && 8 + hl <= fn) {
        size_t end = 8 + (size_t)hl;
        while (end > 8 && raw[end - 1] == ' ') end--;
        CHECK(raw[8] == '{' && raw[end - 1] == '}', "header is one JSON object padded with spaces");
    }
    free(raw);

    loom_safetensors *st = NULL;
    CHECK_OK(ctx, loom_safetensors_open(ctx, path, &st));
    if (st) {
        CHECK(loom_safetensors_count(st) == NSPEC, "count %d", loom_safetensors_count(st));
        for (int i = 0; i < NSPEC; i++) {
            const loom_st_tensor *r = loom_safetensors_find(st, specs[i].name);
            CHECK(r, "find '%s'", specs[i].name);
            if (!r) continue;
            bool shape = r->dtype == specs[i].dt && r->ndim == specs[i].ndim;
            for (int d = 0; shape && d < r->ndim; d++) shape = r->dims[d] == specs[i].dims[d];
            CHECK(shape, "'%s': dtype/shape round trip", specs[i].name);
            size_t nb = loom_st_tensor_nbytes(&t[i]);
            CHECK(loom_st_tensor_nbytes(r) == nb && (!nb || memcmp(r->data, data[i], nb) == 0), "'%s': data bitwise",
                  specs[i].name);
            CHECK((uintptr_t)r->data % loom_dtype_size(r->dtype) == 0, "'%s': aligned to its element size",
                  specs[i].name);
        }
        for (int i = 1; i < loom_safetensors_count(st); i++)
            CHECK((const uint8_t *)loom_safetensors_tensor(st, i - 1)->data <= (const uint8_t *)loom_safetensors_tensor(st, i)->data,
                  "tensors in data order");
        CHECK(!loom_safetensors_tensor(st, NSPEC) && !loom_safetensors_tensor(st, -1), "index out of range -> NULL");
        CHECK(!loom_safetensors_find(st, "nope") && !loom_safetensors_find(st, ""), "find absent -> NULL");
        for (int i = 0; round_meta[i]; i += 2) {
            const char *v = loom_safetensors_meta(st, round_meta[i]);
            CHECK(v && strcmp(v, round_meta[i + 1]) == 0, "metadata '%s' round trip", round_meta[i]);
        }
        CHECK(loom_safetensors_meta_count(st) == 4 && strcmp(loom_safetensors_meta_key(st, 1), "note") == 0,
              "metadata count and order");
        CHECK(!loom_safetensors_meta(st, "absent"), "absent metadata -> NULL");
        CHECK(strcmp(loom_safetensors_path(st), path) == 0, "path");
        loom_safetensors_close(st);
    }
    for (int i = 0; i < NSPEC; i++) free(data[i]);

    /* no tensors, no metadata */
    CHECK_OK(ctx, loom_safetensors_write(ctx, path, NULL, 0, NULL));
    st = NULL;
    CHECK_OK(ctx, loom_safetensors_open(ctx, path, &st));
    CHECK(st && loom_safetensors_count(st) == 0 && loom_safetensors_meta_count(st) == 0, "empty file round trip");
    loom_safetensors_close(st);
    CHECK(temp_files_left() == 0, "no temporary files after successful writes");
}

/* ---- files as other writers make them ---- */
static void test_foreign(void) {
    size_t n;
    /* whitespace everywhere, no padding, fields in another order, metadata first */
    const char *j1 = "{ \"__metadata__\" : { \"k\" : \"v\" } ,\n\t\"b\" : { \"shape\" : [ 2 ] , \"dtype\" : \"U8\" , "
                     "\"data_offsets\" : [ 0 , 2 ] }\r\n}\n ";
    uint8_t *img = mk(j1, "xy", 2, &n);
    loom_safetensors *st = good_img("whitespace", img, n);
    if (st) {
        const loom_st_tensor *b = loom_safetensors_find(st, "b");
        CHECK(b && b->ndim == 1 && b->dims[0] == 2 && memcmp(b->data, "xy", 2) == 0, "whitespace-laden header");
        CHECK(loom_safetensors_meta(st, "k") && !strcmp(loom_safetensors_meta(st, "k"), "v"), "metadata first");
    }
    loom_safetensors_close(st);
    free(img);

    /* \u escapes (with a surrogate pair), tensors out of data order, two empty tensors at one offset */
    const char *j2 = "{\"\\u00e9\\ud83d\\ude42\\/\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
                     "\"first\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[0,4]},"
                     "\"e1\":{\"dtype\":\"F64\",\"shape\":[0,3],\"data_offsets\":[8,8]},"
                     "\"e2\":{\"dtype\":\"BF16\",\"shape\":[2,0],\"data_offsets\":[8,8]}}";
    uint8_t d2[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    img = mk(j2, d2, 8, &n);
    st = good_img("escapes", img, n);
    if (st) {
        const loom_st_tensor *a = loom_safetensors_find(st, "\xc3\xa9\xf0\x9f\x99\x82/");
        CHECK(a && memcmp(a->data, d2 + 4, 4) == 0, "\\u escapes decode to UTF-8");
        CHECK(loom_safetensors_count(st) == 4 && !strcmp(loom_safetensors_tensor(st, 0)->name, "first"),
              "tensors listed in data order");
        const loom_st_tensor *f = loom_safetensors_find(st, "first");
        CHECK(f && f->ndim == 0 && f->dtype == LOOM_I32, "0-dim tensor");
        CHECK(loom_safetensors_find(st, "e1") && loom_safetensors_find(st, "e2"), "empty tensors");
    }
    loom_safetensors_close(st);
    free(img);

    /* an empty header object */
    img = mk("{}", NULL, 0, &n);
    st = good_img("empty", img, n);
    CHECK(st && loom_safetensors_count(st) == 0, "{} is a valid file");
    loom_safetensors_close(st);
    free(img);
}

/* ---- the writer ---- */
static void bad_write(const char *label, const loom_st_tensor *t, int n, const char *const *meta, const char *needle,
                      const char *path, const uint8_t *old, size_t old_n) {
    loom_status s = loom_safetensors_write(ctx, path, t, n, meta);
    CHECK(s == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), needle), "%s: %s: '%s' (wanted '%s')", label,
          loom_status_str(s), loom_last_error(ctx), needle);
    CHECK(same_file(path, old, old_n), "%s: the previous file is unchanged", label);
    CHECK(temp_files_left() == 0, "%s: no temporary file left", label);
}

static void test_writer(void) {
    const char *path = tpath("keep.safetensors");
    float v[4] = {1, 2, 3, 4};
    loom_st_tensor ok = {.name = "v", .dtype = LOOM_F32, .ndim = 1, .dims = {4}, .data = v};
    CHECK_OK(ctx, loom_safetensors_write(ctx, path, &ok, 1, NULL));
    size_t old_n = 0;
    uint8_t *old = read_file(path, &old_n);
    if (!old) return;

    loom_st_tensor two[2] = {ok, ok};
    bad_write("duplicate names", two, 2, NULL, "'v' is used twice", path, old, old_n);
    loom_st_tensor t = ok;
    t.name = NULL;
    bad_write("NULL name", &t, 1, NULL, "has no name", path, old, old_n);
    t.name = "";
    bad_write("empty name", &t, 1, NULL, "has no name", path, old, old_n);
    t.name = "__metadata__";
    bad_write("reserved name", &t, 1, NULL, "reserved", path, old, old_n);
    t.name = "bad\xff";
    bad_write("invalid UTF-8 name", &t, 1, NULL, "UTF-8", path, old, old_n);
    t = ok, t.ndim = 6;
    bad_write("six dims", &t, 1, NULL, "6 dimensions", path, old, old_n);
    t = ok, t.dims[0] = -1;
    bad_write("negative dim", &t, 1, NULL, "negative dimension", path, old, old_n);
    t = ok, t.data = NULL;
    bad_write("NULL data", &t, 1, NULL, "data is NULL", path, old, old_n);
    t = ok, t.dtype = (loom_dtype)77;
    bad_write("bad dtype", &t, 1, NULL, "not a loom dtype", path, old, old_n);
    const char *m1[] = {"k", NULL, NULL};
    bad_write("key without value", &ok, 1, m1, "has no value", path, old, old_n);
    const char *m2[] = {"k", "1", "k", "2", NULL};
    bad_write("duplicate metadata", &ok, 1, m2, "given twice", path, old, old_n);
    const char *m3[] = {"k", "\xc3", NULL};
    bad_write("invalid UTF-8 metadata", &ok, 1, m3, "UTF-8", path, old, old_n);

    /* atomicity: failures at every stage leave the old file */
    loom_status s = loom_safetensors_write(ctx, TDIR "/no-such-dir/x.safetensors", &ok, 1, NULL);
    CHECK(s == LOOM_ERR_IO && strstr(loom_last_error(ctx), "no-such-dir/x.safetensors") &&
              strstr(loom_last_error(ctx), "cannot create the temporary file"),
          "missing directory: %s: %s", loom_status_str(s), loom_last_error(ctx));

    const char *dirpath = tpath("a-directory");
    mkdir(dirpath, 0777);
    char inner[600];
    snprintf(inner, sizeof inner, "%s/inside", dirpath);
    write_file(inner, "x", 1);
    s = loom_safetensors_write(ctx, dirpath, &ok, 1, NULL);
    CHECK(s == LOOM_ERR_IO && strstr(loom_last_error(ctx), dirpath) && strstr(loom_last_error(ctx), "not a regular file"),
          "a directory in the way: %s: %s", loom_status_str(s), loom_last_error(ctx));
    CHECK(same_file(inner, (const uint8_t *)"x", 1) && temp_files_left() == 0,
          "the directory is intact and no temporary file is left");

    /* the file-size limit hit in the middle of the data (as a full disk would) */
    struct rlimit saved;
    if (getrlimit(RLIMIT_FSIZE, &saved) == 0) {
        void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = saved;
        lim.rlim_cur = 4096;
        if (setrlimit(RLIMIT_FSIZE, &lim) == 0) {
            size_t big_n = 64 * 1024;
            uint8_t *big = calloc(1, big_n);
            loom_st_tensor bt = {.name = "big", .dtype = LOOM_U8, .ndim = 1, .dims = {(int64_t)big_n}, .data = big};
            s = loom_safetensors_write(ctx, path, &bt, 1, NULL);
            setrlimit(RLIMIT_FSIZE, &saved);
            CHECK(s == LOOM_ERR_IO && strstr(loom_last_error(ctx), "write") && strstr(loom_last_error(ctx), path),
                  "write past the file-size limit fails: %s: %s", loom_status_str(s), loom_last_error(ctx));
            CHECK(same_file(path, old, old_n), "failed mid-write: the previous file is byte-identical");
            CHECK(temp_files_left() == 0, "failed mid-write: the temporary file is removed");
            free(big);
        } else {
            printf("note: cannot lower RLIMIT_FSIZE; the mid-write failure check is skipped\n");
        }
        signal(SIGXFSZ, prev);
    }

    /* an unwritable directory (meaningless as root, who may write anyway) */
    if (geteuid() != 0) {
        const char *ro = tpath("read-only");
        mkdir(ro, 0777);
        char target[600];
        snprintf(target, sizeof target, "%s/x.safetensors", ro);
        CHECK_OK(ctx, loom_safetensors_write(ctx, target, &ok, 1, NULL));
        chmod(ro, 0555);
        float w[4] = {9, 9, 9, 9};
        loom_st_tensor t2 = ok;
        t2.data = w;
        s = loom_safetensors_write(ctx, target, &t2, 1, NULL);
        chmod(ro, 0777);
        CHECK(s == LOOM_ERR_IO && same_file(target, old, old_n), "read-only directory: %s, old file intact",
              loom_status_str(s));
    } else {
        printf("note: running as root: the read-only directory check is skipped (root writes anyway)\n");
    }
    free(old);
}

/* ---- checkpoints ---- */
typedef struct ck_model {
    loom_graph *g;
    loom_plan *p;
    loom_tensor *x, *y;
} ck_model;

/* variant 0: the model; 1: fc1.weight (4, 2), no emb.weight, an extra
 * fc2.weight; 2: fc1.bias in f64. */
static ck_model ck_build(uint64_t seed, int variant) {
    ck_model m = {0};
    CHECK_OK(ctx, loom_graph_create(ctx, &(loom_graph_desc){.seed = seed}, &m.g));
    int64_t in = variant == 1 ? 2 : 3;
    loom_init ku = {LOOM_INIT_KAIMING_UNIFORM, 0, 0}, un = {LOOM_INIT_UNIFORM, -1, 1}, nr = {LOOM_INIT_NORMAL, 0, 1};
    m.x = loom_input(m.g, "x", LOOM_F32, 2, (int64_t[]){2, in});
    loom_tensor *w = loom_param(m.g, "fc1.weight", LOOM_F32, 2, (int64_t[]){4, in}, &ku);
    loom_tensor *b = loom_param(m.g, "fc1.bias", variant == 2 ? LOOM_F64 : LOOM_F32, 1, (int64_t[]){4}, &un);
    if (variant != 1) loom_param(m.g, "emb.weight", LOOM_F16, 2, (int64_t[]){5, 2}, &nr);
    if (variant == 1) loom_param(m.g, "fc2.weight", LOOM_F32, 2, (int64_t[]){3, 4}, &ku);
    loom_state(m.g, "bn.running_mean", LOOM_F32, 1, (int64_t[]){4}, NULL);
    loom_state(m.g, "bn.running_var", LOOM_F32, 1, (int64_t[]){4}, &(loom_init){LOOM_INIT_ONES, 0, 0});
    loom_state(m.g, "fc1.weight.exp_avg", LOOM_BF16, 2, (int64_t[]){4, in}, NULL);
    loom_state(m.g, "counter", LOOM_F64, 0, NULL, NULL);
    if (variant != 2) {
        m.y = loom_relu(m.g, loom_linear(m.g, m.x, w, b));
        loom_keep(m.y);
    }
    CHECK(loom_graph_status(m.g) == LOOM_OK, "checkpoint graph builds: %s", loom_last_error(ctx));
    CHECK_OK(ctx, loom_plan_compile(m.g, be, NULL, &m.p));
    return m;
}

static void ck_free(ck_model *m) {
    loom_plan_destroy(m->p);
    loom_graph_destroy(m->g);
}

static loom_tensor *find_node(loom_graph *g, const char *name) {
    for (int i = 0; i < g->n; i++)
        if (!strcmp(g->nodes[i]->name, name) && (g->nodes[i]->leaf == LOOM__PARAM || g->nodes[i]->leaf == LOOM__STATE))
            return g->nodes[i];
    return NULL;
}

static void *read_all(loom_plan *p, loom_tensor *t, size_t *n) {
    *n = (size_t)loom_tensor_numel(t) * loom_dtype_size(loom_tensor_dtype(t));
    void *b = malloc(*n ? *n : 1);
    CHECK_OK(ctx, loom_plan_read(p, t, b, *n));
    return b;
}

/* Same bytes for tensor `name` in both plans. */
static bool same_tensor(ck_model *a, ck_model *b, const char *name) {
    loom_tensor *ta = find_node(a->g, name), *tb = find_node(b->g, name);
    if (!ta || !tb) return false;
    size_t na, nb;
    void *x = read_all(a->p, ta, &na), *y = read_all(b->p, tb, &nb);
    bool same = na == nb && memcmp(x, y, na) == 0;
    free(x), free(y);
    return same;
}

static const char *const ck_names[] = {"fc1.weight", "fc1.bias", "emb.weight", "bn.running_mean",
                                       "bn.running_var", "fc1.weight.exp_avg", "counter"};

/* Write one tensor (name, dtype, shape [4, 3], data) to a file of its own
 * (named in buffers of its own: tpath's eight are still held by the caller). */
static const char *one_tensor_file(const char *file, const char *name, loom_dtype dt, const void *data) {
    static char buf[4][512];
    static int k;
    char *path = buf[k++ % 4];
    snprintf(path, 512, TDIR "/%s", file);
    loom_st_tensor t = {name, dt, 2, {4, 3}, data};
    CHECK_OK(ctx, loom_safetensors_write(ctx, path, &t, 1, NULL));
    return path;
}

/* Loaded values: NaN / infinity refused naming the tensor and index unless
 * allow_nonfinite; f16, bf16, f64 tensors of the right shape converted; an
 * integer tensor of the right shape a dtype mismatch. */
static void test_checkpoint_values(ck_model *a) {
    loom_tensor *w = find_node(a->g, "fc1.weight");
    size_t nb;
    float *before = read_all(a->p, w, &nb);
    float f[12];
    for (int k = 0; k < 12; k++) f[k] = 0.25f * (float)k - 1.0f;
    f[5] = NAN;
    const char *nan_file = one_tensor_file("nan.safetensors", "fc1.weight", LOOM_F32, f);
    loom_checkpoint_report rep;
    loom_status s = loom_checkpoint_load(a->p, nan_file, NULL, &rep, NULL);
    const char *msg = loom_last_error(ctx);
    CHECK(s == LOOM_ERR_FORMAT && strstr(msg, "fc1.weight") && strstr(msg, "NaN at index 5") && strstr(msg, nan_file),
          "a NaN weight is refused naming the tensor and index: %s '%s'", loom_status_str(s), msg);
    float *after = read_all(a->p, w, &nb);
    CHECK(!memcmp(before, after, nb), "the refused load left the plan unchanged");
    free(after);
    CHECK_OK(ctx, loom_checkpoint_load(a->p, nan_file, &(loom_checkpoint_load_desc){.allow_nonfinite = true}, &rep, NULL));
    after = read_all(a->p, w, &nb);
    CHECK(isnan(after[5]) && after[4] == f[4], "allow_nonfinite loads the NaN");
    free(after);
    f[5] = 0.5f;
    uint16_t h[12];
    for (int k = 0; k < 12; k++) h[k] = loom_f32_to_f16(f[k]);
    h[7] = 0xFC00; /* -inf */
    const char *inf_file = one_tensor_file("inf16.safetensors", "fc1.weight", LOOM_F16, h);
    s = loom_checkpoint_load(a->p, inf_file, NULL, &rep, NULL);
    CHECK(s == LOOM_ERR_FORMAT && strstr(loom_last_error(ctx), "-inf at index 7"), "an f16 -inf is refused: '%s'",
          loom_last_error(ctx));
    /* conversions: f16, bf16, f64 into the f32 parameter */
    double dv[12];
    for (int k = 0; k < 12; k++) h[k] = loom_f32_to_f16(f[k]), dv[k] = f[k];
    uint16_t bv[12];
    for (int k = 0; k < 12; k++) bv[k] = loom_f32_to_bf16(f[k]);
    const struct {
        const char *file;
        loom_dtype dt;
        const void *data;
    } cv[3] = {{"f16.safetensors", LOOM_F16, h}, {"bf16.safetensors", LOOM_BF16, bv}, {"f64.safetensors", LOOM_F64, dv}};
    for (int c = 0; c < 3; c++) {
        const char *path = one_tensor_file(cv[c].file, "fc1.weight", cv[c].dt, cv[c].data);
        s = loom_checkpoint_load(a->p, path, NULL, &rep, NULL);
        after = read_all(a->p, w, &nb);
        CHECK(s == LOOM_OK && rep.loaded == 1 && !memcmp(after, f, sizeof f), "%s of the right shape converted: %s '%s'",
              loom_dtype_name(cv[c].dt), loom_status_str(s), s ? loom_last_error(ctx) : "");
        free(after);
    }
    int32_t iv[12] = {0};
    const char *int_file = one_tensor_file("i32.safetensors", "fc1.weight", LOOM_I32, iv);
    s = loom_checkpoint_load(a->p, int_file, NULL, &rep, NULL);
    CHECK(s == LOOM_ERR_SHAPE && strstr(loom_last_error(ctx), "dtype mismatch") &&
              !strstr(loom_last_error(ctx), "shape mismatch"),
          "an i32 tensor of the right shape is a dtype mismatch: '%s'", loom_last_error(ctx));
    CHECK_OK(ctx, loom_plan_write(a->p, w, before, nb));
    free(before);
}

static void test_checkpoint(void) {
    ck_model a = ck_build(1, 0);
    if (!a.p) return;
    /* new values in every param and state, as training would leave them */
    for (int i = 0; i < a.g->n; i++) {
        loom_tensor *t = a.g->nodes[i];
        if (t->leaf != LOOM__PARAM && t->leaf != LOOM__STATE) continue;
        size_t n = (size_t)loom_tensor_numel(t);
        double *v = malloc(n * sizeof *v);
        for (size_t k = 0; k < n; k++) v[k] = loom_philox_uniform(42, (uint64_t)i, k) * 4 - 2;
        CHECK_OK(ctx, loom_plan_write_f64(a.p, t, v, n));
        free(v);
    }
    loom_plan_set_step(a.p, 17);
    const char *meta[] = {"epoch", "3", "note", "a \"quoted\"\nvalue", NULL};
    const char *ck1 = tpath("ck1.safetensors"), *ck2 = tpath("ck2.safetensors");
    CHECK_OK(ctx, loom_checkpoint_save(a.p, ck1, meta));

    ck_model b = ck_build(2, 0);
    if (!b.p) return;
    CHECK(!same_tensor(&a, &b, "fc1.weight"), "a fresh plan starts different");
    loom_checkpoint_report rep;
    loom_safetensors *mf = NULL;
    CHECK_OK(ctx, loom_checkpoint_load(b.p, ck1, NULL, &rep, &mf));
    CHECK(rep.loaded == 7 && rep.missing == 0 && rep.unexpected == 0 && rep.mismatched == 0 && rep.plan_step_restored,
          "report: loaded %d missing %d unexpected %d mismatched %d", rep.loaded, rep.missing, rep.unexpected,
          rep.mismatched);
    for (size_t i = 0; i < sizeof ck_names / sizeof *ck_names; i++)
        CHECK(same_tensor(&a, &b, ck_names[i]), "'%s' round trips bitwise", ck_names[i]);
    CHECK(loom_plan_step(b.p) == 17, "plan step restored: %llu", (unsigned long long)loom_plan_step(b.p));
    CHECK(mf && loom_safetensors_meta(mf, "epoch") && !strcmp(loom_safetensors_meta(mf, "epoch"), "3") &&
              !strcmp(loom_safetensors_meta(mf, "note"), meta[3]) &&
              !strcmp(loom_safetensors_meta(mf, LOOM_CHECKPOINT_PLAN_STEP_KEY), "17"),
          "metadata through meta_out");
    loom_safetensors_close(mf);

    /* same forward result, and the same file when saved again */
    float xv[6] = {0.5f, -1, 2, 0.25f, 3, -0.75f};
    float ya[8], yb[8];
    CHECK_OK(ctx, loom_plan_write(a.p, a.x, xv, sizeof xv));
    CHECK_OK(ctx, loom_plan_write(b.p, b.x, xv, sizeof xv));
    CHECK_OK(ctx, loom_plan_run(a.p));
    CHECK_OK(ctx, loom_plan_run(b.p));
    CHECK_OK(ctx, loom_plan_read(a.p, a.y, ya, sizeof ya));
    CHECK_OK(ctx, loom_plan_read(b.p, b.y, yb, sizeof yb));
    CHECK(!memcmp(ya, yb, sizeof ya), "loaded plan computes the same output bitwise");
    loom_plan_set_step(a.p, 17), loom_plan_set_step(b.p, 17);
    CHECK_OK(ctx, loom_checkpoint_save(a.p, ck1, meta));
    CHECK_OK(ctx, loom_checkpoint_save(b.p, ck2, meta));
    size_t n1 = 0;
    uint8_t *f1 = read_file(ck1, &n1);
    CHECK(f1 && same_file(ck2, f1, n1), "both plans save byte-identical files");

    /* mismatch, missing, unexpected */
    ck_model c = ck_build(3, 1);
    if (c.p) {
        loom_tensor *cb = find_node(c.g, "fc1.bias");
        size_t nb0;
        void *before = read_all(c.p, cb, &nb0);
        memset(&rep, 0xAB, sizeof rep);
        mf = (loom_safetensors *)&rep; /* must be reset to NULL */
        loom_status s = loom_checkpoint_load(c.p, ck1, NULL, &rep, &mf);
        const char *msg = loom_last_error(ctx);
        CHECK(s == LOOM_ERR_SHAPE && !mf, "mismatch is an error: %s", loom_status_str(s));
        CHECK(strstr(msg, "fc1.weight") && strstr(msg, "[4, 3]") && strstr(msg, "[4, 2]") && strstr(msg, ck1),
              "message names the tensor, both shapes and the file: '%s'", msg);
        CHECK(rep.mismatched == 2 && !strcmp(rep.mismatched_names[0], "fc1.weight") &&
                  !strcmp(rep.mismatched_names[1], "fc1.weight.exp_avg") && rep.missing == 1 &&
                  !strcmp(rep.missing_names[0], "fc2.weight") && rep.unexpected == 1 &&
                  !strcmp(rep.unexpected_names[0], "emb.weight") && rep.loaded == 0,
              "report: mismatched %d missing %d unexpected %d loaded %d", rep.mismatched, rep.missing, rep.unexpected,
              rep.loaded);
        size_t nb1;
        void *after = read_all(c.p, cb, &nb1);
        CHECK(nb0 == nb1 && !memcmp(before, after, nb0), "a failed load leaves the plan unchanged");
        free(after);

        loom_checkpoint_load_desc skip = {.skip_mismatched = true};
        CHECK_OK(ctx, loom_checkpoint_load(c.p, ck1, &skip, &rep, NULL));
        CHECK(rep.loaded == 4 && rep.mismatched == 2 && rep.missing == 1 && rep.unexpected == 1,
              "skip_mismatched: loaded %d", rep.loaded);
        CHECK(same_tensor(&a, &c, "fc1.bias") && same_tensor(&a, &c, "counter"), "the matching tensors were loaded");
        after = read_all(c.p, cb, &nb1);
        CHECK(memcmp(before, after, nb0) != 0, "fc1.bias changed");
        free(before), free(after);

        loom_checkpoint_load_desc strict = {.strict = true, .skip_mismatched = true};
        s = loom_checkpoint_load(c.p, ck1, &strict, &rep, NULL);
        CHECK(s == LOOM_ERR_FORMAT && strstr(loom_last_error(ctx), "strict") && strstr(loom_last_error(ctx), "fc2.weight"),
              "strict: missing is an error: %s: %s", loom_status_str(s), loom_last_error(ctx));
        ck_free(&c);
    }
    ck_model d = ck_build(4, 2);
    if (d.p) {
        /* f32 in the file, f64 in the graph, one shape: converted */
        CHECK_OK(ctx, loom_checkpoint_load(d.p, ck1, NULL, &rep, NULL));
        size_t na, nd;
        float *fa = read_all(a.p, find_node(a.g, "fc1.bias"), &na);
        double *fd = read_all(d.p, find_node(d.g, "fc1.bias"), &nd);
        CHECK(na == 16 && nd == 32 && fd[0] == (double)fa[0] && fd[3] == (double)fa[3] && rep.mismatched == 0,
              "an f32 tensor loads into an f64 one of its shape, converted");
        free(fa), free(fd);
        ck_free(&d);
    }
    test_checkpoint_values(&a);

    /* a truncated checkpoint: a format error naming the file, plan unchanged */
    if (f1) {
        const char *cut = tpath("cut.safetensors");
        write_file(cut, f1, n1 - 3);
        size_t nb0;
        void *before = read_all(b.p, find_node(b.g, "counter"), &nb0);
        loom_status s = loom_checkpoint_load(b.p, cut, NULL, &rep, NULL);
        CHECK(s == LOOM_ERR_FORMAT && strstr(loom_last_error(ctx), cut), "truncated checkpoint: %s: %s",
              loom_status_str(s), loom_last_error(ctx));
        size_t nb1;
        void *after = read_all(b.p, find_node(b.g, "counter"), &nb1);
        CHECK(!memcmp(before, after, nb0), "plan unchanged after a failed load");
        free(before), free(after);
    }
    free(f1);
    loom_status s = loom_checkpoint_load(b.p, tpath("missing.safetensors"), NULL, &rep, NULL);
    CHECK(s == LOOM_ERR_IO && strstr(loom_last_error(ctx), "missing.safetensors"), "missing checkpoint: %s",
          loom_last_error(ctx));
    const char *bad_step[] = {LOOM_CHECKPOINT_PLAN_STEP_KEY, "x12", NULL};
    CHECK_OK(ctx, loom_checkpoint_save(b.p, ck2, bad_step));
    s = loom_checkpoint_load(b.p, ck2, NULL, &rep, NULL);
    CHECK(s == LOOM_ERR_FORMAT && strstr(loom_last_error(ctx), "not a step count"), "bad plan step: %s",
          loom_last_error(ctx));
    const char *no_value[] = {"k", NULL, NULL};
    s = loom_checkpoint_save(b.p, ck2, no_value);
    CHECK(s == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "has no value"), "metadata without value: %s",
          loom_last_error(ctx));
    ck_free(&a);
    ck_free(&b);
}

/* ---- the Python package (--python SCRIPT) ---- */
/* Values the script recomputes: float dtypes (i % 13 - 6) / 2, i32 1000 i -
 * 2000, u8 37 i mod 256. */
static const spec py_specs[] = {
    {"conv1.weight", LOOM_F32, 4, {2, 1, 3, 3}},
    {"conv1.bias", LOOM_F32, 1, {2}},
    {"h.f16", LOOM_F16, 2, {3, 4}},
    {"h.bf16", LOOM_BF16, 2, {2, 3}},
    {"d.f64", LOOM_F64, 3, {2, 2, 2}},
    {"ints", LOOM_I32, 1, {5}},
    {"bytes", LOOM_U8, 1, {7}},
    {"scalar", LOOM_F32, 0, {0}},
    {"empty", LOOM_F32, 2, {2, 0}},
    {"five", LOOM_U8, 5, {1, 2, 1, 2, 1}},
    {"na\xc3\xafve \"quoted\"\n", LOOM_F32, 1, {1}},
};
#define NPY ((int)(sizeof py_specs / sizeof *py_specs))

static void py_values(const spec *s, void *out) {
    loom_st_tensor t = {.dtype = s->dt, .ndim = s->ndim};
    memcpy(t.dims, s->dims, sizeof t.dims);
    size_t n = loom_st_tensor_nbytes(&t) / loom_dtype_size(s->dt);
    for (size_t i = 0; i < n; i++) {
        double f = ((double)(i % 13) - 6) / 2;
        switch (s->dt) {
        case LOOM_F32: ((float *)out)[i] = (float)f; break;
        case LOOM_F64: ((double *)out)[i] = f; break;
        case LOOM_F16: ((uint16_t *)out)[i] = loom_f32_to_f16((float)f); break;
        case LOOM_BF16: ((uint16_t *)out)[i] = loom_f32_to_bf16((float)f); break;
        case LOOM_I32: ((int32_t *)out)[i] = (int32_t)(1000 * (int64_t)i - 2000); break;
        case LOOM_U8: ((uint8_t *)out)[i] = (uint8_t)(37 * i % 256); break;
        default: break;
        }
    }
}

static int run_python(const char *script) {
    if (system("command -v python3 >/dev/null 2>&1") != 0) return tu_skip("python3 is not installed");
    loom_st_tensor t[NPY];
    void *data[NPY];
    for (int i = 0; i < NPY; i++) {
        t[i] = (loom_st_tensor){.name = py_specs[i].name, .dtype = py_specs[i].dt, .ndim = py_specs[i].ndim};
        memcpy(t[i].dims, py_specs[i].dims, sizeof t[i].dims);
        data[i] = malloc(loom_st_tensor_nbytes(&t[i]) + 1);
        py_values(&py_specs[i], data[i]);
        t[i].data = data[i];
    }
    const char *meta[] = {"epoch", "3", "note", "line1\nline2\t\"q\" \\ \xc3\xa9 \xf0\x9f\x99\x82", "empty", "", NULL};
    const char *from_c = tpath("from_loom.safetensors"), *from_py = tpath("from_python.safetensors");
    CHECK_OK(ctx, loom_safetensors_write(ctx, from_c, t, NPY, meta));
    for (int i = 0; i < NPY; i++) free(data[i]);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "python3 '%s' check '%s'", script, from_c);
    printf("$ %s\n", cmd);
    fflush(stdout);
    int rc = system(cmd);
    rc = rc >= 0 && WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
    if (rc == 77) return tu_skip("the Python safetensors package is not installed (pip install safetensors numpy)");
    CHECK(rc == 0, "python check of loom's file exited %d", rc);

    snprintf(cmd, sizeof cmd, "python3 '%s' write '%s'", script, from_py);
    printf("$ %s\n", cmd);
    fflush(stdout);
    rc = system(cmd);
    rc = rc >= 0 && WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
    CHECK(rc == 0, "python write exited %d", rc);
    loom_safetensors *st = NULL;
    CHECK_OK(ctx, loom_safetensors_open(ctx, from_py, &st));
    if (st) {
        int checked = 0;
        for (int i = 0; i < NPY; i++) {
            if (py_specs[i].dt == LOOM_BF16) continue; /* numpy has no bfloat16 */
            const loom_st_tensor *r = loom_safetensors_find(st, py_specs[i].name);
            CHECK(r, "python's file has '%s'", py_specs[i].name);
            if (!r) continue;
            loom_st_tensor want = {.dtype = py_specs[i].dt, .ndim = py_specs[i].ndim};
            memcpy(want.dims, py_specs[i].dims, sizeof want.dims);
            size_t nb = loom_st_tensor_nbytes(&want);
            void *v = malloc(nb + 1);
            py_values(&py_specs[i], v);
            bool same = r->dtype == want.dtype && r->ndim == want.ndim && loom_st_tensor_nbytes(r) == nb;
            for (int d = 0; same && d < r->ndim; d++) same = r->dims[d] == want.dims[d];
            CHECK(same && (!nb || !memcmp(r->data, v, nb)), "python's '%s' matches", py_specs[i].name);
            free(v);
            checked++;
        }
        const char *note = loom_safetensors_meta(st, "note");
        CHECK(note && !strcmp(note, meta[3]), "python's metadata");
        printf("read back %d tensors written by python's safetensors\n", checked);
        loom_safetensors_close(st);
    }
    return tu_summary();
}

int main(int argc, char **argv) {
    mkdir(TDIR, 0777);
    if (!tu_cpu_open(1, &ctx, &be)) return 1;
    int rc;
    if (argc == 3 && !strcmp(argv[1], "--python")) {
        rc = run_python(argv[2]);
    } else {
        test_round_trip();
        test_foreign();
        test_writer();
        test_checkpoint();
        rc = tu_summary();
    }
    tu_cpu_close(ctx, be);
    return rc;
}
