/* core/plan.c — compiling a graph for a backend: dead-node removal, support
 * checks, liveness-based memory planning with in-place reuse, allocation and
 * initialisation; running and host access; moving a leaf into memory the
 * backend wraps for the application (loom__plan_rebind). */
#include "backend_impl.h"

#define ALIGN 256u

static size_t align_up(size_t n) { return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1); }

static const loom_tensor *view_root(const loom_tensor *t) {
    while (t->op >= 0 && (loom__ops[t->op].flags & LOOM__OPF_VIEW)) t = t->src[0];
    return t;
}

static bool is_leaf(const loom_tensor *t) { return t->op == LOOM__OP_LEAF; }

/* ---- greedy best-fit offset assignment ---- */
typedef struct block {
    size_t off, size;
} block;

typedef struct arena_planner {
    block *free;
    int nfree, capfree;
    size_t end;
} arena_planner;

static bool planner_release(arena_planner *ap, size_t off, size_t size) {
    if (ap->nfree == ap->capfree) {
        int cap = ap->capfree ? ap->capfree * 2 : 32;
        block *nb = realloc(ap->free, (size_t)cap * sizeof *nb);
        if (!nb) return false;
        ap->free = nb, ap->capfree = cap;
    }
    /* keep sorted by offset and merge neighbours */
    int i = 0;
    while (i < ap->nfree && ap->free[i].off < off) i++;
    memmove(ap->free + i + 1, ap->free + i, (size_t)(ap->nfree - i) * sizeof *ap->free);
    ap->free[i] = (block){off, size};
    ap->nfree++;
    if (i + 1 < ap->nfree && ap->free[i].off + ap->free[i].size == ap->free[i + 1].off) {
        ap->free[i].size += ap->free[i + 1].size;
        memmove(ap->free + i + 1, ap->free + i + 2, (size_t)(ap->nfree - i - 2) * sizeof *ap->free);
        ap->nfree--;
    }
    if (i > 0 && ap->free[i - 1].off + ap->free[i - 1].size == ap->free[i].off) {
        ap->free[i - 1].size += ap->free[i].size;
        memmove(ap->free + i, ap->free + i + 1, (size_t)(ap->nfree - i - 1) * sizeof *ap->free);
        ap->nfree--;
    }
    /* a free block at the end shrinks the arena */
    if (ap->nfree && ap->free[ap->nfree - 1].off + ap->free[ap->nfree - 1].size == ap->end) {
        ap->end = ap->free[ap->nfree - 1].off;
        ap->nfree--;
    }
    return true;
}

static size_t planner_alloc(arena_planner *ap, size_t size, size_t *peak) {
    int best = -1;
    for (int i = 0; i < ap->nfree; i++)
        if (ap->free[i].size >= size && (best < 0 || ap->free[i].size < ap->free[best].size)) best = i;
    size_t off;
    if (best >= 0) {
        off = ap->free[best].off;
        ap->free[best].off += size;
        ap->free[best].size -= size;
        if (!ap->free[best].size) {
            memmove(ap->free + best, ap->free + best + 1, (size_t)(ap->nfree - best - 1) * sizeof *ap->free);
            ap->nfree--;
        }
    } else {
        off = ap->end;
        ap->end += size;
    }
    if (ap->end > *peak) *peak = ap->end;
    return off;
}

/* ---- compile ---- */
static loom_status alloc_persistent(loom_plan *p, loom_tensor *t) {
    loom_backend *be = p->be;
    if (p->share && p->share->g == p->g) { /* a later segment of the same graph: the first one owns it */
        p->addr[t->id] = p->share->addr[t->id];
        return LOOM_OK;
    }
    if (p->share && (t->leaf == LOOM__PARAM || t->leaf == LOOM__STATE)) {
        const loom_graph *sg = p->share->g;
        for (int i = 0; i < sg->n; i++) {
            const loom_tensor *o = sg->nodes[i];
            if (o->leaf != t->leaf || strcmp(o->name, t->name) != 0) continue;
            if (!loom__same_shape(o, t) || o->dtype != t->dtype) {
                char a[96], b[96];
                return loom__err(p->ctx, LOOM_ERR_SHAPE, "plan: shared '%s' is %s %s in the other plan but %s %s here",
                                 t->name, loom_tensor_shape_str(o, a, sizeof a), loom_dtype_name(o->dtype),
                                 loom_tensor_shape_str(t, b, sizeof b), loom_dtype_name(t->dtype));
            }
            p->addr[t->id] = p->share->addr[o->id];
            return LOOM_OK;
        }
    }
    loom__buffer *buf;
    size_t bytes = loom__nbytes(t);
    loom_status st = be->vt->buffer_alloc(be, bytes, &buf);
    if (st != LOOM_OK) return st;
    p->owned[p->n_owned++] = buf;
    p->addr[t->id] = (loom__addr){buf, 0};
    p->mem.persistent_bytes += bytes;
    if (t->leaf == LOOM__PARAM)
        p->mem.param_bytes += bytes;
    else if (t->leaf == LOOM__STATE)
        p->mem.state_bytes += bytes;
    else
        p->mem.io_bytes += bytes;

    void *host = NULL;
    if (t->leaf == LOOM__CONST) {
        host = t->data;
    } else if (t->leaf == LOOM__PARAM || t->leaf == LOOM__STATE) {
        size_t n = (size_t)loom_tensor_numel(t);
        double *v = malloc(n * sizeof *v);
        void *conv = malloc(bytes ? bytes : 1);
        if (!v || !conv) {
            free(v), free(conv);
            return loom__err(p->ctx, LOOM_ERR_OOM, "plan: out of memory initialising '%s'", t->name);
        }
        st = loom__init_values(t, p->g->seed, v);
        if (st == LOOM_OK) {
            loom_convert(v, LOOM_F64, conv, t->dtype, n);
            st = be->vt->buffer_write(be, buf, 0, conv, bytes);
        }
        free(v), free(conv);
        return st;
    } else {
        host = calloc(1, bytes ? bytes : 1); /* inputs and kept outputs start as zeros */
        if (!host) return loom__err(p->ctx, LOOM_ERR_OOM, "plan: out of memory");
        st = be->vt->buffer_write(be, buf, 0, host, bytes);
        free(host);
        return st;
    }
    return be->vt->buffer_write(be, buf, 0, host, bytes);
}

static loom_status check_support(loom_plan *p, const loom_tensor *t) {
    const loom__kernel *k = &p->be->vt->kernels[t->op];
    if (p->be->reproducible) {
        if (!(loom__ops[t->op].flags & LOOM__OPF_REPRO))
            return loom__err(p->ctx, LOOM_ERR_UNSUPPORTED,
                             "reproducible mode: op '%s' (node '%s') has no canonical kernel (core/repro.h lists "
                             "the ops that have one)", loom_op_name(t->op), t->name);
        for (int i = -1; i < t->nsrc; i++) {
            const loom_tensor *u = i < 0 ? t : t->src[i];
            if (loom_dtype_is_float(u->dtype) && u->dtype != LOOM_F32)
                return loom__err(p->ctx, LOOM_ERR_UNSUPPORTED,
                                 "reproducible mode: node '%s' (op '%s') uses %s; the mode is f32 only (no --amp)",
                                 t->name, loom_op_name(t->op), loom_dtype_name(u->dtype));
        }
    }
    if (k->fn && (k->dtypes & (1u << t->dtype))) return LOOM_OK;
    return loom__err(p->ctx, LOOM_ERR_UNSUPPORTED, "backend '%s' has no kernel for op '%s' with dtype %s (node '%s')",
                     p->be->vt->name, loom_op_name(t->op), loom_dtype_name(t->dtype), t->name);
}

/* The planner's working state, by node id (freed at the end of compiling). */
typedef struct plan_work {
    bool *needed;     /* kept tensors, effects, and everything they read */
    bool *persistent; /* leaves and kept tensors (a kept view keeps its root) */
    int *def, *last;  /* execution position that defines / last reads each node */
    int *alias;       /* arena slot owner (in-place / view chains) */
    int lo, hi;       /* the nodes this plan runs: ids in [lo, hi) (the whole graph, or a segment) */
    const int *bounds; /* segments: the first node of each segment after the first, nbounds of them */
    int nbounds;
    arena_planner ap;
} plan_work;

static void work_free(plan_work *w) {
    free(w->needed), free(w->persistent), free(w->def), free(w->last), free(w->alias), free(w->ap.free);
}

/* The segment node id belongs to (0 without segments). */
static int segment_of(const plan_work *w, int id) {
    int s = 0;
    while (s < w->nbounds && id >= w->bounds[s]) s++;
    return s;
}

/* 1, 2: which nodes matter, and which get storage of their own. */
static void mark_needed(const loom_graph *g, plan_work *w) {
    int n = g->n;
    for (int i = n - 1; i >= 0; i--) {
        loom_tensor *t = g->nodes[i];
        if (t->keep || (!is_leaf(t) && t->effect) ||
            (is_leaf(t) && t->leaf != LOOM__CONST))
            w->needed[i] = true;
        if (!w->needed[i]) continue;
        for (int k = 0; k < t->nsrc; k++) w->needed[t->src[k]->id] = true;
    }
    for (int i = 0; i < n; i++) {
        loom_tensor *t = g->nodes[i];
        if (!w->needed[i]) continue;
        if (is_leaf(t) || t->keep) w->persistent[view_root(t)->id] = true;
    }
    /* segments: what a segment reads of an earlier one outlives its plan's
     * run (the first segment owns it); a later segment takes every node
     * before it from the first one */
    for (int i = 0; w->nbounds && i < n; i++) {
        loom_tensor *t = g->nodes[i];
        if (!w->needed[i] || is_leaf(t)) continue;
        if (i < w->lo) w->persistent[view_root(t)->id] = true;
        int si = segment_of(w, i);
        for (int k = 0; k < t->nsrc; k++) {
            const loom_tensor *r = view_root(t->src[k]);
            if (!is_leaf(r) && segment_of(w, r->id) != si) w->persistent[r->id] = true;
        }
    }
}

/* 3: execution order, support checks, liveness, and the bytes of saved
 * activations (forward arena tensors read at or after the first backward node). */
static loom_status order_and_liveness(loom_plan *p, plan_work *w) {
    const loom_graph *g = p->g;
    int n = g->n;
    for (int i = 0; i < n; i++) w->def[i] = w->last[i] = -1, w->alias[i] = i;
    for (int i = 0; i < n; i++) {
        loom_tensor *t = g->nodes[i];
        if (!w->needed[i] || is_leaf(t) || i < w->lo || i >= w->hi) continue;
        bool view = loom__ops[t->op].flags & LOOM__OPF_VIEW;
        int pos = p->n_exec;
        if (!view) {
            loom_status st = check_support(p, t);
            if (st != LOOM_OK) return st;
            p->exec[p->n_exec++] = t;
        }
        w->def[i] = pos;
        for (int k = 0; k < t->nsrc; k++) {
            int r = view_root(t->src[k])->id;
            if (w->last[r] < pos) w->last[r] = pos;
        }
    }
    /* a view's own uses count as uses of its root */
    for (int i = n - 1; i >= 0; i--) {
        loom_tensor *t = g->nodes[i];
        if (!w->needed[i] || is_leaf(t) || !(loom__ops[t->op].flags & LOOM__OPF_VIEW)) continue;
        int r = view_root(t)->id;
        if (w->last[i] > w->last[r]) w->last[r] = w->last[i];
    }
    if (g->has_backward) {
        int e_bw = p->n_exec;
        for (int e = 0; e < p->n_exec; e++)
            if (p->exec[e]->id >= g->backward_start) {
                e_bw = e;
                break;
            }
        for (int i = 0; i < g->backward_start && i < n; i++) {
            loom_tensor *t = g->nodes[i];
            if (!w->needed[i] || is_leaf(t) || w->persistent[i] || (loom__ops[t->op].flags & LOOM__OPF_VIEW))
                continue;
            if (w->last[i] >= e_bw) p->mem.activation_bytes += loom__nbytes(t);
        }
    }
    return LOOM_OK;
}

/* 5: the arena. Walk the execution order; each arena tensor belongs to a slot
 * (its own, or its in-place source's); a slot is freed after the last
 * position that reads any of its members. Fills the arena offsets of
 * p->addr and returns the peak in *peak. */
static loom_status place_arena(loom_plan *p, plan_work *w, bool no_reuse, size_t *peak) {
    const loom_graph *g = p->g;
    size_t *slot_off = calloc((size_t)g->n, sizeof *slot_off);
    if (!slot_off) return LOOM_ERR_OOM;
    int *slot_end = w->def; /* reuse: def is not needed past step 3 */
    bool ok = true;
    for (int e = 0; e < p->n_exec && ok; e++) {
        loom_tensor *t = p->exec[e];
        int id = t->id;
        int use_end = w->last[id] > e ? w->last[id] : e;
        if (!w->persistent[id]) {
            size_t bytes = align_up(loom__nbytes(t));
            p->mem.naive_bytes += bytes;
            const loom_tensor *s0 = t->nsrc ? view_root(t->src[0]) : NULL;
            if (!no_reuse && (loom__ops[t->op].flags & LOOM__OPF_INPLACE) && s0 && !is_leaf(s0) &&
                !w->persistent[s0->id] && s0->dtype == t->dtype && loom__nbytes(s0) == loom__nbytes(t) &&
                slot_end[w->alias[s0->id]] == e) {
                int sl = w->alias[s0->id];
                w->alias[id] = sl;
                slot_end[sl] = use_end;
                p->inplace[id] = true;
                p->mem.inplace_count++;
            } else {
                slot_off[id] = planner_alloc(&w->ap, bytes, peak);
                slot_end[id] = use_end;
            }
            p->addr[id].off = slot_off[w->alias[id]];
        }
        /* free slots that end here (the output was placed first, so it never
         * overlaps an input it reads) */
        for (int k = 0; k <= t->nsrc && ok; k++) {
            const loom_tensor *m = k < t->nsrc ? view_root(t->src[k]) : t;
            if (w->persistent[m->id] || is_leaf(m) || no_reuse) continue;
            int sl = w->alias[m->id];
            if (slot_end[sl] != e) continue;
            ok = planner_release(&w->ap, slot_off[sl], align_up(loom__nbytes(g->nodes[sl])));
            slot_end[sl] = -1;
        }
    }
    free(slot_off);
    return ok ? LOOM_OK : LOOM_ERR_OOM;
}

/* 4-6: persistent buffers, the arena buffer, every node's address. */
static loom_status place_memory(loom_plan *p, plan_work *w, bool no_reuse) {
    loom_graph *g = p->g;
    loom_backend *be = p->be;
    int n = g->n;
    loom_status st = LOOM_OK;
    for (int i = 0; i < n && st == LOOM_OK; i++)
        if (w->persistent[i]) st = alloc_persistent(p, g->nodes[i]);
    if (st != LOOM_OK) return st;
    size_t peak = 0;
    if (place_arena(p, w, no_reuse, &peak) != LOOM_OK) return loom__err(p->ctx, LOOM_ERR_OOM, "plan: out of memory");
    p->mem.arena_bytes = peak;
    if (peak && (st = be->vt->buffer_alloc(be, peak, &p->arena)) != LOOM_OK) return st;
    for (int e = 0; e < p->n_exec; e++) {
        int id = p->exec[e]->id;
        if (!w->persistent[id]) p->addr[id].buf = p->arena;
    }
    /* views share their root's address */
    for (int i = 0; i < n; i++) {
        loom_tensor *t = g->nodes[i];
        if (w->needed[i] && !is_leaf(t) && (loom__ops[t->op].flags & LOOM__OPF_VIEW))
            p->addr[i] = p->addr[view_root(t)->id];
    }
    return LOOM_OK;
}

/* The plan of segment seg of the graph (nbounds 0: the whole graph). */
static loom_status compile_range(loom_graph *g, loom_backend *be, const loom_plan_desc *desc, const int *bounds,
                                 int nbounds, int seg, loom_plan **out) {
    *out = NULL;
    if (!g || !be) return LOOM_ERR_INVALID_ARG;
    loom_ctx *ctx = g->ctx;
    if (g->status != LOOM_OK)
        return loom__err(ctx, g->status, "plan: the graph has a failed builder: %s", g->error);
    loom_plan_desc d = {0};
    if (desc) d = *desc;
    if (d.share && d.share->be != be) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "plan: shared plan is on another backend");

    int n = g->n;
    loom_plan *p = calloc(1, sizeof *p);
    plan_work w = {
        .needed = calloc((size_t)n, 1),
        .persistent = calloc((size_t)n, 1),
        .def = malloc((size_t)n * sizeof(int)),
        .last = malloc((size_t)n * sizeof(int)),
        .alias = malloc((size_t)n * sizeof(int)),
        .lo = seg > 0 ? bounds[seg - 1] : 0,
        .hi = seg < nbounds ? bounds[seg] : n,
        .bounds = bounds,
        .nbounds = nbounds,
    };
    if (p) {
        p->g = g, p->be = be, p->ctx = ctx, p->share = d.share, p->n_nodes = n;
        p->exec = malloc((size_t)n * sizeof *p->exec);
        p->addr = calloc((size_t)n, sizeof *p->addr);
        p->inplace = calloc((size_t)n, 1);
        p->owned = malloc((size_t)n * sizeof *p->owned);
    }
    if (!p || !w.needed || !w.persistent || !w.def || !w.last || !w.alias || !p->exec || !p->addr || !p->inplace ||
        !p->owned) {
        if (p) free(p->exec), free(p->addr), free(p->inplace), free(p->owned), free(p);
        work_free(&w);
        return loom__err(ctx, LOOM_ERR_OOM, "plan: out of memory");
    }

    mark_needed(g, &w);
    loom_status st = order_and_liveness(p, &w);
    if (st == LOOM_OK) st = place_memory(p, &w, d.no_reuse);
    p->mem.nodes_run = p->n_exec;
    if (st == LOOM_OK && be->vt->plan_prepare) st = be->vt->plan_prepare(be, p);
    work_free(&w);
    if (st != LOOM_OK) {
        loom_plan_destroy(p);
        return st;
    }
    if (d.share) ((loom_plan *)d.share)->shared_by++; /* loom__plan_rebind refuses its params/states */
    *out = p;
    return LOOM_OK;
}

loom_status loom_plan_compile(loom_graph *g, loom_backend *be, const loom_plan_desc *desc, loom_plan **out) {
    *out = NULL;
    if (!g || !be) return LOOM_ERR_INVALID_ARG;
    return compile_range(g, be, desc, NULL, 0, 0, out);
}

loom_status loom__plan_compile_segments(loom_graph *g, loom_backend *be, const int *bounds, int nbounds, loom_plan **plans) {
    if (!g || !be || nbounds < 1) return LOOM_ERR_INVALID_ARG;
    for (int s = 0; s <= nbounds; s++) plans[s] = NULL;
    for (int s = 0; s < nbounds; s++)
        if (bounds[s] <= (s ? bounds[s - 1] : 0) || bounds[s] >= g->n)
            return loom__err(g->ctx, LOOM_ERR_INVALID_ARG, "plan: segment %d starts at node %d of %d (bounds must increase "
                             "inside the graph)", s + 1, bounds[s], g->n);
    loom_status st = LOOM_OK;
    for (int s = 0; s <= nbounds && st == LOOM_OK; s++)
        st = compile_range(g, be, s ? &(loom_plan_desc){.share = plans[0]} : NULL, bounds, nbounds, s, &plans[s]);
    if (st != LOOM_OK)
        for (int s = nbounds; s >= 0; s--) loom_plan_destroy(plans[s]), plans[s] = NULL;
    return st;
}

loom_status loom__plan_io(loom_plan *p, const loom_tensor *t, void *data, size_t bytes, bool write) {
    const loom_tensor *r = t && t->g == p->g ? view_root(t) : NULL;
    if (!r || !p->addr[r->id].buf || p->addr[r->id].buf == p->arena)
        return loom__err(p->ctx, LOOM_ERR_INVALID_ARG, "plan io: '%s' has no storage of its own in this plan",
                         t ? t->name : "(null)");
    if (bytes != loom__nbytes(t))
        return loom__err(p->ctx, LOOM_ERR_INVALID_ARG, "plan io: '%s' holds %zu bytes, %zu given", t->name,
                         loom__nbytes(t), bytes);
    loom__addr a = p->addr[t->id];
    return write ? p->be->vt->buffer_write(p->be, a.buf, a.off, data, bytes)
                 : p->be->vt->buffer_read(p->be, a.buf, a.off, data, bytes);
}

void loom_plan_destroy(loom_plan *p) {
    if (!p) return;
    loom_backend *be = p->be;
    if (be->vt->plan_release && !p->prepare_pending) be->vt->plan_release(be, p);
    for (int i = 0; i < p->n_owned; i++) be->vt->buffer_free(be, p->owned[i]);
    if (p->arena) be->vt->buffer_free(be, p->arena);
    free(p->exec), free(p->addr), free(p->inplace), free(p->owned), free(p->node_seconds);
    free(p);
}

loom_status loom_plan_set_profiling(loom_plan *p, bool on) {
    if (on && !p->be->vt->can_profile)
        return loom__err(p->ctx, LOOM_ERR_UNSUPPORTED, "backend '%s' cannot time ops", p->be->vt->name);
    free(p->node_seconds);
    p->node_seconds = NULL;
    p->profiled_runs = 0;
    if (on && !(p->node_seconds = calloc((size_t)p->n_exec + 1, sizeof *p->node_seconds)))
        return loom__err(p->ctx, LOOM_ERR_OOM, "plan: out of memory for profiling");
    return LOOM_OK;
}

int loom__plan_fused_groups(const loom_plan *p) {
    return p && !p->prepare_pending && p->be->vt->plan_fused ? p->be->vt->plan_fused(p) : 0;
}

int loom_plan_profile(const loom_plan *p, loom_op_time *out, int max) {
    if (!p->node_seconds) return -1;
    loom_op_time acc[LOOM_OP_COUNT] = {{0}};
    for (int e = 0; e < p->n_exec; e++) {
        int op = p->exec[e]->op;
        acc[op].op = loom_op_name(op);
        acc[op].seconds += p->node_seconds[e];
        acc[op].calls += p->profiled_runs;
        acc[op].runs = p->profiled_runs;
    }
    int n = 0;
    for (int k = 0; k < LOOM_OP_COUNT && n < max; k++) {
        int best = -1;
        for (int op = 0; op < LOOM_OP_COUNT; op++)
            if (acc[op].op && (best < 0 || acc[op].seconds > acc[best].seconds)) best = op;
        if (best < 0) break;
        out[n++] = acc[best];
        acc[best].op = NULL;
    }
    return n;
}

/* ---- running and host access ---- */
/* run the plan; with buf, also read n bytes of it at off (the backend's
 * plan_run_read when it has one) */
static loom_status run(loom_plan *p, loom__buffer *buf, size_t off, void *dst, size_t n) {
    if (p->prepare_pending) { /* a leaf moved (loom__plan_rebind) */
        loom_status st = p->be->vt->plan_prepare(p->be, p);
        if (st != LOOM_OK) return st;
        p->prepare_pending = false;
    }
    const loom__backend_vtbl *vt = p->be->vt;
    bool fused = buf && vt->plan_run_read;
    loom_status st = fused ? vt->plan_run_read(p->be, p, buf, off, dst, n) : vt->plan_run(p->be, p);
    if (st == LOOM_OK) p->step++;
    if (st == LOOM_OK && p->node_seconds) p->profiled_runs++;
    if (st == LOOM_OK && buf && !fused) st = vt->buffer_read(p->be, buf, off, dst, n);
    return st;
}

loom_status loom_plan_run(loom_plan *p) { return run(p, NULL, 0, NULL, 0); }

loom_status loom__plan_rebind(loom_plan *p, const loom_tensor *t, loom__buffer *buf, size_t off, const char *what) {
    if (!t || t->g != p->g || t->id >= p->n_nodes)
        return loom__err(p->ctx, LOOM_ERR_INVALID_ARG, "%s: tensor is NULL or not from this plan's graph", what);
    if (!is_leaf(t) || t->leaf == LOOM__CONST)
        return loom__err(p->ctx, LOOM_ERR_INVALID_ARG,
                         "%s: '%s' is not an input, parameter or state (only those can move to other memory)", what,
                         t->name);
    loom__buffer *old = p->addr[t->id].buf;
    int k = 0;
    while (k < p->n_owned && p->owned[k] != old) k++;
    if (!old || k == p->n_owned)
        return loom__err(p->ctx, LOOM_ERR_INVALID_ARG,
                         "%s: '%s' belongs to the plan this one shares (loom_plan_desc.share); move it there, before "
                         "compiling this plan",
                         what, t->name);
    if ((t->leaf == LOOM__PARAM || t->leaf == LOOM__STATE) && p->shared_by)
        return loom__err(p->ctx, LOOM_ERR_INVALID_ARG,
                         "%s: '%s' is shared with %d other plan(s) compiled with loom_plan_desc.share = this plan; move "
                         "it before compiling them",
                         what, t->name, p->shared_by);
    /* the backend's recorded work points at the old buffer: drop it first */
    if (!p->prepare_pending && p->be->vt->plan_release) p->be->vt->plan_release(p->be, p);
    p->prepare_pending = p->be->vt->plan_prepare != NULL;
    for (int i = 0; i < p->n_nodes; i++)
        if (p->addr[i].buf == old && view_root(p->g->nodes[i]) == t) p->addr[i] = (loom__addr){buf, off};
    p->owned[k] = buf;
    p->be->vt->buffer_free(p->be, old);
    return LOOM_OK;
}

uint64_t loom_plan_step(const loom_plan *p) { return p->step; }
void loom_plan_set_step(loom_plan *p, uint64_t step) { p->step = step; }
void loom_plan_memory_stats(const loom_plan *p, loom_plan_memory *out) { *out = p->mem; }

static loom_status host_access(loom_plan *p, const loom_tensor *t, size_t bytes, const char *what, bool write) {
    if (!t || t->g != p->g) return loom__err(p->ctx, LOOM_ERR_INVALID_ARG, "%s: tensor is NULL or not from this plan's graph", what);
    const loom_tensor *r = view_root(t);
    bool ok = is_leaf(r) || t->keep || r->keep;
    if (write && !(is_leaf(r) && r->leaf != LOOM__CONST)) ok = false;
    if (!ok || !p->addr[r->id].buf)
        return loom__err(p->ctx, LOOM_ERR_INVALID_ARG,
                         write ? "%s: '%s' is not an input, parameter or state"
                               : "%s: '%s' is not readable (call loom_keep on it before compiling)",
                         what, t->name);
    if (bytes != loom__nbytes(t))
        return loom__err(p->ctx, LOOM_ERR_INVALID_ARG, "%s: '%s' holds %zu bytes, %zu given", what, t->name,
                         loom__nbytes(t), bytes);
    return LOOM_OK;
}

loom_status loom_plan_write(loom_plan *p, const loom_tensor *t, const void *data, size_t bytes) {
    loom_status st = host_access(p, t, bytes, "plan write", true);
    if (st != LOOM_OK) return st;
    loom__addr a = p->addr[t->id];
    return p->be->vt->buffer_write(p->be, a.buf, a.off, data, bytes);
}

loom_status loom_plan_read(loom_plan *p, const loom_tensor *t, void *data, size_t bytes) {
    loom_status st = host_access(p, t, bytes, "plan read", false);
    if (st != LOOM_OK) return st;
    loom__addr a = p->addr[t->id];
    return p->be->vt->buffer_read(p->be, a.buf, a.off, data, bytes);
}

loom_status loom_plan_run_read(loom_plan *p, const loom_tensor *t, void *data, size_t bytes) {
    loom_status st = host_access(p, t, bytes, "plan run + read", false);
    if (st != LOOM_OK) return st;
    loom__addr a = p->addr[t->id];
    return run(p, a.buf, a.off, data, bytes);
}

static loom_status read_as(loom_plan *p, const loom_tensor *t, void *data, loom_dtype dt, size_t count) {
    if (!t) return LOOM_ERR_INVALID_ARG;
    if (count != (size_t)loom_tensor_numel(t))
        return loom__err(p->ctx, LOOM_ERR_INVALID_ARG, "plan read: '%s' has %lld elements, %zu requested", t->name,
                         (long long)loom_tensor_numel(t), count);
    void *tmp = malloc(loom__nbytes(t) ? loom__nbytes(t) : 1);
    if (!tmp) return loom__err(p->ctx, LOOM_ERR_OOM, "plan read: out of memory");
    loom_status st = loom_plan_read(p, t, tmp, loom__nbytes(t));
    if (st == LOOM_OK) loom_convert(tmp, t->dtype, data, dt, count);
    free(tmp);
    return st;
}

loom_status loom_plan_read_f32(loom_plan *p, const loom_tensor *t, float *data, size_t count) {
    return read_as(p, t, data, LOOM_F32, count);
}
loom_status loom_plan_read_f64(loom_plan *p, const loom_tensor *t, double *data, size_t count) {
    return read_as(p, t, data, LOOM_F64, count);
}

loom_status loom_plan_write_f64(loom_plan *p, const loom_tensor *t, const double *data, size_t count) {
    if (!t) return LOOM_ERR_INVALID_ARG;
    if (count != (size_t)loom_tensor_numel(t))
        return loom__err(p->ctx, LOOM_ERR_INVALID_ARG, "plan write: '%s' has %lld elements, %zu given", t->name,
                         (long long)loom_tensor_numel(t), count);
    void *tmp = malloc(loom__nbytes(t) ? loom__nbytes(t) : 1);
    if (!tmp) return loom__err(p->ctx, LOOM_ERR_OOM, "plan write: out of memory");
    loom_convert(data, LOOM_F64, tmp, t->dtype, count);
    loom_status st = loom_plan_write(p, t, tmp, loom__nbytes(t));
    free(tmp);
    return st;
}
