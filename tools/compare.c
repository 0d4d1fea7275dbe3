/* tools/compare.c — `loom compare`: the same model, seed and data on every
 * backend given (or available), side by side: step time, the top ops by the
 * backend's own per-op timers, planned memory, and the largest loss and
 * weight divergence from the CPU run (which runs first, as the reference).
 * A table on stdout; --csv and --json write the same rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_run.h"
#include "cli_num.h"

enum { MAXB = 8 };

typedef struct row {
    char name[32];
    br_out *o;
    double loss_div, weight_div; /* vs cpu; NaN for cpu itself */
    char path[512];
} row;

static int usage(FILE *f, int rc) {
    fprintf(f, "usage: loom compare --model M [--steps N] [--backends a,b,...] [options]\n"
               "  --model M          an image model: resnet20|32|56|resnet18|34|50|cnn|mlp (required)\n"
               "  --steps N          timed training steps after one warm-up step (default 5)\n"
               "  --backends LIST    comma-separated (default: every backend available here); cpu runs first,\n"
               "                     the reference of the divergence columns\n"
               "  --batch N          (default 32)\n"
               "  --size N --channels N   synthetic images, N x N with that many channels (default 32, 3)\n"
               "  --depth N --width N --small-stem   resnet size options, as for loom train\n"
               "  --seed N           init, data and order (default 1)\n"
               "  --reproducible     canonical kernels: the backends should then agree bit for bit\n"
               "  --csv PATH --json PATH   also write the rows there\n");
    return rc;
}

static int bad(const char *what, const char *v) {
    fprintf(stderr, "loom compare: bad value '%s' for %s\n", v ? v : "(missing)", what);
    return usage(stderr, 2);
}

/* The largest |a - b| over the f32 weights and batch-norm statistics both
 * checkpoints hold (not the optimizer state). Absolute: a tensor that
 * starts at zero (a batch-norm bias) is still near it after a few steps,
 * where a relative difference reads as large as summation order allows. */
static loom_status weight_div(loom_ctx *ctx, const char *a, const char *b, double *out) {
    loom_safetensors *sa = NULL, *sb = NULL;
    loom_status st = loom_safetensors_open(ctx, a, &sa);
    if (st == LOOM_OK) st = loom_safetensors_open(ctx, b, &sb);
    double m = 0;
    for (int i = 0; st == LOOM_OK && i < loom_safetensors_count(sa); i++) {
        const loom_st_tensor *x = loom_safetensors_tensor(sa, i), *y = loom_safetensors_find(sb, x->name);
        static const char *const opt[] = {".momentum_buffer", ".exp_avg", ".exp_avg_sq", ".grad_accum"};
        bool state = false;
        for (int k = 0; k < 4; k++) {
            size_t ln = strlen(x->name), lk = strlen(opt[k]);
            state |= ln > lk && !strcmp(x->name + ln - lk, opt[k]);
        }
        if (state || !y || x->dtype != LOOM_F32 || y->dtype != LOOM_F32 || loom_st_tensor_nbytes(x) != loom_st_tensor_nbytes(y))
            continue;
        size_t n = loom_st_tensor_nbytes(x) / 4;
        for (size_t k = 0; k < n; k++) {
            float u, v;
            memcpy(&u, (const char *)x->data + 4 * k, 4), memcpy(&v, (const char *)y->data + 4 * k, 4);
            double dd = fabs((double)u - (double)v);
            if (!(dd <= m)) m = dd; /* NaN wins */
        }
    }
    loom_safetensors_close(sa), loom_safetensors_close(sb);
    *out = m;
    return st;
}

static void ops_str(const br_out *o, char *buf, size_t n) {
    if (o->nops < 0) {
        snprintf(buf, n, "no per-op timer");
        return;
    }
    buf[0] = 0;
    for (int i = 0; i < o->nops && i < BR_TOP_OPS; i++) {
        size_t l = strlen(buf);
        double per = o->ops[i].runs ? o->ops[i].seconds / (double)o->ops[i].runs : 0;
        snprintf(buf + l, n - l, "%s%s %.2f", i ? ", " : "", o->ops[i].op, 1e3 * per);
    }
}

static void print_rows(FILE *f, int fmt, const row *r, int n, const br_cfg *c) {
    char ops[256];
    if (fmt == 0) {
        fprintf(f, "loom compare: %s, batch %d, %dx%dx%d synthetic images, seed %llu, %lld timed steps\n", c->model,
                c->batch, c->channels, c->size, c->size, (unsigned long long)c->seed, (long long)c->steps);
        fprintf(f, "%-8s %10s %10s %9s %-52s %10s %10s\n", "backend", "step ms", "samples/s", "peak MiB",
                "top ops (ms per step)", "loss div", "weight div");
    } else if (fmt == 1) {
        fprintf(f, "backend,step_ms,samples_per_s,peak_bytes,op_ms_per_step,top_ops,loss_div,weight_div\n");
    } else {
        fprintf(f, "{\"model\": ");
        br_json_str(f, c->model);
        fprintf(f, ", \"batch\": %d, \"steps\": %lld, \"seed\": %llu, \"rows\": [", c->batch, (long long)c->steps,
                (unsigned long long)c->seed);
    }
    for (int i = 0; i < n; i++) {
        const br_out *o = r[i].o;
        ops_str(o, ops, sizeof ops);
        if (fmt == 0) {
            char ld[32] = "(ref)", wd[32] = "(ref)";
            if (!isnan(r[i].loss_div) || strcmp(r[i].name, "cpu")) {
                snprintf(ld, sizeof ld, "%.3g", r[i].loss_div);
                snprintf(wd, sizeof wd, "%.3g", r[i].weight_div);
            }
            fprintf(f, "%-8s %10.2f %10.1f %9.1f %-52s %10s %10s\n", r[i].name, 1e3 * o->step_s, o->samples_per_s,
                    (double)o->peak_bytes / 1048576.0, ops, ld, wd);
        } else if (fmt == 1) {
            char opms[32] = "";
            if (o->nops >= 0) snprintf(opms, sizeof opms, "%.4f", 1e3 * o->op_s);
            fprintf(f, "%s,%.4f,%.2f,%zu,%s,\"%s\",%.6g,%.6g\n", r[i].name, 1e3 * o->step_s, o->samples_per_s,
                    o->peak_bytes, opms, ops, r[i].loss_div, r[i].weight_div);
        } else {
            fprintf(f, "%s{\"backend\": ", i ? ", " : "");
            br_json_str(f, r[i].name);
            fprintf(f, ", \"step_ms\": %.4f, \"samples_per_s\": %.2f, \"peak_bytes\": %zu, \"per_op_timer\": %s, "
                       "\"top_ops\": [", 1e3 * o->step_s, o->samples_per_s, o->peak_bytes, o->nops < 0 ? "false" : "true");
            for (int k = 0; k < o->nops && k < BR_TOP_OPS; k++) {
                fprintf(f, "%s{\"op\": ", k ? ", " : "");
                br_json_str(f, o->ops[k].op);
                fprintf(f, ", \"ms_per_step\": %.4f}", o->ops[k].runs ? 1e3 * o->ops[k].seconds / (double)o->ops[k].runs : 0);
            }
            fprintf(f, "], \"loss_div\": ");
            if (isnan(r[i].loss_div)) fprintf(f, "null, \"weight_div\": null}");
            else fprintf(f, "%.6g, \"weight_div\": %.6g}", r[i].loss_div, r[i].weight_div);
        }
    }
    if (fmt == 0 && n > 1)
        fprintf(f, "step time with the per-op timers on; loss div: the largest |loss - cpu loss| over the steps; "
                   "weight div: the largest |w - cpu w|\n"
                   "over the final weights and batch-norm statistics\n");
    if (fmt == 2) fprintf(f, "]}\n");
}

static int write_out(const char *path, int fmt, const row *r, int n, const br_cfg *c) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "loom compare: cannot write '%s'\n", path);
        return 1;
    }
    print_rows(f, fmt, r, n, c);
    return fclose(f) ? 1 : 0;
}

/* Options into c; backends, csv and json paths out. Returns -1 when fine. */
static int parse(int argc, char **argv, br_cfg *c, const char **backends, const char **csv, const char **json) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int k;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout, 0);
        if (!strcmp(a, "--small-stem")) { c->small_stem = true; continue; }
        if (!strcmp(a, "--reproducible")) { c->reproducible = true; continue; }
        if (!v) return bad(a, NULL);
        i++;
        if (!strcmp(a, "--model")) c->model = v;
        else if (!strcmp(a, "--backends")) *backends = v;
        else if (!strcmp(a, "--csv")) *csv = v;
        else if (!strcmp(a, "--json")) *json = v;
        else if ((k = br_parse_run_opt(a, v, 1 << 16, c)) != 0) { if (k < 0) return bad(a, v); }
        else {
            fprintf(stderr, "loom compare: unknown option '%s'\n", a);
            return usage(stderr, 2);
        }
    }
    if (!c->model) {
        fprintf(stderr, "loom compare: --model is required\n");
        return usage(stderr, 2);
    }
    if (loom_model_is_text(c->model)) {
        fprintf(stderr, "loom compare: '%s' is a text model; compare runs image models\n", c->model);
        return 2;
    }
    return -1;
}

/* The backends to run, cpu first: from the list (each must be built and
 * available) or every available one. */
static int pick(loom_ctx *ctx, const char *list, row *r, int *n) {
    const char *names[MAXB];
    int nb = loom_backend_list(names, MAXB);
    *n = 0;
    snprintf(r[(*n)++].name, sizeof r[0].name, "cpu");
    if (!list) {
        for (int i = 0; i < nb; i++)
            if (strcmp(names[i], "cpu") && loom_backend_available(ctx, names[i], NULL) && *n < MAXB)
                snprintf(r[(*n)++].name, sizeof r[0].name, "%s", names[i]);
        return -1;
    }
    char item[32];
    bool badl;
    const char *s = list;
    while (br_next_item(&s, item, sizeof item, &badl)) {
        const char *why = NULL;
        bool dup = false;
        for (int i = 0; i < *n; i++) dup |= !strcmp(r[i].name, item);
        if (dup) continue;
        if (!loom_backend_available(ctx, item, &why)) {
            fprintf(stderr, "loom compare: backend '%s' in --backends is not available: %s\n", item, why ? why : "unknown");
            return 1;
        }
        if (*n == MAXB) return bad("--backends", list);
        snprintf(r[(*n)++].name, sizeof r[0].name, "%s", item);
    }
    return badl ? bad("--backends", list) : -1;
}

int loom_cmd_compare(int argc, char **argv) {
    br_cfg c = {.size = 32, .channels = 3, .batch = 32, .steps = 5, .seed = 1, .workers = LOOM_WORKERS_SYNC,
                .profile = true};
    const char *backends = NULL, *csv = NULL, *json = NULL;
    int rc = parse(argc, argv, &c, &backends, &csv, &json);
    if (rc >= 0) return rc;
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    row r[MAXB] = {0};
    int n = 0;
    rc = pick(ctx, backends, r, &n);
    const char *t = getenv("TMPDIR");
    for (int i = 0; rc < 0 && i < n; i++) {
        br_cfg ci = c;
        char name[32];
        memcpy(name, r[i].name, sizeof name);
        snprintf(r[i].path, sizeof r[i].path, "%s/loom-compare-%ld-%s.st", t && *t ? t : "/tmp", (long)getpid(), name);
        ci.backend = r[i].name, ci.save = r[i].path;
        if (!(r[i].o = calloc(1, sizeof *r[i].o))) rc = 1;
        else if (br_run(ctx, &ci, r[i].o) != LOOM_OK) {
            fprintf(stderr, "loom compare: %s: %s\n", r[i].name, loom_last_error(ctx));
            rc = 1;
        }
        r[i].loss_div = r[i].weight_div = NAN;
        if (rc >= 0 || !i) continue;
        double m = 0;
        for (int64_t k = 0; k < r[i].o->nloss && k < r[0].o->nloss; k++) {
            double d = fabs(r[i].o->loss[k] - r[0].o->loss[k]);
            if (!(d <= m)) m = d;
        }
        r[i].loss_div = m;
        if (weight_div(ctx, r[0].path, r[i].path, &r[i].weight_div) != LOOM_OK) {
            fprintf(stderr, "loom compare: %s\n", loom_last_error(ctx));
            rc = 1;
        }
    }
    if (rc < 0) {
        print_rows(stdout, 0, r, n, &c);
        rc = 0;
        if (csv) rc |= write_out(csv, 1, r, n, &c);
        if (json) rc |= write_out(json, 2, r, n, &c);
    }
    for (int i = 0; i < n; i++) {
        if (r[i].path[0]) unlink(r[i].path);
        free(r[i].o);
    }
    loom_ctx_destroy(ctx);
    return rc;
}
