/* backends/opencl/dispatch.c — the OpenCL backend's vtable: create/destroy,
 * plan_prepare (each node's host function records its kernels, arguments and
 * launches once), plan_run (enqueue every launch in order on one in-order
 * queue, wait for it: clFinish, or the blocking read of the error slots, then
 * check them), profiling from event timestamps, and the helpers the op files
 * use to set arguments and launch.
 *
 * Run-time errors (an index out of range): a node with an error slot gets an
 * int32 in the plan's error buffer, reset to INT32_MAX before each run; its
 * kernel atomic_min's the first bad position into it (and reads nothing out
 * of bounds). After the run the slots are read once; the first node in
 * execution order whose slot changed formats the error (its `check`). */
#include <stdint.h>

#include "opencl.h"

/* the most bytes a run brings back behind its error slots (plan_run_read) */
#define RUN_READ_MAX 256

typedef struct cl_plan {
    int n;
    loom__cl_node *nodes; /* by exec index */
    cl_mem err_buf;       /* int32 per exec node */
    bool any_err;
    cl_event *events;     /* [n * LOOM__CL_MAX_LAUNCH], profiled runs only */
    int n_fused;          /* groups launched by a fused kernel (core/fuse.h) */
} cl_plan;

/* ---- helpers for the op files ---- */
cl_mem loom__cl_mem(const loom_plan *p, const loom_tensor *t) { return p->addr[t->id].buf->mem; }

size_t loom__cl_elem_off(const loom_plan *p, const loom_tensor *t) {
    size_t es = loom_dtype_size(t->dtype), off = p->addr[t->id].off;
    LOOM__ASSERT(off % es == 0);
    return off / es;
}

bool loom__cl_overlap(const loom_plan *p, const loom_tensor *a, const loom_tensor *b) {
    if (loom__cl_mem(p, a) != loom__cl_mem(p, b)) return false;
    size_t a0 = p->addr[a->id].off, b0 = p->addr[b->id].off;
    size_t a1 = a0 + (size_t)loom_tensor_numel(a) * loom_dtype_size(a->dtype);
    size_t b1 = b0 + (size_t)loom_tensor_numel(b) * loom_dtype_size(b->dtype);
    return a0 < b1 && b0 < a1;
}

loom_status loom__cl_kernel(loom__cl_op *o, loom_dtype dt, const char *name, cl_kernel *out) {
    loom__cl_node *n = o->node;
    LOOM__ASSERT(n->n_kernel < LOOM__CL_MAX_LAUNCH);
    cl_program prog;
    loom_status st = loom__cl_program(o->cl, dt, &prog);
    if (st != LOOM_OK) return st;
    cl_int err;
    cl_kernel k = clCreateKernel(prog, name, &err);
    if (err != CL_SUCCESS)
        return loom__err(o->cl->ctx, LOOM_ERR_BACKEND, "opencl: clCreateKernel('%s') for op '%s' (node '%s') failed: %s (%d)",
                         name, loom_op_name(o->t->op), o->t->name, loom__cl_errstr(err), (int)err);
    n->kernel[n->n_kernel++] = k;
    *out = k;
    return LOOM_OK;
}

loom__cl_args loom__cl_args_begin(loom__cl_op *o, cl_kernel k) { return (loom__cl_args){o, k, 0, CL_SUCCESS, 0}; }

static void set(loom__cl_args *a, size_t size, const void *v) {
    cl_int e = clSetKernelArg(a->k, a->i, size, v);
    if (e != CL_SUCCESS && a->err == CL_SUCCESS) a->err = e, a->err_index = a->i;
    a->i++;
}

void loom__cl_arg_t(loom__cl_args *a, const loom_tensor *t) {
    cl_mem m = loom__cl_mem(a->o->plan, t);
    cl_ulong off = loom__cl_elem_off(a->o->plan, t);
    set(a, sizeof m, &m);
    set(a, sizeof off, &off);
}
void loom__cl_arg_mem(loom__cl_args *a, cl_mem m) { set(a, sizeof m, &m); }
void loom__cl_arg_i32(loom__cl_args *a, int32_t v) { cl_int x = v; set(a, sizeof x, &x); }
void loom__cl_arg_u32(loom__cl_args *a, uint32_t v) { cl_uint x = v; set(a, sizeof x, &x); }
void loom__cl_arg_i64(loom__cl_args *a, int64_t v) { cl_long x = v; set(a, sizeof x, &x); }
void loom__cl_arg_u64(loom__cl_args *a, uint64_t v) { cl_ulong x = v; set(a, sizeof x, &x); }
void loom__cl_arg_f32(loom__cl_args *a, float v) { cl_float x = v; set(a, sizeof x, &x); }
void loom__cl_arg_local(loom__cl_args *a, size_t bytes) { set(a, bytes, NULL); }

loom_status loom__cl_args_end(loom__cl_args *a) {
    if (a->err == CL_SUCCESS) return LOOM_OK;
    char name[64] = "?";
    clGetKernelInfo(a->k, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL);
    name[sizeof name - 1] = 0;
    return loom__err(a->o->cl->ctx, LOOM_ERR_BACKEND, "opencl: clSetKernelArg(kernel '%s', arg %u) for node '%s' failed: %s (%d)",
                     name, a->err_index, a->o->t->name, loom__cl_errstr(a->err), (int)a->err);
}

static loom_status own(loom__cl_op *o, cl_mem m) {
    loom__cl_node *n = o->node;
    LOOM__ASSERT(n->n_owned < LOOM__CL_MAX_OWNED);
    n->owned[n->n_owned++] = m;
    return LOOM_OK;
}

loom_status loom__cl_meta(loom__cl_op *o, const int64_t *v, int count, cl_mem *out) {
    cl_long tmp[64];
    LOOM__ASSERT(count > 0 && count <= 64);
    for (int i = 0; i < count; i++) tmp[i] = v[i];
    cl_int err;
    *out = clCreateBuffer(o->cl->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)count * sizeof(cl_long), tmp,
                          &err);
    LOOM_CL_CHECK_ERR(o->cl->ctx, err, "clCreateBuffer(geometry table)");
    return own(o, *out);
}

loom_status loom__cl_scratch(loom__cl_op *o, size_t bytes, cl_mem *out) {
    cl_int err;
    *out = clCreateBuffer(o->cl->context, CL_MEM_READ_WRITE, bytes ? bytes : 64, NULL, &err);
    LOOM_CL_CHECK_ERR(o->cl->ctx, err, "clCreateBuffer(scratch)");
    return own(o, *out);
}

void loom__cl_err_slot(loom__cl_op *o, int *slot) {
    cl_plan *cp = o->plan->impl;
    o->node->err_slot = (int)(o->node - cp->nodes);
    cp->any_err = true;
    *slot = o->node->err_slot;
}

size_t loom__cl_reduce_local(const loom__cl *cl, int64_t n) {
    size_t lim = cl->max_wg < 256 ? cl->max_wg : 256, l = 1;
    while (l < lim && (int64_t)l < n) l <<= 1;
    while (l > lim) l >>= 1;
    return l;
}

bool loom__cl_rows(const loom__cl *cl) {
    int e = loom__env_switch("LOOM_OPENCL_ROWS");
    return !cl->reproducible && (e >= 0 ? e == 1 : (cl->type & CL_DEVICE_TYPE_CPU) != 0);
}

size_t loom__cl_row_local(const loom__cl *cl, int64_t n) { return loom__cl_rows(cl) ? 1 : loom__cl_reduce_local(cl, n); }

/* records a launch of global0 x global1 items in work-groups of local x 1
 * (one dimension when global1 is 1) */
static loom_status add_launch(loom__cl_op *o, cl_kernel k, size_t global, size_t local, size_t global1) {
    loom__cl_node *n = o->node;
    LOOM__ASSERT(n->n_launch < LOOM__CL_MAX_LAUNCH);
    n->l[n->n_launch++] = (loom__cl_launch){k, global1 > 1 ? 2 : 1, {global, global1}, {local, 1}};
    return LOOM_OK;
}

loom_status loom__cl_launch_1d(loom__cl_op *o, cl_kernel k, int64_t n) {
    if (n <= 0) return LOOM_OK;
    size_t local = o->cl->max_wg < 256 ? o->cl->max_wg : 256;
    size_t global = ((size_t)n + local - 1) / local * local;
    return add_launch(o, k, global, local, 1);
}

loom_status loom__cl_launch_2d(loom__cl_op *o, cl_kernel k, int64_t n0, int64_t n1) {
    if (n0 <= 0 || n1 <= 0) return LOOM_OK;
    size_t l0 = o->cl->max_wg < 64 ? o->cl->max_wg : 64;
    return add_launch(o, k, ((size_t)n0 + l0 - 1) / l0 * l0, l0, (size_t)n1);
}

loom_status loom__cl_launch_2d_local(loom__cl_op *o, cl_kernel k, int64_t n0, size_t l0, int64_t n1) {
    if (n0 <= 0 || n1 <= 0) return LOOM_OK;
    return add_launch(o, k, ((size_t)n0 + l0 - 1) / l0 * l0, l0, (size_t)n1);
}

loom_status loom__cl_launch_groups(loom__cl_op *o, cl_kernel k, int64_t groups, size_t local) {
    if (groups <= 0) return LOOM_OK;
    return add_launch(o, k, (size_t)groups * local, local, 1);
}

/* ---- plans ---- */
static void release_nodes(cl_plan *cp) {
    for (int e = 0; e < cp->n; e++) {
        loom__cl_node *n = &cp->nodes[e];
        for (int i = 0; i < n->n_kernel; i++) clReleaseKernel(n->kernel[i]);
        for (int i = 0; i < n->n_owned; i++) clReleaseMemObject(n->owned[i]);
    }
}

static void cl_plan_release(loom_backend *be, loom_plan *p) {
    (void)be;
    cl_plan *cp = p->impl;
    if (!cp) return;
    if (cp->nodes) release_nodes(cp);
    if (cp->err_buf) clReleaseMemObject(cp->err_buf);
    free(cp->nodes), free(cp->events), free(cp);
    p->impl = NULL;
}

static loom_status cl_plan_prepare(loom_backend *be, loom_plan *p) {
    loom__cl *cl = be->impl;
    cl_plan *cp = calloc(1, sizeof *cp);
    if (!cp) return loom__err(be->ctx, LOOM_ERR_OOM, "opencl: out of memory");
    p->impl = cp;
    cp->n = p->n_exec;
    cp->nodes = calloc((size_t)(p->n_exec ? p->n_exec : 1), sizeof *cp->nodes);
    if (!cp->nodes) {
        cl_plan_release(be, p);
        return loom__err(be->ctx, LOOM_ERR_OOM, "opencl: out of memory");
    }
    cl_int err;
    cp->err_buf = clCreateBuffer(cl->context, CL_MEM_READ_WRITE,
                                 (size_t)(p->n_exec ? p->n_exec : 1) * sizeof(cl_int) + RUN_READ_MAX, NULL, &err);
    if (err != CL_SUCCESS) {
        cl_plan_release(be, p);
        return loom__cl_fail(be->ctx, err, "clCreateBuffer(error slots)", __FILE__, __LINE__);
    }
    loom__fusion *fu = NULL;
    bool *fused = calloc((size_t)(p->n_exec ? p->n_exec : 1), sizeof *fused);
    loom_status st = fused ? LOOM_OK : loom__err(be->ctx, LOOM_ERR_OOM, "opencl: out of memory");
    if (st == LOOM_OK && !cl->reproducible && loom__env_switch("LOOM_OPENCL_FUSE") != 0)
        st = loom__fusion_plan(p, NULL, LOOM__FUSE_POOL_GRAD | LOOM__FUSE_ATTN_GRAD, &fu);
    const loom_tensor *t = NULL; /* the node being prepared */
    for (int e = 0; e < p->n_exec && st == LOOM_OK; e++) {
        t = p->exec[e];
        loom__cl_node *n = &cp->nodes[e];
        n->t = t;
        n->err_slot = -1;
        if ((n->fused = fused[e])) continue; /* launched with its group */
        loom__cl_op o = {cl, p, t, n, cp->err_buf, cp->nodes, fused};
        bool done = false;
        if (fu && fu->group_at[e] >= 0 && (st = loom__cl_fused(&o, &fu->groups[fu->group_at[e]], &done)) != LOOM_OK)
            break;
        if (done) {
            cp->n_fused++;
            continue;
        }
        loom__cl_fn fn = (loom__cl_fn)loom__kernel_variant(&loom__cl_kernels[t->op], cl->reproducible);
        LOOM__ASSERT(fn); /* plan.c checked support */
        st = fn(&o);
    }
    loom__fusion_free(fu);
    free(fused);
    if (st != LOOM_OK) {
        if (t && loom_last_status(be->ctx) != st)
            loom__err(be->ctx, st, "opencl: preparing op '%s' (node '%s') failed", loom_op_name(t->op), t->name);
        cl_plan_release(be, p);
        return st;
    }
    return LOOM_OK;
}

static int cl_plan_fused(const loom_plan *p) {
    const cl_plan *cp = p->impl;
    return cp ? cp->n_fused : 0;
}

static loom_status profile_queue(loom__cl *cl) {
    if (cl->queue_prof) return LOOM_OK;
    cl_int err;
    cl->queue_prof = clCreateCommandQueue(cl->context, cl->device, CL_QUEUE_PROFILING_ENABLE, &err);
    LOOM_CL_CHECK_ERR(cl->ctx, err, "clCreateCommandQueue(CL_QUEUE_PROFILING_ENABLE)");
    return LOOM_OK;
}

/* node_seconds[e] += time from the first launch's start to the last one's end */
static loom_status collect_profile(loom__cl *cl, loom_plan *p, cl_plan *cp) {
    loom_status st = LOOM_OK;
    for (int e = 0; e < cp->n; e++) {
        const loom__cl_node *n = &cp->nodes[e];
        if (!n->n_launch) continue;
        cl_event *ev = cp->events + (size_t)e * LOOM__CL_MAX_LAUNCH;
        cl_ulong t0 = 0, t1 = 0;
        if (st == LOOM_OK) {
            cl_int a = clGetEventProfilingInfo(ev[0], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
            cl_int b = clGetEventProfilingInfo(ev[n->n_launch - 1], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
            if (a != CL_SUCCESS || b != CL_SUCCESS)
                st = loom__cl_fail(cl->ctx, a != CL_SUCCESS ? a : b, "clGetEventProfilingInfo", __FILE__, __LINE__);
            else if (t1 > t0)
                p->node_seconds[e] += 1e-9 * (double)(t1 - t0);
        }
        for (int i = 0; i < n->n_launch; i++) clReleaseEvent(ev[i]);
    }
    return st;
}

/* a read that comes back with a run (plan_run_read) */
typedef struct run_read {
    loom__buffer *buf;
    size_t off, n;
    void *dst;
} run_read;

/* The error slots, and rr's bytes copied behind them, in one blocking read
 * (the run's wait) */
static loom_status check_errors(loom__cl *cl, cl_command_queue q, loom_plan *p, cl_plan *cp, const run_read *rr) {
    size_t sb = (size_t)cp->n * sizeof(cl_int), bytes = sb + (rr ? rr->n : 0);
    cl_int *slots = malloc(bytes ? bytes : 1);
    if (!slots) return loom__err(cl->ctx, LOOM_ERR_OOM, "opencl: out of memory");
    cl_int err = clEnqueueReadBuffer(q, cp->err_buf, CL_TRUE, 0, bytes, slots, 0, NULL, NULL);
    loom__stat_transfer(cl->stats, false, bytes);
    loom__stat_sync(cl->stats, 1, 1);
    if (err == CL_SUCCESS && rr) memcpy(rr->dst, (char *)slots + sb, rr->n);
    if (err == CL_SUCCESS && q == cl->queue) loom__cl_writes_done(cl);
    loom_status st = LOOM_OK;
    if (err != CL_SUCCESS) st = loom__cl_fail(cl->ctx, err, "clEnqueueReadBuffer(error slots)", __FILE__, __LINE__);
    for (int e = 0; e < cp->n && st == LOOM_OK; e++) {
        const loom__cl_node *n = &cp->nodes[e];
        if (n->err_slot >= 0 && slots[n->err_slot] != INT32_MAX) st = n->check(cl, p, n->t, slots[n->err_slot]);
    }
    free(slots);
    return st;
}

static loom_status run(loom_backend *be, loom_plan *p, const run_read *rr) {
    loom__cl *cl = be->impl;
    cl_plan *cp = p->impl;
    bool prof = p->node_seconds != NULL;
    loom_status st;
    if (prof) {
        if ((st = profile_queue(cl)) != LOOM_OK) return st;
        if (!cp->events && !(cp->events = calloc((size_t)(cp->n ? cp->n : 1) * LOOM__CL_MAX_LAUNCH, sizeof *cp->events)))
            return loom__err(be->ctx, LOOM_ERR_OOM, "opencl: out of memory for profiling events");
    }
    cl_command_queue q = prof ? cl->queue_prof : cl->queue;
    if (prof) { /* order against work on the other queue */
        LOOM_CL_CHECK(be->ctx, clFinish(cl->queue));
        loom__stat_sync(cl->stats, 1, 1);
        loom__cl_writes_done(cl);
    }
    if (cp->any_err) {
        cl_int none = INT32_MAX;
        LOOM_CL_CHECK(be->ctx, clEnqueueFillBuffer(q, cp->err_buf, &none, sizeof none, 0, (size_t)cp->n * sizeof none,
                                                   0, NULL, NULL));
    }
    int launched = 0; /* nodes whose events exist */
    st = LOOM_OK;
    for (int e = 0; e < cp->n && st == LOOM_OK; e++) {
        loom__cl_node *n = &cp->nodes[e];
        if (n->before_run && (st = n->before_run(cl, p, n)) != LOOM_OK) break;
        for (int i = 0; i < n->n_launch; i++) {
            const loom__cl_launch *l = &n->l[i];
            cl_event *ev = prof ? &cp->events[(size_t)e * LOOM__CL_MAX_LAUNCH + i] : NULL;
            cl_int err = clEnqueueNDRangeKernel(q, l->k, l->dim, NULL, l->global, l->local[0] ? l->local : NULL, 0,
                                                NULL, ev);
            if (err != CL_SUCCESS) {
                for (int j = 0; prof && j < i; j++) clReleaseEvent(cp->events[(size_t)e * LOOM__CL_MAX_LAUNCH + j]);
                st = loom__cl_fail(be->ctx, err, "clEnqueueNDRangeKernel", __FILE__, __LINE__);
                loom__err(be->ctx, st, "opencl: op '%s' (node '%s'): %s", loom_op_name(n->t->op), n->t->name,
                          loom_last_error(be->ctx));
                break;
            }
        }
        if (st == LOOM_OK) launched = e + 1;
    }
    /* rr's bytes go behind the error slots (one read brings both), or are
     * read alone when there are no slots */
    bool fuse = rr && !prof && st == LOOM_OK && rr->n <= RUN_READ_MAX;
    if (fuse && cp->any_err) {
        cl_int err = clEnqueueCopyBuffer(q, rr->buf->mem, cp->err_buf, rr->off, (size_t)cp->n * sizeof(cl_int), rr->n,
                                         0, NULL, NULL);
        if (err != CL_SUCCESS) st = loom__cl_fail(be->ctx, err, "clEnqueueCopyBuffer(run read)", __FILE__, __LINE__);
    }
    /* the blocking read of the error slots (or of rr) waits for the in-order
     * queue: then it is the run's one wait, with no clFinish before it */
    bool read_waits = (cp->any_err || fuse) && !prof && st == LOOM_OK;
    cl_int ferr = CL_SUCCESS;
    if (!read_waits) ferr = clFinish(q), loom__stat_sync(cl->stats, 1, 1);
    if (ferr == CL_SUCCESS && !read_waits && !prof) loom__cl_writes_done(cl);
    if (prof) {
        /* release what was enqueued; collect times only after a clean run */
        int keep = cp->n;
        cp->n = launched;
        loom_status pst = st == LOOM_OK && ferr == CL_SUCCESS ? collect_profile(cl, p, cp) : LOOM_OK;
        if (st != LOOM_OK || ferr != CL_SUCCESS)
            for (int e = 0; e < launched; e++)
                for (int i = 0; i < cp->nodes[e].n_launch; i++)
                    clReleaseEvent(cp->events[(size_t)e * LOOM__CL_MAX_LAUNCH + i]);
        cp->n = keep;
        if (st == LOOM_OK) st = pst;
    }
    if (st != LOOM_OK) return st;
    if (ferr != CL_SUCCESS) return loom__cl_fail(be->ctx, ferr, "clFinish", __FILE__, __LINE__);
    if (cp->any_err && (st = check_errors(cl, q, p, cp, fuse ? rr : NULL)) != LOOM_OK) return st;
    if (rr && !(fuse && cp->any_err)) return loom__cl_buffer_read(be, rr->buf, rr->off, rr->dst, rr->n);
    return LOOM_OK;
}

static loom_status cl_plan_run(loom_backend *be, loom_plan *p) { return run(be, p, NULL); }

static loom_status cl_plan_run_read(loom_backend *be, loom_plan *p, loom__buffer *buf, size_t off, void *dst, size_t n) {
    run_read rr = {buf, off, n, dst};
    return run(be, p, &rr);
}

static loom_status cl_synchronize(loom_backend *be) {
    loom__cl *cl = be->impl;
    LOOM_CL_CHECK(be->ctx, clFinish(cl->queue));
    loom__stat_sync(cl->stats, 1, 1);
    loom__cl_writes_done(cl);
    return LOOM_OK;
}

/* ---- the backend ---- */
static loom_status cl_create(loom_backend *be, const loom_backend_desc *desc) {
    loom__cl *cl = calloc(1, sizeof *cl);
    if (!cl) return loom__err(be->ctx, LOOM_ERR_OOM, "opencl: out of memory");
    cl->ctx = be->ctx;
    cl->stats = &be->stats;
    cl->reproducible = desc && desc->reproducible;
    static const char *const sw[] = {"LOOM_OPENCL_CONV_ROWS", "LOOM_OPENCL_CONV_IMPLICIT", "LOOM_OPENCL_CONV_GI_FWD",
                                     "LOOM_OPENCL_BN_SPLIT", "LOOM_OPENCL_CONV_GW_DOT",
                                     "LOOM_OPENCL_CONV_SHARE_COLS", "LOOM_OPENCL_POOL_2D",
                                     "LOOM_OPENCL_FUSE", "LOOM_OPENCL_ATTN_GEMM", "LOOM_OPENCL_ROWS",
                                     "LOOM_OPENCL_CONV_ONE", "LOOM_OPENCL_CONV_GI_FUSED",
                                     "LOOM_OPENCL_REDUCE_FLAT", "LOOM_OPENCL_CONV_FLAT", "LOOM_OPENCL_DROPOUT_V8",
                                     "LOOM_OPENCL_BN_PLANES"};
    loom_status st = loom__env_switches_check(be->ctx, sw, (int)(sizeof sw / sizeof sw[0]));
    if (st == LOOM_OK) st = loom__cl_open(cl, desc);
    if (st == LOOM_OK && cl->reproducible && !cl->correct_div_sqrt)
        st = loom__err(be->ctx, LOOM_ERR_UNSUPPORTED,
                       "opencl: reproducible mode needs correctly rounded f32 division and sqrt, and device '%s' (%s) "
                       "does not report CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT; use the cpu or vulkan backend",
                       cl->name, cl->platform_name);
    if (st != LOOM_OK) {
        loom__cl_close(cl);
        free(cl);
        return st;
    }
    be->impl = cl;
    return LOOM_OK;
}

static void cl_destroy(loom_backend *be) {
    loom__cl *cl = be->impl;
    if (!cl) return;
    if (cl->queue) clFinish(cl->queue); /* writes in flight read the staging */
    loom__cl_close(cl);
    free(cl->wstage);
    free(cl);
}

static bool cl_f64(const loom_backend *be) { return ((const loom__cl *)be->impl)->fp64; }

const loom__backend_vtbl loom__opencl_backend = {
    .name = "opencl",
    .available = loom__cl_available,
    .is_gpu = loom__cl_is_gpu,
    .create = cl_create,
    .destroy = cl_destroy,
    .describe = loom__cl_describe,
    .buffer_alloc = loom__cl_buffer_alloc,
    .buffer_free = loom__cl_buffer_free,
    .buffer_write = loom__cl_buffer_write,
    .buffer_read = loom__cl_buffer_read,
    .host_alloc = loom__cl_host_alloc,
    .host_free = loom__cl_host_free,
    .plan_prepare = cl_plan_prepare,
    .plan_run = cl_plan_run,
    .plan_run_read = cl_plan_run_read,
    .plan_release = cl_plan_release,
    .plan_fused = cl_plan_fused,
    .synchronize = cl_synchronize,
    .f64 = cl_f64,
    .can_profile = true,
    .reproducible = true,
    .kernels = loom__cl_kernels,
};
