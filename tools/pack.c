/* tools/pack.c — `loom pack`: decode and resize a dataset once into a packed
 * shard (loader/shard.c) that `loom train` / `loom bench-loader` then read by
 * memory-mapping (--data-dir DIR finds DIR/train.shard, or takes the file). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "loom/loom.h"
#include "cli_num.h"

static const char *usage_text =
    "usage: loom pack --data-dir DIR --out FILE [--size HxW] [--transform SPEC] [options]\n"
    "  --data-dir DIR        an ImageFolder (DIR[/train]/<class>/<image>), IDX or .npy dataset\n"
    "  --out FILE            the shard to write (e.g. DIR/train.shard, which --data-dir DIR then picks)\n"
    "  --size HxW            Resize((H, W)) every image (bilinear, antialiased); N = NxN\n"
    "  --transform SPEC      deterministic steps run before that Resize, e.g. 'Resize(256); CenterCrop(224)'\n"
    "                        (Resize(256): the shorter side, as torchvision)\n"
    "                        (Resize and CenterCrop only: random augmentation belongs to the loader)\n"
    "  --split train|val     which split of DIR (default train; val = DIR/val or DIR/test)\n"
    "  --skip-bad-samples    ImageFolder: replace corrupt or unsupported images by the next good one\n"
    "every image must come out of the steps at one size; otherwise an error names the first one that does not.\n";

static int bad(const char *msg, const char *v) {
    fprintf(stderr, "loom pack: %s '%s'\n%s", msg, v ? v : "", usage_text);
    return 2;
}

/* "HxW" or "N" */
static bool parse_size(const char *s, int64_t *h, int64_t *w) {
    char a[32];
    const char *x = strpbrk(s, "xX");
    long long hv, wv;
    if (snprintf(a, sizeof a, "%.*s", (int)(x ? (size_t)(x - s) : strlen(s)), s) >= (int)sizeof a) return false;
    if (!loom_cli_int(a, 1, 65536, &hv) || !loom_cli_int(x ? x + 1 : a, 1, 65536, &wv)) return false;
    *h = hv, *w = wv;
    return true;
}

int loom_cmd_pack(int argc, char **argv) {
    const char *dir = NULL, *out = NULL, *spec = NULL, *split = "train";
    int64_t sh = 0, sw = 0;
    bool skip_bad = false;
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
        if (!v) return bad("a value is needed after", a);
        i++;
        if (!strcmp(a, "--data-dir")) dir = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--transform")) spec = v;
        else if (!strcmp(a, "--split")) split = v;
        else if (!strcmp(a, "--size")) {
            if (!parse_size(v, &sh, &sw)) return bad("bad value for --size (HxW or N, 1..65536):", v);
        } else {
            return bad("unknown option", a);
        }
    }
    if (!dir) return bad("--data-dir is required", "");
    if (!out) return bad("--out is required", "");
    if (strcmp(split, "train") && strcmp(split, "val")) return bad("bad value for --split (train or val):", split);

    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    loom_source *src = NULL;
    loom_tf_step steps[17];
    int nsteps = 0;
    loom_status st = loom_source_open_dir(ctx, dir, !strcmp(split, "train"), &src);
    /* open_dir prefers DIR/train.shard to the ImageFolder beside it: packing
     * reads the images themselves (unless --data-dir names a shard file) */
    bool from_shard = st == LOOM_OK && src->get && strcmp(src->name, dir) && strlen(src->name) > 6 &&
                      !strcmp(src->name + strlen(src->name) - 6, ".shard");
    if (st == LOOM_OK && ((skip_bad && src->get_image) || from_shard)) {
        char root[4096];
        struct stat sb;
        const char *sub[2] = {strcmp(split, "train") ? "val" : "train", strcmp(split, "train") ? "test" : NULL};
        snprintf(root, sizeof root, "%s", src->get_image ? src->name : dir);
        for (int k = 0; k < 2 && !src->get_image && sub[k]; k++) {
            snprintf(root, sizeof root, "%s/%s", dir, sub[k]);
            if (stat(root, &sb) == 0 && S_ISDIR(sb.st_mode)) break;
            snprintf(root, sizeof root, "%s", dir);
        }
        loom_source_destroy(src);
        src = NULL;
        st = loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root, .skip_bad = skip_bad}, &src);
    }
    if (st == LOOM_OK && spec) st = loom_tf_parse(ctx, spec, steps, 16, &nsteps);
    if (st == LOOM_OK && sh > 0) steps[nsteps++] = (loom_tf_step){.kind = LOOM_TF_RESIZE, .h = sh, .w = sw};
    int64_t h = 0, w = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (st == LOOM_OK)
        st = loom_shard_pack(ctx, &(loom_shard_pack_desc){.src = src, .steps = steps, .nsteps = nsteps, .path = out}, &h,
                             &w);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int rc = 1;
    if (st != LOOM_OK) {
        const char *e = loom_last_error(ctx);
        fprintf(stderr, "loom pack: %s\n", strncmp(e, "pack: ", 6) ? e : e + 6);
    } else {
        double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        printf("pack: %s -> %s: %lld records of %lldx%lldx%d u8, %d classes, %.2f s (%.0f images/s)\n", src->name, out,
               (long long)src->n, (long long)h, (long long)w, src->c, src->num_classes, s, (double)src->n / (s > 0 ? s : 1));
        if (loom_imagefolder_skipped(src) > 0)
            printf("skipped %lld bad image%s (--skip-bad-samples)\n", (long long)loom_imagefolder_skipped(src),
                   loom_imagefolder_skipped(src) == 1 ? "" : "s");
        rc = 0;
    }
    loom_source_destroy(src);
    loom_ctx_destroy(ctx);
    return rc;
}
