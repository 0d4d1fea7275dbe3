/* backends/cpu/threads.c — a small persistent thread pool for the CPU backend. */
#include <pthread.h>

#include "cpu_impl.h"

typedef struct job {
    loom__cpu_range_fn fn;
    void *arg;
    int64_t n, chunk;
} job;

struct pool {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    pthread_t *th;
    int nth;          /* worker threads (the caller is one more) */
    uint64_t gen;     /* job generation */
    int pending;      /* workers still busy with this generation */
    bool quit;
    job j;
};

/* Set while a thread runs a job's chunks: a nested loom__cpu_parallel from
 * inside a kernel's range function runs serially instead of re-entering the
 * pool. */
static _Thread_local bool in_job;

static void run_chunks(job *j, int who, int nparts) {
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

static void *worker(void *v) {
    worker_arg *wa = v;
    struct pool *p = wa->p;
    int me = wa->index;
    free(wa);
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->gen == seen) pthread_cond_wait(&p->go, &p->mu);
        if (p->quit) break;
        seen = p->gen;
        job j = p->j;
        pthread_mutex_unlock(&p->mu);
        run_chunks(&j, me + 1, p->nth + 1);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
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
    p->th = calloc((size_t)cpu->threads - 1, sizeof *p->th);
    if (!p->th) {
        free(p);
        return LOOM_ERR_OOM;
    }
    for (int i = 0; i < cpu->threads - 1; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa || pthread_create(&p->th[i], NULL, worker, wa ? (wa->p = p, wa->index = i, wa) : NULL) != 0) {
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
    p->quit = true;
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
    job j = {fn, arg, n, chunk};
    pthread_mutex_lock(&p->mu);
    p->j = j;
    p->pending = p->nth;
    p->gen++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    run_chunks(&j, 0, parts);
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
