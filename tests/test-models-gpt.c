/* tests/test-models-gpt.c — the text models (train/models_gpt.c) against
 * PyTorch: tests/data/models/{gpt,transformer}.safetensors
 * (tests/gen_gpt_fixtures.py) hold the weights, one batch, the logits, the
 * loss and every parameter's gradient. loom loads the weights by name and
 * must reproduce logits, loss and gradients: within 1e-4 relative (max
 * |loom - torch| / max |torch| per tensor) on the CPU, and within an NMSE of
 * 1e-8 (a chain of a few dozen f32 ops, each held to the op-check's 1e-9) on
 * the other backends (Vulkan, OpenCL, CUDA) built here with a device (a
 * backend without one of the ops says so and is skipped). Also: GPT-2's initialisation (std 0.02, the
 * c_proj weights 0.02 / sqrt(2 layers), biases 0, layer-norm weights 1), the
 * parameter names and layouts, and the builder's errors. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "impl.h"
#include "testutil.h"

static char datadir[1024];

typedef struct fixture {
    const char *file;
    loom_model_desc md;
} fixture;

static loom_tensor *param_named(loom_graph *g, const char *name) {
    for (int i = 0; i < g->n; i++)
        if (g->nodes[i]->leaf == LOOM__PARAM && !strcmp(g->nodes[i]->name, name)) return g->nodes[i];
    return NULL;
}

/* max |a - b| / max |b| and the NMSE of a against the reference b */
static void compare(const float *a, const float *b, int64_t n, double *rel, double *nmse) {
    double dmax = 0, bmax = 0, se = 0, ss = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        dmax = d > dmax ? d : dmax;
        bmax = fabs(b[i]) > bmax ? fabs(b[i]) : bmax;
        se += d * d, ss += (double)b[i] * b[i];
    }
    *rel = bmax > 0 ? dmax / bmax : dmax;
    *nmse = ss > 0 ? se / ss : se;
}

/* One tensor of the plan against the file's `name`. */
static void check_tensor(loom_ctx *ctx, loom_plan *plan, const loom_safetensors *f, loom_tensor *t, const char *name,
                         const char *what, bool cpu, double *worst) {
    const loom_st_tensor *ref = loom_safetensors_find(f, name);
    CHECK(ref && t, "%s: %s missing (file: %s, graph: %s)", what, name, ref ? "yes" : "no", t ? "yes" : "no");
    if (!ref || !t) return;
    int64_t n = loom_tensor_numel(t);
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    if (!a || !b) {
        free(a), free(b);
        return;
    }
    memcpy(b, ref->data, (size_t)n * sizeof *b);
    CHECK_OK(ctx, loom_plan_read(plan, t, a, (size_t)n * sizeof *a));
    double rel, nmse;
    compare(a, b, n, &rel, &nmse);
    double err = cpu ? rel : nmse, tol = cpu ? 1e-4 : 1e-8;
    CHECK(err <= tol, "%s: %s %s %.3g > %.0e", what, name, cpu ? "relative error" : "nmse", err, tol);
    if (err > *worst) *worst = err;
    free(a), free(b);
}

/* The model of fx on backend `be` against the fixture. */
static void parity(loom_ctx *ctx, const char *be_name, const fixture *fx) {
    char path[1200], what[96];
    snprintf(path, sizeof path, "%s/%s", datadir, fx->file);
    snprintf(what, sizeof what, "%s on %s", fx->md.arch, be_name);
    loom_safetensors *f = NULL;
    CHECK_OK(ctx, loom_safetensors_open(ctx, path, &f));
    if (!f) return;
    const loom_st_tensor *xs = loom_safetensors_find(f, "x"), *ys = loom_safetensors_find(f, "y");
    CHECK(xs && ys && xs->ndim == 2 && ys->ndim == 1, "%s: x (N, T) and y in the fixture", path);
    loom_backend *be = NULL;
    loom_graph *g = NULL;
    loom_plan *plan = NULL;
    if (!xs || !ys || loom_backend_create(ctx, be_name, NULL, &be) != LOOM_OK) goto done;
    CHECK_OK(ctx, loom_graph_create(ctx, &(loom_graph_desc){.seed = 5}, &g));
    loom_tensor *x = loom_input(g, "x", LOOM_I32, 2, xs->dims), *y = loom_input(g, "y", LOOM_I32, 1, ys->dims);
    loom_tensor *logits = NULL;
    CHECK_OK(ctx, loom_model_build(g, &fx->md, x, true, &logits));
    loom_tensor *loss = loom_cross_entropy(g, logits, y, 0, -100);
    CHECK_OK(ctx, loom_backward(g, loss));
    if (!loss || loom_graph_status(g) != LOOM_OK) goto done;
    loom_keep(loss), loom_keep(logits);
    int np = 0;
    for (int i = 0; i < loom_safetensors_count(f); i++) {
        const loom_st_tensor *s = loom_safetensors_tensor(f, i);
        if (strncmp(s->name, "grad.", 5)) continue;
        loom_tensor *p = param_named(g, s->name + 5);
        CHECK(p && loom_grad(p), "%s: the model has no parameter %s (with a gradient)", what, s->name + 5);
        if (p && loom_grad(p)) loom_keep(loom_grad(p));
        np++;
    }
    loom_status st = loom_plan_compile(g, be, NULL, &plan);
    if (st != LOOM_OK) {
        printf("  %s: skipped: %s\n", what, loom_last_error(ctx));
        goto done;
    }
    loom_checkpoint_report rep;
    CHECK_OK(ctx, loom_checkpoint_load(plan, path, NULL, &rep, NULL));
    CHECK(rep.missing == 0 && rep.mismatched == 0 && rep.loaded == np,
          "%s: loaded %d of %d parameters by name (%d missing, e.g. %s; %d mismatched)", what, rep.loaded, np, rep.missing,
          rep.missing ? rep.missing_names[0] : "-", rep.mismatched);
    CHECK_OK(ctx, loom_plan_write(plan, x, xs->data, (size_t)loom_tensor_numel(x) * 4));
    CHECK_OK(ctx, loom_plan_write(plan, y, ys->data, (size_t)loom_tensor_numel(y) * 4));
    CHECK_OK(ctx, loom_plan_run(plan));
    bool cpu = !strcmp(be_name, "cpu");
    double worst = 0;
    check_tensor(ctx, plan, f, logits, "logits", what, cpu, &worst);
    check_tensor(ctx, plan, f, loss, "loss", what, cpu, &worst);
    for (int i = 0; i < loom_safetensors_count(f); i++) {
        const loom_st_tensor *s = loom_safetensors_tensor(f, i);
        if (strncmp(s->name, "grad.", 5)) continue;
        check_tensor(ctx, plan, f, param_named(g, s->name + 5) ? loom_grad(param_named(g, s->name + 5)) : NULL, s->name, what, cpu, &worst);
    }
    printf("  %s: logits, loss and %d gradients match torch (worst %s %.2e)\n", what, np, cpu ? "relative error" : "nmse",
           worst);
done:
    loom_plan_destroy(plan);
    loom_graph_destroy(g);
    loom_backend_destroy(be);
    loom_safetensors_close(f);
}

/* The standard deviation and mean of a parameter's initial values. */
static void stats(loom_ctx *ctx, loom_plan *plan, loom_tensor *t, double *mean, double *sd) {
    int64_t n = loom_tensor_numel(t);
    float *v = malloc((size_t)n * sizeof *v);
    *mean = *sd = NAN;
    if (!v) return;
    CHECK_OK(ctx, loom_plan_read(plan, t, v, (size_t)n * sizeof *v));
    double s = 0, ss = 0;
    for (int64_t i = 0; i < n; i++) s += v[i], ss += (double)v[i] * v[i];
    *mean = s / (double)n;
    *sd = sqrt(ss / (double)n - *mean * *mean);
    free(v);
}

/* GPT-2's initialisation and the parameters' names and shapes. */
static void init(loom_ctx *ctx) {
    loom_backend *be = NULL;
    loom_graph *g = NULL;
    loom_plan *plan = NULL;
    CHECK_OK(ctx, loom_backend_create(ctx, "cpu", NULL, &be));
    CHECK_OK(ctx, loom_graph_create(ctx, &(loom_graph_desc){.seed = 3}, &g));
    loom_model_desc md = {.arch = "gpt", .layers = 8, .heads = 4, .embd = 64, .seq_len = 32, .vocab = 256};
    loom_tensor *x = loom_input(g, "x", LOOM_I32, 2, (int64_t[]){2, 32}), *logits = NULL;
    CHECK_OK(ctx, loom_model_build(g, &md, x, false, &logits));
    if (!logits) goto done;
    CHECK(loom_tensor_dim(logits, 0) == 64 && loom_tensor_dim(logits, 1) == 256, "gpt logits (N T, vocab)");
    CHECK_OK(ctx, loom_plan_compile(g, be, NULL, &plan));
    if (!plan) goto done;
    static const struct {
        const char *name;
        int64_t rows, cols;
        double mean, sd;
    } want[] = {
        {"wte.weight", 256, 64, 0, 0.02},          {"wpe.weight", 32, 64, 0, 0.02},
        {"h.0.attn.c_attn.weight", 64, 192, 0, 0.02}, {"h.7.attn.c_proj.weight", 64, 64, 0, 0.005},
        {"h.3.mlp.c_fc.weight", 64, 256, 0, 0.02},  {"h.3.mlp.c_proj.weight", 256, 64, 0, 0.005},
        {"h.0.attn.c_attn.bias", 192, 0, 0, 0},     {"h.5.ln_2.weight", 64, 0, 1, 0},
        {"ln_f.bias", 64, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        loom_tensor *p = param_named(g, want[i].name);
        CHECK(p, "gpt has no parameter %s", want[i].name);
        if (!p) continue;
        bool shape = want[i].cols ? loom_tensor_ndim(p) == 2 && loom_tensor_dim(p, 0) == want[i].rows &&
                                        loom_tensor_dim(p, 1) == want[i].cols
                                  : loom_tensor_ndim(p) == 1 && loom_tensor_dim(p, 0) == want[i].rows;
        char s[64];
        CHECK(shape, "%s has shape %s", want[i].name, loom_tensor_shape_str(p, s, sizeof s));
        double mean, sd;
        stats(ctx, plan, p, &mean, &sd);
        CHECK(fabs(mean - want[i].mean) <= (want[i].sd ? 0.2 * want[i].sd : 0) &&
                  fabs(sd - want[i].sd) <= 0.1 * want[i].sd,
              "%s: mean %.4g, std %.4g (want %g, %g)", want[i].name, mean, sd, want[i].mean, want[i].sd);
    }
    CHECK(!param_named(g, "lm_head.weight") && !param_named(g, "head.weight"), "gpt's head is tied to wte");
done:
    loom_plan_destroy(plan);
    loom_graph_destroy(g);
    loom_backend_destroy(be);
}

/* The builder's errors name the model and the problem. */
static void errors(loom_ctx *ctx) {
    static const struct {
        loom_model_desc md;
        loom_dtype dt;
        int64_t t;
        const char *msg;
    } cases[] = {
        {{.arch = "gpt", .seq_len = 8}, LOOM_F32, 8, "input must be i32 token ids"},
        {{.arch = "gpt", .heads = 3, .embd = 32, .seq_len = 8}, LOOM_I32, 8, "heads must divide embd"},
        {{.arch = "gpt", .seq_len = 8}, LOOM_I32, 9, "longer than seq_len 8"},
        {{.arch = "transformer", .seq_len = 8, .num_classes = 1}, LOOM_I32, 8, "1 classes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        loom_graph *g = NULL;
        CHECK_OK(ctx, loom_graph_create(ctx, NULL, &g));
        loom_tensor *x = loom_input(g, "x", cases[i].dt, 2, (int64_t[]){2, cases[i].t}), *logits = (loom_tensor *)1;
        loom_status st = loom_model_build(g, &cases[i].md, x, true, &logits);
        CHECK(st != LOOM_OK && !logits && strstr(loom_last_error(ctx), cases[i].msg), "case %zu: %s (want '%s')", i,
              loom_last_error(ctx), cases[i].msg);
        loom_graph_destroy(g);
    }
}

int main(void) {
    snprintf(datadir, sizeof datadir, "%s", __FILE__);
    char *slash = strrchr(datadir, '/');
    snprintf(slash ? slash + 1 : datadir, sizeof datadir - (size_t)(slash ? slash + 1 - datadir : 0), "data/models");
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    const fixture fx[] = {
        {"gpt.safetensors", {.arch = "gpt", .layers = 2, .heads = 2, .embd = 32, .seq_len = 16, .vocab = 256}},
        {"transformer.safetensors",
         {.arch = "transformer", .layers = 2, .heads = 2, .embd = 32, .seq_len = 16, .vocab = 64, .num_classes = 5}},
    };
    static const char *const backends[] = {"cpu", "vulkan", "opencl", "cuda"};
    for (int b = 0; b < 4; b++) {
        const char *why = NULL;
        if (b && !loom_backend_available(ctx, backends[b], &why)) {
            printf("  %s: not available (%s)\n", backends[b], why ? why : "?");
            continue;
        }
        for (int i = 0; i < 2; i++) parity(ctx, backends[b], &fx[i]);
    }
    init(ctx);
    errors(ctx);
    loom_ctx_destroy(ctx);
    return tu_summary();
}
