/* backends/cpu/threads.c — a small persistent thread pool for the CPU backend. */
#include <pthread.h>
#include <stdatomic.h>

#include "cpu_impl.h"

typedef struct job {
    loom__cpu_range_fn fn;
    void *arg;
    int64_t n, chunk;
} job;

/* Waiting spins for a while before sleeping: a sleep/wake round trip can
 * cost longer than many kernels take, and a short spin keeps a training
 * step's back-to-back parallel regions on warm threads. */
#define SPIN_ITERS 4000

struct pool {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    pthread_t *th;
    int nth;               /* worker threads (the caller is one more) */
    _Atomic uint64_t gen;  /* job generation; bumped (release) after j is written */
    _Atomic int pending;   /* workers still busy with this generation */
    _Atomic bool quit;
    int sleepers;          /* workers blocked on `go` (under mu) */
    job j;
};

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Set while a thread runs a job's chunks: a nested loom__cpu_parallel from
 * inside a kernel's range function runs serially instead of re-entering the
 * pool. */
static _Thread_local bool in_job;

static void run_chunks(const job *j, int who, int nparts) {
    int64_t nchunks = (j->n + j->chunk - 1) / j->chunk;
    in_job = true;
    for (int64_t c = who; c < nchunks; c += nparts) {
        int64_t b = c * j->chunk, e = b + j->chunk < j->n ? b + j->chunk : j->n;
        j->fn(j->arg, b, e);
    }
    in_job = false;
}

typedef struct worker_arg {
    struct pool *p;
    int index;
} worker_arg;

/* the next generation after `seen` (spinning, then sleeping); false on quit */
static bool wait_job(struct pool *p, uint64_t seen, uint64_t *gen) {
    for (int i = 0; i < SPIN_ITERS; i++) {
        if (atomic_load_explicit(&p->quit, memory_order_relaxed)) return false;
        if ((*gen = atomic_load_explicit(&p->gen, memory_order_acquire)) != seen) return true;
        relax();
    }
    pthread_mutex_lock(&p->mu);
    p->sleepers++;
    while (!atomic_load(&p->quit) && (*gen = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen)
        pthread_cond_wait(&p->go, &p->mu);
    p->sleepers--;
    pthread_mutex_unlock(&p->mu);
    return !atomic_load(&p->quit);
}

static void *worker(void *v) {
    worker_arg *wa = v;
    struct pool *p = wa->p;
    int me = wa->index;
    free(wa);
    uint64_t seen = 0, gen;
    while (wait_job(p, seen, &gen)) {
        seen = gen;
        job j = p->j; /* written before gen was released */
        run_chunks(&j, me + 1, p->nth + 1);
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu); /* the caller may be asleep on `done` */
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

loom_status loom__cpu_pool_create(loom__cpu *cpu, int threads) {
    cpu->threads = threads < 1 ? 1 : threads;
    if (cpu->threads == 1) return LOOM_OK;
    struct pool *p = calloc(1, sizeof *p);
    if (!p) return LOOM_ERR_OOM;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->gen, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->quit, false);
    p->th = calloc((size_t)cpu->threads - 1, sizeof *p->th);
    if (!p->th) {
        free(p);
        return LOOM_ERR_OOM;
    }
    for (int i = 0; i < cpu->threads - 1; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa) break;
        wa->p = p, wa->index = i;
        /* nth counts started workers; a worker reads it only for a job, and
         * jobs start after creation is done */
        if (pthread_create(&p->th[i], NULL, worker, wa) != 0) {
            free(wa);
            break;
        }
        p->nth++;
    }
    cpu->pool = p;
    return LOOM_OK;
}

void loom__cpu_pool_destroy(loom__cpu *cpu) {
    struct pool *p = cpu->pool;
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, true);
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nth; i++) pthread_join(p->th[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    free(p->th);
    free(p);
    cpu->pool = NULL;
}

int loom__cpu_threads(const loom__cpu *cpu) { return cpu->threads; }

void loom__cpu_parallel(loom__cpu *cpu, int64_t n, int64_t grain, loom__cpu_range_fn fn, void *arg) {
    if (n <= 0) return;
    struct pool *p = cpu ? cpu->pool : NULL;
    if (grain < 1) grain = 1;
    if (!p || p->nth == 0 || n <= grain || in_job) {
        fn(arg, 0, n);
        return;
    }
    int parts = p->nth + 1;
    int64_t chunk = (n + parts - 1) / parts;
    if (chunk < grain) chunk = grain;
    p->j = (job){fn, arg, n, chunk};
    atomic_store_explicit(&p->pending, p->nth, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    pthread_mutex_lock(&p->mu);
    if (p->sleepers) pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    job j = p->j;
    run_chunks(&j, 0, parts);
    for (int i = 0; i < SPIN_ITERS && atomic_load_explicit(&p->pending, memory_order_acquire) > 0; i++) relax();
    if (atomic_load_explicit(&p->pending, memory_order_acquire) > 0) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0) pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}
