/* tests/test-models-resnet.c — the ResNet builders (train/models_resnet.c)
 * against PyTorch.
 *
 * Parity: for each fixture of tests/data/models (tests/gen_resnet_fixtures.py:
 * ResNet-18 with the small stem at base width 4, ResNet-20 at width 8, 16x16
 * images, batch 4, 10 classes), build the model as its metadata says, load
 * the weights by name (strict: every tensor of the file is a tensor of the
 * graph and back), run one training-mode forward + backward with
 * cross-entropy and compare the logits, the loss, every parameter's gradient
 * and the updated batch-norm running statistics with torch's (computed in
 * float64). Relative error per tensor = max |loom - torch| / max |torch|: at
 * most 1e-4 on the CPU backend; on the other backends (Vulkan on lavapipe,
 * OpenCL on PoCL, CUDA) the op-check's f32 measure and tolerance, NMSE =
 * sum (loom - torch)^2 / sum torch^2 <= 1e-9. An absent backend is skipped
 * with a message.
 *
 * Names: loom's full-size resnet18 and resnet50 have exactly torchvision's
 * tensor names and shapes (data/models/resnet_names.txt, from torchvision),
 * and their init has torchvision's distribution. Errors: a fixture with a wrong
 * name or shape, and bad depths and names, fail with messages naming them.
 */
#include <math.h>
#include <string.h>

#include "impl.h"
#include "testutil.h"

static char datadir[1024];

static const char *const FIXTURES[] = {"resnet18s_w4", "resnet20_w8"};

/* max |a - b| / max |b| (|a - b| when b is all zeros) and NMSE. */
static void errors(const float *a, const float *b, int64_t n, double *rel, double *nmse) {
    double dmax = 0, bmax = 0, d2 = 0, b2 = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= dmax)) dmax = d; /* a NaN sticks */
        if (fabs(b[i]) > bmax) bmax = fabs(b[i]);
        d2 += d * d, b2 += (double)b[i] * b[i];
    }
    *rel = bmax > 0 ? dmax / bmax : dmax;
    *nmse = b2 > 0 ? d2 / b2 : d2;
}

/* A model desc from the fixture's metadata; false if a key is missing. */
static bool fixture_desc(const loom_safetensors *io, loom_model_desc *md) {
    const char *k[5] = {"arch", "depth", "width", "small_stem", "num_classes"}, *v[5];
    for (int i = 0; i < 5; i++)
        if (!(v[i] = loom_safetensors_meta(io, k[i]))) return false;
    *md = (loom_model_desc){.arch = v[0], .depth = atoi(v[1]), .width = atoi(v[2]), .small_stem = atoi(v[3]) != 0,
                            .num_classes = atoi(v[4])};
    return true;
}

/* Compare the plan's value of t with the fixture's tensor `name`. */
static void compare(loom_plan *plan, const loom_tensor *t, const loom_safetensors *io, const char *name, const char *be,
                    bool cpu, double *worst) {
    const loom_st_tensor *ref = loom_safetensors_find(io, name);
    CHECK(ref != NULL, "[%s] the fixture has no '%s'", be, name);
    if (!ref || !t) return;
    int64_t n = loom_tensor_numel(t);
    CHECK((size_t)n * sizeof(float) == loom_st_tensor_nbytes(ref), "[%s] '%s': %lld elements, fixture %zu bytes", be, name,
          (long long)n, loom_st_tensor_nbytes(ref));
    if ((size_t)n * sizeof(float) != loom_st_tensor_nbytes(ref)) return;
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    memcpy(b, ref->data, (size_t)n * sizeof *b);
    loom_status st = loom_plan_read_f32(plan, t, a, (size_t)n);
    CHECK(st == LOOM_OK, "[%s] reading '%s'", be, name);
    double rel, nmse;
    errors(a, b, n, &rel, &nmse);
    if (cpu)
        CHECK(rel <= 1e-4, "[%s] '%s': max |loom - torch| / max |torch| = %.3g > 1e-4", be, name, rel);
    else
        CHECK(nmse <= 1e-9, "[%s] '%s': NMSE %.3g > 1e-9 (max rel %.3g)", be, name, nmse, rel);
    double e = cpu ? rel : nmse;
    if (!(e <= *worst)) *worst = e;
    free(a), free(b);
}

/* The fixture's model on the graph: its input, target, logits and loss. */
static loom_tensor *build(loom_graph *g, const loom_safetensors *io, const loom_model_desc *md, loom_tensor **x,
                          loom_tensor **y, loom_tensor **logits) {
    const loom_st_tensor *in = loom_safetensors_find(io, "input"), *tg = loom_safetensors_find(io, "target");
    if (!in || !tg || in->ndim != 4 || tg->ndim != 1) return NULL;
    *x = loom_input(g, "input", LOOM_F32, 4, in->dims);
    *y = loom_input(g, "target", LOOM_I32, 1, tg->dims);
    if (loom_model_build(g, md, *x, true, logits) != LOOM_OK) return NULL;
    loom_tensor *loss = loom_cross_entropy(g, *logits, *y, 0, -100);
    loom_keep(*logits);
    loom_keep(loss);
    if (loom_backward(g, loss) != LOOM_OK) return NULL;
    for (int i = 0; i < g->n; i++)
        if (g->nodes[i]->leaf == LOOM__PARAM) loom_keep(loom_grad(g->nodes[i]));
    return loss;
}

/* One fixture on one backend. */
static void parity(loom_ctx *ctx, loom_backend *be, const char *bname, const char *fx) {
    char wpath[1200], iopath[1200];
    snprintf(wpath, sizeof wpath, "%s/%s.safetensors", datadir, fx);
    snprintf(iopath, sizeof iopath, "%s/%s_io.safetensors", datadir, fx);
    loom_safetensors *io = NULL;
    loom_model_desc md;
    CHECK_OK(ctx, loom_safetensors_open(ctx, iopath, &io));
    if (!io) return;
    CHECK(fixture_desc(io, &md), "%s: metadata lacks a model desc key", iopath);
    loom_graph *g = NULL;
    loom_plan *plan = NULL;
    loom_tensor *x = NULL, *y = NULL, *logits = NULL, *loss = NULL;
    CHECK_OK(ctx, loom_graph_create(ctx, &(loom_graph_desc){.seed = 1}, &g));
    loss = build(g, io, &md, &x, &y, &logits);
    CHECK(loss != NULL, "[%s] %s: building: %s", bname, fx, loom_last_error(ctx));
    if (loss) CHECK_OK(ctx, loom_plan_compile(g, be, NULL, &plan));
    if (!plan) goto done;
    loom_checkpoint_report rep;
    CHECK_OK(ctx, loom_checkpoint_load(plan, wpath, &(loom_checkpoint_load_desc){.strict = true}, &rep, NULL));
    const loom_st_tensor *in = loom_safetensors_find(io, "input"), *tg = loom_safetensors_find(io, "target");
    CHECK_OK(ctx, loom_plan_write(plan, x, in->data, loom_st_tensor_nbytes(in)));
    CHECK_OK(ctx, loom_plan_write(plan, y, tg->data, loom_st_tensor_nbytes(tg)));
    CHECK_OK(ctx, loom_plan_run(plan));
    bool cpu = !strcmp(bname, "cpu");
    double worst = 0;
    compare(plan, logits, io, "logits", bname, cpu, &worst);
    compare(plan, loss, io, "loss", bname, cpu, &worst);
    int grads = 0, stats = 0, want_grads = 0, want_stats = 0;
    for (int i = 0; i < loom_safetensors_count(io); i++) {
        const char *n = loom_safetensors_tensor(io, i)->name;
        want_grads += !strncmp(n, "grad.", 5), want_stats += !strncmp(n, "updated.", 8);
    }
    for (int i = 0; i < g->n; i++) {
        loom_tensor *t = g->nodes[i];
        char name[96];
        if (t->leaf == LOOM__PARAM) {
            snprintf(name, sizeof name, "grad.%s", t->name);
            compare(plan, loom_grad(t), io, name, bname, cpu, &worst);
            grads++;
        } else if (t->leaf == LOOM__STATE) {
            snprintf(name, sizeof name, "updated.%s", t->name);
            compare(plan, t, io, name, bname, cpu, &worst);
            stats++;
        }
    }
    CHECK(grads == want_grads && stats == want_stats, "[%s] %s: %d gradients and %d statistics, fixture %d and %d", bname,
          fx, grads, stats, want_grads, want_stats);
    printf("[%s] %s: %d weights loaded; logits, loss, %d gradients, %d running statistics: worst %s %.2e\n", bname, fx,
           rep.loaded, grads, stats, cpu ? "max rel" : "NMSE", worst);
done:
    loom_plan_destroy(plan);
    loom_graph_destroy(g);
    loom_safetensors_close(io);
}

/* A copy of the fixture's weights with tensor `victim` renamed (new_name)
 * or, new_name NULL, with its first dimension halved; loading it strictly
 * must fail naming the tensor. */
static void bad_fixture(loom_ctx *ctx, loom_backend *be, const char *victim, const char *new_name) {
    char wpath[1200], dir[512], tmp[600];
    snprintf(wpath, sizeof wpath, "%s/resnet20_w8.safetensors", datadir);
    if (!tu_tmpdir("resnet", dir, sizeof dir)) return;
    snprintf(tmp, sizeof tmp, "%s/bad.safetensors", dir);
    loom_safetensors *w = NULL;
    CHECK_OK(ctx, loom_safetensors_open(ctx, wpath, &w));
    if (!w) return;
    int n = loom_safetensors_count(w);
    loom_st_tensor *ts = calloc((size_t)n, sizeof *ts);
    for (int i = 0; i < n; i++) {
        ts[i] = *loom_safetensors_tensor(w, i);
        if (strcmp(ts[i].name, victim)) continue;
        if (new_name) ts[i].name = new_name;
        else ts[i].dims[0] /= 2;
    }
    CHECK_OK(ctx, loom_safetensors_write(ctx, tmp, ts, n, NULL));
    loom_graph *g = NULL;
    loom_plan *plan = NULL;
    loom_tensor *x, *logits = NULL;
    CHECK_OK(ctx, loom_graph_create(ctx, NULL, &g));
    x = loom_input(g, "input", LOOM_F32, 4, (int64_t[]){2, 3, 16, 16});
    CHECK_OK(ctx, loom_model_build(g, &(loom_model_desc){.arch = "resnet20", .width = 8, .num_classes = 10}, x, true, &logits));
    CHECK_OK(ctx, loom_plan_compile(g, be, NULL, &plan));
    if (plan) {
        loom_status st = loom_checkpoint_load(plan, tmp, &(loom_checkpoint_load_desc){.strict = true}, NULL, NULL);
        const char *msg = loom_last_error(ctx);
        CHECK(st == (new_name ? LOOM_ERR_FORMAT : LOOM_ERR_SHAPE) && strstr(msg, victim),
              "a fixture with '%s' %s: %s, '%s' (want %s naming it)", victim, new_name ? "renamed" : "of another shape",
              loom_status_str(st), msg, new_name ? "LOOM_ERR_FORMAT" : "LOOM_ERR_SHAPE");
        printf("%s '%s': %s\n", new_name ? "renamed" : "reshaped", victim, msg);
    }
    loom_plan_destroy(plan);
    loom_graph_destroy(g);
    free(ts);
    loom_safetensors_close(w);
    tu_rm_rf(dir);
}

/* A model desc loom_model_build must refuse, with `want` in its message. */
static void bad_desc(loom_ctx *ctx, loom_model_desc md, const char *want) {
    loom_graph *g = NULL;
    CHECK_OK(ctx, loom_graph_create(ctx, NULL, &g));
    loom_tensor *x = loom_input(g, "x", LOOM_F32, 4, (int64_t[]){2, 3, 32, 32}), *logits = NULL;
    md.num_classes = 10;
    loom_status st = loom_model_build(g, &md, x, true, &logits);
    const char *msg = loom_last_error(ctx);
    CHECK(st == LOOM_ERR_INVALID_ARG && logits == NULL && strstr(msg, want), "'%s' depth %d width %d: %s '%s' (want '%s')",
          md.arch, md.depth, md.width, loom_status_str(st), msg, want);
    loom_graph_destroy(g);
}

/* Full-size resnet18 and resnet50: names and shapes as torchvision's, in
 * any order; the conv init has torchvision's N(0, sqrt(2 / fan_out)). */
static void names(loom_ctx *ctx) {
    char path[1200], line[256];
    snprintf(path, sizeof path, "%s/resnet_names.txt", datadir);
    static const char *const archs[2] = {"resnet18", "resnet50"};
    for (int a = 0; a < 2; a++) {
        FILE *f = fopen(path, "r");
        CHECK(f != NULL, "open %s", path);
        if (!f) return;
        loom_graph *g = NULL;
        CHECK_OK(ctx, loom_graph_create(ctx, NULL, &g));
        loom_tensor *x = loom_input(g, "x", LOOM_F32, 4, (int64_t[]){1, 3, 224, 224}), *logits = NULL;
        CHECK_OK(ctx, loom_model_build(g, &(loom_model_desc){.arch = archs[a], .num_classes = 10}, x, true, &logits));
        int listed = 0, found = 0, leaves = 0;
        while (fgets(line, sizeof line, f)) {
            char arch[32], name[128], shape[64], mine[64];
            if (line[0] == '#' || sscanf(line, "%31s %127s %63s", arch, name, shape) != 3 || strcmp(arch, archs[a])) continue;
            listed++;
            for (int i = 0; i < g->n; i++) {
                loom_tensor *t = g->nodes[i];
                if ((t->leaf != LOOM__PARAM && t->leaf != LOOM__STATE) || strcmp(t->name, name)) continue;
                loom_tensor_shape_str(t, mine, sizeof mine);
                char *o = mine, *p = mine; /* "[64, 3, 7, 7]" -> "64,3,7,7" */
                for (; *p; p++)
                    if (*p != '[' && *p != ']' && *p != ' ') *o++ = *p;
                *o = 0;
                CHECK(!strcmp(mine, shape), "%s '%s': loom %s, torchvision %s", archs[a], name, mine, shape);
                found++;
            }
        }
        fclose(f);
        for (int i = 0; i < g->n; i++) leaves += g->nodes[i]->leaf == LOOM__PARAM || g->nodes[i]->leaf == LOOM__STATE;
        CHECK(listed > 60 && found == listed && leaves == listed, "%s: torchvision %d tensors, loom %d (%d of them matched)",
              archs[a], listed, leaves, found);
        for (int i = 0; i < g->n; i++) {
            loom_tensor *t = g->nodes[i];
            if (strcmp(t->name, "layer1.0.conv1.weight")) continue;
            int64_t n = loom_tensor_numel(t);
            double *v = malloc((size_t)n * sizeof *v), s2 = 0, want = sqrt(2.0 / (double)(t->dims[0] * t->dims[2] * t->dims[3]));
            CHECK_OK(ctx, loom__init_values(t, 1, v));
            for (int64_t k = 0; k < n; k++) s2 += v[k] * v[k];
            double sd = sqrt(s2 / (double)n);
            CHECK(fabs(sd / want - 1) < 0.03, "%s layer1.0.conv1.weight: std %.4f, torchvision's %.4f", archs[a], sd, want);
            free(v);
        }
        printf("%s: %d tensors, names and shapes as torchvision's\n", archs[a], found);
        loom_graph_destroy(g);
    }
}

int main(void) {
    snprintf(datadir, sizeof datadir, "%s", __FILE__);
    char *slash = strrchr(datadir, '/');
    snprintf(slash ? slash + 1 : datadir, sizeof datadir - (size_t)(slash ? slash + 1 - datadir : 0), "data/models");
    loom_ctx *ctx;
    loom_backend *cpu;
    if (!tu_cpu_open(0, &ctx, &cpu)) return 1;
    names(ctx);
    bad_desc(ctx, (loom_model_desc){.arch = "resnet20", .depth = 21}, "6n+2");
    bad_desc(ctx, (loom_model_desc){.arch = "resnet18", .depth = 20}, "18, 34, 50, 101, 152");
    bad_desc(ctx, (loom_model_desc){.arch = "resnet19"}, "unknown architecture 'resnet19'");
    bad_desc(ctx, (loom_model_desc){.arch = "resnet56", .width = -1}, "width -1");
    bad_fixture(ctx, cpu, "layer2.0.downsample.0.weight", "layer2.0.shortcut.0.weight");
    bad_fixture(ctx, cpu, "layer3.1.bn2.running_var", NULL);
    tu_cpu_close(ctx, cpu);

    const char *bes[8];
    int nb = loom_backend_list(bes, 8);
    for (int b = 0; b < nb; b++) {
        loom_ctx *c2 = NULL;
        loom_backend *be = NULL;
        const char *why = NULL;
        loom_ctx_create(NULL, &c2);
        if (!loom_backend_available(c2, bes[b], &why)) {
            printf("skip %s: %s\n", bes[b], why ? why : "not available");
        } else if (loom_backend_create(c2, bes[b], NULL, &be) == LOOM_OK) {
            for (size_t f = 0; f < sizeof FIXTURES / sizeof *FIXTURES; f++) parity(c2, be, bes[b], FIXTURES[f]);
            loom_backend_destroy(be);
        } else {
            CHECK(0, "creating backend %s: %s", bes[b], loom_last_error(c2));
        }
        loom_ctx_destroy(c2);
    }
    return tu_summary();
}
