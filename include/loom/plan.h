/* loom/plan.h — compiling a graph for a backend and running it.
 *
 * defines: loom_plan, loom_plan_desc, loom_plan_compile/destroy,
 *          run, read/write, memory statistics.
 *
 * Compiling runs the graph passes (dead-node removal, memory planning with
 * buffer reuse and in-place ops) and allocates device memory. Running a plan
 * executes every node once: with a graph that contains a backward pass and
 * optimizer updates, one run is one training step. Parameters and states live
 * in the plan and persist across runs; they are initialised at compile time
 * (or shared with another plan, see loom_plan_desc.share).
 */
#ifndef LOOM_PLAN_H
#define LOOM_PLAN_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_plan loom_plan;

/* Options of loom_plan_compile; desc may be NULL (all off). */
typedef struct loom_plan_desc {
    /* Bind parameters and states to the buffers of this plan (same backend)
     * by name instead of allocating them: e.g. an eval graph sharing the
     * training graph's weights. Shapes and dtypes must match. */
    const loom_plan *share;
    /* Do not reuse memory between nodes (for debugging the planner). */
    bool no_reuse;
} loom_plan_desc;

/* Device memory of a compiled plan (loom_plan_memory_stats). */
typedef struct loom_plan_memory {
    size_t arena_bytes;      /* planned peak bytes of intermediate tensors */
    size_t naive_bytes;      /* their total without reuse */
    size_t persistent_bytes; /* parameters, states, inputs, kept tensors */
    int nodes_run;           /* nodes executed per run (after dead-node removal) */
    int inplace_count;       /* nodes that write over their input */
    /* breakdown of persistent_bytes (shared tensors count in the plan that owns them) */
    size_t param_bytes;      /* parameters (the f32 master weights under mixed precision) */
    size_t state_bytes;      /* optimizer state, gradient accumulators, the loss scaler */
    size_t io_bytes;         /* inputs, constants and kept outputs */
    /* of the arena: forward results still live when the backward pass starts
     * (the activations saved for it); 0 without loom_backward */
    size_t activation_bytes;
} loom_plan_memory;

loom_status loom_plan_compile(loom_graph *g, loom_backend *be, const loom_plan_desc *desc, loom_plan **out);
void loom_plan_destroy(loom_plan *p);

/* Copy host data (numel * dtype size bytes, the tensor's dtype) into an input,
 * parameter or state. */
loom_status loom_plan_write(loom_plan *p, const loom_tensor *t, const void *data, size_t bytes);
/* Run every node once. */
loom_status loom_plan_run(loom_plan *p);
/* Copy a readable tensor (input, parameter, state, constant, or kept) to the host. */
loom_status loom_plan_read(loom_plan *p, const loom_tensor *t, void *data, size_t bytes);
/* loom_plan_run, then loom_plan_read of t, in one host round trip where the
 * backend can: the run's submit carries the copy of t (a small result: a
 * loss, a count) and the one wait brings it with the run's own error flags
 * (Vulkan, OpenCL: one submit, one wait, one read per run). */
loom_status loom_plan_run_read(loom_plan *p, const loom_tensor *t, void *data, size_t bytes);
/* Convenience: read any float tensor converted to f32 / f64. */
loom_status loom_plan_read_f32(loom_plan *p, const loom_tensor *t, float *data, size_t count);
loom_status loom_plan_read_f64(loom_plan *p, const loom_tensor *t, double *data, size_t count);
loom_status loom_plan_write_f64(loom_plan *p, const loom_tensor *t, const double *data, size_t count);

void loom_plan_memory_stats(const loom_plan *p, loom_plan_memory *out);
/* The backend p was compiled for (its round-trip counters: loom_backend_stats_get). */
loom_backend *loom_plan_backend(const loom_plan *p);

/* Per-op timing: when on, backends that support it time every node of every
 * run (the CPU backend with a monotonic clock; GPU backends with timestamp
 * queries). loom_plan_profile sums the time per op since profiling was turned
 * on: fills up to max entries sorted by time (largest first), returns the
 * count; LOOM_ERR_UNSUPPORTED (via a negative count) if the backend cannot. */
typedef struct loom_op_time {
    const char *op;     /* op name */
    double seconds;     /* total over all runs */
    int64_t calls;      /* node executions (nodes of this op x runs) */
    int64_t runs;       /* plan runs profiled */
} loom_op_time;
loom_status loom_plan_set_profiling(loom_plan *p, bool on);
int loom_plan_profile(const loom_plan *p, loom_op_time *out, int max);
/* Steps run so far (dropout masks are keyed by it). */
uint64_t loom_plan_step(const loom_plan *p);
void loom_plan_set_step(loom_plan *p, uint64_t step);

#ifdef __cplusplus
}
#endif
#endif
