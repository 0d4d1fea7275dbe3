/* tests/test-loader.c — the threaded prefetching loader (loader/pool.c),
 * its sources (loader/source.c) and per-sample transforms
 * (loader/pipeline*.c).
 *
 * - determinism: 3 epochs of shuffled, augmented (RandomCrop with reflect
 *   padding, flips) batches are bitwise identical for synchronous loading,
 *   1, 2, 4 workers, auto, and prefetch 1 / 5; epochs differ; without
 *   transforms the batches are the seeded order normalised by the formula
 * - stopping: mid-epoch begin() drops in-flight work and the new epoch is
 *   still exact; destroy mid-epoch joins every worker (ASan: no leaks)
 * - loading the next epoch ahead: carried into begin(e + 1), dropped by any
 *   other begin (then off), exact either way; LOOM_LOADER_AHEAD=0
 * - a failing sample: its error (naming the sample) is returned in order
 *   after the batches before it, for every worker count, with no hang
 * - RandomCrop / flips mean what torchvision's do: the crop is a window of
 *   the padded image at a uniform position (all positions seen), padding
 *   modes map as numpy/torch pad, p = 1 always flips and p = 0 never
 * - the parser, and its errors; pipeline shape errors
 * - .npy sources: u1 HWC images and f4 records, label checks
 * - auto-tuning, a tolerant timing smoke test: a slow source makes the pool
 *   grow, a slow consumer makes it shrink (the rules: tests/test-autotune.c)
 * A watchdog alarm turns any hang into a failure.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "impl.h"
#include "loom/loader.h"
#include "testutil.h"

static loom_ctx *ctx;
static void sleep_ms(double ms);

static void make_dataset(loom_dataset *ds, int64_t n, int c, int h, int w, uint32_t seed) {
    memset(ds, 0, sizeof *ds);
    ds->n = n, ds->c = c, ds->h = h, ds->w = w, ds->num_classes = 10;
    size_t per = (size_t)c * (size_t)h * (size_t)w;
    ds->pixels = malloc((size_t)n * per);
    ds->labels = malloc((size_t)n * sizeof *ds->labels);
    uint32_t s = seed;
    for (size_t k = 0; k < (size_t)n * per; k++) {
        s = s * 1664525u + 1013904223u;
        ds->pixels[k] = (uint8_t)(s >> 24);
    }
    for (int64_t i = 0; i < n; i++) ds->labels[i] = (int32_t)(i % 10);
}

/* Every batch of `epochs` epochs, concatenated (x then y per batch). */
typedef struct dump {
    float *x;
    int32_t *y;
    size_t nx, ny;
    int64_t batches;
} dump;

static void dump_free(dump *d) {
    free(d->x), free(d->y);
    memset(d, 0, sizeof *d);
}

static loom_status run_epochs(loom_loader_desc desc, int epochs, dump *out) {
    memset(out, 0, sizeof *out);
    loom_loader *ld = NULL;
    loom_status st = loom_loader_create(ctx, &desc, &ld);
    if (st != LOOM_OK) return st;
    int c;
    int64_t h, w;
    loom_loader_shape(ld, &c, &h, &w);
    size_t rec = (size_t)c * (size_t)h * (size_t)w;
    int64_t nb = loom_loader_batches(ld);
    out->x = malloc((size_t)(epochs * nb * desc.batch) * rec * sizeof(float));
    out->y = malloc((size_t)(epochs * nb * desc.batch) * sizeof(int32_t));
    for (int e = 0; e < epochs && st == LOOM_OK; e++) {
        loom_loader_begin(ld, e, 0, 0);
        for (;;) {
            loom_loader_batch b;
            if ((st = loom_loader_next(ld, &b)) != LOOM_OK || b.count == 0) break;
            memcpy(out->x + out->nx, b.x, (size_t)b.count * rec * sizeof(float));
            memcpy(out->y + out->ny, b.y, (size_t)b.count * sizeof(int32_t));
            out->nx += (size_t)b.count * rec, out->ny += (size_t)b.count;
            out->batches++;
        }
    }
    loom_loader_destroy(ld);
    return st;
}

static bool same(const dump *a, const dump *b) {
    return a->nx == b->nx && a->ny == b->ny && a->batches == b->batches && !memcmp(a->x, b->x, a->nx * sizeof(float)) &&
           !memcmp(a->y, b->y, a->ny * sizeof(int32_t));
}

static void test_determinism(void) {
    loom_dataset ds;
    make_dataset(&ds, 203, 3, 9, 11, 1);
    loom_source *src = NULL;
    CHECK_OK(ctx, loom_source_wrap(ctx, &ds, &src));
    loom_tf_step steps[3];
    int ns = 0;
    CHECK_OK(ctx, loom_tf_parse(ctx, "RandomCrop((8, 10), padding=(2, 3), padding_mode=reflect); "
                                     "RandomHorizontalFlip(); RandomVerticalFlip(p=0.3)",
                                steps, 3, &ns));
    CHECK(ns == 3, "3 steps parsed (got %d)", ns);
    float mean[3] = {0.5f, 0.4f, 0.3f}, sd[3] = {0.25f, 0.2f, 0.3f};
    loom_loader_desc d = {.src = src, .batch = 16, .shuffle = true, .seed = 42, .steps = steps, .nsteps = ns,
                          .mean = mean, .std = sd, .nstat = 3};
    d.workers = LOOM_WORKERS_SYNC;
    dump ref;
    CHECK_OK(ctx, run_epochs(d, 3, &ref));
    CHECK(ref.batches == 3 * 13 && ref.ny == 3 * 203, "3 epochs of 13 batches (got %lld batches, %zu samples)",
          (long long)ref.batches, ref.ny);
    size_t per_epoch = ref.nx / 3;
    CHECK(memcmp(ref.x, ref.x + per_epoch, per_epoch * sizeof(float)) != 0, "epochs 0 and 1 differ");
    const struct {
        int workers, prefetch;
    } cfg[] = {{1, 0}, {2, 0}, {4, 0}, {LOOM_WORKERS_AUTO, 0}, {4, 1}, {3, 5}};
    for (size_t k = 0; k < sizeof cfg / sizeof cfg[0]; k++) {
        d.workers = cfg[k].workers, d.prefetch = cfg[k].prefetch;
        dump got;
        CHECK_OK(ctx, run_epochs(d, 3, &got));
        CHECK(same(&ref, &got), "workers %d prefetch %d: bitwise equal to synchronous loading", cfg[k].workers,
              cfg[k].prefetch);
        dump_free(&got);
    }
    dump_free(&ref);

    /* no transforms, Fashion-MNIST-like normalisation: the trainer's batches
     * (the order shuffled from (seed, epoch), x = (u / 255 - mean) / std) */
    float m1 = 0.2860f, s1 = 0.3530f;
    loom_loader_desc p = {.src = src, .batch = 32, .shuffle = true, .drop_last = true, .seed = 5, .workers = 2,
                          .mean = &m1, .std = &s1, .nstat = 1};
    dump got;
    CHECK_OK(ctx, run_epochs(p, 2, &got));
    size_t rec = 3 * 9 * 11;
    int64_t order[203];
    bool eq = got.batches == 2 * 6;
    size_t ax = 0, ay = 0;
    for (int e = 0; e < 2 && eq; e++) {
        for (int64_t i = 0; i < ds.n; i++) order[i] = i;
        loom__shuffle(order, ds.n, 5, LOOM__STREAM_EPOCH_ORDER + (uint64_t)e);
        for (int64_t i = 0; eq && i < 6 * 32; i++, ay++) {
            const uint8_t *px = ds.pixels + (size_t)order[i] * rec;
            for (size_t k = 0; eq && k < rec; k++, ax++) eq = got.x[ax] == ((float)px[k] / 255.0f - m1) / s1;
            eq = eq && got.y[ay] == ds.labels[order[i]];
        }
    }
    CHECK(eq && ay == got.ny, "no transforms: the loader's batches are the seeded order, normalised by the formula, bitwise");
    dump_free(&got);
    loom_source_destroy(src);
    loom_dataset_free(&ds);
}

static void test_stop(void) {
    loom_dataset ds;
    make_dataset(&ds, 500, 1, 16, 16, 2);
    loom_source *src = NULL;
    CHECK_OK(ctx, loom_source_wrap(ctx, &ds, &src));
    loom_tf_step st = {.kind = LOOM_TF_RANDOM_CROP, .h = 12, .w = 12, .pad = {1, 1, 1, 1}};
    loom_loader_desc d = {.src = src, .batch = 8, .shuffle = true, .seed = 9, .steps = &st, .nsteps = 1,
                          .workers = LOOM_WORKERS_SYNC};
    dump ref;
    CHECK_OK(ctx, run_epochs(d, 2, &ref));
    size_t rec = 144;
    /* 4 workers: stop epoch 0 after 3 batches, run epoch 1 from batch 5 for 7 batches */
    d.workers = 4, d.prefetch = 3;
    loom_loader *ld = NULL;
    CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
    loom_loader_batch b;
    for (int k = 0; k < 3; k++) CHECK_OK(ctx, loom_loader_next(ld, &b));
    loom_loader_begin(ld, 1, 5, 7);
    int64_t got = 0;
    bool eq = true;
    for (;;) {
        CHECK_OK(ctx, loom_loader_next(ld, &b));
        if (b.count == 0) break;
        size_t at = (500 + (size_t)b.index * 8) * rec; /* epoch 1 follows epoch 0's 500 samples */
        eq = eq && b.index == 5 + got && !memcmp(b.x, ref.x + at, (size_t)b.count * rec * sizeof(float));
        got++;
    }
    CHECK(eq && got == 7, "begin mid-epoch: batches 5..11 of epoch 1 exact (got %lld)", (long long)got);
    /* destroy mid-epoch, with workers busy filling the ring */
    loom_loader_begin(ld, 0, 0, 0);
    CHECK_OK(ctx, loom_loader_next(ld, &b));
    loom_loader_destroy(ld);
    /* and right after create, before any batch */
    CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
    loom_loader_destroy(ld);
    dump_free(&ref);
    loom_source_destroy(src);
    loom_dataset_free(&ds);
}

/* Loading the next epoch ahead: begin(e + 1) after epoch e finds its first
 * batches ready (stats.carried), and they are the batches synchronous
 * loading gives; any other begin drops them (exact batches still) and, after
 * a whole epoch, stops loading ahead; LOOM_LOADER_AHEAD=0 never does it. */
static int64_t drain(loom_loader *ld, const dump *ref, size_t at, size_t rec, bool *eq) {
    int64_t n = 0;
    for (;;) {
        loom_loader_batch b;
        if (loom_loader_next(ld, &b) != LOOM_OK || b.count == 0) break;
        *eq = *eq && !memcmp(b.x, ref->x + at, (size_t)b.count * rec * sizeof(float));
        at += (size_t)b.count * rec, n++;
    }
    return n;
}

static void test_ahead(void) {
    loom_dataset ds;
    make_dataset(&ds, 203, 1, 8, 8, 3);
    loom_source *src = NULL;
    CHECK_OK(ctx, loom_source_wrap(ctx, &ds, &src));
    loom_tf_step st = {.kind = LOOM_TF_RANDOM_CROP, .h = 6, .w = 6, .pad = {1, 1, 1, 1}};
    loom_loader_desc d = {.src = src, .batch = 16, .shuffle = true, .seed = 21, .steps = &st, .nsteps = 1,
                          .workers = LOOM_WORKERS_SYNC};
    dump ref;
    CHECK_OK(ctx, run_epochs(d, 7, &ref)); /* epochs 0..6 */
    const size_t rec = 36, per = 203 * rec;
    d.workers = 2, d.prefetch = 3; /* 7 slots: epoch 1 can be 7 batches ahead */
    loom_loader *ld = NULL;
    CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
    loom_loader_stats s;
    bool eq = true;
    int64_t n0 = drain(ld, &ref, 0, rec, &eq);
    sleep_ms(300); /* the workers load epoch 1 ahead meanwhile */
    loom_loader_begin(ld, 1, 0, 0);
    loom_loader_stats_get(ld, &s);
    int64_t carried1 = s.carried;
    int64_t n1 = drain(ld, &ref, per, rec, &eq);
    CHECK(eq && n0 == 13 && n1 == 13, "epochs 0 and 1 exact with loading ahead (%lld, %lld batches)", (long long)n0,
          (long long)n1);
    CHECK(carried1 >= 5, "begin(1) after epoch 0: %lld batches ready at once (expected the free ring, >= 5)",
          (long long)carried1);
    /* not the next epoch: dropped, exact, and no more loading ahead */
    sleep_ms(300);
    loom_loader_begin(ld, 5, 0, 0);
    loom_loader_stats_get(ld, &s);
    int64_t carried5 = s.carried;
    int64_t n5 = drain(ld, &ref, 5 * per, rec, &eq);
    sleep_ms(300);
    loom_loader_begin(ld, 6, 0, 0);
    loom_loader_stats_get(ld, &s);
    int64_t carried6 = s.carried;
    int64_t n6 = drain(ld, &ref, 6 * per, rec, &eq);
    CHECK(eq && n5 == 13 && n6 == 13 && carried5 == 0 && carried6 == 0,
          "begin(5) after epoch 1 drops what was loaded ahead (%lld carried), and loading ahead stops (%lld carried at "
          "begin(6)); batches exact",
          (long long)carried5, (long long)carried6);
    loom_loader_destroy(ld);
    /* LOOM_LOADER_AHEAD=0 */
    setenv("LOOM_LOADER_AHEAD", "0", 1);
    CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
    unsetenv("LOOM_LOADER_AHEAD");
    n0 = drain(ld, &ref, 0, rec, &eq);
    sleep_ms(300);
    loom_loader_begin(ld, 1, 0, 0);
    loom_loader_stats_get(ld, &s);
    n1 = drain(ld, &ref, per, rec, &eq);
    CHECK(eq && n0 == 13 && n1 == 13 && s.carried == 0, "LOOM_LOADER_AHEAD=0: nothing loaded ahead (%lld)",
          (long long)s.carried);
    loom_loader_destroy(ld);
    dump_free(&ref);
    loom_source_destroy(src);
    loom_dataset_free(&ds);
}

/* A source whose sample `bad` fails. */
static _Atomic int64_t bad_sample;

static loom_status failing_get(const loom_source *src, loom_ctx *c, int64_t i, void *data, int32_t *label) {
    if (i == atomic_load(&bad_sample))
        return loom_source_error(c, LOOM_ERR_FORMAT, "%s: sample %lld is corrupt", src->name, (long long)i);
    memset(data, (int)(i & 255), (size_t)(src->h * src->w * src->c));
    *label = (int32_t)(i % 3);
    return LOOM_OK;
}

static void test_failure(void) {
    atomic_store(&bad_sample, 37);
    loom_source src = {.name = "broken.bin", .n = 100, .kind = LOOM_SAMPLE_U8, .c = 1, .h = 4, .w = 4,
                       .num_classes = 3, .get = failing_get};
    const int workers[] = {LOOM_WORKERS_SYNC, 1, 2, 4, LOOM_WORKERS_AUTO};
    for (int k = 0; k < 5; k++) {
        loom_loader_desc d = {.src = &src, .batch = 10, .workers = workers[k]};
        loom_loader *ld = NULL;
        CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
        loom_loader_batch b;
        int ok = 0;
        loom_status st;
        while ((st = loom_loader_next(ld, &b)) == LOOM_OK && b.count > 0) ok++;
        CHECK(st == LOOM_ERR_FORMAT && ok == 3 && strstr(loom_last_error(ctx), "batch 3, sample 37") &&
                  strstr(loom_last_error(ctx), "broken.bin: sample 37 is corrupt"),
              "workers %d: 3 good batches then the error (got %d, %s '%s')", workers[k], ok, loom_status_str(st),
              loom_last_error(ctx));
        /* the loader goes on after a new begin */
        atomic_store(&bad_sample, -1);
        loom_loader_begin(ld, 1, 0, 0);
        int all = 0;
        while ((st = loom_loader_next(ld, &b)) == LOOM_OK && b.count > 0) all++;
        CHECK(st == LOOM_OK && all == 10, "workers %d: after the error, a new epoch loads (%d batches)", workers[k], all);
        atomic_store(&bad_sample, 37);
        loom_loader_destroy(ld);
    }
}

/* A 1-channel image 0..h*w-1 (value = index + 1), cropped; where did the window land? */
static void test_crop_semantics(void) {
    uint8_t img[4 * 5];
    for (int k = 0; k < 20; k++) img[k] = (uint8_t)(k + 1);
    loom_dataset ds = {.n = 400, .c = 1, .h = 4, .w = 5, .num_classes = 1};
    ds.pixels = malloc(400 * 20);
    ds.labels = calloc(400, sizeof *ds.labels);
    for (int i = 0; i < 400; i++) memcpy(ds.pixels + i * 20, img, 20);
    loom_source *src = NULL;
    CHECK_OK(ctx, loom_source_wrap(ctx, &ds, &src));
    const loom_pad_mode modes[] = {LOOM_PAD_CONSTANT, LOOM_PAD_EDGE, LOOM_PAD_REFLECT, LOOM_PAD_SYMMETRIC};
    /* expected padded rows/cols for n = 5, padding 2: numpy.pad index maps */
    const int colmap[4][9] = {{-1, -1, 0, 1, 2, 3, 4, -1, -1},
                              {0, 0, 0, 1, 2, 3, 4, 4, 4},
                              {2, 1, 0, 1, 2, 3, 4, 3, 2},
                              {1, 0, 0, 1, 2, 3, 4, 4, 3}};
    const int rowmap[4][8] = {{-1, -1, 0, 1, 2, 3, -1, -1},
                              {0, 0, 0, 1, 2, 3, 3, 3},
                              {2, 1, 0, 1, 2, 3, 2, 1},
                              {1, 0, 0, 1, 2, 3, 3, 2}};
    for (int m = 0; m < 4; m++) {
        loom_tf_step s = {.kind = LOOM_TF_RANDOM_CROP, .h = 3, .w = 3, .pad = {2, 2, 2, 2}, .pad_mode = modes[m],
                          .fill = 200};
        loom_loader_desc d = {.src = src, .batch = 400, .seed = 3, .steps = &s, .nsteps = 1, .workers = 2};
        loom_loader *ld = NULL;
        CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
        loom_loader_batch b;
        CHECK_OK(ctx, loom_loader_next(ld, &b));
        int seen[6][7] = {{0}};
        int wrong = 0;
        for (int i = 0; i < b.count; i++) {
            const float *x = b.x + i * 9;
            /* find the window position: top in 0..5, left in 0..6 */
            int found = 0;
            for (int t = 0; t <= 5 && !found; t++)
                for (int l = 0; l <= 6 && !found; l++) {
                    bool match = true;
                    for (int y = 0; y < 3 && match; y++)
                        for (int xx = 0; xx < 3 && match; xx++) {
                            int r = rowmap[m][t + y], c = colmap[m][l + xx];
                            float v = (float)(r < 0 || c < 0 ? 200 : img[r * 5 + c]) / 255.0f;
                            match = x[y * 3 + xx] == v;
                        }
                    if (match) seen[t][l]++, found = 1;
                }
            wrong += !found;
        }
        int positions = 0;
        for (int t = 0; t < 6; t++)
            for (int l = 0; l < 7; l++) positions += seen[t][l] > 0;
        CHECK(wrong == 0 && positions == 42, "pad mode %d: every crop is a window of the padded image (%d not), all 42 "
              "positions seen (%d)",
              m, wrong, positions);
        loom_loader_destroy(ld);
    }
    /* flips: p = 1 always, p = -1 never (p = 0 is torchvision's default 0.5) */
    loom_tf_step f[2] = {{.kind = LOOM_TF_RANDOM_HFLIP, .p = 1}, {.kind = LOOM_TF_RANDOM_VFLIP, .p = -1}};
    loom_loader_desc d = {.src = src, .batch = 50, .steps = f, .nsteps = 2, .workers = LOOM_WORKERS_SYNC};
    loom_loader *ld = NULL;
    CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
    loom_loader_batch b;
    CHECK_OK(ctx, loom_loader_next(ld, &b));
    int bad = 0;
    for (int i = 0; i < b.count; i++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 5; x++) bad += b.x[i * 20 + y * 5 + x] != (float)img[y * 5 + (4 - x)] / 255.0f;
    CHECK(bad == 0, "hflip p=1 always mirrors, vflip p=-1 never (%d values off)", bad);
    loom_loader_destroy(ld);
    /* p = 0.5: about half */
    f[0].p = 0;
    d.nsteps = 1, d.batch = 400;
    CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
    CHECK_OK(ctx, loom_loader_next(ld, &b));
    int flipped = 0;
    for (int i = 0; i < b.count; i++) flipped += b.x[i * 20] == (float)img[4] / 255.0f;
    CHECK(flipped > 150 && flipped < 250, "p = 0.5 (default): %d of 400 flipped", flipped);
    loom_loader_destroy(ld);
    loom_source_destroy(src);
    loom_dataset_free(&ds);
}

static void test_parse_and_errors(void) {
    loom_tf_step s[4];
    int n = 0;
    CHECK_OK(ctx, loom_tf_parse(ctx, "RandomCrop(28, padding=4, pad_if_needed=True, fill=7, padding_mode=edge), hflip, "
                                     "CenterCrop((20, 24)), Resize(32)",
                                s, 4, &n));
    CHECK(n == 4 && s[0].kind == LOOM_TF_RANDOM_CROP && s[0].h == 28 && s[0].w == 28 && s[0].pad[0] == 4 &&
              s[0].pad[3] == 4 && s[0].pad_if_needed && s[0].fill == 7 && s[0].pad_mode == LOOM_PAD_EDGE &&
              s[1].kind == LOOM_TF_RANDOM_HFLIP && s[1].p == 0 && s[2].h == 20 && s[2].w == 24 && s[3].h == 32,
          "parsed a 4-step pipeline");
    CHECK_OK(ctx, loom_tf_parse(ctx, "RandomCrop(8, (1, 2)); RandomCrop(8, padding=(1, 2, 3, 4))", s, 4, &n));
    CHECK(n == 2 && s[0].pad[0] == 1 && s[0].pad[1] == 2 && s[0].pad[2] == 1 && s[0].pad[3] == 2 && s[1].pad[0] == 1 &&
              s[1].pad[1] == 2 && s[1].pad[2] == 3 && s[1].pad[3] == 4,
          "padding pairs are (left/right, top/bottom), 4-tuples (l, t, r, b)");
    const struct {
        const char *spec, *msg;
    } bad[] = {{"Blur(3)", "unknown transform 'blur'"},
               {"RandomCrop()", "RandomCrop needs a size"},
               {"RandomCrop(8, padding=-1)", "padding"},
               {"hflip(p=2)", "p in [0, 1]"},
               {"RandomCrop(8, padding_mode=wrap)", "padding_mode"},
               {"CenterCrop(8, fill=3)", "CenterCrop takes no argument 'fill'"},
               {"hflip hflip", "between transforms"},
               {"RandomOrder([RandomCrop(4), Resize((6, 6))])", "the order RandomCrop (step 2), Resize (step 3) turns"},
               {"RandomOrder([hflip", "']'"}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        loom_status st = loom_tf_parse(ctx, bad[k].spec, s, 4, &n);
        CHECK(st == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), bad[k].msg), "'%s': '%s'", bad[k].spec,
              loom_last_error(ctx));
    }
    /* a crop larger than the padded image; a center crop larger than the image */
    loom_dataset ds;
    make_dataset(&ds, 10, 1, 6, 6, 3);
    loom_source *src = NULL;
    CHECK_OK(ctx, loom_source_wrap(ctx, &ds, &src));
    loom_loader *ld = NULL;
    loom_tf_step big = {.kind = LOOM_TF_RANDOM_CROP, .h = 9, .w = 9, .pad = {1, 1, 1, 1}};
    loom_loader_desc d = {.src = src, .batch = 2, .steps = &big, .nsteps = 1};
    CHECK(loom_loader_create(ctx, &d, &ld) == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "9x9") &&
              strstr(loom_last_error(ctx), "8x8"),
          "crop 9x9 on a padded 8x8 image: '%s'", loom_last_error(ctx));
    big.pad_if_needed = true;
    CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
    int c;
    int64_t h, w;
    loom_loader_shape(ld, &c, &h, &w);
    CHECK(c == 1 && h == 9 && w == 9, "pad_if_needed: 9x9 output");
    loom_loader_destroy(ld);
    d.batch = 0;
    CHECK(loom_loader_create(ctx, &d, &ld) == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "batch"),
          "batch 0: '%s'", loom_last_error(ctx));
    loom_source_destroy(src);
    loom_dataset_free(&ds);
}

static void test_npy(void) {
    char dir[] = "/tmp/loom-test-loader-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(false, "mkdtemp");
        return;
    }
    char xi[128], yi[128], xf[128], yb[128];
    snprintf(xi, sizeof xi, "%s/train-images.npy", dir);
    snprintf(yi, sizeof yi, "%s/train-labels.npy", dir);
    snprintf(xf, sizeof xf, "%s/f.npy", dir);
    snprintf(yb, sizeof yb, "%s/bad-labels.npy", dir);
    uint8_t px[7 * 2 * 3 * 3];
    for (int k = 0; k < (int)sizeof px; k++) px[k] = (uint8_t)(k * 7);
    int64_t lab[7] = {0, 1, 2, 3, 4, 5, 6};
    float fr[7 * 2 * 2 * 3];
    for (int k = 0; k < 84; k++) fr[k] = (float)k * 0.5f - 3;
    CHECK_OK(ctx, loom_npy_write(ctx, xi, LOOM_NPY_U1, 4, (int64_t[]){7, 2, 3, 3}, px));
    CHECK_OK(ctx, loom_npy_write(ctx, yi, LOOM_NPY_I8, 1, (int64_t[]){7}, lab));
    CHECK_OK(ctx, loom_npy_write(ctx, xf, LOOM_NPY_F4, 4, (int64_t[]){7, 2, 2, 3}, fr));
    loom_source *s = NULL;
    CHECK_OK(ctx, loom_source_open_dir(ctx, dir, true, &s));
    if (s) {
        CHECK(s->kind == LOOM_SAMPLE_U8 && s->n == 7 && s->h == 2 && s->w == 3 && s->c == 3 && s->num_classes == 7,
              "u1 (7, 2, 3, 3) npy: 7 HWC images 2x3x3");
        loom_loader_desc d = {.src = s, .batch = 7, .workers = 2};
        loom_loader *ld = NULL;
        CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
        loom_loader_batch b;
        CHECK_OK(ctx, loom_loader_next(ld, &b));
        int bad = 0;
        for (int i = 0; i < 7; i++)
            for (int ch = 0; ch < 3; ch++)
                for (int p = 0; p < 6; p++) bad += b.x[i * 18 + ch * 6 + p] != (float)px[i * 18 + p * 3 + ch] / 255.0f;
        CHECK(b.count == 7 && bad == 0 && b.y[6] == 6, "HWC npy images become CHW batches (%d off)", bad);
        loom_loader_destroy(ld);
        loom_source_destroy(s);
    }
    CHECK_OK(ctx, loom_source_open_npy(ctx, xf, yi, &s));
    if (s) {
        CHECK(s->kind == LOOM_SAMPLE_F32 && s->c == 2 && s->h == 2 && s->w == 3, "f4 (7, 2, 2, 3): CHW records");
        loom_loader_desc d = {.src = s, .batch = 4, .workers = 1};
        loom_loader *ld = NULL;
        CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
        loom_loader_batch b;
        CHECK_OK(ctx, loom_loader_next(ld, &b));
        CHECK_OK(ctx, loom_loader_next(ld, &b));
        CHECK(b.count == 3 && !memcmp(b.x, fr + 48, 36 * sizeof(float)), "float records pass through unchanged");
        loom_tf_step f = {.kind = LOOM_TF_RANDOM_HFLIP};
        loom_loader_destroy(ld);
        d.steps = &f, d.nsteps = 1;
        CHECK(loom_loader_create(ctx, &d, &ld) == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "float records"),
              "transforms on float records: '%s'", loom_last_error(ctx));
        loom_source_destroy(s);
    }
    /* labels: too few; negative */
    CHECK_OK(ctx, loom_npy_write(ctx, yb, LOOM_NPY_I8, 1, (int64_t[]){6}, lab));
    CHECK(loom_source_open_npy(ctx, xi, yb, &s) == LOOM_ERR_FORMAT && strstr(loom_last_error(ctx), "7 images") &&
              strstr(loom_last_error(ctx), "6 labels"),
          "label count: '%s'", loom_last_error(ctx));
    int64_t neg[7] = {0, 1, -2, 0, 0, 0, 0};
    CHECK_OK(ctx, loom_npy_write(ctx, yb, LOOM_NPY_I8, 1, (int64_t[]){7}, neg));
    CHECK(loom_source_open_npy(ctx, xi, yb, &s) == LOOM_ERR_FORMAT && strstr(loom_last_error(ctx), "label -2 of sample 2"),
          "negative label: '%s'", loom_last_error(ctx));
    CHECK(loom_source_open_dir(ctx, "/nonexistent-dir", true, &s) == LOOM_ERR_IO &&
              strstr(loom_last_error(ctx), "/nonexistent-dir"),
          "missing directory: '%s'", loom_last_error(ctx));
    remove(xi), remove(yi), remove(xf), remove(yb);
    rmdir(dir);
}

static void sleep_ms(double ms) {
    struct timespec t = {0, (long)(ms * 1e6)};
    nanosleep(&t, NULL);
}

static loom_status slow_get(const loom_source *src, loom_ctx *c, int64_t i, void *data, int32_t *label) {
    double ms = *(const double *)src->impl;
    if (ms > 0) sleep_ms(ms);
    memset(data, (int)(i & 255), 16);
    *label = 0;
    return LOOM_OK;
}

/* Auto-tuning, a timing smoke test: the real pool, real threads and sleeps,
 * checking only that the tuner is wired in (it grows when the caller waits,
 * sheds idle workers when the caller is slow). Timing-dependent by nature,
 * so tolerant: growth only needs one worker more, the shrink and the
 * keep-up check get several windows under load. The decision rules
 * themselves are tested deterministically, with synthetic timings, in
 * tests/test-autotune.c. */
static void test_autotune(void) {
    /* slow samples (1 ms each, batch 4), a consumer that does nothing: grows */
    double ms = 1.0;
    loom_source src = {.name = "slow", .n = 4000, .kind = LOOM_SAMPLE_U8, .c = 1, .h = 4, .w = 4, .get = slow_get,
                       .impl = &ms};
    int nc = (int)sysconf(_SC_NPROCESSORS_ONLN);
    loom_loader_desc d = {.src = &src, .batch = 4, .max_workers = nc + 2};
    loom_loader *ld = NULL;
    CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
    loom_loader_batch b;
    for (int k = 0; k < 300; k++) CHECK_OK(ctx, loom_loader_next(ld, &b));
    loom_loader_stats s;
    loom_loader_stats_get(ld, &s);
    CHECK(s.workers_min == nc && s.workers_max > nc, "waiting for data: %d -> %d workers (expected from %d up)",
          s.workers_min, s.workers_max, nc);
    loom_loader_destroy(ld);
    /* fast samples, a slow consumer (4 ms per step): shrinks to 1 */
    ms = 0;
    d.max_workers = 3;
    CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
    /* 100 steps suffice on a quiet machine; under load (sanitizers, parallel
     * tests) the tuner may need more evidence: up to 600 */
    for (int k = 0; k < 600; k++) {
        CHECK_OK(ctx, loom_loader_next(ld, &b));
        sleep_ms(4);
        if (k >= 99) {
            loom_loader_stats_get(ld, &s);
            if (s.workers == 1) break;
        }
    }
    loom_loader_stats_get(ld, &s);
    CHECK(s.workers == 1, "idle workers removed: %d left", s.workers);
    /* and one worker keeps up: the wait over 100 more steps (a new epoch:
     * the counters start again, without the threads' start-up waits); a
     * machine busy with other work (TSan, a parallel build) can stall the
     * one thread for tens of ms, so up to three such windows, one must pass */
    bool kept = false;
    for (int t = 0; t < 3 && !kept; t++) {
        loom_loader_begin(ld, 1 + t, 0, 0);
        for (int k = 0; k < 100; k++) {
            CHECK_OK(ctx, loom_loader_next(ld, &b));
            sleep_ms(4);
        }
        loom_loader_stats_get(ld, &s);
        kept = s.workers == 1 && s.wait_s < 0.1 * s.compute_s;
    }
    CHECK(kept, "one worker keeps up: %d left, wait %.1f ms of %.1f ms (the last of 3 windows)", s.workers,
          1e3 * s.wait_s, 1e3 * s.compute_s);
    loom_loader_destroy(ld);
}

int main(void) {
    alarm(300); /* a hang is a failure */
    loom_ctx_create(NULL, &ctx);
    test_determinism();
    test_stop();
    test_ahead();
    test_failure();
    test_crop_semantics();
    test_parse_and_errors();
    test_npy();
    test_autotune();
    loom_ctx_destroy(ctx);
    return tu_summary();
}
