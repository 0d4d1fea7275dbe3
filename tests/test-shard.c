/* tests/test-shard.c — the packed shard format (loader/shard.c).
 *
 * Each run writes a tiny ImageFolder (PNG, BMP and JPEG of several sizes,
 * three classes) under a fresh temp directory, packs it with
 * Resize((8, 6)), and checks: the records read back bit-exact against
 * decoding + resizing each file directly, the labels, loom_source_open_dir
 * picking DIR/train.shard (and a shard path itself), loader batches identical
 * for 0 and 2 workers; packing errors (images of several sizes without a
 * resize, a random step); and bad shards — truncated, bad payload checksum,
 * bad header checksum, wrong magic, unknown version, trailing bytes,
 * zero-byte file, missing file — each an error naming the file.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loom/loader.h"
#include "loom/transforms.h"
#include "testutil.h"
#include "imgwrite.h"

static void write_img(const char *rel, int seed, int h, int w) {
    uint8_t *px = malloc((size_t)h * w * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) px[((size_t)y * w + x) * 3 + c] = (uint8_t)(20 + seed * 7 + y * 3 + x * 2 + c * 30);
    write_rgb(rel, px, h, w);
    free(px);
}

static uint8_t *read_file(const char *p, size_t *n) {
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*n ? *n : 1);
    if (fread(b, 1, *n, f) != *n) *n = 0;
    fclose(f);
    return b;
}

static void write_file(const char *p, const void *b, size_t n) {
    FILE *f = fopen(p, "wb");
    if (f) {
        if (n) fwrite(b, 1, n, f);
        fclose(f);
    }
}

#define OH 8
#define OW 6

static const struct {
    const char *rel;
    int seed, h, w, label;
} imgs[] = {
    {"ds/train/ant/a.png", 1, 9, 7, 0},   {"ds/train/ant/b.bmp", 2, 12, 10, 0}, {"ds/train/bee/c.png", 3, 20, 16, 1},
    {"ds/train/bee/d.jpg", 4, 40, 48, 1}, {"ds/train/cat/e.png", 5, 5, 5, 2},   {"ds/train/cat/f.bmp", 6, 8, 6, 2},
    {"ds/train/cat/g.png", 7, 17, 33, 2},
};
#define NIMG ((int)(sizeof imgs / sizeof imgs[0]))

static void test_pack_and_read(loom_ctx *ctx, char *shard, size_t n_shard) {
    mkdirs("ds/train/ant"), mkdirs("ds/train/bee"), mkdirs("ds/train/cat");
    for (int k = 0; k < NIMG; k++) write_img(imgs[k].rel, imgs[k].seed, imgs[k].h, imgs[k].w);
    char root[512];
    path_of("ds/train", root, sizeof root);
    path_of("ds/train.shard", shard, n_shard);
    loom_source *ifs = NULL, *src = NULL;
    CHECK_OK(ctx, loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root}, &ifs));
    if (!ifs) return;
    loom_tf_step rs = {.kind = LOOM_TF_RESIZE, .h = OH, .w = OW};
    int64_t h = 0, w = 0;
    CHECK_OK(ctx, loom_shard_pack(ctx, &(loom_shard_pack_desc){.src = ifs, .steps = &rs, .nsteps = 1, .path = shard}, &h, &w));
    CHECK(h == OH && w == OW, "packed records %lldx%lld (expected %dx%d)", (long long)h, (long long)w, OH, OW);

    /* read back: every record equals decode (with the same hint) + Resize, bit for bit */
    CHECK_OK(ctx, loom_source_open_shard(ctx, shard, &src));
    if (src) {
        CHECK(src->n == NIMG && src->kind == LOOM_SAMPLE_U8 && src->c == 3 && src->h == OH && src->w == OW &&
                  src->num_classes == 3 && src->get && !src->get_image && !strcmp(src->name, shard),
              "shard source: n %lld c %d %lldx%lld classes %d name %s", (long long)src->n, src->c, (long long)src->h,
              (long long)src->w, src->num_classes, src->name);
        uint8_t rec[OH * OW * 3], want[OH * OW * 3];
        for (int i = 0; i < NIMG; i++) {
            char p[512];
            path_of(imgs[i].rel, p, sizeof p);
            size_t n = 0;
            uint8_t *b = read_file(p, &n), *px = NULL;
            int64_t dh = 0, dw = 0;
            loom_decode_hint hint = {.min_h = OH, .min_w = OW};
            CHECK_OK(ctx, loom_image_decode(ctx, p, b, n, &hint, &px, &dh, &dw));
            free(b);
            if (!px) continue;
            loom_image in = {px, dh, dw, 3}, out = {want, OH, OW, 3};
            CHECK_OK(ctx, loom_tf_resize(ctx, &in, &out));
            free(px);
            int32_t y = -1;
            CHECK_OK(ctx, src->get(src, ctx, i, rec, &y));
            CHECK(!memcmp(rec, want, sizeof rec) && y == imgs[i].label, "record %d (%s): label %d (expected %d), pixels %s",
                  i, imgs[i].rel, y, imgs[i].label, memcmp(rec, want, sizeof rec) ? "differ" : "equal");
        }
        int32_t y;
        loom_status st = src->get(src, ctx, NIMG, rec, &y);
        CHECK(st == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), shard), "get out of range: %s",
              loom_last_error(ctx));
    }

    /* loom_source_open_dir: DIR/train.shard before the ImageFolder DIR/train, and a shard path itself */
    char dir[512];
    path_of("ds", dir, sizeof dir);
    for (int k = 0; k < 2; k++) {
        loom_source *s2 = NULL;
        CHECK_OK(ctx, loom_source_open_dir(ctx, k ? shard : dir, true, &s2));
        CHECK(s2 && s2->get && s2->n == NIMG && strstr(s2->name, "train.shard"), "open_dir(%s) -> %s", k ? shard : dir,
              s2 ? s2->name : "-");
        loom_source_destroy(s2);
    }

    /* the loader on the shard: identical batches for 0 and 2 workers */
    if (src) {
        loom_tf_step steps[2] = {{.kind = LOOM_TF_RANDOM_CROP, .h = 6, .w = 4, .pad = {1, 1, 1, 1}},
                                 {.kind = LOOM_TF_RANDOM_HFLIP}};
        size_t per = 3 * 6 * 4;
        float *first = calloc((size_t)NIMG * per, sizeof *first);
        int32_t ys[NIMG] = {0};
        for (int pass = 0; pass < 2; pass++) {
            loom_loader *ld = NULL;
            loom_loader_desc d = {.src = src, .batch = 3, .shuffle = true, .seed = 11, .steps = steps, .nsteps = 2,
                                  .workers = pass == 0 ? LOOM_WORKERS_SYNC : 2};
            CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
            if (!ld) break;
            int got = 0;
            for (;;) {
                loom_loader_batch b;
                loom_status st = loom_loader_next(ld, &b);
                CHECK(st == LOOM_OK, "loader next: %s", loom_last_error(ctx));
                if (st != LOOM_OK || b.count == 0) break;
                for (int k = 0; k < b.count && got < NIMG; k++, got++) {
                    if (pass == 0) {
                        memcpy(first + (size_t)got * per, b.x + (size_t)k * per, per * sizeof(float));
                        ys[got] = b.y[k];
                    } else {
                        CHECK(!memcmp(first + (size_t)got * per, b.x + (size_t)k * per, per * sizeof(float)) &&
                                  ys[got] == b.y[k],
                              "sample %d differs between 0 and 2 workers", got);
                    }
                }
            }
            CHECK(got == NIMG, "loader delivered %d samples (expected %d)", got, NIMG);
            loom_loader_destroy(ld);
        }
        free(first);
    }
    /* the loader reads the mapped records in place (view): the same batches
     * as through get's copies, with a tail that reads through a crop and flip */
    if (src) {
        CHECK(src->view != NULL, "a mapped shard offers view");
        loom_source copy = *src;
        copy.view = NULL;
        loom_tf_step steps[8];
        int ns = 0;
        CHECK_OK(ctx, loom_tf_parse(ctx, "RandomCrop((6, 5)); hflip; ColorJitter(0.3, 0.3, 0.3, 0.1); RandomAffine(20)",
                                    steps, 8, &ns));
        size_t per = 3 * 6 * 5;
        float *out[2] = {calloc((size_t)NIMG * per, sizeof(float)), calloc((size_t)NIMG * per, sizeof(float))};
        int got[2] = {0, 0};
        for (int pass = 0; pass < 2; pass++) {
            loom_loader *ld = NULL;
            loom_loader_desc d = {.src = pass ? &copy : src, .batch = 2, .shuffle = true, .seed = 3, .steps = steps,
                                  .nsteps = ns, .workers = 2};
            CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
            if (!ld) break;
            loom_loader_batch b;
            while (loom_loader_next(ld, &b) == LOOM_OK && b.count > 0 && got[pass] + b.count <= NIMG)
                memcpy(out[pass] + (size_t)got[pass] * per, b.x, (size_t)b.count * per * sizeof(float)), got[pass] += b.count;
            loom_loader_destroy(ld);
        }
        CHECK(got[0] == NIMG && got[1] == NIMG && !memcmp(out[0], out[1], (size_t)NIMG * per * sizeof(float)),
              "records read in place (view) == copied (get): %d, %d samples", got[0], got[1]);
        free(out[0]), free(out[1]);
    }
    loom_source_destroy(src);

    /* packing errors: images of several sizes and no resize; a random step */
    char bad[512];
    path_of("nope.shard", bad, sizeof bad);
    loom_status st = loom_shard_pack(ctx, &(loom_shard_pack_desc){.src = ifs, .path = bad}, NULL, NULL);
    char second[512];
    path_of(imgs[1].rel, second, sizeof second);
    CHECK(st == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), second) && strstr(loom_last_error(ctx), "one size"),
          "pack without a resize: %s (%s)", loom_status_str(st), loom_last_error(ctx));
    printf("  pack without a resize -> %s\n", loom_last_error(ctx));
    loom_tf_step rnd[2] = {rs, {.kind = LOOM_TF_RANDOM_HFLIP}};
    st = loom_shard_pack(ctx, &(loom_shard_pack_desc){.src = ifs, .steps = rnd, .nsteps = 2, .path = bad}, NULL, NULL);
    CHECK(st == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "random"), "pack with a random step: %s (%s)",
          loom_status_str(st), loom_last_error(ctx));
    struct stat sb;
    CHECK(stat(bad, &sb) != 0, "a failed pack left %s behind", bad);
    /* no temp file of the writer ("<path>.tmp.<pid>.<k>") is left either */
    char bad_dir[512], prefix[600];
    snprintf(bad_dir, sizeof bad_dir, "%s", bad);
    char *slash = strrchr(bad_dir, '/');
    *slash = 0;
    snprintf(prefix, sizeof prefix, "%s.tmp", slash + 1);
    DIR *d = opendir(bad_dir);
    CHECK(d != NULL, "opendir %s", bad_dir);
    for (struct dirent *e; d && (e = readdir(d));)
        CHECK(strncmp(e->d_name, prefix, strlen(prefix)) != 0, "a failed pack left %s/%s behind", bad_dir, e->d_name);
    if (d) closedir(d);
    loom_source_destroy(ifs);
}

static void test_bad(loom_ctx *ctx, const char *shard) {
    size_t n = 0;
    uint8_t *good = read_file(shard, &n);
    CHECK(good && n > 64, "read %s", shard);
    if (!good || n <= 64) return;
    CHECK_OK(ctx, loom_shard_check_buffer(ctx, "mem", good, n));
    uint8_t *b = malloc(n + 16);
    const struct {
        const char *what, *words;
        loom_status st;
    } cases[] = {
        {"truncated", "truncated shard", LOOM_ERR_FORMAT},
        {"payload", "bad payload checksum", LOOM_ERR_FORMAT},
        {"label", "bad payload checksum", LOOM_ERR_FORMAT},
        {"header", "bad header checksum", LOOM_ERR_FORMAT},
        {"magic", "bad magic", LOOM_ERR_FORMAT},
        {"version", "version 2", LOOM_ERR_UNSUPPORTED},
        {"trailing", "trailing bytes", LOOM_ERR_FORMAT},
        {"short", "shorter than the 64-byte header", LOOM_ERR_FORMAT},
        {"empty", "shorter than the 64-byte header", LOOM_ERR_FORMAT},
        {"missing", "cannot open", LOOM_ERR_IO},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        memcpy(b, good, n);
        size_t m = n;
        const char *w = cases[k].what;
        if (!strcmp(w, "truncated")) m = n - 10;
        else if (!strcmp(w, "payload")) b[64 + 5] ^= 1;
        else if (!strcmp(w, "label")) b[n - 8 * NIMG - 4 * NIMG - 4] ^= 0x40; /* inside the labels (or their padding) */
        else if (!strcmp(w, "header")) b[20] ^= 1;                            /* the record count */
        else if (!strcmp(w, "magic")) b[0] = 'X';
        else if (!strcmp(w, "version")) b[8] = 2;
        else if (!strcmp(w, "trailing")) memset(b + n, 0, 16), m = n + 16;
        else if (!strcmp(w, "short")) m = 40;
        else if (!strcmp(w, "empty")) m = 0;
        char p[512];
        snprintf(p, sizeof p, "%s/bad-%s.shard", tmp, w);
        if (strcmp(w, "missing")) write_file(p, b, m);
        loom_source *src = NULL;
        loom_status st = loom_source_open_shard(ctx, p, &src);
        const char *e = loom_last_error(ctx);
        CHECK(st == cases[k].st && !src && strstr(e, p) && strstr(e, cases[k].words), "%s: %s '%s' (expected %s naming "
              "the file and '%s')", w, loom_status_str(st), e, loom_status_str(cases[k].st), cases[k].words);
        printf("  %s -> %s\n", w, e);
        loom_source_destroy(src);
        if (strcmp(w, "missing")) {
            st = loom_shard_check_buffer(ctx, "buf", b, m);
            CHECK(st == cases[k].st && strstr(loom_last_error(ctx), cases[k].words), "%s in memory: %s '%s'", w,
                  loom_status_str(st), loom_last_error(ctx));
        }
    }
    free(b);
    free(good);
}

int main(void) {
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    if (!tu_tmpdir("shard", tmp, sizeof tmp)) return 1;
    char shard[512];
    test_pack_and_read(ctx, shard, sizeof shard);
    test_bad(ctx, shard);
    tu_rm_rf(tmp);
    loom_ctx_destroy(ctx);
    return tu_summary();
}
