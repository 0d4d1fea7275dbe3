/* loom/dist.h — data-parallel training across processes: the process group.
 *
 * defines: loom_dist (a process group over MPI: rank, world size, local
 *          rank, barrier, broadcast, all-reduce, all-gather),
 *          loom_dist_launcher, loom_dist_desc.
 *
 * loom has no networking of its own: the group is MPI's world communicator,
 * and `mpirun -np N loom train ...` (with --hostfile across machines) is the
 * launcher. A trainer given a group of more than one process
 * (loom_train_run.dist) keeps every rank's weights identical: rank 0's
 * initial weights are broadcast, and after each backward pass the gradients
 * are averaged over the ranks before the optimizer's update. Without MPI in
 * the build, or with LOOM_DIST_NONE, the group is one process and every
 * collective is a copy or nothing. Calls are collective: every rank makes
 * them in the same order. One group per process (MPI is initialised once);
 * not thread-safe. */
#ifndef LOOM_DIST_H
#define LOOM_DIST_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the processes were started. */
typedef enum loom_dist_launcher {
    LOOM_DIST_AUTO, /* MPI when the environment says an MPI launcher started this process
                       (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK set), else one process */
    LOOM_DIST_NONE, /* one process, whatever the environment says */
    LOOM_DIST_MPI   /* MPI; an error when loom was built without it (LOOM_MPI=OFF or not found) */
} loom_dist_launcher;

/* Zero is default for every field. */
typedef struct loom_dist_desc {
    loom_dist_launcher launcher; /* see loom_dist_launcher; 0 = AUTO */
    /* A collective that has not completed after this many seconds fails
     * with LOOM_ERR_BACKEND ("a rank died or stalls") instead of waiting
     * forever; 0 = 300; < 0 = no limit. */
    double timeout_s;
} loom_dist_desc;

/* A process group. */
typedef struct loom_dist loom_dist;

/* true when this build has MPI (data parallel across processes). */
bool loom_dist_mpi_built(void);
/* Join the group (MPI_Init with errors returned, not fatal). desc may be NULL. */
loom_status loom_dist_create(loom_ctx *ctx, const loom_dist_desc *desc, loom_dist **out);
/* Leave the group (MPI_Finalize). NULL is a no-op. */
void loom_dist_destroy(loom_dist *d);
/* This process's rank, 0..world-1 (NULL: 0). */
int loom_dist_rank(const loom_dist *d);
/* The number of processes (NULL: 1). */
int loom_dist_world(const loom_dist *d);
/* This process's rank among those on its host (NULL: 0): e.g. to pick a device. */
int loom_dist_local_rank(const loom_dist *d);
/* The processes on this rank's host (NULL: 1). */
int loom_dist_local_world(const loom_dist *d);
/* End every process of the job now with exit code `code` (MPI_Abort): for
 * a program whose rank failed, so the others do not wait for it. One
 * process: returns (the caller exits). */
void loom_dist_abort(loom_dist *d, int code);
/* The transport's name ("mpi" or "none"; static). */
const char *loom_dist_transport(const loom_dist *d);
/* Wait for every rank. */
loom_status loom_dist_barrier(loom_dist *d);
/* Copy root's bytes into every rank's data. */
loom_status loom_dist_broadcast(loom_dist *d, void *data, size_t bytes, int root);
/* Sum count values of dtype dt (LOOM_F32, LOOM_F64 or LOOM_I32) over the
 * ranks, in place, the result on every rank. The order of the additions is
 * MPI's: the result is the same on every rank, but not necessarily equal
 * bit for bit to a sum in another order (see loom_dist_allgather). */
loom_status loom_dist_allreduce_sum(loom_dist *d, void *data, size_t count, loom_dtype dt);
/* A collective in flight (loom_dist_iallreduce_sum). */
typedef struct loom_dist_request loom_dist_request;
/* Start the sum of loom_dist_allreduce_sum without waiting for it (MPI_Iallreduce):
 * data must stay untouched until loom_dist_wait(*req). *req is NULL when
 * there is nothing to wait for (one process). */
loom_status loom_dist_iallreduce_sum(loom_dist *d, void *data, size_t count, loom_dtype dt, loom_dist_request **req);
/* Let MPI progress req without waiting (it moves data only inside MPI
 * calls): *done receives whether it has completed; req stays valid until
 * loom_dist_wait. NULL: done. */
loom_status loom_dist_test(loom_dist *d, loom_dist_request *req, bool *done);
/* Wait for req to complete, then free it (NULL: nothing to wait for). */
loom_status loom_dist_wait(loom_dist *d, loom_dist_request *req);
/* Every rank's `bytes` bytes of send, in rank order, into recv (world *
 * bytes): the building block of sums in a fixed order. */
loom_status loom_dist_allgather(loom_dist *d, const void *send, size_t bytes, void *recv);

#ifdef __cplusplus
}
#endif
#endif
