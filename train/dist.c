/* train/dist.c — the process group of data-parallel training (loom/dist.h):
 * every MPI call of loom is in this file. Without MPI in the build
 * (LOOM_HAVE_MPI unset) a group is one process and the collectives copy or
 * do nothing. MPI errors are returned, not fatal (MPI_ERRORS_RETURN), and
 * become a loom_status with MPI's message. Every collective is started
 * non-blocking and waited for with a deadline (desc.timeout_s): a rank that
 * died or stalls becomes an error on the others, not a hang. */
#include <limits.h>
#include <stdlib.h>
#include <time.h>

#include "impl.h"
#include "loom/dist.h"

#ifdef LOOM_HAVE_MPI
#include <mpi.h>
#endif

struct loom_dist {
    loom_ctx *ctx;
    bool mpi;            /* MPI is the transport */
    bool finalize;       /* this group initialised MPI: it finalises it */
    int rank, world, local_rank, local_world;
    double timeout_s;    /* < 0: none */
#ifdef LOOM_HAVE_MPI
    MPI_Comm local;      /* the ranks on this host */
#endif
};

bool loom_dist_mpi_built(void) {
#ifdef LOOM_HAVE_MPI
    return true;
#else
    return false;
#endif
}

/* Did an MPI launcher start this process? (Open MPI, then PMI / PMIx ones.) */
static bool launched_by_mpi(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"};
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return true;
    }
    return false;
}

#ifdef LOOM_HAVE_MPI
static loom_status mpi_err(loom_dist *d, int rc, const char *call) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
    return loom__err(d->ctx, LOOM_ERR_BACKEND, "dist: %s failed on rank %d of %d: %s (another rank may have died)",
                     call, d->rank, d->world, msg);
}
#define MPI_CALL(d, call)                                          \
    do {                                                           \
        int rc_ = (call);                                          \
        if (rc_ != MPI_SUCCESS) return mpi_err((d), rc_, #call);   \
    } while (0)

static loom_status mpi_open(loom_dist *d) {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        if (MPI_Init(NULL, NULL) != MPI_SUCCESS)
            return loom__err(d->ctx, LOOM_ERR_BACKEND, "dist: MPI_Init failed (was this process started by mpirun?)");
        d->finalize = true;
    }
    d->mpi = true;
    MPI_CALL(d, MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_CALL(d, MPI_Comm_rank(MPI_COMM_WORLD, &d->rank));
    MPI_CALL(d, MPI_Comm_size(MPI_COMM_WORLD, &d->world));
    MPI_CALL(d, MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &d->local));
    MPI_CALL(d, MPI_Comm_set_errhandler(d->local, MPI_ERRORS_RETURN));
    MPI_CALL(d, MPI_Comm_rank(d->local, &d->local_rank));
    MPI_CALL(d, MPI_Comm_size(d->local, &d->local_world));
    return LOOM_OK;
}

/* The largest element count one MPI call takes (its counts are int). */
static const size_t MPI_CHUNK = INT_MAX / 16;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Wait for n requests, polling (MPI progresses them in MPI_Testall) with
 * short sleeps once the first millisecond has passed, until the deadline. */
static loom_status wait_all(loom_dist *d, int n, MPI_Request *r, const char *what) {
    double t0 = now_s();
    for (;;) {
        int done = 0;
        int rc = MPI_Testall(n, r, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) return mpi_err(d, rc, what);
        if (done) return LOOM_OK;
        double el = now_s() - t0;
        if (d->timeout_s >= 0 && el > d->timeout_s)
            return loom__err(d->ctx, LOOM_ERR_BACKEND,
                             "dist: %s on rank %d of %d did not complete in %.0f s: another rank died or stalls "
                             "(the time limit is loom_dist_desc.timeout_s, loom train --dist-timeout)",
                             what, d->rank, d->world, d->timeout_s);
        if (el > 1e-3) nanosleep(&(struct timespec){0, 50000}, NULL);
    }
}
#endif

loom_status loom_dist_create(loom_ctx *ctx, const loom_dist_desc *desc, loom_dist **out) {
    *out = NULL;
    loom_dist_launcher l = desc ? desc->launcher : LOOM_DIST_AUTO;
    if (l != LOOM_DIST_AUTO && l != LOOM_DIST_NONE && l != LOOM_DIST_MPI)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "dist: unknown launcher %d", (int)l);
    bool mpi = l == LOOM_DIST_MPI || (l == LOOM_DIST_AUTO && launched_by_mpi());
    if (mpi && !loom_dist_mpi_built())
        return loom__err(ctx, LOOM_ERR_UNSUPPORTED,
                         "dist: this loom was built without MPI (LOOM_MPI=OFF or MPI not found at configure time): "
                         "data parallel across processes needs it (install libopenmpi-dev and reconfigure)");
    loom_dist *d = calloc(1, sizeof *d);
    if (!d) return loom__err(ctx, LOOM_ERR_OOM, "dist: out of memory");
    d->ctx = ctx;
    d->world = d->local_world = 1;
    d->timeout_s = desc && desc->timeout_s ? desc->timeout_s : 300;
#ifdef LOOM_HAVE_MPI
    d->local = MPI_COMM_NULL;
    if (mpi) {
        loom_status st = mpi_open(d);
        if (st != LOOM_OK) {
            loom_dist_destroy(d);
            return st;
        }
    }
#endif
    *out = d;
    return LOOM_OK;
}

void loom_dist_destroy(loom_dist *d) {
    if (!d) return;
#ifdef LOOM_HAVE_MPI
    if (d->local != MPI_COMM_NULL) MPI_Comm_free(&d->local);
    int fin = 0;
    if (d->finalize && MPI_Finalized(&fin) == MPI_SUCCESS && !fin) MPI_Finalize();
#endif
    free(d);
}

void loom_dist_abort(loom_dist *d, int code) {
#ifdef LOOM_HAVE_MPI
    if (d && d->mpi) MPI_Abort(MPI_COMM_WORLD, code);
#else
    (void)d, (void)code;
#endif
}

int loom_dist_rank(const loom_dist *d) { return d ? d->rank : 0; }
int loom_dist_world(const loom_dist *d) { return d ? d->world : 1; }
int loom_dist_local_rank(const loom_dist *d) { return d ? d->local_rank : 0; }
int loom_dist_local_world(const loom_dist *d) { return d ? d->local_world : 1; }
const char *loom_dist_transport(const loom_dist *d) { return d && d->mpi ? "mpi" : "none"; }

loom_status loom_dist_barrier(loom_dist *d) {
#ifdef LOOM_HAVE_MPI
    if (d && d->mpi && d->world > 1) {
        MPI_Request r;
        MPI_CALL(d, MPI_Ibarrier(MPI_COMM_WORLD, &r));
        return wait_all(d, 1, &r, "barrier");
    }
#else
    (void)d;
#endif
    return LOOM_OK;
}

loom_status loom_dist_broadcast(loom_dist *d, void *data, size_t bytes, int root) {
    if (d && (root < 0 || root >= d->world))
        return loom__err(d->ctx, LOOM_ERR_INVALID_ARG, "dist: broadcast from rank %d of %d", root, d->world);
#ifdef LOOM_HAVE_MPI
    if (d && d->mpi && d->world > 1)
        for (size_t off = 0; off < bytes; off += MPI_CHUNK) {
            size_t n = bytes - off < MPI_CHUNK ? bytes - off : MPI_CHUNK;
            MPI_Request r;
            MPI_CALL(d, MPI_Ibcast((char *)data + off, (int)n, MPI_BYTE, root, MPI_COMM_WORLD, &r));
            loom_status st = wait_all(d, 1, &r, "broadcast");
            if (st != LOOM_OK) return st;
        }
#else
    (void)data, (void)bytes;
#endif
    return LOOM_OK;
}

loom_status loom_dist_allreduce_sum(loom_dist *d, void *data, size_t count, loom_dtype dt) {
    if (dt != LOOM_F32 && dt != LOOM_F64 && dt != LOOM_I32) {
        if (d) return loom__err(d->ctx, LOOM_ERR_INVALID_ARG, "dist: all-reduce of %s (f32, f64 or i32 only)", loom_dtype_name(dt));
        return LOOM_ERR_INVALID_ARG;
    }
    loom_dist_request *q;
    loom_status st = loom_dist_iallreduce_sum(d, data, count, dt, &q);
    return st == LOOM_OK ? loom_dist_wait(d, q) : st;
}

#ifdef LOOM_HAVE_MPI
struct loom_dist_request {
    int n;
    MPI_Request r[]; /* one per chunk of at most MPI_CHUNK elements */
};
#endif

loom_status loom_dist_iallreduce_sum(loom_dist *d, void *data, size_t count, loom_dtype dt, loom_dist_request **req) {
    *req = NULL;
    if (dt != LOOM_F32 && dt != LOOM_F64 && dt != LOOM_I32) {
        if (d) return loom__err(d->ctx, LOOM_ERR_INVALID_ARG, "dist: all-reduce of %s (f32, f64 or i32 only)", loom_dtype_name(dt));
        return LOOM_ERR_INVALID_ARG;
    }
#ifdef LOOM_HAVE_MPI
    if (d && d->mpi && d->world > 1) {
        MPI_Datatype t = dt == LOOM_F32 ? MPI_FLOAT : dt == LOOM_F64 ? MPI_DOUBLE : MPI_INT32_T;
        size_t es = loom_dtype_size(dt), chunks = count ? (count + MPI_CHUNK - 1) / MPI_CHUNK : 0;
        loom_dist_request *q = malloc(sizeof *q + (chunks ? chunks : 1) * sizeof(MPI_Request));
        if (!q) return loom__err(d->ctx, LOOM_ERR_OOM, "dist: out of memory");
        q->n = 0;
        for (size_t off = 0; off < count; off += MPI_CHUNK) {
            size_t n = count - off < MPI_CHUNK ? count - off : MPI_CHUNK;
            int rc = MPI_Iallreduce(MPI_IN_PLACE, (char *)data + off * es, (int)n, t, MPI_SUM, MPI_COMM_WORLD, &q->r[q->n]);
            if (rc != MPI_SUCCESS) {
                loom_dist_wait(d, q);
                return mpi_err(d, rc, "MPI_Iallreduce");
            }
            q->n++;
        }
        *req = q;
    }
#else
    (void)data, (void)count;
#endif
    return LOOM_OK;
}

loom_status loom_dist_test(loom_dist *d, loom_dist_request *req, bool *done) {
    *done = true;
    if (!req) return LOOM_OK;
#ifdef LOOM_HAVE_MPI
    int flag = 1;
    if (req->n) {
        int rc = MPI_Testall(req->n, req->r, &flag, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) return mpi_err(d, rc, "MPI_Testall");
    }
    *done = flag != 0;
#else
    (void)d;
#endif
    return LOOM_OK;
}

loom_status loom_dist_wait(loom_dist *d, loom_dist_request *req) {
    if (!req) return LOOM_OK;
    loom_status st = LOOM_OK;
#ifdef LOOM_HAVE_MPI
    if (req->n) st = wait_all(d, req->n, req->r, "all-reduce");
#else
    (void)d;
#endif
    free(req);
    return st;
}

loom_status loom_dist_allgather(loom_dist *d, const void *send, size_t bytes, void *recv) {
#ifdef LOOM_HAVE_MPI
    if (d && d->mpi && d->world > 1) {
        if (bytes > MPI_CHUNK)
            return loom__err(d->ctx, LOOM_ERR_INVALID_ARG, "dist: all-gather of %zu bytes per rank (at most %zu)", bytes,
                             MPI_CHUNK);
        MPI_Request r;
        MPI_CALL(d, MPI_Iallgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD, &r));
        return wait_all(d, 1, &r, "all-gather");
    }
#endif
    if (recv != send) memmove(recv, send, bytes);
    (void)d;
    return LOOM_OK;
}
