/* bench/decode_bound.c — the decode-bound limit of an image loader: the
 * images/s of decoding alone (read + decode through the ImageFolder source,
 * at the reduced DCT scale a leading Resize allows, as the loader asks it)
 * on every core, nothing else. The source decodes baseline JPEGs' Huffman
 * data with loom's own decoder (loader/jpeg_huff.c); with LOOM_JPEG_HUFF=0
 * it is libjpeg-turbo's decode alone, the limit bench/loader_guide.sh
 * reports the loader against (a loader that decodes with libjpeg-turbo can
 * not beat it), beside loom's own decode alone.
 *
 * usage: bench-decode_bound DIR [--min HxW] [--threads N] [--epochs E]
 *   --min HxW   the decode keeps at least this size (the loader's hint for a
 *               leading Resize((H, W)); default 256x256, 0x0 = full size)
 *   --threads N decoding threads (default: the core count)
 *   --epochs E  passes over the set; the best one is reported (default 2)
 * ends with: RESULT decode_images_per_s=... threads=N images=...
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "loom/loom.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct job {
    const loom_source *src;
    loom_decode_hint hint;
    int id, nthreads;
    int64_t done;
    loom_status st;
    char err[256];
} job;

static void *run(void *arg) {
    job *j = arg;
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) {
        j->st = LOOM_ERR_OOM;
        return NULL;
    }
    for (int64_t i = j->id; i < j->src->n && j->st == LOOM_OK; i += j->nthreads) {
        uint8_t *px = NULL;
        int64_t h, w;
        int32_t label;
        j->st = j->src->get_image(j->src, ctx, i, j->hint.min_h ? &j->hint : NULL, &px, &h, &w, &label);
        if (j->st != LOOM_OK) snprintf(j->err, sizeof j->err, "%s", loom_last_error(ctx));
        free(px);
        j->done++;
    }
    loom_ctx_destroy(ctx);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: bench-decode_bound DIR [--min HxW] [--threads N] [--epochs E]\n");
        return 2;
    }
    long mh = 256, mw = 256, nthreads = sysconf(_SC_NPROCESSORS_ONLN), epochs = 2;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--min") && sscanf(argv[i + 1], "%ldx%ld", &mh, &mw) == 2 && mh >= 0 && mw >= 0) continue;
        if (!strcmp(argv[i], "--threads") && (nthreads = atol(argv[i + 1])) >= 1 && nthreads <= 256) continue;
        if (!strcmp(argv[i], "--epochs") && (epochs = atol(argv[i + 1])) >= 1) continue;
        fprintf(stderr, "bench-decode_bound: bad option '%s %s'\n", argv[i], argv[i + 1]);
        return 2;
    }
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    loom_source *src = NULL;
    if (loom_source_open_dir(ctx, argv[1], true, &src) != LOOM_OK || !src->get_image) {
        fprintf(stderr, "bench-decode_bound: %s: %s\n", argv[1], src ? "not an ImageFolder" : loom_last_error(ctx));
        loom_source_destroy(src);
        loom_ctx_destroy(ctx);
        return 1;
    }
    double best = 0;
    int rc = 0;
    for (long e = 0; e < epochs && !rc; e++) {
        job jobs[256];
        pthread_t th[256];
        double t0 = now_s();
        for (int k = 0; k < nthreads; k++) {
            jobs[k] = (job){.src = src, .hint = {.min_h = mh, .min_w = mw}, .id = k, .nthreads = (int)nthreads};
            pthread_create(&th[k], NULL, run, &jobs[k]);
        }
        int64_t n = 0;
        for (int k = 0; k < nthreads; k++) {
            pthread_join(th[k], NULL);
            n += jobs[k].done;
            if (jobs[k].st != LOOM_OK) {
                fprintf(stderr, "bench-decode_bound: %s\n", jobs[k].err);
                rc = 1;
            }
        }
        double el = now_s() - t0, r = (double)n / el;
        printf("epoch %ld: %lld images decoded in %.3f s (%.0f images/s), %ld threads, min %ldx%ld\n", e + 1, (long long)n, el,
               r, nthreads, mh, mw);
        if (r > best) best = r;
    }
    if (!rc) printf("RESULT decode_images_per_s=%.0f threads=%ld images=%lld\n", best, nthreads, (long long)src->n);
    loom_source_destroy(src);
    loom_ctx_destroy(ctx);
    return rc;
}
