/* tests/test-devaug.c — device augmentation (loom_loader_desc.device_augment,
 * loader/device_aug.c, the op augment_u8): on every backend present (cpu,
 * vulkan under the validation layer, opencl; cuda where it runs), the same
 * epochs' batches loaded with the host pipeline and with the device one
 * (u8 images + per-sample table through loom_loader_device_input) agree:
 * bit for bit for the crops, flips and ColorJitter (the arithmetic is
 * exact where f32 division is correctly rounded, as on lavapipe and PoCL),
 * and within one u8 step per pixel (before normalisation) in general.
 * Pipelines: padded crops and flips on the device alone; a centre crop
 * before a padded crop (the window), brightness last; the full ColorJitter
 * last (the device runs it: the table lists contrast, saturation or hue)
 * after padded crops and flips, on 3 and 1 channels and after a Resize of
 * images of different sizes (the guide's pipeline up to its affine); a
 * RandomResizedCrop and a RandomAffine left on the host before device
 * steps; a RandomOrder (kept whole on the host); images of different
 * sizes (a decoding source) with Resize or RandomResizedCrop on the host;
 * 1 and 3 channels; a partial last batch; workers 0 (sync) and 2. A final
 * nearest RandomAffine on the device (its source points in double, as the
 * host's): the guide's whole pipeline (scaled down: Resize((40, 40));
 * RandomCrop(32); RandomHorizontalFlip(); ColorJitter(0.2, 0.2, 0.2);
 * RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1))), one with
 * shear and a per-channel fill after padded crops, one on 1 channel with
 * the full ColorJitter, two alone (no jitter) whose source points all or
 * half lie on .5 (angle 0, integer translation, scale 2 on an odd size,
 * 0.5 on an even one: half to even decides); a bilinear one stays on the
 * host, and so does a nearest one where the backend has no 64-bit floats
 * (the plan). Errors: RandomErasing with device_augment, a float source,
 * device input of a host loader.
 * Images of one size whose pipeline starts with a Resize: the Resize on
 * the device (resize_u8; down, up, shorter side, 500x375 -> 256x256, and
 * the guide's whole pipeline with its affine), or on the host when a step
 * after it stays there. resize_u8 against loom_tf_resize bit for bit on
 * random images; resize_u8's bad inputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/backend_impl.h"
#include "../core/params.h"
#include "../loader/device_aug.h"
#include "loom/loader.h"
#include "testutil.h"

static loom_ctx *ctx;

typedef struct pcase {
    const char *spec;
    int c, h, w;
    bool exact; /* bit for bit (else within one u8 step) */
    bool var;   /* images of different sizes (a decoding source: get_image) */
    bool full;  /* the device runs a ColorJitter with contrast, saturation or hue */
    bool affine; /* the device runs a RandomAffine */
    bool dres;   /* the leading Resize runs on the device (resize_u8) */
} pcase;

static const pcase cases[] = {
    {"RandomCrop(20, padding=4); RandomHorizontalFlip()", 3, 24, 24, true, false, false, false, false},
    {"CenterCrop(18); RandomCrop(20, padding=3, fill=9); RandomVerticalFlip(); RandomHorizontalFlip(p=0.7); "
     "ColorJitter(brightness=0.6)", 3, 24, 22, true, false, false, false, false},
    {"RandomResizedCrop(16); RandomHorizontalFlip(); RandomCrop((14, 12), padding=(2, 3), pad_if_needed=True)", 1, 21,
     19, true, false, false, false, false},
    {"RandomOrder([RandomHorizontalFlip(), RandomVerticalFlip()]); RandomCrop(20, padding=2)", 3, 20, 20, true, false,
     false, false, false},
    {"RandomAffine(10, translate=(0.1, 0.1)); RandomCrop(18, padding=2, fill=3); RandomHorizontalFlip()", 3, 20, 20,
     false, false, false, false, false},
    {"ColorJitter(0.3, 0.3); RandomCrop(16, padding=2)", 3, 16, 16, true, false, false, false, false},
    {"Resize((20, 20)); RandomCrop(16, padding=2); RandomHorizontalFlip()", 3, 0, 0, true, true, false, false, false},
    {"RandomResizedCrop(18); RandomCrop(16, padding=1, fill=200); RandomVerticalFlip()", 3, 0, 0, true, true, false,
     false, false},
    {"RandomCrop(20, padding=4, fill=40); RandomHorizontalFlip(); ColorJitter(0.4, 0.5, 0.6, 0.25)", 3, 22, 21, true,
     false, true, false, false},
    {"CenterCrop(17); RandomVerticalFlip(); ColorJitter(brightness=0.2, contrast=0.6, saturation=0.5, hue=0.1)", 1, 20,
     19, true, false, true, false, false},
    {"Resize((20, 20)); RandomCrop(16, padding=2); RandomHorizontalFlip(); ColorJitter(0.2, 0.2, 0.2)", 3, 0, 0, true,
     true, true, false, false},
    {"RandomCrop(18, padding=3); ColorJitter(contrast=(0.2, 1.8), hue=(-0.5, 0.5))", 3, 18, 18, true, false, true,
     false, false},
    {"Resize((40, 40)); RandomCrop(32); RandomHorizontalFlip(); ColorJitter(0.2, 0.2, 0.2); "
     "RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1))", 3, 0, 0, true, true, true, true, false},
    {"RandomCrop(20, padding=3, fill=9); RandomVerticalFlip(); ColorJitter(0.4, 0.5, 0.6, 0.25); "
     "RandomAffine((-40, 40), translate=(0.2, 0.1), scale=(0.7, 1.3), shear=(-20, 20, -10, 10), fill=(250, 120, 7))",
     3, 22, 21, true, false, true, true, false},
    {"CenterCrop(17); RandomHorizontalFlip(); ColorJitter(0.3, 0.6, 0.5, 0.1); RandomAffine(30, shear=12, fill=77)", 1,
     20, 19, true, false, true, true, false},
    {"RandomCrop(15, padding=2); RandomAffine(0, translate=(0.3, 0.3), scale=(2, 2))", 3, 16, 16, true, false, false,
     true, false},
    {"RandomCrop(16, padding=2); RandomHorizontalFlip(); RandomAffine(0, translate=(0.2, 0.2), scale=(0.5, 0.5), "
     "fill=33)", 3, 17, 18, true, false, false, true, false},
    {"RandomCrop(16, padding=2); RandomAffine(20, interpolation=bilinear)", 3, 18, 18, false, false, false, false, false},
    /* one image size: the leading Resize on the device (down, up, shorter side, the guide's 500x375 JPEGs) */
    {"Resize((20, 20)); RandomCrop(16, padding=2); RandomHorizontalFlip()", 3, 27, 31, true, false, false, false, true},
    {"Resize((23, 17)); RandomVerticalFlip(); ColorJitter(0.3, 0.3, 0.3, 0.1)", 3, 13, 11, true, false, true, false, true},
    {"Resize(14); RandomCrop(12, padding=1); RandomHorizontalFlip()", 1, 19, 23, true, false, false, false, true},
    {"Resize((256, 256)); RandomCrop(224); RandomHorizontalFlip(); ColorJitter(0.4, 0.4, 0.4)", 3, 375, 500, true,
     false, true, false, true},
    /* ... and on the host: a step after it that the device does not run, or a Resize to the same size */
    {"Resize((20, 20)); RandomResizedCrop(16); RandomHorizontalFlip()", 3, 27, 31, true, false, false, false, false},
    {"Resize((24, 22)); RandomCrop(20, padding=2)", 3, 24, 22, true, false, false, false, false},
    /* the guide's whole pipeline on one-size images: Resize, crop, flip, jitter and affine all on the device */
    {"Resize((40, 40)); RandomCrop(32); RandomHorizontalFlip(); ColorJitter(0.2, 0.2, 0.2); "
     "RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1))", 3, 45, 50, true, false, true, true, true},
};

/* a decoding source: image i is (17 + 7i mod 13) x (15 + 5i mod 11), pixels from i */
static loom_status var_image(const loom_source *src, loom_ctx *c, int64_t i, const loom_decode_hint *hint,
                             uint8_t **data, int64_t *h, int64_t *w, int32_t *label) {
    (void)src, (void)hint;
    *h = 17 + (7 * i) % 13, *w = 15 + (5 * i) % 11, *label = (int32_t)(i % 10);
    size_t n = (size_t)(*h * *w * 3);
    if (!(*data = malloc(n))) return loom_source_error(c, LOOM_ERR_OOM, "var_image: out of memory");
    uint32_t s = (uint32_t)i * 2654435761u + 1;
    for (size_t k = 0; k < n; k++) s = s * 1664525u + 1013904223u, (*data)[k] = (uint8_t)(s >> 24);
    return LOOM_OK;
}

static loom_source *make_source(int n, int c, int h, int w, uint32_t seed, loom_dataset *ds) {
    memset(ds, 0, sizeof *ds);
    ds->n = n, ds->c = c, ds->h = h, ds->w = w, ds->num_classes = 10;
    size_t per = (size_t)c * (size_t)h * (size_t)w;
    ds->pixels = malloc((size_t)n * per);
    ds->labels = malloc((size_t)n * sizeof *ds->labels);
    uint32_t s = seed;
    for (size_t k = 0; k < (size_t)n * per; k++) s = s * 1664525u + 1013904223u, ds->pixels[k] = (uint8_t)(s >> 24);
    for (int i = 0; i < n; i++) ds->labels[i] = i % 10;
    loom_source *src = NULL;
    if (loom_source_wrap(ctx, ds, &src) != LOOM_OK) return NULL;
    return src;
}

/* one pipeline on one backend: 2 epochs, every batch compared */
static void run_case(loom_backend *be, const pcase *pc, int workers) {
    loom_tf_step steps[16];
    int ns = 0;
    CHECK_OK(ctx, loom_tf_parse(ctx, pc->spec, steps, 16, &ns));
    loom_dataset ds = {0};
    loom_source vs = {.name = "var", .n = 37, .kind = LOOM_SAMPLE_U8, .c = 3, .num_classes = 10, .get_image = var_image};
    loom_source *src = pc->var ? &vs : make_source(37, pc->c, pc->h, pc->w, 5, &ds);
    CHECK(src != NULL, "source: %s", loom_last_error(ctx));
    if (!src) return;
    const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
    loom_loader_desc d = {.src = src, .batch = 8, .shuffle = true, .seed = 11, .workers = workers, .steps = steps,
                          .nsteps = ns, .mean = mean, .std = sd, .nstat = pc->c, .backend = be};
    loom_loader *host = NULL, *dev = NULL;
    CHECK_OK(ctx, loom_loader_create(ctx, &d, &host));
    d.device_augment = true;
    CHECK_OK(ctx, loom_loader_create(ctx, &d, &dev));
    loom_graph *g = NULL;
    loom_plan *plan = NULL;
    loom_tensor *u8 = NULL, *prm = NULL, *x = NULL;
    CHECK_OK(ctx, loom_graph_create(ctx, NULL, &g));
    if (dev && g && (x = loom_loader_device_input(g, &d, "x", LOOM_F32, &u8, &prm))) loom_keep(x);
    CHECK(x != NULL, "%s: device input: %s", pc->spec, loom_last_error(ctx));
    if (x) CHECK_OK(ctx, loom_plan_compile(g, be, NULL, &plan));
    bool dres = x && x->src[0]->op == LOOM_OP_RESIZE_U8;
    CHECK(!x || dres == pc->dres, "%s: the Resize runs on the %s", pc->spec, dres ? "device" : "host");
    CHECK(!x || !dres || (u8->dims[1] == pc->h && u8->dims[2] == pc->w), "%s: the device resizes decoded images",
          pc->spec);
    int c;
    int64_t oh, ow;
    if (host) loom_loader_shape(host, &c, &oh, &ow);
    size_t per = host ? (size_t)c * (size_t)oh * (size_t)ow : 0;
    float *out = malloc(8 * per * sizeof *out + 1);
    int64_t batches = 0, exact_px = 0, px = 0, full_rows = 0, aff_rows = 0;
    double worst = 0; /* in u8 steps */
    for (int e = 0; plan && host && dev && e < 2; e++) {
        loom_loader_begin(host, e, 0, 0), loom_loader_begin(dev, e, 0, 0);
        for (;;) {
            loom_loader_batch hb, db;
            loom_status s1 = loom_loader_next(host, &hb), s2 = loom_loader_next(dev, &db);
            CHECK(s1 == LOOM_OK && s2 == LOOM_OK, "%s: next: %s", pc->spec, loom_last_error(ctx));
            if (s1 != LOOM_OK || s2 != LOOM_OK || hb.count == 0 || db.count == 0) {
                CHECK(hb.count == db.count, "epoch ends differ");
                break;
            }
            CHECK(db.x == NULL && db.u8 && db.prm && hb.u8 == NULL, "batch fields");
            CHECK(!memcmp(hb.y, db.y, (size_t)hb.count * sizeof *hb.y), "labels differ");
            for (int r = 0; r < db.count; r++) /* a list with a code above brightness's */
                full_rows += (uint32_t)db.prm[r * LOOM_G_AUG_COUNT + LOOM_G_AUG_JITTER] > LOOM_K_AUG_BRIGHT,
                aff_rows += db.prm[r * LOOM_G_AUG_COUNT + LOOM_G_AUG_AFFINE] != 0;
            CHECK_OK(ctx, loom_plan_write(plan, u8, db.u8, (size_t)8 * (size_t)loom_tensor_numel(u8) / 8));
            CHECK_OK(ctx, loom_plan_write(plan, prm, db.prm, (size_t)loom_tensor_numel(prm) * sizeof(int32_t)));
            CHECK_OK(ctx, loom_plan_run(plan));
            CHECK_OK(ctx, loom_plan_read(plan, x, out, 8 * per * sizeof *out));
            for (size_t i = 0; i < (size_t)hb.count * per; i++) {
                int k = (int)((i / ((size_t)oh * (size_t)ow)) % (size_t)c);
                double dlt = fabs((double)hb.x[i] - (double)out[i]) * sd[k] * 255.0;
                worst = dlt > worst ? dlt : worst;
                exact_px += hb.x[i] == out[i], px++;
            }
            batches++;
        }
    }
    CHECK(batches == 10, "%s on %s: %lld batches compared (expected 2 epochs of 5)", pc->spec, loom_backend_name(be),
          (long long)batches);
    CHECK(worst <= 1.0001, "%s on %s: a pixel differs by %.3f u8 steps", pc->spec, loom_backend_name(be), worst);
    CHECK(pc->full ? full_rows > 0 : full_rows == 0, "%s on %s: %lld samples with a full ColorJitter on the device",
          pc->spec, loom_backend_name(be), (long long)full_rows);
    CHECK(pc->affine ? aff_rows > 0 : aff_rows == 0, "%s on %s: %lld samples with a RandomAffine on the device",
          pc->spec, loom_backend_name(be), (long long)aff_rows);
    if (pc->exact)
        CHECK(exact_px == px, "%s on %s: %lld of %lld values differ (expected bit for bit)", pc->spec,
              loom_backend_name(be), (long long)(px - exact_px), (long long)px);
    printf("  %-8s workers %d: %lld values, %lld exact, worst %.3f u8 steps: %s\n", loom_backend_name(be), workers,
           (long long)px, (long long)exact_px, worst, pc->spec);
    free(out);
    loom_plan_destroy(plan);
    loom_graph_destroy(g);
    loom_loader_destroy(host), loom_loader_destroy(dev);
    if (!pc->var) loom_source_destroy(src);
    free(ds.pixels), free(ds.labels);
}

/* where the split falls for a pipeline ending with a nearest RandomAffine,
 * with and without 64-bit floats on the backend */
static void affine_plan(void) {
    loom_tf_step steps[8];
    int ns = 0;
    CHECK_OK(ctx, loom_tf_parse(ctx, "Resize((40, 40)); RandomCrop(32); RandomHorizontalFlip(); ColorJitter(0.2, 0.2, "
                                     "0.2); RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1))", steps, 8, &ns));
    loom__dev_split sp;
    CHECK_OK(ctx, loom__dev_plan(ctx, steps, ns, 3, true, &sp));
    CHECK(sp.split == 1 && sp.affine && !sp.affine_host, "with f64: split %d (expected 1, after the Resize)", sp.split);
    CHECK_OK(ctx, loom__dev_plan(ctx, steps, ns, 3, false, &sp));
    CHECK(sp.split == ns && !sp.affine && sp.affine_host, "without f64: split %d (expected %d: all on the host)",
          sp.split, ns);
    CHECK_OK(ctx, loom__dev_plan(ctx, steps, ns, 4, true, &sp));
    CHECK(sp.split == ns && !sp.affine, "4 channels: split %d (expected %d)", sp.split, ns);
    CHECK_OK(ctx, loom_tf_parse(ctx, "RandomAffine(10); ColorJitter(0.2)", steps, 8, &ns));
    CHECK_OK(ctx, loom__dev_plan(ctx, steps, ns, 3, true, &sp));
    CHECK(sp.split == 1 && !sp.affine, "an affine before the jitter: split %d (expected 1)", sp.split);
}

static bool no_f64(const loom_backend *be) {
    (void)be;
    return false;
}

static void on_log(void *user, loom_log_level level, const char *msg) {
    if (level == LOOM_LOG_WARN && strstr(msg, "RandomAffine") && strstr(msg, "64-bit floats")) ++*(int *)user;
}

/* a training backend without 64-bit floats (the CPU's, its f64 hook saying
 * no): the device input keeps the final RandomAffine on the host (the whole
 * pipeline: u8 images of the output size, a node without the affine) and
 * says so once, as a warning */
static void affine_host_input(loom_backend *cpu) {
    loom__backend_vtbl vt = *cpu->vt;
    vt.f64 = no_f64;
    loom_backend fake = *cpu;
    fake.vt = &vt;
    int said = 0;
    loom_ctx *c2 = NULL;
    CHECK(loom_ctx_create(&(loom_ctx_desc){.log_level = LOOM_LOG_WARN, .log = on_log, .log_user = &said}, &c2) ==
              LOOM_OK, "context");
    loom_tf_step steps[8];
    int ns = 0;
    CHECK_OK(ctx, loom_tf_parse(ctx, "RandomCrop(12, padding=2); ColorJitter(0.2, 0.2, 0.2); RandomAffine(15)", steps,
                                8, &ns));
    loom_dataset ds;
    loom_source *src = make_source(4, 3, 14, 13, 1, &ds);
    loom_loader_desc d = {.src = src, .batch = 2, .steps = steps, .nsteps = ns, .device_augment = true,
                          .backend = &fake};
    loom_graph *g = NULL;
    loom_tensor *u8 = NULL, *prm = NULL, *x = NULL;
    if (c2) CHECK_OK(c2, loom_graph_create(c2, NULL, &g));
    if (g) x = loom_loader_device_input(g, &d, "x", LOOM_F32, &u8, &prm);
    CHECK(x && u8 && u8->dims[1] == 12 && u8->dims[2] == 12 && x->p[LOOM_P_AUG_AFFINE] == 0,
          "no f64: the whole pipeline on the host, a node without the affine: %s", c2 ? loom_last_error(c2) : "");
    CHECK(said == 1, "no f64: %d warnings naming the RandomAffine (expected 1)", said);
    d.backend = cpu, said = 0;
    if (g) x = loom_loader_device_input(g, &d, "y", LOOM_F32, &u8, &prm);
    CHECK(x && u8 && u8->dims[1] == 14 && u8->dims[2] == 13 && x->p[LOOM_P_AUG_AFFINE] == 1 && said == 0,
          "with f64: crop, jitter and affine on the device, no warning");
    loom_graph_destroy(g);
    loom_ctx_destroy(c2);
    loom_source_destroy(src);
    free(ds.pixels), free(ds.labels);
}

static void errors(void) {
    loom_tf_step steps[4];
    int ns = 0;
    CHECK_OK(ctx, loom_tf_parse(ctx, "RandomCrop(8, padding=1); RandomErasing(p=0.5)", steps, 4, &ns));
    CHECK(!loom_loader_device_capable(steps, ns), "RandomErasing: not device capable");
    CHECK(loom_loader_device_capable(steps, 1), "RandomCrop: device capable");
    loom_dataset ds;
    loom_source *src = make_source(4, 3, 8, 8, 1, &ds);
    loom_loader *ld = NULL;
    loom_loader_desc d = {.src = src, .batch = 2, .workers = LOOM_WORKERS_SYNC, .steps = steps, .nsteps = ns,
                          .device_augment = true};
    CHECK(loom_loader_create(ctx, &d, &ld) == LOOM_ERR_UNSUPPORTED && strstr(loom_last_error(ctx), "RandomErasing"),
          "RandomErasing on the device: %s", loom_last_error(ctx));
    d.nsteps = 1, d.device_augment = false;
    CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
    loom_graph *g = NULL;
    loom_tensor *u8, *prm;
    CHECK_OK(ctx, loom_graph_create(ctx, NULL, &g));
    CHECK(ld && g && !loom_loader_device_input(g, &d, "x", LOOM_F32, &u8, &prm) &&
              strstr(loom_last_error(ctx), "must have device_augment") && loom_graph_status(g) != LOOM_OK,
          "device input of a host loader: %s", loom_last_error(ctx));
    loom_graph_destroy(g);
    loom_loader_destroy(ld);
    loom_source_destroy(src);
    free(ds.pixels), free(ds.labels);
}

/* resize_u8 with the loader's taps (loom__dev_resize_table) against loom_tf_resize, image by
 * image, on random images: down, up, mixed, one axis kept; 1 and 3
 * channels (those the host Resize takes) */
static void resize_vs_host(loom_backend *be) {
    static const int sz[][5] = {{3, 31, 27, 20, 20}, {1, 13, 11, 23, 17}, {3, 9, 40, 21, 7},
                                {3, 16, 19, 16, 5},  {1, 7, 5, 2, 31},   {3, 375, 500, 256, 256}};
    for (size_t k = 0; k < sizeof sz / sizeof *sz; k++) {
        int c = sz[k][0];
        int64_t n = 3, h = sz[k][1], w = sz[k][2], oh = sz[k][3], ow = sz[k][4], row = 0;
        size_t in = (size_t)(n * h * w * c), out = (size_t)(n * oh * ow * c);
        uint8_t *px = malloc(in), *want = malloc(out), *got = malloc(out);
        int32_t *t = NULL;
        uint32_t s = 99u + (uint32_t)k;
        for (size_t i = 0; px && i < in; i++) s = s * 1664525u + 1013904223u, px[i] = (uint8_t)(s >> 24);
        CHECK_OK(ctx, loom__dev_resize_table(ctx, h, w, oh, ow, &row, &t));
        if (!px || !want || !got || !t) {
            CHECK(false, "resize %zu: out of memory", k);
            free(px), free(want), free(got), free(t);
            return;
        }
        for (int64_t i = 0; i < n; i++) {
            loom_image a = {px + i * h * w * c, h, w, c}, b = {want + i * oh * ow * c, oh, ow, c};
            CHECK_OK(ctx, loom_tf_resize(ctx, &a, &b));
        }
        loom_graph *g = NULL;
        loom_plan *plan = NULL;
        CHECK_OK(ctx, loom_graph_create(ctx, NULL, &g));
        loom_tensor *x = loom_constant(g, "x", LOOM_U8, 4, (int64_t[]){n, h, w, c}, px);
        loom_tensor *tt = loom_constant(g, "taps", LOOM_I32, 2, (int64_t[]){oh + ow, row}, t);
        loom_tensor *y = loom_resize_u8(g, x, tt, oh, ow);
        CHECK(y != NULL, "resize_u8: %s", loom_last_error(ctx));
        if (y) {
            loom_keep(y);
            CHECK_OK(ctx, loom_plan_compile(g, be, NULL, &plan));
        }
        if (plan) {
            CHECK_OK(ctx, loom_plan_run(plan));
            CHECK_OK(ctx, loom_plan_read(plan, y, got, out));
            size_t diff = 0;
            for (size_t i = 0; i < out; i++) diff += got[i] != want[i];
            CHECK(diff == 0, "resize_u8 on %s, %d channels %lldx%lld -> %lldx%lld: %zu of %zu values differ from "
                  "loom_tf_resize", loom_backend_name(be), c, (long long)h, (long long)w, (long long)oh, (long long)ow,
                  diff, out);
        }
        loom_plan_destroy(plan);
        loom_graph_destroy(g);
        free(px), free(want), free(got), free(t);
    }
    printf("  %-8s resize_u8 == loom_tf_resize on %zu sizes\n", loom_backend_name(be), sizeof sz / sizeof *sz);
}

/* resize_u8's shape and dtype checks */
static void resize_errors(void) {
    static const struct {
        loom_dtype xdt, tdt;
        int64_t tr, tc, oh, ow;
        loom_status st;
        const char *msg;
    } bad[] = {
        {LOOM_F32, LOOM_I32, 9, 5, 4, 5, LOOM_ERR_SHAPE, "expected u8 (N, H, W, C)"},
        {LOOM_U8, LOOM_F32, 9, 5, 4, 5, LOOM_ERR_SHAPE, "expected i32 (9, 2 + S)"},
        {LOOM_U8, LOOM_I32, 8, 5, 4, 5, LOOM_ERR_SHAPE, "expected i32 (9, 2 + S)"},
        {LOOM_U8, LOOM_I32, 9, 2, 4, 5, LOOM_ERR_SHAPE, "with S >= 1"},
        {LOOM_U8, LOOM_I32, 5, 5, 0, 5, LOOM_ERR_INVALID_ARG, "output 0x5"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        loom_graph *g = NULL;
        CHECK_OK(ctx, loom_graph_create(ctx, NULL, &g));
        loom_tensor *x = loom_input(g, "x", bad[k].xdt, 4, (int64_t[]){2, 6, 7, 3});
        loom_tensor *t = loom_input(g, "taps", bad[k].tdt, 2, (int64_t[]){bad[k].tr, bad[k].tc});
        CHECK(!loom_resize_u8(g, x, t, bad[k].oh, bad[k].ow) && loom_graph_status(g) == bad[k].st &&
                  strstr(loom_last_error(ctx), "resize_u8") && strstr(loom_last_error(ctx), bad[k].msg),
              "resize_u8 bad input %zu: %s", k, loom_last_error(ctx));
        loom_graph_destroy(g);
    }
    /* a 4-D x of 5 channels */
    loom_graph *g = NULL;
    CHECK_OK(ctx, loom_graph_create(ctx, NULL, &g));
    loom_tensor *x = loom_input(g, "x", LOOM_U8, 4, (int64_t[]){2, 6, 7, 5});
    loom_tensor *t = loom_input(g, "taps", LOOM_I32, 2, (int64_t[]){9, 5});
    CHECK(!loom_resize_u8(g, x, t, 4, 5) && strstr(loom_last_error(ctx), "C in 1..4"), "resize_u8 of 5 channels: %s",
          loom_last_error(ctx));
    loom_graph_destroy(g);
}

int main(void) {
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    errors();
    affine_plan();
    resize_errors();
    const char *names[] = {"cpu", "vulkan", "opencl", "cuda"};
    int ran = 0;
    for (int b = 0; b < 4; b++) {
        loom_backend *be = NULL;
        if (loom_backend_create(ctx, names[b], NULL, &be) != LOOM_OK) {
            printf("  %-8s not here: %s\n", names[b], loom_last_error(ctx));
            continue;
        }
        ran++;
        if (b == 0) affine_host_input(be);
        resize_vs_host(be);
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) run_case(be, &cases[k], k % 2 ? 2 : LOOM_WORKERS_SYNC);
        loom_backend_destroy(be);
    }
    CHECK(ran >= 1, "no backend at all");
    loom_ctx_destroy(ctx);
    return tu_summary();
}
