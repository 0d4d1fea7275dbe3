/* tools/bench_loader.c — `loom bench-loader`: the data loader alone. Batches
 * land in the ring's staging memory and are discarded; the result is the
 * loader's throughput and its latency to the first batch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loom/loom.h"
#include "cli_num.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *usage_text =
    "usage: loom bench-loader [options]\n"
    "  --data-dir DIR        IDX ({train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]), .npy\n"
    "                        ({train,test}-{images,labels}.npy) or an ImageFolder (DIR[/train]/<class>/<image>)\n"
    "                        (default: the Fashion-MNIST files)\n"
    "  --skip-bad-samples    ImageFolder: skip (and count) corrupt or unsupported images instead of failing\n"
    "  --pipeline none|light|guide\n"
    "                        none: ToTensor + Normalize (an ImageFolder: Resize((224, 224)) first);\n"
    "                        light (default): images of any size or >= 224: RandomResizedCrop(224) +\n"
    "                        RandomHorizontalFlip, small fixed-size images: RandomCrop(size, padding=4) +\n"
    "                        RandomHorizontalFlip; guide: Resize(256) (shorter side) + RandomCrop(224) +\n"
    "                        RandomHorizontalFlip + ColorJitter(0.2, 0.2, 0.2) + RandomAffine(15,\n"
    "                        translate=(0.1, 0.1), scale=(0.9, 1.1)); then ToTensor + Normalize (ImageNet\n"
    "                        mean/std for 3 channels)\n"
    "  --transform SPEC      a pipeline instead, e.g. 'RandomCrop(24, padding=2); hflip'\n"
    "  --no-fuse             run every geometric step on its own (also LOOM_LOADER_FUSE=0 in the environment)\n"
    "  --workers N|auto      loader threads; 0 = load on the calling thread (default auto)\n"
    "  --prefetch K          batch slots per thread (default 2)\n"
    "  --batch N             (default 64)\n"
    "  --epochs N            (default 1)\n"
    "  --seed N              (default 1)\n"
    "  --backend NAME        stage batches in this backend's pinned memory (default: none, malloc)\n"
    "  --breakdown N         then time decode, transform and upload apart on N images, one thread (default 64,\n"
    "                        0 = off; an ImageFolder: decode = the JPEG/PNG decode at the scale the loader asks,\n"
    "                        transform = the steps + ToTensor + Normalize on the decoded images; upload = a\n"
    "                        batch written to --backend's device, when one is given); the largest limits\n"
    "ends with: RESULT images_per_s=... workers=... first_batch_ms=... [decode_ms=... transform_ms=... upload_ms=...\n"
    "limit=decode|transform|upload]\n";

static int bad(const char *msg, const char *v) {
    fprintf(stderr, "loom bench-loader: %s '%s'\n%s", msg, v ? v : "", usage_text);
    return 2;
}

static bool parse_int(const char *s, long lo, long hi, long *out) {
    long long v;
    if (!loom_cli_int(s, lo, hi, &v)) return false;
    *out = (long)v;
    return true;
}

/* The transform steps of --pipeline (or --transform SPEC) for a U8 source
 * (steps holds 16); *imagenet: normalise with ImageNet's mean / std. */
static loom_status pipeline_steps(loom_ctx *ctx, const loom_source *src, const char *pipeline, const char *spec,
                                  loom_tf_step *steps, int *nsteps_out, bool *imagenet) {
    bool var = src->get_image != NULL; /* images of any size */
    bool big = var || (src->h >= 224 && src->w >= 224);
    int nsteps = 0;
    loom_status st = LOOM_OK;
    *imagenet = src->c == 3 && (big || !strcmp(pipeline, "guide"));
    if (spec) {
        st = loom_tf_parse(ctx, spec, steps, 16, &nsteps);
    } else if (!strcmp(pipeline, "none")) {
        if (var) steps[nsteps++] = (loom_tf_step){.kind = LOOM_TF_RESIZE, .h = 224, .w = 224};
    } else if (!strcmp(pipeline, "light") && big) {
        steps[nsteps++] = (loom_tf_step){.kind = LOOM_TF_RANDOM_RESIZED_CROP, .h = 224, .w = 224};
        steps[nsteps++] = (loom_tf_step){.kind = LOOM_TF_RANDOM_HFLIP};
    } else if (!strcmp(pipeline, "light")) {
        steps[nsteps++] = (loom_tf_step){.kind = LOOM_TF_RANDOM_CROP, .h = src->h, .w = src->w, .pad = {4, 4, 4, 4}};
        steps[nsteps++] = (loom_tf_step){.kind = LOOM_TF_RANDOM_HFLIP};
    } else { /* guide */
        steps[nsteps++] = (loom_tf_step){.kind = LOOM_TF_RESIZE, .h = 256, .short_side = true};
        steps[nsteps++] = (loom_tf_step){.kind = LOOM_TF_RANDOM_CROP, .h = 224, .w = 224};
        steps[nsteps++] = (loom_tf_step){.kind = LOOM_TF_RANDOM_HFLIP};
        int more = 0;
        st = loom_tf_parse(ctx, "ColorJitter(0.2, 0.2, 0.2); RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1))",
                           steps + nsteps, 16 - nsteps, &more);
        nsteps += more;
    }
    *nsteps_out = nsteps;
    return st;
}

/* ---- the breakdown: decode, transform and upload apart -------------------- */

/* Decoded images held in memory, served as a variable-size source: the
 * loader over it does only the transforms (and ToTensor + Normalize). */
typedef struct held {
    uint8_t **px;
    int64_t (*hw)[2];
    int32_t *label;
} held;

static loom_status held_get_image(const loom_source *src, loom_ctx *ctx, int64_t i, const loom_decode_hint *hint,
                                  uint8_t **data, int64_t *h, int64_t *w, int32_t *label) {
    (void)hint;
    const held *m = src->impl;
    size_t n = (size_t)m->hw[i][0] * (size_t)m->hw[i][1] * (size_t)src->c;
    *data = malloc(n);
    if (!*data) return loom_source_error(ctx, LOOM_ERR_OOM, "bench-loader: out of memory");
    memcpy(*data, m->px[i], n);
    *h = m->hw[i][0], *w = m->hw[i][1], *label = m->label[i];
    return LOOM_OK;
}

typedef struct breakdown {
    double decode_ms, transform_ms, upload_ms; /* per image; upload_ms < 0: not measured */
} breakdown;

/* The decode hint the loader uses for a variable-size source: a Resize that
 * comes first (flips before it commute with it) bounds the scale. */
static loom_decode_hint first_resize_hint(const loom_tf_step *steps, int nsteps) {
    for (int k = 0; k < nsteps; k++) {
        if (steps[k].kind == LOOM_TF_RANDOM_HFLIP || steps[k].kind == LOOM_TF_RANDOM_VFLIP) continue;
        if (steps[k].kind == LOOM_TF_RESIZE)
            return (loom_decode_hint){.min_h = steps[k].h, .min_w = steps[k].short_side ? steps[k].h : steps[k].w};
        break;
    }
    return (loom_decode_hint){0};
}

/* Seconds of (write x + one scale op) minus the op alone, per call, for a
 * batch of `floats` values on be. */
static loom_status upload_s(loom_ctx *ctx, loom_backend *be, const float *x, int64_t floats, double *out) {
    loom_graph *g = NULL;
    loom_plan *p = NULL;
    loom_status st = loom_graph_create(ctx, NULL, &g);
    if (st != LOOM_OK) return st;
    loom_tensor *in = loom_input(g, "x", LOOM_F32, 1, (int64_t[]){floats});
    loom_keep(loom_scale(g, in, 1.0));
    st = loom_plan_compile(g, be, &(loom_plan_desc){0}, &p);
    double best_w = 1e30, best_r = 1e30;
    for (int r = 0; r < 4 && st == LOOM_OK; r++) {
        double t0 = now_s();
        for (int k = 0; k < 4 && st == LOOM_OK; k++)
            if ((st = loom_plan_write(p, in, x, (size_t)floats * sizeof(float))) == LOOM_OK) st = loom_plan_run(p);
        double t1 = now_s();
        for (int k = 0; k < 4 && st == LOOM_OK; k++) st = loom_plan_run(p);
        double t2 = now_s();
        if (r > 0 && (t1 - t0) / 4 < best_w) best_w = (t1 - t0) / 4;
        if (r > 0 && (t2 - t1) / 4 < best_r) best_r = (t2 - t1) / 4;
    }
    *out = best_w > best_r ? best_w - best_r : 0;
    loom_plan_destroy(p);
    loom_graph_destroy(g);
    return st;
}

/* Sample i of src as a malloc'd image (*px) of hw[0] x hw[1] pixels:
 * decoded (a variable-size source, with the loader's hint) or read (rec bytes). */
static loom_status sample_of(loom_ctx *ctx, const loom_source *src, int64_t i, const loom_decode_hint *hint, size_t rec,
                             uint8_t **px, int64_t hw[2], int32_t *label) {
    if (src->get_image) return src->get_image(src, ctx, i, hint->min_h ? hint : NULL, px, &hw[0], &hw[1], label);
    if (!(*px = malloc(rec ? rec : 1))) return loom_source_error(ctx, LOOM_ERR_OOM, "bench-loader: out of memory");
    hw[0] = src->h, hw[1] = src->w;
    return src->get(src, ctx, i, *px, label);
}

/* Decode the first `count` images one by one, then load them through the
 * loader from memory (one thread): the per-image times. */
static loom_status run_breakdown(loom_ctx *ctx, const loom_source *src, const loom_loader_desc *base, int64_t count,
                                 breakdown *out) {
    out->decode_ms = out->transform_ms = 0, out->upload_ms = -1;
    if (count > src->n) count = src->n;
    held m = {calloc((size_t)count, sizeof *m.px), calloc((size_t)count, sizeof *m.hw), calloc((size_t)count, sizeof *m.label)};
    loom_status st = m.px && m.hw && m.label ? LOOM_OK : loom_source_error(ctx, LOOM_ERR_OOM, "bench-loader: out of memory");
    loom_decode_hint hint = first_resize_hint(base->steps, base->nsteps);
    size_t rec = loom_source_sample_bytes(src);
    /* timed: each image decoded and dropped, as a loader worker does (keeping
     * them all would time the page faults of fresh memory with the decode) */
    double t0 = now_s();
    for (int64_t i = 0; i < count && st == LOOM_OK; i++) {
        uint8_t *px = NULL;
        int64_t hw[2];
        int32_t label;
        st = sample_of(ctx, src, i, &hint, rec, &px, hw, &label);
        free(px);
    }
    out->decode_ms = 1e3 * (now_s() - t0) / (double)(count ? count : 1);
    /* then held for the transform's pass (untimed) */
    for (int64_t i = 0; i < count && st == LOOM_OK; i++) st = sample_of(ctx, src, i, &hint, rec, &m.px[i], m.hw[i], &m.label[i]);
    loom_source mem = {.name = "decoded images", .n = count, .kind = LOOM_SAMPLE_U8, .c = src->c,
                       .num_classes = src->num_classes, .impl = &m, .get_image = held_get_image};
    loom_loader *ld = NULL;
    if (st == LOOM_OK && src->kind == LOOM_SAMPLE_U8) {
        loom_loader_desc d = *base;
        d.src = &mem, d.workers = LOOM_WORKERS_SYNC, d.shuffle = false, d.backend = NULL;
        if (d.nsteps == 0 && src->get) { /* a fixed-size source without steps: a Resize to its own size keeps it */
            static loom_tf_step keep;
            keep = (loom_tf_step){.kind = LOOM_TF_RESIZE, .h = src->h, .w = src->w};
            d.steps = &keep, d.nsteps = 1;
        }
        st = loom_loader_create(ctx, &d, &ld);
        double t1 = now_s();
        loom_loader_batch b = {0};
        float *one = NULL;
        int64_t floats = 0, got = 0;
        while (st == LOOM_OK && (st = loom_loader_next(ld, &b)) == LOOM_OK && b.count > 0) {
            got += b.count;
            if (!one && base->backend) {
                int c;
                int64_t h, w;
                loom_loader_shape(ld, &c, &h, &w);
                floats = (int64_t)base->batch * c * h * w;
                if ((one = calloc((size_t)floats, sizeof *one))) memcpy(one, b.x, (size_t)b.count * c * h * w * sizeof *one);
            }
        }
        out->transform_ms = 1e3 * (now_s() - t1) / (double)(got ? got : 1);
        double up = 0;
        if (st == LOOM_OK && one && (st = upload_s(ctx, base->backend, one, floats, &up)) == LOOM_OK)
            out->upload_ms = 1e3 * up / (double)base->batch;
        free(one);
    }
    loom_loader_destroy(ld);
    for (int64_t i = 0; i < count && m.px; i++) free(m.px[i]);
    free(m.px), free(m.hw), free(m.label);
    return st;
}

/* The per-image breakdown line; extra gets its RESULT fields. */
static void print_breakdown(const breakdown *bd_, bool device, char *extra, size_t n) {
    breakdown bd = *bd_;
    /* decode and transform share the worker threads; upload is the trainer's, per batch */
    const char *limit = bd.decode_ms >= bd.transform_ms ? "decode" : "transform";
    if (bd.upload_ms > bd.decode_ms + bd.transform_ms) limit = "upload";
    double sum = bd.decode_ms + bd.transform_ms;
    printf("per image, one thread: decode %.3f ms (%.0f%%), transform + ToTensor + Normalize %.3f ms (%.0f%%), "
           "upload %s%.4f ms%s; %s limits\n",
           bd.decode_ms, sum > 0 ? 100 * bd.decode_ms / sum : 0, bd.transform_ms,
           sum > 0 ? 100 * bd.transform_ms / sum : 0, bd.upload_ms < 0 ? "(no --backend) " : "",
           bd.upload_ms < 0 ? 0 : bd.upload_ms, device ? " (to the device)" : "", limit);
    snprintf(extra, n, " decode_ms=%.4f transform_ms=%.4f upload_ms=%.4f limit=%s", bd.decode_ms,
             bd.transform_ms, bd.upload_ms < 0 ? 0 : bd.upload_ms, limit);
}

int loom_cmd_bench_loader(int argc, char **argv) {
    const char *dir = "/usr/share/datasets/fashion-mnist", *pipeline = "light", *spec = NULL, *backend = NULL;
    long batch = 64, epochs = 1, prefetch = 2, seed = 1, nbreak = 64;
    int workers = LOOM_WORKERS_AUTO;
    bool skip_bad = false, no_fuse = false;
    const char *fuse_env = getenv("LOOM_LOADER_FUSE");
    if (fuse_env && !strcmp(fuse_env, "0")) no_fuse = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s", usage_text);
            return 0;
        }
        if (!strcmp(a, "--skip-bad-samples")) {
            skip_bad = true;
            continue;
        }
        if (!strcmp(a, "--no-fuse")) {
            no_fuse = true;
            continue;
        }
        if (!v) return bad("a value is needed after", a);
        i++;
        long n;
        if (!strcmp(a, "--data-dir")) dir = v;
        else if (!strcmp(a, "--pipeline")) pipeline = v;
        else if (!strcmp(a, "--transform")) spec = v;
        else if (!strcmp(a, "--backend")) backend = v;
        else if (!strcmp(a, "--batch")) {
            if (!parse_int(v, 1, 1 << 20, &batch)) return bad("bad value for --batch:", v);
        } else if (!strcmp(a, "--epochs")) {
            if (!parse_int(v, 1, 100000, &epochs)) return bad("bad value for --epochs:", v);
        } else if (!strcmp(a, "--prefetch")) {
            if (!parse_int(v, 1, 64, &prefetch)) return bad("bad value for --prefetch:", v);
        } else if (!strcmp(a, "--breakdown")) {
            if (!parse_int(v, 0, 1 << 20, &nbreak)) return bad("bad value for --breakdown:", v);
        } else if (!strcmp(a, "--seed")) {
            if (!parse_int(v, 0, 0x7fffffffL, &seed)) return bad("bad value for --seed:", v);
        } else if (!strcmp(a, "--workers")) {
            if (!strcmp(v, "auto")) workers = LOOM_WORKERS_AUTO;
            else if (parse_int(v, 0, 4096, &n)) workers = n == 0 ? LOOM_WORKERS_SYNC : (int)n;
            else return bad("bad value for --workers (a thread count 0..4096, or auto):", v);
        } else {
            return bad("unknown option", a);
        }
    }
    if (strcmp(pipeline, "none") && strcmp(pipeline, "light") && strcmp(pipeline, "guide"))
        return bad("unknown pipeline (none, light or guide):", pipeline);

    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    loom_source *src = NULL;
    loom_backend *be = NULL;
    loom_loader *ld = NULL;
    loom_tf_step steps[16];
    int nsteps = 0, rc = 1;
    loom_status st = loom_source_open_dir(ctx, dir, true, &src);
    if (st == LOOM_OK && skip_bad && src->get_image) { /* an ImageFolder: again, skipping bad images */
        char root[4096];
        snprintf(root, sizeof root, "%s", src->name);
        loom_source_destroy(src);
        src = NULL;
        st = loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root, .skip_bad = true}, &src);
    }
    if (st == LOOM_OK && backend) st = loom_backend_create(ctx, backend, NULL, &be);
    bool imagenet = false;
    if (st == LOOM_OK && src->kind == LOOM_SAMPLE_U8) st = pipeline_steps(ctx, src, pipeline, spec, steps, &nsteps, &imagenet);
    float mean[4] = {0.5f, 0.5f, 0.5f, 0.5f}, sd[4] = {0.25f, 0.25f, 0.25f, 0.25f};
    const float in_mean[3] = {0.485f, 0.456f, 0.406f}, in_sd[3] = {0.229f, 0.224f, 0.225f};
    if (imagenet) memcpy(mean, in_mean, sizeof in_mean), memcpy(sd, in_sd, sizeof in_sd);
    double t0 = now_s(), first_ms = 0, load_s = 0;
    int64_t images = 0, nbatches = 0;
    int wmin = 0, wmax = 0, wlast = 0;
    loom_loader_desc d = {0};
    if (st == LOOM_OK) {
        d = (loom_loader_desc){.src = src, .batch = (int)batch, .shuffle = true, .seed = (uint64_t)seed,
                              .workers = workers, .prefetch = (int)prefetch, .steps = steps, .nsteps = nsteps,
                              .mean = mean, .std = sd, .nstat = src->kind != LOOM_SAMPLE_U8 ? 0 : imagenet ? 3 : 1,
                              .backend = be, .no_fuse = no_fuse};
        t0 = now_s();
        st = loom_loader_create(ctx, &d, &ld);
    }
    if (st == LOOM_OK) {
        int c;
        int64_t h, w;
        loom_loader_shape(ld, &c, &h, &w);
        printf("bench-loader: %s, %lld samples %dx%lldx%lld -> %dx%lldx%lld f32, batch %ld, %d transform steps (%s%s), "
               "staging %s\n",
               src->name, (long long)src->n, src->c, (long long)src->h, (long long)src->w, c, (long long)h, (long long)w,
               batch, nsteps, spec ? "--transform" : pipeline, no_fuse ? ", unfused" : "", be ? loom_backend_name(be) : "malloc");
    }
    for (long e = 0; e < epochs && st == LOOM_OK; e++) {
        double te = now_s();
        if (e > 0) loom_loader_begin(ld, e, 0, 0);
        int64_t n = 0;
        for (;;) {
            loom_loader_batch b;
            if ((st = loom_loader_next(ld, &b)) != LOOM_OK || b.count == 0) break;
            if (images == 0) first_ms = 1e3 * (now_s() - t0);
            images += b.count, n += b.count;
            nbatches++;
        }
        if (st != LOOM_OK) break;
        loom_loader_stats s;
        loom_loader_stats_get(ld, &s);
        double el = now_s() - te;
        load_s += s.load_s;
        wmin = e == 0 || s.workers_min < wmin ? s.workers_min : wmin;
        wmax = s.workers_max > wmax ? s.workers_max : wmax;
        wlast = s.workers;
        printf("epoch %ld: %lld images in %.3f s (%.0f images/s), load %.3f ms/batch per worker, workers %d (%d..%d), "
               "%lld batches loaded ahead\n",
               e + 1, (long long)n, el, (double)n / el, s.batches ? 1e3 * s.load_s / (double)s.batches : 0, s.workers,
               s.workers_min, s.workers_max, (long long)s.carried);
    }
    double total = now_s() - t0;
    if (src && loom_imagefolder_skipped(src) > 0)
        printf("skipped %lld bad image%s (--skip-bad-samples)\n", (long long)loom_imagefolder_skipped(src),
               loom_imagefolder_skipped(src) == 1 ? "" : "s");
    breakdown bd = {0, 0, -1};
    bool have_bd = st == LOOM_OK && nbreak > 0 && src->kind == LOOM_SAMPLE_U8;
    if (have_bd) {
        loom_loader_destroy(ld); /* its threads would compete with the one-thread timing */
        ld = NULL;
        st = run_breakdown(ctx, src, &d, nbreak, &bd);
    }
    if (st != LOOM_OK) {
        fprintf(stderr, "loom bench-loader: %s\n", loom_last_error(ctx));
    } else {
        char extra[256] = "";
        if (have_bd) print_breakdown(&bd, be != NULL, extra, sizeof extra);
        printf("RESULT images_per_s=%.0f workers=%d first_batch_ms=%.2f workers_min=%d workers_max=%d "
               "load_ms_per_batch=%.3f batches=%lld%s\n",
               (double)images / total, wlast, first_ms, wmin, wmax, nbatches ? 1e3 * load_s / (double)nbatches : 0,
               (long long)nbatches, extra);
        rc = 0;
    }
    loom_loader_destroy(ld);
    loom_source_destroy(src);
    loom_backend_destroy(be);
    loom_ctx_destroy(ctx);
    return rc;
}
