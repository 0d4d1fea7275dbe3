/* tools/bench.c — `loom bench`: the guide's table on one backend. Rows:
 * the baseline (f32, batches loaded on the training thread), + loader
 * workers, + mixed precision with the batch doubled, and data parallel
 * (under `mpirun -np N loom bench ...`: the previous row's configuration
 * and per-rank batch on N ranks; rank 0 prints the table; one process: the
 * row says how to fill it). Columns as in the guide: planned memory, batch,
 * device busy % (the backend's per-op timers summed over the step time),
 * time per epoch of a stated size, and samples/s. A table on stdout;
 * --csv and --json write the same rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_run.h"
#include "cli_num.h"

enum { NROWS = 4 };

typedef struct brow {
    const char *config;
    br_out *o;      /* NULL: not run (not built) */
    int batch;
    const char *why; /* not run: why */
} brow;

static int usage(FILE *f, int rc) {
    fprintf(f, "usage: loom bench --model M [--backend X] [--steps N] [options]\n"
               "  --model M          an image model: resnet20|32|56|resnet18|34|50|cnn|mlp (required)\n"
               "  --backend X        cpu|vulkan|opencl|cuda|auto (default auto)\n"
               "  --steps N          timed training steps per row, after one warm-up step (default 5)\n"
               "  --batch N          the baseline's batch (default 32; the mixed-precision row doubles it)\n"
               "  --amp fp16|bf16    the mixed-precision row's 16-bit type (default fp16)\n"
               "  --epoch-size N     samples per epoch for the epoch-time column (default 50000)\n"
               "  --size N --channels N   synthetic images, N x N with that many channels (default 32, 3)\n"
               "  --depth N --width N --small-stem   resnet size options, as for loom train\n"
               "  --seed N           (default 1)\n"
               "  --csv PATH --json PATH   also write the rows there\n"
               "under `mpirun -np N` (N > 1) the data-parallel row runs on the N ranks; rank 0 prints\n");
    return rc;
}

static int bad(const char *what, const char *v) {
    fprintf(stderr, "loom bench: bad value '%s' for %s\n", v ? v : "(missing)", what);
    return usage(stderr, 2);
}

/* The per-op time over the step time. Both are measured on their own
 * clocks, so a step busy throughout may read a little over 100: shown as 100. */
static double busy_pct(const br_out *o) {
    if (o->nops < 0 || !(o->step_s > 0)) return NAN;
    double b = 100 * o->op_s / o->step_s;
    return b > 100 ? 100 : b;
}

static void print_rows(FILE *f, int fmt, const brow *r, const br_cfg *c, int64_t esize, const char *be) {
    if (fmt == 0) {
        fprintf(f, "loom bench: %s on %s, %dx%dx%d synthetic images, %lld timed steps per row, epoch = %lld samples\n",
                c->model, be, c->channels, c->size, c->size, (long long)c->steps, (long long)esize);
        fprintf(f, "%-44s %10s %6s %7s %12s %10s\n", "configuration", "memory MiB", "batch", "busy %", "epoch time s",
                "samples/s");
    } else if (fmt == 1) {
        fprintf(f, "configuration,memory_bytes,batch,busy_pct,epoch_s,samples_per_s,step_ms\n");
    } else {
        fprintf(f, "{\"model\": ");
        br_json_str(f, c->model);
        fprintf(f, ", \"backend\": ");
        br_json_str(f, be);
        fprintf(f, ", \"steps\": %lld, \"epoch_size\": %lld, \"rows\": [", (long long)c->steps, (long long)esize);
    }
    for (int i = 0; i < NROWS; i++) {
        const br_out *o = r[i].o;
        double busy = o ? busy_pct(o) : NAN, ep = o ? (double)esize / o->samples_per_s : NAN;
        if (fmt == 0 && !o) {
            fprintf(f, "%-44s %10s %6s %7s %12s %10s  (%s)\n", r[i].config, "-", "-", "-", "-", "-", r[i].why);
        } else if (fmt == 0) {
            char b[16] = "n/a";
            if (!isnan(busy)) snprintf(b, sizeof b, "%.0f", busy);
            fprintf(f, "%-44s %10.1f %6d %7s %12.1f %10.1f\n", r[i].config, (double)o->peak_bytes / 1048576.0,
                    r[i].batch, b, ep, o->samples_per_s);
        } else if (fmt == 1 && !o) {
            fprintf(f, "\"%s\",,,,,,\n", r[i].config);
        } else if (fmt == 1) {
            fprintf(f, "\"%s\",%zu,%d,%.1f,%.2f,%.2f,%.4f\n", r[i].config, o->peak_bytes, r[i].batch, busy, ep,
                    o->samples_per_s, 1e3 * o->step_s);
        } else {
            fprintf(f, "%s{\"configuration\": ", i ? ", " : "");
            br_json_str(f, r[i].config);
            if (!o) {
                fprintf(f, ", \"built\": false, \"why\": ");
                br_json_str(f, r[i].why);
                fprintf(f, "}");
                continue;
            }
            fprintf(f, ", \"built\": true, \"memory_bytes\": %zu, \"batch\": %d, \"busy_pct\": ", o->peak_bytes, r[i].batch);
            if (isnan(busy)) fprintf(f, "null");
            else fprintf(f, "%.1f", busy);
            fprintf(f, ", \"epoch_s\": %.2f, \"samples_per_s\": %.2f, \"step_ms\": %.4f}", ep, o->samples_per_s,
                    1e3 * o->step_s);
        }
    }
    if (fmt == 0)
        fprintf(f, "memory: planned device memory; busy: the backend's per-op timers over the step time (n/a: no "
                   "timer);\nbatch slots are pinned host memory in every row (the trainer's loader)\n");
    if (fmt == 2) fprintf(f, "]}\n");
}

static int write_out(const char *path, int fmt, const brow *r, const br_cfg *c, int64_t esize, const char *be) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "loom bench: cannot write '%s'\n", path);
        return 1;
    }
    print_rows(f, fmt, r, c, esize, be);
    return fclose(f) ? 1 : 0;
}

typedef struct opts {
    const char *csv, *json;
    int64_t esize;
    loom_dtype amp;
} opts;

/* Options into c and o. Returns -1 when fine. */
static int parse(int argc, char **argv, br_cfg *c, opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x;
        int k;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout, 0);
        if (!strcmp(a, "--small-stem")) { c->small_stem = true; continue; }
        if (!v) return bad(a, NULL);
        i++;
        if (!strcmp(a, "--model")) c->model = v;
        else if (!strcmp(a, "--backend")) c->backend = v;
        else if (!strcmp(a, "--csv")) o->csv = v;
        else if (!strcmp(a, "--json")) o->json = v;
        else if (!strcmp(a, "--amp")) {
            if (!strcmp(v, "fp16")) o->amp = LOOM_F16;
            else if (!strcmp(v, "bf16")) o->amp = LOOM_BF16;
            else return bad(a, v);
        }
        else if ((k = br_parse_run_opt(a, v, 1 << 15, c)) != 0) { if (k < 0) return bad(a, v); }
        else if (!strcmp(a, "--epoch-size")) { if (!loom_cli_int(v, 1, INT64_MAX / 2, &x)) return bad(a, v); o->esize = x; }
        else {
            fprintf(stderr, "loom bench: unknown option '%s'\n", a);
            return usage(stderr, 2);
        }
    }
    if (!c->model) {
        fprintf(stderr, "loom bench: --model is required\n");
        return usage(stderr, 2);
    }
    if (loom_model_is_text(c->model)) {
        fprintf(stderr, "loom bench: '%s' is a text model; bench runs image models\n", c->model);
        return 2;
    }
    return -1;
}

/* Rows 1-3 (rank 0 alone: the other ranks wait, so that they do not share
 * its cores), then, with several ranks, the data-parallel row on every rank:
 * the mixed-precision row's configuration and per-rank batch, its samples/s
 * counting every rank's samples. Returns -1 when fine, else the exit code. */
static int run_rows(loom_ctx *ctx, loom_dist *dist, const br_cfg *c, const opts *o, brow *r, const char **be) {
    const int world = loom_dist_world(dist);
    int rc = -1;
    for (int i = 0; i < 3 && rc < 0 && loom_dist_rank(dist) == 0; i++) {
        br_cfg ci = *c;
        ci.workers = i == 0 ? LOOM_WORKERS_SYNC : LOOM_WORKERS_AUTO;
        ci.amp = i == 2 ? o->amp : LOOM_F32;
        ci.batch = r[i].batch;
        if (!(r[i].o = calloc(1, sizeof *r[i].o))) rc = 1;
        else if (br_run(ctx, &ci, r[i].o) != LOOM_OK) {
            fprintf(stderr, "loom bench: %s: %s\n", r[i].config, loom_last_error(ctx));
            rc = 1;
        }
        if (rc < 0) *be = r[i].o->backend;
    }
    if (world < 2) return rc;
    if (loom_dist_broadcast(dist, &rc, sizeof rc, 0) != LOOM_OK) { /* rank 0's verdict: go on together or stop */
        fprintf(stderr, "loom bench: %s\n", loom_last_error(ctx));
        return 1;
    }
    if (rc >= 0) return rc;
    br_cfg ci = *c;
    ci.workers = LOOM_WORKERS_AUTO, ci.amp = o->amp, ci.batch = r[3].batch, ci.dist = dist;
    if (!(r[3].o = calloc(1, sizeof *r[3].o))) return 1;
    if (br_run(ctx, &ci, r[3].o) != LOOM_OK) {
        fprintf(stderr, "loom bench: rank %d of %d: %s: %s\n", loom_dist_rank(dist), world, r[3].config,
                loom_last_error(ctx));
        return 1;
    }
    r[3].o->samples_per_s *= world; /* every rank trains its own batch in the step */
    return -1;
}

int loom_cmd_bench(int argc, char **argv) {
    br_cfg c = {.size = 32, .channels = 3, .batch = 32, .steps = 5, .seed = 1, .profile = true, .backend = "auto"};
    opts o = {.esize = 50000, .amp = LOOM_F16};
    int rc = parse(argc, argv, &c, &o);
    if (rc >= 0) return rc;
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    /* under mpirun: the group of the data-parallel row (rows 1-3 may keep
     * the other ranks waiting for a long time: a generous time limit) */
    loom_dist *dist = NULL;
    if (loom_dist_create(ctx, &(loom_dist_desc){.timeout_s = 3600}, &dist) != LOOM_OK) {
        fprintf(stderr, "loom bench: %s\n", loom_last_error(ctx));
        loom_ctx_destroy(ctx);
        return 1;
    }
    const int world = loom_dist_world(dist);
    const char *why = NULL;
    if (!strcmp(c.backend, "auto")) c.backend = loom_pick_backend(ctx, NULL);
    if (!loom_backend_available(ctx, c.backend, &why)) {
        fprintf(stderr, "loom bench: backend '%s' is not available: %s\n", c.backend, why ? why : "unknown");
        loom_dist_destroy(dist);
        loom_ctx_destroy(ctx);
        return 1;
    }
    char dp[64];
    snprintf(dp, sizeof dp, "+ data parallel, %d processes (MPI)", world);
    brow r[NROWS] = {{"baseline: f32, loading on the training thread", NULL, c.batch, NULL},
                     {"+ loader workers (auto)", NULL, c.batch, NULL},
                     {o.amp == LOOM_F16 ? "+ mixed precision (fp16), batch doubled" : "+ mixed precision (bf16), batch doubled",
                      NULL, 2 * c.batch, NULL},
                     {world > 1 ? dp : "+ data parallel", NULL, 2 * c.batch,
                      loom_dist_mpi_built() ? "one process: run under mpirun -np N (N > 1) to fill this row"
                                            : "not built: loom was built without MPI"}};
    const char *be = c.backend;
    rc = run_rows(ctx, dist, &c, &o, r, &be);
    if (rc < 0 && loom_dist_rank(dist) == 0) { /* rank 0 prints and writes the table */
        print_rows(stdout, 0, r, &c, o.esize, be);
        rc = 0;
        if (o.csv) rc |= write_out(o.csv, 1, r, &c, o.esize, be);
        if (o.json) rc |= write_out(o.json, 2, r, &c, o.esize, be);
    }
    if (rc < 0) rc = 0;
    for (int i = 0; i < NROWS; i++) free(r[i].o);
    if (rc != 0 && world > 1) { /* the other ranks may wait for this one: end the job */
        fflush(stdout), fflush(stderr);
        loom_dist_abort(dist, rc);
    }
    loom_dist_destroy(dist);
    loom_ctx_destroy(ctx);
    return rc;
}
