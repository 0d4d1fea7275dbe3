/* loader/pool.c — the threaded prefetching loader: a pool of worker threads
 * producing whole batches into a bounded ring of batch slots (the backend's
 * pinned host memory), delivered in order, with the worker count tuned
 * while running.
 *
 * Protocol (everything below under `mu`):
 * - a slot is FREE, FILLING (a worker loads batch `batch` of generation
 *   `gen` into it), READY, or HELD (the caller reads it until its next call);
 * - a worker claims batch next_claim (claims go in order) when a FREE slot
 *   exists, copying the batch's sample indices so that begin() may change
 *   the order at any time; begin() bumps the generation, and a worker that
 *   finishes a batch of an old generation frees its slot instead of
 *   publishing it (it also checks between samples and gives up early);
 * - the caller waits for the READY slot holding batch next_deliver: the
 *   lowest claimed batch, so it is always READY or being filled, and the
 *   ring never deadlocks;
 * - a worker with id >= active is parked (auto-tuning removed it); threads
 *   live until destroy, which sets `stop`, wakes everyone and joins;
 * - the next epoch ahead: once every batch of an epoch that runs to its end
 *   is claimed, free slots take batches of epoch + 1 (its order from a
 *   second sampler, generation gen + 1). begin(epoch + 1) from its start
 *   adopts them (gen + 1: they stay valid), so the epoch's first batches
 *   are ready at once instead of after a whole batch's load; any other
 *   begin (gen + 2) drops them and stops this for the loader (an
 *   evaluation loader begun at epoch 0 every time wastes one ring once).
 *   Workers give up a batch whose generation is behind the loader's.
 * Per-sample work is a pure function of (seed, epoch, sample index), so the
 * bytes of a batch do not depend on which thread loaded it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "autotune.h"
#include "device_aug.h"
#include "loader_impl.h"

enum { SLOT_FREE, SLOT_FILLING, SLOT_READY, SLOT_HELD };

typedef struct slot {
    void *mem;          /* one host allocation: x then y */
    float *x;
    int32_t *y;
    uint8_t *u8;        /* device augmentation: the images, then the table prm */
    int32_t *prm;
    int state;
    uint64_t gen;
    int64_t batch;
    int count;
    double load_s;
    loom_status st;
    char err[512];
} slot;

typedef struct worker {
    loom_loader *ld;
    int id;
    pthread_t th;
    bool running;       /* the thread was started */
    loom_ctx *ctx;      /* errors of this worker */
    int64_t *idx;       /* the claimed batch's samples */
    uint8_t *buf[2];    /* the decoded sample, then the pipeline's ping-pong buffers */
    size_t cap;         /* bytes of each buf (variable-size sources grow them) */
    uint8_t *dev_u8;    /* device augmentation: where the current sample goes */
    int32_t *dev_prm;
} worker;

struct loom_loader {
    loom_ctx *ctx;
    loom_loader_desc d;
    loom_sampler *sampler;
    int oc;
    int64_t oh, ow;
    size_t rec;         /* floats per output sample */
    size_t sample_bytes, tf_bytes;
    bool var_size;      /* the source's images differ in size (get_image) */
    bool region;        /* ask the source to decode only what the pipeline reads */
    loom_decode_hint hint; /* for get_image: the first step's Resize size, if any */
    float lut[4][256];  /* U8 -> normalised f32, per channel */
    loom__norm norm[4]; /* the same by arithmetic (the SIMD tails) */
    loom__dev_split dev; /* device augmentation (d.device_augment): the split and the uploaded size */
    int ncores, max_workers, prefetch;
    bool sync;

    pthread_mutex_t mu;
    pthread_cond_t work_cv, ready_cv;
    bool stop;
    _Atomic uint64_t gen_atomic; /* = gen, read by workers between samples */
    uint64_t gen;
    int64_t epoch, nbatches, end, next_claim, next_deliver;
    loom_sampler *ahead;   /* epoch + 1's order (claims ahead: generation gen + 1) */
    bool ahead_on;         /* until a begin other than epoch + 1 from its start; never when sync */
    int64_t ahead_claim;   /* batches of epoch + 1 claimed so far */
    slot *slots;
    int nslots, cap_slots;
    worker *w;
    int active, spawned;
    int held;           /* the slot the caller holds, -1 = none */

    /* the caller's side (no lock needed) */
    loom_loader_stats stats;
    double t_begin, t_return, cpu_return; /* cpu_return: the process's CPU time then */
    loom__autotune tune; /* the auto-tuner's window (loader/autotune.c) */
};

/* ---- memory --------------------------------------------------------------- */

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static loom_status slot_alloc(loom_loader *ld, slot *s) {
    size_t xb = align64((size_t)ld->d.batch * ld->rec * sizeof(float)), yb = (size_t)ld->d.batch * sizeof(int32_t);
    size_t ub = align64((size_t)ld->d.batch * (size_t)(ld->dev.h * ld->dev.w * ld->oc));
    if (ld->d.device_augment) xb = ub + align64((size_t)ld->d.batch * LOOM_G_AUG_COUNT * sizeof(int32_t));
    loom_backend *be = ld->d.backend;
    memset(s, 0, sizeof *s);
    loom_status st = loom_backend_host_alloc(be, xb + yb, &s->mem);
    if (st != LOOM_OK) /* a backend's failure is on its context */
        return be ? st : loom__err(ld->ctx, st, "loader: out of memory for a batch slot (%zu bytes)", xb + yb);
    s->x = s->mem;
    s->y = (int32_t *)((uint8_t *)s->mem + xb);
    s->u8 = s->mem, s->prm = (int32_t *)((uint8_t *)s->mem + ub);
    return LOOM_OK;
}

static void slot_free(loom_loader *ld, slot *s) {
    loom_backend_host_free(ld->d.backend, s->mem);
    s->mem = NULL;
}

static void worker_free(worker *w) {
    loom_ctx_destroy(w->ctx);
    free(w->idx);
    free(w->buf[0]), free(w->buf[1]);
    memset(w, 0, sizeof *w);
}

static loom_status worker_init(loom_loader *ld, worker *w, int id) {
    memset(w, 0, sizeof *w);
    w->ld = ld, w->id = id;
    bool ok = loom_ctx_create(&(loom_ctx_desc){.threads = 1}, &w->ctx) == LOOM_OK;
    ok = ok && (w->idx = malloc((size_t)ld->d.batch * sizeof *w->idx));
    ok = ok && (w->buf[0] = malloc(ld->tf_bytes)) && (w->buf[1] = malloc(ld->tf_bytes));
    w->cap = ld->tf_bytes;
    if (!ok) {
        worker_free(w);
        return loom__err(ld->ctx, LOOM_ERR_OOM, "loader: out of memory for a worker");
    }
    return LOOM_OK;
}

/* ---- loading one batch (any thread) -------------------------------------- */

// img (oh, ow, c) u8 HWC -> x (c, oh, ow) f32
static void to_tensor(const loom_loader *ld, const uint8_t *img, float *x) {
    size_t hw = (size_t)ld->oh * (size_t)ld->ow, c = (size_t)ld->oc;
    for (size_t ch = 0; ch < c; ch++) {
        const float *lut = ld->lut[ch];
        float *xc = x + ch * hw;
        for (size_t p = 0; p < hw; p++) xc[p] = lut[img[p * c + ch]];
    }
}

/* Sample i of `epoch`, decoded into img (buffers w->buf[0..1] as scratch):
 * its transforms, drawn from (seed, epoch, i), then ToTensor + Normalize
 * into x and the tensor steps (RandomErasing). */
static loom_status augment(loom_loader *ld, worker *w, int64_t epoch, int64_t i, loom_image img, float *x) {
    loom__aug_rng rng;
    loom__aug_init(&rng, ld->d.seed, epoch, i);
    if (ld->d.device_augment)
        return loom__dev_sample(w->ctx, ld->d.steps, ld->d.nsteps, &ld->dev, &rng, img, w->buf[0], w->buf[1], w->dev_u8,
                                w->dev_prm);
    loom__tensor_out out = {.lut = (const float(*)[256])ld->lut, .norm = ld->norm, .x = x, .c = ld->oc};
    loom_status st = ld->d.no_fuse
                         ? loom__tf_run(w->ctx, ld->d.steps, ld->d.nsteps, &rng, &img, w->buf[0], w->buf[1])
                         : loom__tf_run_fused(w->ctx, ld->d.steps, ld->d.nsteps, &rng, &img, w->buf[0], w->buf[1], &out);
    if (st != LOOM_OK) return st;
    if (!out.done) to_tensor(ld, img.data, x);
    return loom__tf_run_tensor(w->ctx, ld->d.steps, ld->d.nsteps, &rng, x, ld->oc, ld->oh, ld->ow);
}

/* The decoder's region callback (loom_decode_hint.region): the part of
 * sample i that its pipeline reads, from its own draws. */
typedef struct region_req {
    const loom_loader *ld;
    loom_ctx *ctx;
    int64_t epoch, i;
} region_req;

static bool region_of(void *user, int64_t h, int64_t w, int64_t box[4]) {
    const region_req *q = user;
    const loom_loader *ld = q->ld;
    loom__aug_rng rng;
    loom__aug_init(&rng, ld->d.seed, q->epoch, q->i);
    int n = ld->d.device_augment ? loom__dev_host_steps(&ld->dev) : ld->d.nsteps; /* what the host runs */
    return loom__tf_region(q->ctx, ld->d.steps, n, &rng, ld->d.src->c, h, w, box);
}

/* A variable-size source's sample i: decode, plan the pipeline for this
 * image's size (it must end at the loader's output size), grow the worker's
 * buffers to the plan, run it, convert into x. */
static loom_status load_var(loom_loader *ld, worker *w, int64_t i, int64_t epoch, float *x, int32_t *label) {
    const loom_source *src = ld->d.src;
    uint8_t *px = NULL;
    int64_t h = 0, wd = 0, oh, ow;
    size_t mb;
    loom_decode_hint hint = ld->hint;
    region_req q = {ld, w->ctx, epoch, i};
    if (ld->region) hint.region = region_of, hint.user = &q;
    loom_status st = src->get_image(src, w->ctx, i, &hint, &px, &h, &wd, label);
    if (st == LOOM_OK && (st = loom__tf_plan(w->ctx, ld->d.steps, ld->d.nsteps, src->c, h, wd, &oh, &ow, &mb)) == LOOM_OK &&
        (oh != ld->oh || ow != ld->ow))
        st = loom__err(w->ctx, LOOM_ERR_INVALID_ARG, "an image of %lldx%lld comes out of the pipeline as %lldx%lld, not %lldx%lld",
                       (long long)h, (long long)wd, (long long)oh, (long long)ow, (long long)ld->oh, (long long)ld->ow);
    if (st == LOOM_OK && mb > w->cap) {
        for (int k = 0; k < 2; k++) {
            uint8_t *nb = realloc(w->buf[k], mb);
            if (!nb) {
                st = loom__err(w->ctx, LOOM_ERR_OOM, "loader: out of memory (%zu bytes) for a %lldx%lld image", mb,
                               (long long)h, (long long)wd);
                break;
            }
            w->buf[k] = nb;
        }
        if (st == LOOM_OK) w->cap = mb;
    }
    if (st == LOOM_OK) st = augment(ld, w, epoch, i, (loom_image){px, h, wd, src->c}, x);
    free(px);
    return st;
}

/* Fill s->x / s->y with samples w->idx[0..count) of `epoch`; false when the
 * generation moved on (abandoned). Errors go to s->st / s->err. */
static bool fill_batch(loom_loader *ld, worker *w, slot *s, int count, int64_t epoch, uint64_t gen) {
    const loom_source *src = ld->d.src;
    s->st = LOOM_OK;
    for (int k = 0; k < count; k++) {
        if (!ld->sync && atomic_load_explicit(&ld->gen_atomic, memory_order_relaxed) > gen) return false;
        int64_t i = w->idx[k];
        float *x = s->x + (size_t)k * ld->rec;
        w->dev_u8 = s->u8 + (size_t)k * (size_t)(ld->dev.h * ld->dev.w * ld->oc);
        w->dev_prm = s->prm + (size_t)k * LOOM_G_AUG_COUNT;
        if (ld->var_size) {
            loom_status st = load_var(ld, w, i, epoch, x, &s->y[k]);
            if (st != LOOM_OK) {
                s->st = st;
                snprintf(s->err, sizeof s->err, "loader: batch %lld, sample %lld: %s", (long long)s->batch, (long long)i,
                         loom_last_error(w->ctx));
                return true;
            }
            continue;
        }
        /* a record that lies in memory already (view) is read where it is:
         * the pipeline writes only into the worker's buffers */
        const uint8_t *in = src->kind == LOOM_SAMPLE_U8 && src->view ? src->view(src, i, &s->y[k]) : NULL;
        void *dst = src->kind != LOOM_SAMPLE_U8 ? (void *)x : (void *)w->buf[0]; /* records: 4-byte elements in place */
        loom_status st = in ? LOOM_OK : src->get(src, w->ctx, i, dst, &s->y[k]);
        if (st == LOOM_OK && src->kind == LOOM_SAMPLE_U8)
            st = augment(ld, w, epoch, i, (loom_image){in ? (uint8_t *)in : w->buf[0], src->h, src->w, src->c}, x);
        if (st != LOOM_OK) {
            s->st = st;
            snprintf(s->err, sizeof s->err, "loader: batch %lld, sample %lld: %s", (long long)s->batch, (long long)i,
                     loom_last_error(w->ctx));
            return true;
        }
    }
    return true;
}

/* Under mu: claim the next batch into a free slot for w; -1 if none. */
static int claim(loom_loader *ld, worker *w, int64_t *epoch, int *count) {
    /* this epoch's next batch, else (it runs to its end) the next epoch's */
    bool ahead = ld->next_claim >= ld->end;
    if (ahead && !(ld->ahead_on && ld->end == ld->nbatches && ld->ahead_claim < ld->nbatches)) return -1;
    int f = -1;
    for (int k = 0; k < ld->nslots && f < 0; k++)
        if (ld->slots[k].state == SLOT_FREE) f = k;
    if (f < 0) return -1;
    slot *s = &ld->slots[f];
    const loom_sampler *order = ahead ? ld->ahead : ld->sampler;
    int64_t b = ahead ? ld->ahead_claim++ : ld->next_claim++, B = ld->d.batch, n = loom_sampler_len(order);
    int64_t lo = b * B, hi = lo + B < n ? lo + B : n;
    memcpy(w->idx, loom_sampler_indices(order) + lo, (size_t)(hi - lo) * sizeof *w->idx);
    s->state = SLOT_FILLING, s->gen = ld->gen + (ahead ? 1 : 0), s->batch = b;
    *count = s->count = (int)(hi - lo);
    *epoch = ld->epoch + (ahead ? 1 : 0);
    return f;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    loom_loader *ld = w->ld;
    pthread_mutex_lock(&ld->mu);
    for (;;) {
        if (ld->stop) break;
        int64_t epoch = 0;
        int count = 0, f = w->id < ld->active ? claim(ld, w, &epoch, &count) : -1;
        if (f < 0) {
            pthread_cond_wait(&ld->work_cv, &ld->mu);
            continue;
        }
        slot *s = &ld->slots[f];
        uint64_t gen = s->gen;
        pthread_mutex_unlock(&ld->mu);
        double t0 = loom__now_s();
        bool done = fill_batch(ld, w, s, count, epoch, gen);
        double t1 = loom__now_s();
        pthread_mutex_lock(&ld->mu);
        if (done && (s->gen == ld->gen || s->gen == ld->gen + 1)) { /* this epoch's or the next's */
            s->state = SLOT_READY;
            s->load_s = t1 - t0;
            pthread_cond_broadcast(&ld->ready_cv);
        } else {
            s->state = SLOT_FREE;
            pthread_cond_broadcast(&ld->work_cv);
        }
    }
    pthread_mutex_unlock(&ld->mu);
    return NULL;
}

/* ---- growing and shrinking (the caller's thread) -------------------------- */

/* Make `n` workers active (spawning threads and adding slots as needed). */
static void set_workers(loom_loader *ld, int n) {
    if (n > ld->max_workers) n = ld->max_workers;
    if (n < 1) n = 1;
    /* slots first: prefetch per worker, plus the one the caller holds */
    int want = ld->prefetch * n + 1;
    if (want > ld->cap_slots) want = ld->cap_slots;
    pthread_mutex_lock(&ld->mu);
    int have = ld->nslots;
    pthread_mutex_unlock(&ld->mu);
    for (int k = have; k < want; k++) {
        slot s;
        if (slot_alloc(ld, &s) != LOOM_OK) break; /* fewer slots: still correct */
        pthread_mutex_lock(&ld->mu);
        ld->slots[ld->nslots++] = s;
        pthread_mutex_unlock(&ld->mu);
    }
    while (ld->spawned < n) {
        worker *w = &ld->w[ld->spawned];
        if (worker_init(ld, w, ld->spawned) != LOOM_OK) break;
        if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
            worker_free(w);
            break;
        }
        w->running = true;
        ld->spawned++;
    }
    if (n > ld->spawned) n = ld->spawned;
    pthread_mutex_lock(&ld->mu);
    ld->active = n;
    pthread_cond_broadcast(&ld->work_cv);
    pthread_mutex_unlock(&ld->mu);
    ld->stats.workers = n;
    if (n < ld->stats.workers_min || !ld->stats.workers_min) ld->stats.workers_min = n;
    if (n > ld->stats.workers_max) ld->stats.workers_max = n;
}

/* The CPU time of the whole process (every thread), seconds. */
static double process_cpu_s(void) {
    struct timespec t;
    return clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) == 0 ? (double)t.tv_sec + 1e-9 * (double)t.tv_nsec : 0;
}

/* Auto: after each window of batches, the tuner's decision (loader/autotune.h). */
static void autotune(loom_loader *ld) {
    int want = loom__autotune_decide(&ld->tune, ld->active, ld->max_workers, ld->ncores);
    if (want != ld->active) set_workers(ld, want);
}

/* ---- the public calls ------------------------------------------------------ */

/* A variable-size source: the pipeline must make every image one size. Its
 * output is planned for two unrelated large inputs and must agree (each
 * sample is planned again for its own size in load_var). The decode hint is
 * the size of a Resize that comes first (flips before it commute with it). */
static loom_status plan_var(loom_ctx *ctx, loom_loader *ld) {
    const loom_loader_desc *d = &ld->d;
    int64_t h1, w1, h2, w2;
    size_t b1, b2;
    loom_status st = loom__tf_plan(ctx, d->steps, d->nsteps, d->src->c, 4099, 4093, &h1, &w1, &b1);
    if (st == LOOM_OK) st = loom__tf_plan(ctx, d->steps, d->nsteps, d->src->c, 3001, 5003, &h2, &w2, &b2);
    if (st != LOOM_OK) return st;
    if (h1 != h2 || w1 != w2)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "loader: the images of '%s' differ in size: the transforms must make "
                         "them one size (Resize((h, w)), CenterCrop or RandomCrop)",
                         d->src->name);
    ld->oh = h1, ld->ow = w1;
    ld->tf_bytes = (size_t)h1 * (size_t)w1 * (size_t)d->src->c;
    for (int k = 0; k < d->nsteps; k++) {
        if (d->steps[k].kind == LOOM_TF_RANDOM_HFLIP || d->steps[k].kind == LOOM_TF_RANDOM_VFLIP) continue;
        if (d->steps[k].kind == LOOM_TF_RESIZE) /* the shorter side: both sides at least that */
            ld->hint = (loom_decode_hint){.min_h = d->steps[k].h,
                                          .min_w = d->steps[k].short_side ? d->steps[k].h : d->steps[k].w};
        break;
    }
    return LOOM_OK;
}

loom_status loom_loader_create(loom_ctx *ctx, const loom_loader_desc *desc, loom_loader **out) {
    *out = NULL;
    if (!desc || !desc->src || (!desc->src->get && !desc->src->get_image))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "loader: a source (dataset) is required");
    const loom_source *src = desc->src;
    bool var = !src->get && src->get_image;
    if (var && (src->kind != LOOM_SAMPLE_U8 || src->h != 0 || src->w != 0))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "loader: source '%s' has images of different sizes (get_image): it "
                         "must be U8 with h = w = 0", src->name);
    if (desc->batch < 1) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "loader: batch size %d (expected >= 1)", desc->batch);
    if (desc->workers < LOOM_WORKERS_SYNC || desc->workers > 4096 || desc->max_workers < 0 || desc->prefetch < 0 ||
        desc->prefetch > 64)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "loader: workers %d, max_workers %d, prefetch %d (expected workers "
                         "-1 (synchronous), 0 (auto) or 1..4096; prefetch 0..64)",
                         desc->workers, desc->max_workers, desc->prefetch);
    if (src->n < 1 || src->c < 1 || (!var && (src->h < 1 || src->w < 1)) ||
        (src->kind != LOOM_SAMPLE_U8 && src->kind != LOOM_SAMPLE_F32 && src->kind != LOOM_SAMPLE_I32))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "loader: source '%s' has %lld samples of %dx%lldx%lld", src->name,
                         (long long)src->n, src->c, (long long)src->h, (long long)src->w);
    if (src->kind != LOOM_SAMPLE_U8 && desc->nsteps > 0)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "loader: source '%s' holds %s records: image transforms do not apply",
                         src->name, src->kind == LOOM_SAMPLE_F32 ? "float" : "int32 (token)");
    if (src->kind == LOOM_SAMPLE_U8 && src->c > 4)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "loader: source '%s' has %d channels (images have 1..4)", src->name,
                         src->c);
    if (desc->nstat < 0 || (desc->nstat > 0 && (!desc->mean || !desc->std || (desc->nstat != 1 && desc->nstat != src->c))))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "loader: %d normalisation values for %d channels (expected 1 or %d)",
                         desc->nstat, src->c, src->c);
    if (desc->nsteps < 0 || (desc->nsteps > 0 && !desc->steps))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "loader: %d transform steps", desc->nsteps);

    loom_loader *ld = calloc(1, sizeof *ld);
    if (!ld) return loom__err(ctx, LOOM_ERR_OOM, "loader: out of memory");
    ld->ctx = ctx;
    ld->d = *desc;
    ld->held = -1;
    ld->oc = src->c, ld->oh = src->h, ld->ow = src->w;
    ld->sample_bytes = loom_source_sample_bytes(src);
    ld->tf_bytes = ld->sample_bytes;
    ld->var_size = var;
    const char *rg = getenv("LOOM_LOADER_REGION"); /* 0: decode every image whole (tests compare) */
    ld->region = var && !desc->no_fuse && !(rg && !strcmp(rg, "0"));
    loom_status st = LOOM_OK;
    if (var && (st = plan_var(ctx, ld)) != LOOM_OK) {
        free(ld);
        return st;
    }
    if (!var && src->kind == LOOM_SAMPLE_U8 &&
        (st = loom__tf_plan(ctx, desc->steps, desc->nsteps, src->c, src->h, src->w, &ld->oh, &ld->ow, &ld->tf_bytes)) !=
            LOOM_OK) {
        free(ld);
        return st;
    }
    if (desc->device_augment && (src->kind != LOOM_SAMPLE_U8 ||
                                 (st = loom__dev_setup(ctx, desc->steps, desc->nsteps, src->c, var ? 0 : src->h,
                                                       var ? 0 : src->w, desc->backend, &ld->dev)) != LOOM_OK)) {
        free(ld);
        return st != LOOM_OK ? st : loom__err(ctx, LOOM_ERR_INVALID_ARG, "loader: device augmentation needs images (a "
                                              "U8 source), not '%s'", src->name);
    }
    ld->rec = (size_t)ld->oc * (size_t)ld->oh * (size_t)ld->ow;
    for (int ch = 0; ch < src->c && src->kind == LOOM_SAMPLE_U8; ch++) {
        int k = desc->nstat == 1 ? 0 : ch;
        float mean = desc->nstat ? desc->mean[k] : 0.0f, sd = desc->nstat ? desc->std[k] : 1.0f;
        if (!(sd > 0) && !(sd < 0)) {
            free(ld);
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "loader: std[%d] = %g (expected nonzero)", k, (double)sd);
        }
        for (int i = 0; i < 256; i++) ld->lut[ch][i] = ((float)i / 255.0f - mean) / sd;
        loom__norm_init(&ld->norm[ch], mean, sd, ld->lut[ch]);
    }
    loom_sampler_desc sd = {.n = src->n, .shuffle = desc->shuffle, .seed = desc->seed, .rank = desc->rank,
                            .world = desc->world, .block = desc->rank_block};
    if ((st = loom_sampler_create(ctx, &sd, &ld->sampler)) != LOOM_OK ||
        (st = loom_sampler_create(ctx, &sd, &ld->ahead)) != LOOM_OK) {
        loom_sampler_destroy(ld->sampler);
        free(ld);
        return st;
    }
    const char *ah = getenv("LOOM_LOADER_AHEAD"); /* 0: no loading of the next epoch ahead (comparisons) */
    ld->ahead_on = desc->workers != LOOM_WORKERS_SYNC && !(ah && !strcmp(ah, "0"));
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    ld->ncores = nc > 0 ? (int)nc : 1;
    ld->sync = desc->workers == LOOM_WORKERS_SYNC;
    ld->prefetch = desc->prefetch ? desc->prefetch : 2;
    ld->max_workers = ld->sync ? 0 : desc->workers > 0 ? desc->workers : loom__autotune_limit(ld->ncores, desc->max_workers);
    int first = ld->sync ? 0 : desc->workers > 0 ? desc->workers : ld->ncores < ld->max_workers ? ld->ncores : ld->max_workers;
    ld->cap_slots = ld->sync ? 1 : ld->prefetch * ld->max_workers + 1;
    pthread_mutex_init(&ld->mu, NULL);
    pthread_cond_init(&ld->work_cv, NULL);
    pthread_cond_init(&ld->ready_cv, NULL);
    atomic_init(&ld->gen_atomic, 0);
    ld->slots = calloc((size_t)ld->cap_slots, sizeof *ld->slots);
    ld->w = calloc((size_t)(ld->sync ? 1 : ld->max_workers), sizeof *ld->w);
    if (!ld->slots || !ld->w) {
        loom_loader_destroy(ld);
        return loom__err(ctx, LOOM_ERR_OOM, "loader: out of memory");
    }
    if (ld->sync) {
        if ((st = worker_init(ld, &ld->w[0], 0)) != LOOM_OK || (st = slot_alloc(ld, &ld->slots[0])) != LOOM_OK) {
            loom_loader_destroy(ld);
            return st;
        }
        ld->nslots = 1;
    } else {
        set_workers(ld, first);
        if (ld->spawned == 0 || ld->nslots < 2) {
            loom_loader_destroy(ld);
            return loom__err(ctx, LOOM_ERR_OOM, "loader: cannot start a worker thread or allocate the batch ring");
        }
    }
    loom_loader_begin(ld, 0, 0, 0);
    *out = ld;
    return LOOM_OK;
}

void loom_loader_destroy(loom_loader *ld) {
    if (!ld) return;
    pthread_mutex_lock(&ld->mu);
    ld->stop = true;
    ld->gen += 2; /* past the batches ahead too */
    atomic_store(&ld->gen_atomic, ld->gen);
    pthread_cond_broadcast(&ld->work_cv);
    pthread_mutex_unlock(&ld->mu);
    int nw = ld->sync ? 1 : ld->max_workers;
    for (int k = 0; ld->w && k < nw; k++) {
        if (ld->w[k].running) pthread_join(ld->w[k].th, NULL);
        if (ld->w[k].ctx) worker_free(&ld->w[k]);
    }
    for (int k = 0; ld->slots && k < ld->nslots; k++) slot_free(ld, &ld->slots[k]);
    free(ld->slots);
    free(ld->w);
    loom_sampler_destroy(ld->sampler);
    loom_sampler_destroy(ld->ahead);
    pthread_cond_destroy(&ld->work_cv);
    pthread_cond_destroy(&ld->ready_cv);
    pthread_mutex_destroy(&ld->mu);
    free(ld);
}

void loom_loader_shape(const loom_loader *ld, int *c, int64_t *h, int64_t *w) {
    *c = ld->oc, *h = ld->oh, *w = ld->ow;
}

int64_t loom_loader_batches(const loom_loader *ld) {
    int64_t n = loom_sampler_len(ld->sampler), b = ld->d.batch;
    return ld->d.drop_last ? n / b : (n + b - 1) / b;
}

void loom_loader_begin(loom_loader *ld, int64_t epoch, int64_t first, int64_t limit) {
    int64_t nb = loom_loader_batches(ld);
    if (first < 0) first = 0;
    if (first > nb) first = nb;
    int64_t end = limit > 0 && first + limit < nb ? first + limit : nb;
    pthread_mutex_lock(&ld->mu);
    /* the batches loaded ahead are this epoch's first ones: keep them */
    bool adopt = ld->ahead_claim > 0 && epoch == ld->epoch + 1 && first == 0 && end >= ld->ahead_claim;
    /* an epoch run to its end and then not followed by the next: loading
     * ahead was wasted (an evaluation loader); restarts mid-epoch say nothing */
    if (ld->ahead_claim > 0 && !adopt && ld->next_deliver >= ld->end) ld->ahead_on = false;
    const bool ahead = ld->ahead_on;
    ld->ahead_on = false; /* until the next epoch's order is in place (below) */
    ld->gen += adopt ? 1 : 2;
    atomic_store(&ld->gen_atomic, ld->gen);
    ld->epoch = epoch;
    ld->nbatches = nb;
    ld->next_claim = adopt ? ld->ahead_claim : first;
    ld->next_deliver = first;
    ld->end = end;
    int64_t carried = 0;
    for (int k = 0; k < ld->nslots; k++) {
        slot *s = &ld->slots[k];
        if (s->state == SLOT_HELD || (s->state == SLOT_READY && s->gen != ld->gen)) s->state = SLOT_FREE;
        carried += (s->state == SLOT_READY || s->state == SLOT_FILLING) && s->gen == ld->gen;
    }
    ld->held = -1;
    ld->ahead_claim = 0;
    if (adopt) { /* the order loaded ahead is this epoch's */
        loom_sampler *t = ld->sampler;
        ld->sampler = ld->ahead, ld->ahead = t;
    } else {
        loom_sampler_set_epoch(ld->sampler, epoch);
    }
    pthread_cond_broadcast(&ld->work_cv);
    pthread_mutex_unlock(&ld->mu);
    /* the next epoch's order, outside the lock (a shuffle of the dataset):
     * workers read it only under the lock and only while ahead_on */
    if (ahead) {
        loom_sampler_set_epoch(ld->ahead, epoch + 1);
        pthread_mutex_lock(&ld->mu);
        ld->ahead_on = true;
        pthread_cond_broadcast(&ld->work_cv);
        pthread_mutex_unlock(&ld->mu);
    }
    int workers = ld->stats.workers;
    memset(&ld->stats, 0, sizeof ld->stats);
    ld->stats.workers = ld->stats.workers_min = ld->stats.workers_max = workers;
    ld->stats.carried = carried;
    ld->t_begin = loom__now_s();
    ld->t_return = 0, ld->cpu_return = process_cpu_s();
    loom__autotune_reset(&ld->tune);
}

loom_status loom_loader_next(loom_loader *ld, loom_loader_batch *out) {
    double t0 = loom__now_s(), compute = 0, cpu0 = ld->cpu_return;
    memset(out, 0, sizeof *out);
    if (ld->t_return > 0) {
        compute = t0 - ld->t_return;
        ld->stats.compute_s += compute;
    }
    ld->t_return = 0;
    pthread_mutex_lock(&ld->mu);
    if (ld->held >= 0) {
        ld->slots[ld->held].state = SLOT_FREE;
        ld->held = -1;
        pthread_cond_broadcast(&ld->work_cv);
    }
    if (ld->next_deliver >= ld->end) {
        pthread_mutex_unlock(&ld->mu);
        return LOOM_OK;
    }
    slot *s = NULL;
    int f = -1;
    if (ld->sync) {
        worker *w = &ld->w[0];
        int count = 0;
        int64_t epoch = 0;
        f = claim(ld, w, &epoch, &count);
        LOOM__ASSERT(f == 0);
        s = &ld->slots[0];
        pthread_mutex_unlock(&ld->mu);
        double a = loom__now_s();
        fill_batch(ld, w, s, count, epoch, s->gen);
        s->load_s = loom__now_s() - a;
        pthread_mutex_lock(&ld->mu);
    } else {
        for (;;) {
            for (int k = 0; k < ld->nslots && f < 0; k++)
                if (ld->slots[k].state == SLOT_READY && ld->slots[k].gen == ld->gen && ld->slots[k].batch == ld->next_deliver)
                    f = k;
            if (f >= 0) break;
            pthread_cond_wait(&ld->ready_cv, &ld->mu);
        }
        s = &ld->slots[f];
    }
    s->state = SLOT_HELD;
    ld->held = f;
    ld->next_deliver++;
    pthread_mutex_unlock(&ld->mu);

    double t1 = loom__now_s();
    ld->stats.wait_s += t1 - t0;
    ld->stats.load_s += s->load_s;
    if (ld->stats.batches++ == 0) ld->stats.first_batch_s = t1 - ld->t_begin;
    loom__autotune_add(&ld->tune, &(loom__autotune_obs){.wait = t1 - t0, .compute = compute, .load = s->load_s,
                                                        .cpu = process_cpu_s() - cpu0});
    if (s->st != LOOM_OK) return loom__err(ld->ctx, s->st, "%s", s->err);
    out->count = s->count;
    out->index = s->batch;
    bool ids = ld->d.src->kind == LOOM_SAMPLE_I32;
    out->x = ids ? NULL : s->x;
    out->ids = ids ? (const int32_t *)(const void *)s->x : NULL;
    out->y = s->y;
    out->u8 = ld->d.device_augment ? s->u8 : NULL, out->prm = ld->d.device_augment ? s->prm : NULL;
    if (ld->d.device_augment) out->x = NULL;
    if (!ld->sync && ld->d.workers == LOOM_WORKERS_AUTO) autotune(ld);
    ld->t_return = loom__now_s(), ld->cpu_return = process_cpu_s();
    return LOOM_OK;
}

void loom_loader_stats_get(const loom_loader *ld, loom_loader_stats *out) { *out = ld->stats; }
