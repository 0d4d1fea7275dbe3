/* loom/backend.h — choosing and querying a compute backend.
 *
 * defines: loom_backend, loom_backend_desc, loom_backend_create/destroy,
 *          loom_backend_list, loom_backend_describe, loom_backend_supports,
 *          loom_backend_host_alloc/free (pinned / staging host memory),
 *          loom_backend_stats (host round trips: transfers, submits, waits).
 *
 * Backends are compiled in (CPU always; CUDA, Vulkan, OpenCL when built). A
 * backend instance owns one device and its memory; plans compiled for it run
 * there. An op or dtype that a backend lacks is an error when a plan is
 * compiled, naming op, dtype and backend; there is never a silent fallback.
 */
#ifndef LOOM_BACKEND_H
#define LOOM_BACKEND_H

#include <stdio.h>

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_backend loom_backend;

/* Options of loom_backend_create; a zero-initialised desc (or NULL) takes the defaults. */
typedef struct loom_backend_desc {
    int device;  /* device index for GPU backends; -1/0 = default */
    int threads; /* CPU backend threads; 0 = the context's setting */
    /* Deterministic kernels (false = off, the default: each backend picks
     * its fastest kernels). Every backend already gives bitwise-equal
     * results when the same plan is run again with the same inputs on the
     * same device and settings; this flag adds, per backend:
     *   cpu:    results do not depend on the thread count either (GEMMs are
     *           split into a fixed number of panels, the conv2d weight
     *           gradient sums a fixed number of image ranges, and the conv2d
     *           path is chosen without looking at the thread count), so
     *           --threads 1 and --threads 16 give the same bits. Costs a
     *           little speed (fixed splits balance less well).
     *   cuda:   cuBLAS with atomics disallowed (CUBLAS_ATOMICS_NOT_ALLOWED)
     *           and no TF32, even with LOOM_CUDA_TF32=1; loom's own kernels
     *           use no float atomics. Bitwise only on the same GPU model,
     *           driver and cuBLAS version (cuBLAS's own guarantee).
     *   opencl, vulkan: nothing changes (their kernels use no float atomics
     *           and fixed reduction orders already); same device and driver.
     * Results still differ between backends and between dtypes (see
     * reproducible). */
    bool deterministic;
    /* Reproducible mode (false = off): every backend computes every op in
     * one canonical order with the same arithmetic (core/repro.h), so the
     * CPU, Vulkan and OpenCL backends give the same bits for the same f32
     * graph and inputs, and a training run on one replays on another.
     * Implies deterministic. Slower (no OpenBLAS, no vendor-tuned orders).
     * Compiling a plan fails (naming op and node) for an op without a
     * canonical kernel or for a non-f32 float node (no --amp). Bitwise where
     * the device rounds division and sqrt correctly and keeps subnormals
     * (the CPU, lavapipe and PoCL do). Backends without the mode (cuda for
     * now) refuse it when created. */
    bool reproducible;
} loom_backend_desc;

/* name: "cpu", "cuda", "vulkan", "opencl". An unknown or unavailable backend
 * is LOOM_ERR_UNSUPPORTED with the reason in loom_last_error. */
loom_status loom_backend_create(loom_ctx *ctx, const char *name, const loom_backend_desc *desc, loom_backend **out);
void loom_backend_destroy(loom_backend *be);
const char *loom_backend_name(const loom_backend *be);

/* Names of the backends compiled into this library; returns the count and
 * fills up to max names. */
int loom_backend_list(const char **names, int max);
/* Whether backend `name` can run here; if not, *why explains (static text or
 * a string owned by ctx). */
bool loom_backend_available(loom_ctx *ctx, const char *name, const char **why);
/* Whether backend `name` is available and its default device is a real GPU
 * (a CPU device behind a GPU API, such as PoCL or lavapipe, is not). */
bool loom_backend_is_gpu(loom_ctx *ctx, const char *name);
/* Whether the backend has a kernel for op index `op` (see loom_op_name) with output dtype dt. */
bool loom_backend_supports(const loom_backend *be, int op, loom_dtype dt);
/* Human-readable device and capability description. */
void loom_backend_describe(const loom_backend *be, FILE *out);

/* Host memory that the backend copies to and from fastest: pinned
 * (page-locked) memory on CUDA, a persistently mapped host-visible buffer on
 * Vulkan and OpenCL; plain host memory aligned to 64 bytes (a cache line:
 * the loader's streaming stores need it) on a backend without such memory
 * (the CPU) or when be is NULL. The loader puts its batch slots there
 * (loom_loader_desc.backend). *out gets bytes bytes (at least malloc's
 * alignment; bytes 0 still gives a distinct pointer), NULL on failure (an
 * error on the backend's context naming the backend). The block is the
 * caller's until it hands it back with loom_backend_host_free and the same
 * be; every block must be freed before loom_backend_destroy(be). Calls on
 * one backend are not synchronised with each other or with the backend's
 * other calls: make them from the thread that drives the backend; the
 * memory itself may be read and written by any thread. */
loom_status loom_backend_host_alloc(loom_backend *be, size_t bytes, void **out);
/* Hand back a block of loom_backend_host_alloc(be, ...); p NULL does
 * nothing. */
void loom_backend_host_free(loom_backend *be, void *p);

/* Host round trips of one backend instance, counted since it was created or
 * last reset (loom_backend_stats_reset): what a training step costs in
 * transfers and synchronisations, so a program can check that a step moves
 * only its batch in and a few bytes out (tests/test-roundtrips.c), or that a
 * frame loop moves nothing through host memory. Per-step kernel parameters
 * (the plan step that dropout reads: a kernel argument on OpenCL, a word of a
 * host-visible buffer on Vulkan) are not transfers and are not counted. The
 * CUDA backend does not count yet (all zero). */
typedef struct loom_backend_stats {
    /* Host-to-device copies: every tensor write (loom_plan_write, parameter
     * init, checkpoint loads) and, on Vulkan, the small tables a plan
     * uploads when it is prepared; one per call, whatever the path (a copy into mapped
     * memory, a staging copy, a queued clEnqueueWriteBuffer). The CPU
     * backend counts its memcpy into tensor memory the same way. */
    int64_t uploads;
    /* Bytes the uploads moved. */
    int64_t upload_bytes;
    /* Device-to-host copies: tensor reads (loom_plan_read, checkpoints), and
     * the check of a plan's run-time error flags after a run on Vulkan and
     * OpenCL (one per run of a plan with ops that can fail at run time, e.g.
     * cross_entropy's target range). The CPU backend counts its reads. */
    int64_t readbacks;
    /* Bytes the readbacks moved. */
    int64_t readback_bytes;
    /* Batches of work handed to the device: vkQueueSubmit on Vulkan (a plan
     * run, or a staging copy on a device whose memory the host cannot map);
     * on OpenCL, which has no explicit submit, each clFinish and each
     * blocking read (each makes the queue run and the host wait; writes are
     * queued and run with the next of them, except writes over 16 MiB,
     * which block and count). 0 on the CPU backend (its kernels run on the
     * calling thread). */
    int64_t submits;
    /* Times the host blocked until the device was done (a fence wait, a
     * clFinish, a blocking read or write). 0 on the CPU backend. */
    int64_t waits;
} loom_backend_stats;

/* Copy be's counters into *out. */
void loom_backend_stats_get(const loom_backend *be, loom_backend_stats *out);
/* Set be's counters to zero. */
void loom_backend_stats_reset(loom_backend *be);

#ifdef __cplusplus
}
#endif
#endif
