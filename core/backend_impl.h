/* core/backend_impl.h — the backend interface (a table of function pointers)
 * and the compiled plan that backends execute.
 *
 * defines: loom__backend_vtbl, loom__kernel, struct loom_backend,
 *          struct loom_plan, loom__plan_addr.
 *
 * A backend fills one loom__backend_vtbl. Its op table `kernels` is indexed by
 * op; an entry with fn == NULL, or without the dtype's bit in `dtypes`, means
 * "unsupported": there is no second list. The kernel function's type is the
 * backend's own (the core never calls it); the core only reads the mask.
 *
 * Reproducible mode (core/repro.h) is a variant of an entry, not a second
 * table: `repro` is the kernel that computes the op in the canonical order,
 * beside the ordinary `fn`; NULL where `fn` is already exact by construction.
 * Every backend's dispatcher picks the variant through loom__kernel_variant,
 * and ordinary kernels never test the mode.
 */
#ifndef LOOM_CORE_BACKEND_IMPL_H
#define LOOM_CORE_BACKEND_IMPL_H

#include "impl.h"
#include "params.h"

typedef void (*loom__fnptr)(void);
typedef struct loom__kernel {
    loom__fnptr fn;    /* backend-specific kernel (or recorder); NULL = unsupported */
    uint32_t dtypes;   /* bit (1u << loom_dtype) per supported output dtype */
    loom__fnptr repro; /* reproducible mode's variant of fn; NULL = fn serves both */
} loom__kernel;

/* The kernel to run for entry k: its reproducible variant when the backend
 * runs in reproducible mode and the entry has one, else the ordinary one. */
static inline loom__fnptr loom__kernel_variant(const loom__kernel *k, bool reproducible) {
    return reproducible && k->repro ? k->repro : k->fn;
}

#define LOOM__DT(d) (1u << LOOM_##d)
#define LOOM__DT_FLOAT (LOOM__DT(F32) | LOOM__DT(F16) | LOOM__DT(BF16) | LOOM__DT(F64))
#define LOOM__DT_ALL (LOOM__DT_FLOAT | LOOM__DT(I32) | LOOM__DT(U8))

typedef struct loom__backend_vtbl {
    const char *name;
    /* Can this backend run here? If not, *why says why. */
    bool (*available)(loom_ctx *ctx, const char **why);
    /* Is its default device a real GPU (not a CPU device such as PoCL or
     * lavapipe)? NULL = no. `--backend auto` only picks GPU devices. */
    bool (*is_gpu)(loom_ctx *ctx);
    loom_status (*create)(loom_backend *be, const loom_backend_desc *desc);
    void (*destroy)(loom_backend *be);
    void (*describe)(const loom_backend *be, FILE *out);

    /* device memory */
    loom_status (*buffer_alloc)(loom_backend *be, size_t bytes, loom__buffer **out);
    void (*buffer_free)(loom_backend *be, loom__buffer *buf);
    loom_status (*buffer_write)(loom_backend *be, loom__buffer *buf, size_t off, const void *src, size_t n);
    loom_status (*buffer_read)(loom_backend *be, loom__buffer *buf, size_t off, void *dst, size_t n);
    /* pinned / staging host memory for the data loader (may be NULL: malloc is used) */
    loom_status (*host_alloc)(loom_backend *be, size_t bytes, void **out);
    void (*host_free)(loom_backend *be, void *p);

    /* plans: prepare once after memory planning (record command buffers,
     * capture graphs...), run once per step, release before the plan's memory */
    loom_status (*plan_prepare)(loom_backend *be, loom_plan *p);
    loom_status (*plan_run)(loom_backend *be, loom_plan *p);
    /* plan_run, then n bytes of buf at off to dst, in one round trip
     * (loom_plan_run_read); NULL: plan_run, then buffer_read */
    loom_status (*plan_run_read)(loom_backend *be, loom_plan *p, loom__buffer *buf, size_t off, void *dst, size_t n);
    void (*plan_release)(loom_backend *be, loom_plan *p);
    /* how many fused groups (core/fuse.h) the prepared plan runs as fused
     * kernels (tests); NULL: none */
    int (*plan_fused)(const loom_plan *p);
    loom_status (*synchronize)(loom_backend *be);
    /* Do the device's kernels compute in IEEE binary64 (augment_u8's
     * RandomAffine needs it)? NULL = yes (the CPU, CUDA). */
    bool (*f64)(const loom_backend *be);
    bool can_profile; /* plan_run fills p->node_seconds when it is set */
    bool reproducible; /* implements reproducible mode (core/repro.h) for every op flagged LOOM__OPF_REPRO */

    const loom__kernel *kernels; /* [LOOM_OP_COUNT] */
} loom__backend_vtbl;

struct loom_backend {
    loom_ctx *ctx;
    const loom__backend_vtbl *vt;
    void *impl;        /* backend-private */
    bool reproducible; /* loom_backend_desc.reproducible (core/repro.h) */
    loom_backend_stats stats; /* host round trips (loom/backend.h): each backend adds its own events */
};

/* The vtable's f64: whether be's kernels have 64-bit floats. */
static inline bool loom__backend_f64(const loom_backend *be) { return !be->vt->f64 || be->vt->f64(be); }

/* Count one transfer of `bytes` (up: host to device, else device to host)
 * into the counters s points at (NULL: nothing counted). */
static inline void loom__stat_transfer(loom_backend_stats *s, bool up, size_t bytes) {
    if (!s) return;
    if (up) s->uploads++, s->upload_bytes += (int64_t)bytes;
    else s->readbacks++, s->readback_bytes += (int64_t)bytes;
}

/* Count submits and host waits into the counters s points at (NULL: nothing). */
static inline void loom__stat_sync(loom_backend_stats *s, int submits, int waits) {
    if (!s) return;
    s->submits += submits;
    s->waits += waits;
}

/* Where a tensor lives in a plan. */
typedef struct loom__addr {
    loom__buffer *buf;
    size_t off;
} loom__addr;

struct loom_plan {
    loom_graph *g;
    loom_backend *be;
    loom_ctx *ctx;
    int n_exec;
    loom_tensor **exec;       /* nodes to run, in order (no leaves, no views) */
    loom__addr *addr;         /* by node id; buf NULL for removed nodes */
    bool *inplace;            /* by node id: output shares src[0]'s memory */
    loom__buffer *arena;      /* intermediates */
    loom__buffer **owned;     /* persistent buffers this plan allocated */
    int n_owned;
    const loom_plan *share;
    loom_plan_memory mem;
    uint64_t step;
    double *node_seconds;     /* by exec index, accumulated while profiling (NULL = off) */
    int64_t profiled_runs;
    void *impl;               /* backend-private per-plan data */
    int n_nodes;              /* the graph's node count at compile (length of addr, inplace) */
    int shared_by;            /* plans compiled with desc.share = this one (never decremented) */
    bool prepare_pending;     /* loom__plan_rebind released the backend's plan data: the next
                                 run calls plan_prepare first */
};

/* Move leaf t (an input, parameter or state) of p into buf at byte offset
 * off: buf is a buffer the backend made (e.g. a wrapper around memory the
 * application owns) and belongs to the plan from now on (freed with
 * buffer_free at loom_plan_destroy). Views of t follow; the buffer t had is
 * freed; the backend's plan data is released now and prepared again before
 * the next run. Errors, prefixed with `what`: t not from p's graph, not an
 * input/parameter/state, or shared with another plan (loom_plan_desc.share,
 * either way). On error nothing changes and buf is still the caller's. The
 * caller checks size and alignment (backend rules). */
loom_status loom__plan_rebind(loom_plan *p, const loom_tensor *t, loom__buffer *buf, size_t off, const char *what);

/* How many fused groups (core/fuse.h) prepared plan p runs as fused kernels
 * (0 when its backend fuses none); for tests. */
int loom__plan_fused_groups(const loom_plan *p);

/* The pool geometry table (LOOM_G_POOL_LEN values, layout LOOM_G_POOL_*) of
 * pool node t or its gradient, from x's dims xd and y's dims yd (core/ops/pool2d.c). */
void loom__pool_geom(const loom_tensor *t, const int64_t *xd, const int64_t *yd, int64_t *g);
/* Whether pool node t (or its gradient) on x dims xd is a 2x2 stride-2
 * unpadded pooling of even planes (the GPU backends' one-window-per-thread
 * max kernels), with fewer than 2^31 windows; *windows: (N*C) * OH * OW. */
bool loom__pool_max2(const loom_tensor *t, const int64_t *xd, int64_t *windows);

/* The backends compiled in, NULL-terminated: defined by backends/registry.c,
 * where each backend that is built adds its table. The core reads the list
 * and names no backend. */
extern const loom__backend_vtbl *const loom__backends[];

#endif
