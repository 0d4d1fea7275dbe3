/* tests/test-dist.c — data-parallel training (loom/dist.h, loom_train_run.dist).
 *
 * Run alone (one process): the group's single-process behaviour (rank 0 of
 * 1, collectives are copies) and the error for --launcher mpi in a build
 * without MPI. Run under `mpirun -np N test-dist [-b BACKEND] [-r]` (ctest
 * dist-*): the mlp trained on a synthetic data set with N ranks of batch B
 *  - has bitwise identical weights on every rank after every step;
 *  - equals (rank 0 trains the reference) one process with batch N*B, within
 *    1e-5 relative per tensor (SGD with momentum; Nesterov with clipping and
 *    4 KiB gradient buckets, i.e. the backward pass cut in several segments;
 *    AdamW with gradient accumulation 2 and 8 KiB buckets);
 * With -r the same in reproducible mode (each rank's batch is a shard, the
 * shards' gradients summed in shard order on every rank), and, bitwise, equal
 * to one process with batch N*B cut into N shards (loom_train_run.repro_shards
 * = N) after every step; tests/dist-repro-sizes.sh checks 1, 2 and 4
 * processes through the CLI.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend_impl.h"
#include "loom/train.h"
#include "testutil.h"

enum { N_SAMPLES = 1536, SIDE = 8, CLASSES = 10, STEPS = 12 };

/* A fixed synthetic data set: labels from a rule on the pixels, so the loss
 * falls. */
static void make_data(loom_dataset *ds) {
    ds->n = N_SAMPLES, ds->c = 1, ds->h = SIDE, ds->w = SIDE, ds->num_classes = CLASSES;
    ds->pixels = malloc((size_t)N_SAMPLES * SIDE * SIDE);
    ds->labels = malloc((size_t)N_SAMPLES * sizeof *ds->labels);
    uint32_t s = 12345;
    for (int i = 0; i < N_SAMPLES; i++) {
        int sum = 0;
        for (int k = 0; k < SIDE * SIDE; k++) {
            s = s * 1664525u + 1013904223u;
            ds->pixels[(size_t)i * SIDE * SIDE + k] = (uint8_t)(s >> 24);
            sum += k < 8 ? (s >> 24) : 0;
        }
        ds->labels[i] = (sum / 97) % CLASSES;
    }
}

/* Every parameter of the trainer's graph, as f32, concatenated (graph order);
 * the tensors' element counts in sizes (at most MAX_PARAMS, 0-terminated). */
enum { MAX_PARAMS = 64 };
static size_t sizes[MAX_PARAMS + 1];
static size_t read_params(loom_trainer *tr, float **out) {
    loom_plan *p = loom_trainer_plan(tr);
    size_t total = 0;
    for (int i = 0; i < p->g->n; i++)
        if (p->g->nodes[i]->leaf == LOOM__PARAM) total += (size_t)loom_tensor_numel(p->g->nodes[i]);
    float *v = realloc(*out, total * sizeof *v);
    *out = v;
    size_t off = 0;
    int np = 0;
    for (int i = 0; i < p->g->n; i++) {
        loom_tensor *t = p->g->nodes[i];
        if (t->leaf != LOOM__PARAM) continue;
        if (np < MAX_PARAMS) sizes[np++] = (size_t)loom_tensor_numel(t);
        sizes[np] = 0;
        loom_plan_read_f32(p, t, v + off, (size_t)loom_tensor_numel(t));
        off += (size_t)loom_tensor_numel(t);
    }
    return total;
}

static uint64_t fnv(const void *data, size_t bytes) {
    const unsigned char *b = data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < bytes; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

typedef struct run_cfg {
    const char *name;
    loom_optimizer_desc opt;
    double lr;
    size_t bucket_bytes; /* 0 = the default (the mlp's gradients fit one bucket) */
} run_cfg;

static loom_trainer_desc desc_for(const run_cfg *cfg, const char *backend, bool repro, loom_dataset *ds, int batch,
                                  loom_dist *dist) {
    loom_trainer_desc d = {.data = {.mean = 0.5f, .std = 0.25f, .batch = batch, .workers = LOOM_WORKERS_SYNC},
                           .model.net = {.arch = "mlp", .dropout = -1},
                           .optim = {.opt = cfg->opt, .sched = {.lr = cfg->lr}},
                           .run = {.backend = backend, .epochs = 1, .max_steps = STEPS, .seed = 7, .dist = dist}};
    d.run.backend_desc.reproducible = repro;
    d.run.backend_desc.threads = 1;
    d.run.dist_bucket_bytes = cfg->bucket_bytes;
    d.data.train = ds;
    return d;
}

/* N ranks of batch B against one process of batch N*B, step by step. */
static void equivalence(loom_ctx *ctx, loom_dist *dist, const run_cfg *cfg, const char *backend, bool repro,
                        loom_dataset *ds) {
    const int world = loom_dist_world(dist), rank = loom_dist_rank(dist), B = 16;
    loom_trainer_desc dd = desc_for(cfg, backend, repro, ds, B, dist);
    loom_trainer *tr = NULL, *ref = NULL, *sharded = NULL;
    CHECK_OK(ctx, loom_trainer_create(ctx, &dd, &tr));
    if (rank == 0) {
        loom_trainer_desc rd = desc_for(cfg, backend, repro, ds, world * B, NULL);
        CHECK_OK(ctx, loom_trainer_create(ctx, &rd, &ref));
        rd.run.repro_shards = world; /* reproducible: one process, the same shards */
        if (repro) CHECK_OK(ctx, loom_trainer_create(ctx, &rd, &sharded));
    }
    if (!tr || (rank == 0 && (!ref || (repro && !sharded)))) {
        loom_trainer_destroy(tr), loom_trainer_destroy(ref), loom_trainer_destroy(sharded);
        return;
    }
    float *w = NULL, *wr = NULL;
    uint64_t *hashes = calloc((size_t)world, sizeof *hashes);
    double worst = 0, worst_abs = 0;
    int steps = 0, diverged_ranks = 0, unequal_sharded = 0;
    for (int s = 0; s < STEPS; s++) {
        loom_step_result r;
        loom_status st = loom_trainer_step(tr, &r);
        CHECK(st == LOOM_OK, "%s: step %d: %s", cfg->name, s + 1, loom_last_error(ctx));
        if (st != LOOM_OK) break;
        size_t n = read_params(tr, &w);
        uint64_t h = fnv(w, n * sizeof *w);
        CHECK_OK(ctx, loom_dist_allgather(dist, &h, sizeof h, hashes));
        for (int k = 0; k < world; k++) diverged_ranks += hashes[k] != hashes[0];
        if (rank == 0) {
            if (sharded) {
                CHECK_OK(ctx, loom_trainer_step(sharded, NULL));
                size_t m = read_params(sharded, &wr);
                unequal_sharded += m != n || memcmp(w, wr, n * sizeof *w) != 0;
            }
            CHECK_OK(ctx, loom_trainer_step(ref, NULL));
            size_t m = read_params(ref, &wr);
            CHECK(m == n, "%s: the reference has %zu weights, %zu here", cfg->name, m, n);
            /* per tensor: |w - w_ref|_2 / |w_ref|_2; and the largest element difference for the log */
            size_t off = 0;
            for (int k = 0; sizes[k] && m == n; k++) {
                double num = 0, den = 0;
                for (size_t j = off; j < off + sizes[k]; j++) {
                    double e = (double)w[j] - (double)wr[j];
                    num += e * e, den += (double)wr[j] * (double)wr[j];
                    if (fabs(e) > worst_abs) worst_abs = fabs(e);
                }
                double rel = sqrt(num) / (den > 0 ? sqrt(den) : 1);
                if (rel > worst) worst = rel;
                off += sizes[k];
            }
        }
        steps++;
    }
    CHECK(steps == STEPS, "%s: %d steps run", cfg->name, steps);
    CHECK(diverged_ranks == 0, "%s: weights bitwise identical on all %d ranks after every step (%d differ)", cfg->name,
          world, diverged_ranks);
    if (rank == 0) {
        printf("%s%s: %d ranks x batch %d vs 1 x batch %d, %d steps: weights' relative difference (L2 per tensor) "
               "at most %.3g, largest element difference %.3g\n",
               cfg->name, repro ? " (reproducible)" : "", world, B, world * B, steps, worst, worst_abs);
        CHECK(worst <= 1e-5, "%s: weights within 1e-5 relative of one process with batch %d (%.3g)", cfg->name,
              world * B, worst);
        if (repro)
            CHECK(unequal_sharded == 0, "%s: weights bitwise equal to one process with batch %d in %d shards after "
                  "every step (%d steps differ)", cfg->name, world * B, world, unequal_sharded);
    }
    free(w), free(wr), free(hashes);
    loom_trainer_destroy(tr);
    loom_trainer_destroy(ref);
    loom_trainer_destroy(sharded);
}

static void single_process(loom_ctx *ctx, loom_dist *dist) {
    CHECK(loom_dist_rank(dist) == 0 && loom_dist_world(dist) == 1 && loom_dist_local_rank(dist) == 0,
          "one process: rank 0 of 1");
    CHECK(loom_dist_rank(NULL) == 0 && loom_dist_world(NULL) == 1, "no group: rank 0 of 1");
    float v[3] = {1, 2, 3};
    CHECK_OK(ctx, loom_dist_allreduce_sum(dist, v, 3, LOOM_F32));
    CHECK(v[0] == 1 && v[1] == 2 && v[2] == 3, "one process: all-reduce leaves the values");
    CHECK(loom_dist_allreduce_sum(dist, v, 3, LOOM_U8) == LOOM_ERR_INVALID_ARG, "all-reduce of u8 is an error");
    CHECK(loom_dist_broadcast(dist, v, sizeof v, 1) == LOOM_ERR_INVALID_ARG, "broadcast from rank 1 of 1 is an error");
    float g[3];
    CHECK_OK(ctx, loom_dist_allgather(dist, v, sizeof v, g));
    CHECK(!memcmp(g, v, sizeof v), "one process: all-gather copies");
    CHECK_OK(ctx, loom_dist_barrier(dist));
    loom_dist_request *q = NULL;
    bool done = false;
    CHECK_OK(ctx, loom_dist_iallreduce_sum(dist, v, 3, LOOM_F32, &q));
    CHECK_OK(ctx, loom_dist_test(dist, q, &done));
    CHECK(done && v[0] == 1, "one process: a started all-reduce is complete at once");
    CHECK_OK(ctx, loom_dist_wait(dist, q));
    if (!loom_dist_mpi_built()) {
        loom_dist *m = NULL;
        loom_status st = loom_dist_create(ctx, &(loom_dist_desc){.launcher = LOOM_DIST_MPI}, &m);
        CHECK(st == LOOM_ERR_UNSUPPORTED && strstr(loom_last_error(ctx), "without MPI"),
              "launcher mpi without MPI: a clear error (%s)", loom_last_error(ctx));
        loom_dist_destroy(m);
    }
}

int main(int argc, char **argv) {
    const char *backend = "cpu";
    bool repro = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-b") && i + 1 < argc) backend = argv[++i];
        else if (!strcmp(argv[i], "-r")) repro = true;
    }
    loom_ctx *ctx;
    /* TEST_DIST_DEBUG=1: the library's debug log (the buckets and segments of each trainer) */
    loom_ctx_desc cd = {.log_level = getenv("TEST_DIST_DEBUG") ? LOOM_LOG_DEBUG : 0};
    if (loom_ctx_create(&cd, &ctx) != LOOM_OK) return 1;
    loom_dist *dist = NULL;
    CHECK_OK(ctx, loom_dist_create(ctx, NULL, &dist));
    if (!dist) return tu_summary();
    int rank = loom_dist_rank(dist);
    if (!loom_backend_available(ctx, backend, NULL)) {
        loom_dist_destroy(dist);
        loom_ctx_destroy(ctx);
        return rank == 0 ? tu_skip("backend not available here") : 77;
    }
    loom_dataset ds;
    make_data(&ds);
    if (loom_dist_world(dist) == 1) {
        single_process(ctx, dist);
    } else {
        run_cfg sgd = {"sgd-momentum", {.momentum = 0.9}, 0.05, 0};
        run_cfg adamw = {"adamw-accum2-buckets8k", {.kind = LOOM_OPT_ADAMW, .weight_decay = 0.01, .grad_accum = 2}, 2e-4, 8192};
        run_cfg small = {"sgd-clip-buckets4k", {.momentum = 0.9, .nesterov = true, .clip_grad_norm = 0.5}, 0.05, 4096};
        if (repro) small.opt.clip_grad_norm = 0; /* no canonical kernel for the clip coefficient */
        equivalence(ctx, dist, &sgd, backend, repro, &ds);
        equivalence(ctx, dist, &small, backend, repro, &ds);
        equivalence(ctx, dist, &adamw, backend, repro, &ds);
    }
    free(ds.pixels), free(ds.labels);
    /* every rank's verdict: rank 0 reports the failures of all */
    int failed = tu_failed;
    loom_dist_allreduce_sum(dist, &failed, 1, LOOM_I32);
    if (rank != 0 && failed) tu_failed = failed;
    int rc = rank == 0 ? tu_summary() : (failed ? 1 : 0);
    loom_dist_destroy(dist);
    loom_ctx_destroy(ctx);
    return rc;
}
