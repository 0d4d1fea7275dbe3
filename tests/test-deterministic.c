/* tests/test-deterministic.c — loom_backend_desc.deterministic on the CPU
 * backend: the cnn (dropout on, batch 16) trained 3 SGD + momentum steps on
 * synthetic data with 1, 2 and 3 threads gives bitwise-equal losses and
 * bitwise-equal parameters, batch-norm statistics and momentum buffers (the
 * whole checkpoint file). The same runs with the flag off are reported, not
 * checked: there the conv2d weight gradient and the split GEMMs depend on
 * the thread count, so the bits usually differ. */
#include <stdlib.h>
#include <string.h>

#include "loom/checkpoint.h"
#include "loom/nn.h"
#include "loom/optim.h"
#include "testutil.h"

enum { BATCH = 16, STEPS = 3, PIX = 28 * 28 };

typedef struct run_out {
    float loss[STEPS];
    unsigned char *ckpt; /* the checkpoint file's bytes */
    size_t ckpt_bytes;
} run_out;

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = len > 0 ? malloc((size_t)len) : NULL;
    *n = b && fread(b, 1, (size_t)len, f) == (size_t)len ? (size_t)len : 0;
    fclose(f);
    return b;
}

/* synthetic batch `step`: pixels in [0, 1), labels in [0, 10), from a fixed LCG */
static void batch(int step, float *x, int32_t *y) {
    uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(step + 1);
    for (int i = 0; i < BATCH * PIX; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((s >> 40) & 0xFFFF) / 65536.0f;
    }
    for (int i = 0; i < BATCH; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        y[i] = (int32_t)((s >> 33) % 10);
    }
}

static bool train(int threads, bool det, run_out *out) {
    memset(out, 0, sizeof *out);
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return false;
    loom_backend *be = NULL;
    loom_graph *g = NULL;
    loom_optimizer *opt = NULL;
    loom_plan *plan = NULL;
    bool ok = false;
    loom_backend_desc bd = {.threads = threads, .deterministic = det};
    CHECK_OK(ctx, loom_backend_create(ctx, "cpu", &bd, &be));
    CHECK_OK(ctx, loom_graph_create(ctx, &(loom_graph_desc){.seed = 11}, &g));
    if (!be || !g) goto done;
    loom_tensor *x = loom_input(g, "x", LOOM_F32, 4, (int64_t[]){BATCH, 1, 28, 28});
    loom_tensor *y = loom_input(g, "y", LOOM_I32, 1, (int64_t[]){BATCH}), *logits = NULL;
    CHECK_OK(ctx, loom_model_build(g, &(loom_model_desc){.arch = "cnn", .num_classes = 10, .dropout = 0.5}, x, true,
                                   &logits));
    if (!logits) goto done;
    loom_tensor *loss = loom_cross_entropy(g, logits, y, 0, -100);
    loom_keep(loss);
    CHECK_OK(ctx, loom_backward(g, loss));
    CHECK_OK(ctx, loom_optimizer_create(g, &(loom_optimizer_desc){.momentum = 0.9}, &opt));
    CHECK_OK(ctx, loom_plan_compile(g, be, NULL, &plan));
    if (!opt || !plan) goto done;
    float *xb = malloc(sizeof(float) * BATCH * PIX);
    int32_t yb[BATCH];
    for (int s = 0; xb && s < STEPS; s++) {
        batch(s, xb, yb);
        CHECK_OK(ctx, loom_plan_write(plan, x, xb, sizeof(float) * BATCH * PIX));
        CHECK_OK(ctx, loom_plan_write(plan, y, yb, sizeof yb));
        CHECK_OK(ctx, loom_optimizer_begin_step(opt, plan, 0.02));
        CHECK_OK(ctx, loom_plan_run(plan));
        CHECK_OK(ctx, loom_plan_read_f32(plan, loss, &out->loss[s], 1));
    }
    free(xb);
    char path[64];
    snprintf(path, sizeof path, "deterministic-%d-%d.safetensors", threads, (int)det);
    CHECK_OK(ctx, loom_checkpoint_save(plan, path, NULL));
    out->ckpt = slurp(path, &out->ckpt_bytes);
    remove(path);
    ok = out->ckpt && out->ckpt_bytes > 0;
done:
    loom_plan_destroy(plan);
    loom_optimizer_destroy(opt);
    loom_graph_destroy(g);
    loom_backend_destroy(be);
    loom_ctx_destroy(ctx);
    return ok;
}

/* differing bytes between two checkpoints (SIZE_MAX: different lengths) */
static size_t diff_bytes(const run_out *a, const run_out *b) {
    if (a->ckpt_bytes != b->ckpt_bytes) return (size_t)-1;
    size_t n = 0;
    for (size_t i = 0; i < a->ckpt_bytes; i++) n += a->ckpt[i] != b->ckpt[i];
    return n;
}

int main(void) {
    static const int threads[] = {1, 2, 3};
    for (int det = 1; det >= 0; det--) {
        run_out r[3];
        for (int i = 0; i < 3; i++) {
            bool ok = train(threads[i], det, &r[i]);
            CHECK(ok, "training the cnn with %d threads (deterministic %d)", threads[i], det);
            if (!ok) return tu_summary();
        }
        printf("deterministic %s: losses", det ? "on " : "off");
        for (int i = 0; i < 3; i++)
            printf(" | %d thread%s: %.9g %.9g %.9g", threads[i], i ? "s" : "", r[i].loss[0], r[i].loss[1], r[i].loss[2]);
        printf("\n");
        for (int i = 1; i < 3; i++) {
            bool same_loss = !memcmp(r[0].loss, r[i].loss, sizeof r[0].loss);
            size_t nd = diff_bytes(&r[0], &r[i]);
            printf("  %d vs %d threads: losses %s, checkpoint (%zu bytes): %zu bytes differ\n", threads[0], threads[i],
                   same_loss ? "bitwise equal" : "differ", r[0].ckpt_bytes, nd);
            if (det) {
                CHECK(same_loss, "deterministic: the 3 losses with %d threads equal those with 1 thread bitwise",
                      threads[i]);
                CHECK(nd == 0,
                      "deterministic: parameters, batch-norm statistics and momentum after 3 steps with %d threads "
                      "equal those with 1 thread bitwise (%zu bytes differ)",
                      threads[i], nd);
            }
        }
        for (int i = 0; i < 3; i++) free(r[i].ckpt);
    }
    return tu_summary();
}
