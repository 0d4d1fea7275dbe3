/* backends/cuda/dispatch.cu — the CUDA backend's vtable: create/destroy,
 * plan_prepare (each node's host function records its steps once),
 * plan_run (replay the plan's CUDA graph, or launch the steps directly),
 * profiling with cudaEvents around each node, the run-time error slots, and
 * the recording helpers the op files use.
 *
 * CUDA graphs: the first non-profiled run captures, on the backend's stream
 * (cudaStreamCaptureModeThreadLocal, so other threads' CUDA calls are not
 * disturbed), the reset of the error slots and every step of every node in
 * execution order, instantiates the graph and keeps it with the plan. Each
 * run then: write the plan step into pinned host memory, copy it to the
 * plan's device step value (a small async copy outside the graph, on the
 * same stream), cudaGraphLaunch, synchronize, check the error slots. A
 * capture that fails (a step that cannot be captured) falls back to direct
 * launches for this plan, with a log line. LOOM_CUDA_GRAPHS=0 turns graphs
 * off (every run launches the steps directly).
 *
 * Run-time errors (an index out of range): a node with an error slot gets an
 * int32 in the plan's error buffer, reset to INT32_MAX at the start of each
 * run; its kernel atomicMin's the first bad position into it (and reads
 * nothing out of bounds). After the run the slots are read once; the first
 * node in execution order whose slot changed formats the error (its
 * `check`). The slots come back by an async copy into pinned memory before
 * the run's one synchronize, with the bytes of a plan_run_read behind them
 * (loom_plan_run_read: the loss and count of a training step), so a run is
 * one launch, one wait and no further transfer. */
#include <stdint.h>

#include "common.cuh"

/* the most bytes a run brings back behind its error slots (plan_run_read) */
#define RUN_READ_MAX 256

typedef struct cu_plan {
    int n;
    loom__cu_node *nodes; /* by exec index */
    int32_t *err_buf;     /* device: int32 per exec node */
    bool any_err;
    uint64_t *step_dev;   /* device: the plan step */
    uint64_t *step_host;  /* pinned: its source */
    unsigned char *back;  /* pinned: the error slots, then up to RUN_READ_MAX bytes of a run's read */
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    bool no_graph;        /* capture failed or graphs are off */
    cudaEvent_t *events;  /* [2 n], profiled runs only */
} cu_plan;

/* ---- helpers for the op files ---- */
void *loom__cu_addr(const loom_plan *p, const loom_tensor *t) {
    const loom__addr *a = &p->addr[t->id];
    return (char *)a->buf->ptr + a->off;
}

static loom_status add_step(loom__cu_op *o, const loom__cu_step *s) {
    loom__cu_node *n = o->node;
    if (n->n_step == n->cap_step) {
        int cap = n->cap_step ? 2 * n->cap_step : 4;
        loom__cu_step *v = (loom__cu_step *)realloc(n->steps, (size_t)cap * sizeof *v);
        if (!v) return loom__err(o->cu->ctx, LOOM_ERR_OOM, "cuda: out of host memory recording node '%s'", o->t->name);
        n->steps = v, n->cap_step = cap;
    }
    n->steps[n->n_step++] = *s;
    return LOOM_OK;
}

loom_status loom__cu_add_kernel(loom__cu_op *o, const void *kernel, dim3 grid, dim3 block, size_t smem, void *blob,
                                size_t argv_off, int nargs) {
    (void)nargs;
    loom__cu_step s = {};
    s.kernel = kernel, s.grid = grid, s.block = block, s.smem = smem;
    s.argv = (void **)((char *)blob + argv_off);
    s.blob = blob;
    loom_status st = add_step(o, &s);
    if (st != LOOM_OK) free(blob);
    return st;
}

loom_status loom__cu_call(loom__cu_op *o, loom__cu_call_fn fn, const void *args, size_t size) {
    void *blob = malloc(size ? size : 1);
    if (!blob) return loom__err(o->cu->ctx, LOOM_ERR_OOM, "cuda: out of host memory recording node '%s'", o->t->name);
    if (size) memcpy(blob, args, size);
    loom__cu_step s = {};
    s.fn = fn, s.blob = blob;
    loom_status st = add_step(o, &s);
    if (st != LOOM_OK) free(blob);
    return st;
}

loom_status loom__cu_scratch(loom__cu_op *o, size_t bytes, void **out) {
    loom__cu_node *n = o->node;
    LOOM__ASSERT(n->n_owned < LOOM__CU_MAX_OWNED);
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 256);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return loom__err(o->cu->ctx, e == cudaErrorMemoryAllocation ? LOOM_ERR_OOM : LOOM_ERR_BACKEND,
                         "cuda: %s (node '%s'): cannot allocate %zu bytes of scratch: %s", loom_op_name(o->t->op),
                         o->t->name, bytes, cudaGetErrorString(e));
    }
    n->owned[n->n_owned++] = p;
    *out = p;
    return LOOM_OK;
}

int32_t *loom__cu_err_slot(loom__cu_op *o) {
    cu_plan *cp = (cu_plan *)o->plan->impl;
    o->node->err_slot = (int)(o->node - cp->nodes);
    cp->any_err = true;
    return o->err_buf + o->node->err_slot;
}

/* ---- plans ---- */
static void release_graph(cu_plan *cp) {
    if (cp->exec) cudaGraphExecDestroy(cp->exec);
    if (cp->graph) cudaGraphDestroy(cp->graph);
    cp->exec = NULL, cp->graph = NULL;
}

static void cu_plan_release(loom_backend *be, loom_plan *p) {
    loom__cu *cu = (loom__cu *)be->impl;
    cu_plan *cp = (cu_plan *)p->impl;
    if (!cp) return;
    cudaStreamSynchronize(cu->stream); /* nothing of this plan may still run */
    release_graph(cp);
    for (int e = 0; cp->nodes && e < cp->n; e++) {
        loom__cu_node *n = &cp->nodes[e];
        for (int i = 0; i < n->n_step; i++) free(n->steps[i].blob);
        free(n->steps);
        for (int i = 0; i < n->n_owned; i++) cudaFree(n->owned[i]);
    }
    if (cp->events)
        for (int i = 0; i < 2 * cp->n; i++)
            if (cp->events[i]) cudaEventDestroy(cp->events[i]);
    if (cp->err_buf) cudaFree(cp->err_buf);
    if (cp->step_dev) cudaFree(cp->step_dev);
    if (cp->step_host) cudaFreeHost(cp->step_host);
    if (cp->back) cudaFreeHost(cp->back);
    free(cp->nodes), free(cp->events), free(cp);
    p->impl = NULL;
}

static loom_status cu_plan_prepare(loom_backend *be, loom_plan *p) {
    loom__cu *cu = (loom__cu *)be->impl;
    LOOM_CU_CHECK(be->ctx, cudaSetDevice(cu->device));
    cu_plan *cp = (cu_plan *)calloc(1, sizeof *cp);
    if (!cp) return loom__err(be->ctx, LOOM_ERR_OOM, "cuda: out of memory");
    p->impl = cp;
    cp->n = p->n_exec;
    cp->no_graph = !cu->graphs;
    cp->nodes = (loom__cu_node *)calloc((size_t)(p->n_exec ? p->n_exec : 1), sizeof *cp->nodes);
    cudaError_t e = cp->nodes ? cudaSuccess : cudaErrorMemoryAllocation;
    if (e == cudaSuccess) e = cudaMalloc((void **)&cp->err_buf, (size_t)(p->n_exec ? p->n_exec : 1) * sizeof(int32_t));
    if (e == cudaSuccess) e = cudaMalloc((void **)&cp->step_dev, sizeof(uint64_t));
    if (e == cudaSuccess) e = cudaHostAlloc((void **)&cp->step_host, sizeof(uint64_t), cudaHostAllocDefault);
    if (e == cudaSuccess)
        e = cudaHostAlloc((void **)&cp->back, (size_t)(p->n_exec ? p->n_exec : 1) * sizeof(int32_t) + RUN_READ_MAX,
                          cudaHostAllocDefault);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        cu_plan_release(be, p);
        return loom__cu_fail(be->ctx, e, "allocating the plan's error slots and step value", __FILE__, __LINE__);
    }
    for (int i = 0; i < p->n_exec; i++) {
        const loom_tensor *t = p->exec[i];
        loom__cu_node *n = &cp->nodes[i];
        n->t = t;
        n->err_slot = -1;
        loom__cu_op o = {cu, p, t, n, cp->err_buf, cp->step_dev};
        loom__cu_fn fn = (loom__cu_fn)loom__kernel_variant(&loom__cu_kernels[t->op], be->reproducible);
        LOOM__ASSERT(fn); /* plan.c checked support */
        loom_status st = fn(&o);
        if (st != LOOM_OK) {
            if (loom_last_status(be->ctx) != st)
                loom__err(be->ctx, st, "cuda: preparing op '%s' (node '%s') failed", loom_op_name(t->op), t->name);
            cu_plan_release(be, p);
            return st;
        }
    }
    return LOOM_OK;
}

/* err[i] = INT32_MAX */
__global__ void loom_cu_reset_slots(int32_t *err, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) err[i] = INT32_MAX;
}

static loom_status run_step(loom__cu *cu, const loom__cu_node *n, const loom__cu_step *s) {
    if (s->kernel) {
        cudaError_t e = cudaLaunchKernel(s->kernel, s->grid, s->block, s->argv, s->smem, cu->stream);
        if (e != cudaSuccess) {
            loom__cu_fail(cu->ctx, e, "cudaLaunchKernel", __FILE__, __LINE__);
            return loom__err(cu->ctx, e == cudaErrorMemoryAllocation ? LOOM_ERR_OOM : LOOM_ERR_BACKEND,
                             "cuda: op '%s' (node '%s'): %s", loom_op_name(n->t->op), n->t->name,
                             loom_last_error(cu->ctx));
        }
        return LOOM_OK;
    }
    loom__cu_exec x = {cu, cu->stream};
    loom_status st = s->fn(&x, s->blob);
    if (st != LOOM_OK)
        loom__err(cu->ctx, st, "cuda: op '%s' (node '%s'): %s", loom_op_name(n->t->op), n->t->name,
                  loom_last_error(cu->ctx));
    return st;
}

/* Enqueue the whole plan: error-slot reset, then every step in order; with
 * events around each node when ev is given. */
static loom_status enqueue(loom__cu *cu, cu_plan *cp, cudaEvent_t *ev) {
    if (cp->any_err && cp->n > 0) {
        loom_cu_reset_slots<<<(cp->n + 255) / 256, 256, 0, cu->stream>>>(cp->err_buf, cp->n);
        LOOM_CU_CHECK(cu->ctx, cudaGetLastError());
    }
    for (int i = 0; i < cp->n; i++) {
        const loom__cu_node *n = &cp->nodes[i];
        if (ev) LOOM_CU_CHECK(cu->ctx, cudaEventRecord(ev[2 * i], cu->stream));
        for (int k = 0; k < n->n_step; k++) {
            loom_status st = run_step(cu, n, &n->steps[k]);
            if (st != LOOM_OK) return st;
        }
        if (ev) LOOM_CU_CHECK(cu->ctx, cudaEventRecord(ev[2 * i + 1], cu->stream));
    }
    return LOOM_OK;
}

/* Capture the plan into cp->exec; on a capture failure set cp->no_graph and
 * return LOOM_OK (the caller launches directly). */
static loom_status capture(loom__cu *cu, cu_plan *cp) {
    LOOM_CU_CHECK(cu->ctx, cudaStreamBeginCapture(cu->stream, cudaStreamCaptureModeThreadLocal));
    loom_status st = enqueue(cu, cp, NULL);
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamEndCapture(cu->stream, &g);
    if (st != LOOM_OK || e != cudaSuccess || !g) {
        if (g) cudaGraphDestroy(g);
        (void)cudaGetLastError();
        loom__log(cu->ctx, LOOM_LOG_WARN, "cuda: capturing the plan as a CUDA graph failed (%s%s%s); launching directly",
                  e != cudaSuccess ? cudaGetErrorString(e) : "", e != cudaSuccess && st != LOOM_OK ? "; " : "",
                  st != LOOM_OK ? loom_last_error(cu->ctx) : "");
        cp->no_graph = true;
        return LOOM_OK;
    }
    cp->graph = g;
    e = cudaGraphInstantiate(&cp->exec, g, 0);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        release_graph(cp);
        loom__log(cu->ctx, LOOM_LOG_WARN, "cuda: instantiating the plan's CUDA graph failed (%s); launching directly",
                  cudaGetErrorString(e));
        cp->no_graph = true;
    }
    return LOOM_OK;
}

/* the slots, copied into cp->back before the run's synchronize */
static loom_status check_errors(loom__cu *cu, const loom_plan *p, cu_plan *cp) {
    const int32_t *slots = (const int32_t *)cp->back;
    loom_status st = LOOM_OK;
    for (int i = 0; i < cp->n && st == LOOM_OK; i++) {
        const loom__cu_node *n = &cp->nodes[i];
        if (n->err_slot >= 0 && slots[n->err_slot] != INT32_MAX) st = n->check(cu, p, n->t, slots[n->err_slot]);
    }
    return st;
}

static loom_status collect_profile(loom__cu *cu, loom_plan *p, cu_plan *cp) {
    for (int i = 0; i < cp->n; i++) {
        if (!cp->nodes[i].n_step) continue;
        float ms = 0;
        LOOM_CU_CHECK(cu->ctx, cudaEventElapsedTime(&ms, cp->events[2 * i], cp->events[2 * i + 1]));
        p->node_seconds[i] += 1e-3 * (double)ms;
    }
    return LOOM_OK;
}

/* a read that comes back with a run (plan_run_read) */
typedef struct run_read {
    loom__buffer *buf;
    size_t off, n;
    void *dst;
} run_read;

static loom_status run(loom_backend *be, loom_plan *p, const run_read *rr) {
    loom__cu *cu = (loom__cu *)be->impl;
    cu_plan *cp = (cu_plan *)p->impl;
    bool prof = p->node_seconds != NULL;
    LOOM_CU_CHECK(be->ctx, cudaSetDevice(cu->device));
    /* the per-run value(s) the kernels read from device memory */
    *cp->step_host = p->step;
    LOOM_CU_CHECK(be->ctx, cudaMemcpyAsync(cp->step_dev, cp->step_host, sizeof(uint64_t), cudaMemcpyHostToDevice,
                                           cu->stream));
    loom_status st = LOOM_OK;
    if (prof) {
        if (!cp->events) {
            cp->events = (cudaEvent_t *)calloc((size_t)(2 * (cp->n ? cp->n : 1)), sizeof *cp->events);
            if (!cp->events) return loom__err(be->ctx, LOOM_ERR_OOM, "cuda: out of memory for profiling events");
            for (int i = 0; i < 2 * cp->n; i++) LOOM_CU_CHECK(be->ctx, cudaEventCreate(&cp->events[i]));
        }
        st = enqueue(cu, cp, cp->events);
    } else {
        if (!cp->no_graph && !cp->exec && (st = capture(cu, cp)) != LOOM_OK) return st;
        if (cp->exec) {
            cudaError_t e = cudaGraphLaunch(cp->exec, cu->stream);
            if (e != cudaSuccess) st = loom__cu_fail(be->ctx, e, "cudaGraphLaunch", __FILE__, __LINE__);
        } else {
            st = enqueue(cu, cp, NULL);
        }
    }
    /* the error slots and rr's bytes into pinned memory, on the stream: the synchronize brings them */
    size_t sb = (size_t)cp->n * sizeof(int32_t);
    bool fuse = rr && rr->n <= RUN_READ_MAX;
    if (st == LOOM_OK && cp->any_err) {
        cudaError_t e = cudaMemcpyAsync(cp->back, cp->err_buf, sb, cudaMemcpyDeviceToHost, cu->stream);
        if (e != cudaSuccess) st = loom__cu_fail(be->ctx, e, "cudaMemcpyAsync(error slots)", __FILE__, __LINE__);
    }
    if (st == LOOM_OK && fuse) {
        cudaError_t e = cudaMemcpyAsync(cp->back + sb, (const char *)rr->buf->ptr + rr->off, rr->n,
                                        cudaMemcpyDeviceToHost, cu->stream);
        if (e != cudaSuccess) st = loom__cu_fail(be->ctx, e, "cudaMemcpyAsync(run read)", __FILE__, __LINE__);
    }
    cudaError_t se = cudaStreamSynchronize(cu->stream);
    loom__stat_sync(&be->stats, 1, 1);
    if (st != LOOM_OK) return st;
    if (se != cudaSuccess) return loom__cu_fail(be->ctx, se, "cudaStreamSynchronize (running the plan)", __FILE__, __LINE__);
    if (cp->any_err || fuse) loom__stat_transfer(&be->stats, false, (cp->any_err ? sb : 0) + (fuse ? rr->n : 0));
    if (fuse) memcpy(rr->dst, cp->back + sb, rr->n);
    if (prof && (st = collect_profile(cu, p, cp)) != LOOM_OK) return st;
    if (cp->any_err && (st = check_errors(cu, p, cp)) != LOOM_OK) return st;
    return rr && !fuse ? loom__cu_buffer_read(be, rr->buf, rr->off, rr->dst, rr->n) : LOOM_OK;
}

static loom_status cu_plan_run(loom_backend *be, loom_plan *p) { return run(be, p, NULL); }

static loom_status cu_plan_run_read(loom_backend *be, loom_plan *p, loom__buffer *buf, size_t off, void *dst, size_t n) {
    run_read rr = {buf, off, n, dst};
    return run(be, p, &rr);
}

static loom_status cu_synchronize(loom_backend *be) {
    loom__cu *cu = (loom__cu *)be->impl;
    LOOM_CU_CHECK(be->ctx, cudaStreamSynchronize(cu->stream));
    return LOOM_OK;
}

/* ---- the backend ---- */
static loom_status cu_create(loom_backend *be, const loom_backend_desc *desc) {
    loom__cu *cu = (loom__cu *)calloc(1, sizeof *cu);
    if (!cu) return loom__err(be->ctx, LOOM_ERR_OOM, "cuda: out of memory");
    cu->ctx = be->ctx;
    loom_status st = loom__cu_open(cu, desc);
    if (st != LOOM_OK) {
        loom__cu_close(cu);
        free(cu);
        return st;
    }
    be->impl = cu;
    return LOOM_OK;
}

static void cu_destroy(loom_backend *be) {
    loom__cu *cu = (loom__cu *)be->impl;
    if (!cu) return;
    loom__cu_close(cu);
    free(cu);
}

extern "C" const loom__backend_vtbl loom__cuda_backend = {
    .name = "cuda",
    .available = loom__cu_available,
    .is_gpu = loom__cu_is_gpu,
    .create = cu_create,
    .destroy = cu_destroy,
    .describe = loom__cu_describe,
    .buffer_alloc = loom__cu_buffer_alloc,
    .buffer_free = loom__cu_buffer_free,
    .buffer_write = loom__cu_buffer_write,
    .buffer_read = loom__cu_buffer_read,
    .host_alloc = loom__cu_host_alloc,
    .host_free = loom__cu_host_free,
    .plan_prepare = cu_plan_prepare,
    .plan_run = cu_plan_run,
    .plan_run_read = cu_plan_run_read,
    .plan_release = cu_plan_release,
    .plan_fused = NULL, /* no fused groups yet */
    .synchronize = cu_synchronize,
    .f64 = NULL, /* every CUDA GPU has IEEE doubles */
    .can_profile = true,
    .reproducible = false, /* no canonical kernels (core/repro.h) on this backend */
    .kernels = loom__cu_kernels,
};
