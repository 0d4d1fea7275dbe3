/* core/fuse.c — finding a plan's fusable batch-norm chains (and attention
 * gradients, and matmuls with their bias adds) in its execution order (core/fuse.h lists the groups and the rules). Slices of the backward
 * group's statistics between its two batch-norm gradient ops run after the
 * group. */
#include "fuse.h"

static bool all_f32(const loom_tensor *t) {
    if (t->dtype != LOOM_F32) return false;
    for (int k = 0; k < t->nsrc; k++)
        if (t->src[k]->dtype != LOOM_F32) return false;
    return true;
}

static bool same_dims(const loom_tensor *a, const loom_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

static bool is_op(const loom_plan *p, int e, int op) {
    return e >= 0 && e < p->n_exec && p->exec[e]->op == op && all_f32(p->exec[e]);
}

/* 2x2 windows, stride 2, no padding, over (N, C, H, W) */
bool loom__fuse_pool2(const loom_tensor *t) {
    const int64_t *q = t->p;
    return t->ndim == 4 && q[LOOM_P_POOL_KH] == 2 && q[LOOM_P_POOL_KW] == 2 && q[LOOM_P_POOL_SH] == 2 &&
           q[LOOM_P_POOL_SW] == 2 && q[LOOM_P_POOL_PH] == 0 && q[LOOM_P_POOL_PW] == 0;
}

static const loom_tensor *bn_src(const loom_tensor *t, int slot) {
    int64_t i = t->p[slot];
    return i >= 0 && i < t->nsrc ? t->src[i] : NULL;
}

static void group_clear(loom__fuse_group *g, bool backward) {
    g->backward = backward;
    g->attn = g->bias = false;
    for (int r = 0; r < LOOM__FU_ROLES; r++) g->m[r] = -1;
}

/* forward group led by exec e (a batch_norm), or false */
static bool match_forward(const loom_plan *p, int e, loom__fuse_group *g) {
    const loom_tensor *bn = p->exec[e];
    group_clear(g, false);
    g->m[LOOM__FU_BN] = e;
    int k = e + 1;
    const loom_tensor *last = bn;
    if (is_op(p, k, LOOM_OP_ADD)) {
        const loom_tensor *a = p->exec[k];
        if ((a->src[0] == bn) == (a->src[1] == bn) || !same_dims(a->src[0], a->src[1]) || !same_dims(a, bn))
            return false;
        g->m[LOOM__FU_ADD] = k++;
        last = a;
    } else if (is_op(p, k, LOOM_OP_MAX_POOL2D) && p->exec[k]->src[0] == bn && loom__fuse_pool2(p->exec[k])) {
        g->m[LOOM__FU_POOL] = k++;
        last = p->exec[k - 1];
    }
    if (is_op(p, k, LOOM_OP_RELU) && p->exec[k]->src[0] == last) g->m[LOOM__FU_RELU] = k++;
    return k > e + 1;
}

/* backward group starting at exec e, or false; *end: the last member's exec index */
/* backward group starting at exec e, or false; *end: the last member's exec index; pool_only:
 * relu_grad -> 2x2 max_pool2d_grad alone (LOOM__FUSE_POOL_GRAD) */
static bool match_backward(const loom_plan *p, int e, loom__fuse_group *g, int *end, bool pool_only) {
    group_clear(g, true);
    int k = e;
    const loom_tensor *feed = NULL; /* what the pre-ops hand to the batch-norm gradients */
    if (is_op(p, k, LOOM_OP_RELU_GRAD)) {
        const loom_tensor *rg = p->exec[k];
        if (!same_dims(rg->src[0], rg) || !same_dims(rg->src[1], rg)) return false;
        g->m[LOOM__FU_RELU_GRAD] = k++;
        feed = rg;
    }
    if (is_op(p, k, LOOM_OP_MAX_POOL2D_GRAD) && loom__fuse_pool2(p->exec[k]) && (!feed || p->exec[k]->src[1] == feed)) {
        const loom_tensor *pg = p->exec[k];
        if (feed && (feed->ndim != 4 || feed->dims[0] != pg->dims[0] || feed->dims[1] != pg->dims[1])) return false;
        g->m[LOOM__FU_POOL_GRAD] = k++;
        feed = pg;
    }
    if (pool_only) {
        *end = k - 1;
        return g->m[LOOM__FU_RELU_GRAD] >= 0 && g->m[LOOM__FU_POOL_GRAD] >= 0;
    }
    if (!is_op(p, k, LOOM_OP_BATCH_NORM_GRAD_PARAMS)) return false;
    const loom_tensor *par = p->exec[k], *x = par->src[0];
    if (feed && (bn_src(par, LOOM_P_BN_DY) != feed || !same_dims(feed, x))) return false;
    g->m[LOOM__FU_PARAMS] = k++;
    while (k < p->n_exec && p->exec[k]->op == LOOM_OP_SLICE && p->exec[k]->src[0] == par) k++;
    if (!is_op(p, k, LOOM_OP_BATCH_NORM_GRAD)) return false;
    const loom_tensor *gr = p->exec[k];
    if (gr->src[0] != x || bn_src(gr, LOOM_P_BN_STATS) != par || bn_src(gr, LOOM_P_BN_DY) != bn_src(par, LOOM_P_BN_DY) ||
        gr->p[LOOM_P_BN_TRAIN] != par->p[LOOM_P_BN_TRAIN] || gr->f[LOOM_F_BN_EPS] != par->f[LOOM_F_BN_EPS])
        return false;
    g->m[LOOM__FU_GRAD] = k;
    *end = k;
    return true;
}

/* attention group: exec e and the two after it are attention_grad nodes of
 * the same sources and parameters, one each of dq, dk and dv */
static bool match_attn(const loom_plan *p, int e, loom__fuse_group *g) {
    group_clear(g, true);
    g->attn = true;
    const loom_tensor *a = p->exec[e];
    for (int k = e; k < e + 3; k++) {
        if (!is_op(p, k, LOOM_OP_ATTENTION_GRAD)) return false;
        const loom_tensor *t = p->exec[k];
        if (t->nsrc != a->nsrc || t->p[LOOM_P_ATTN_CAUSAL] != a->p[LOOM_P_ATTN_CAUSAL] ||
            t->f[LOOM_F_ATTN_SCALE] != a->f[LOOM_F_ATTN_SCALE])
            return false;
        for (int s = 0; s < t->nsrc; s++)
            if (t->src[s] != a->src[s]) return false;
        int64_t w = t->p[LOOM_P_ATTN_WHICH];
        int role = w == LOOM_K_ATTN_DQ ? LOOM__FU_ATTN_DQ : w == LOOM_K_ATTN_DK ? LOOM__FU_ATTN_DK : LOOM__FU_ATTN_DV;
        if (g->m[role] >= 0) return false;
        g->m[role] = k;
    }
    return true;
}

/* bias group: exec e a matmul (op(a) = a, b 2-D), exec e + 1 the add of a
 * 1-D bias along its last axis, exec e + 2 a gelu of that sum, or its add to
 * another tensor of its shape, if it is one; or exec e + 1 that add of the
 * product itself (a gradient's accumulation) */
static bool is_res(const loom_tensor *r, const loom_tensor *sum, const loom_tensor *mm) {
    if ((r->src[0] == sum) == (r->src[1] == sum)) return false;
    const loom_tensor *o = r->src[r->src[0] == sum ? 1 : 0];
    return o != mm && same_dims(o, sum) && same_dims(r, sum);
}

static bool match_bias(const loom_plan *p, int e, loom__fuse_group *g) {
    group_clear(g, false);
    g->bias = true;
    const loom_tensor *mm = p->exec[e];
    if (mm->p[LOOM_P_MATMUL_TRANS_A] || mm->src[1]->ndim != 2 || !is_op(p, e + 1, LOOM_OP_ADD)) return false;
    const loom_tensor *a = p->exec[e + 1];
    g->m[LOOM__FU_MM] = e;
    if ((a->src[0] == mm) == (a->src[1] == mm)) return false;
    const loom_tensor *b = a->src[a->src[0] == mm ? 1 : 0];
    if (b->ndim != 1 || b->dims[0] != mm->dims[mm->ndim - 1] || !same_dims(a, mm)) { /* no bias: a residual? */
        if (!is_res(a, mm, mm)) return false;
        g->m[LOOM__FU_RES] = e + 1;
        return true;
    }
    g->m[LOOM__FU_BIAS] = e + 1;
    if (is_op(p, e + 2, LOOM_OP_GELU) && p->exec[e + 2]->src[0] == a) g->m[LOOM__FU_GELU] = e + 2;
    else if (is_op(p, e + 2, LOOM_OP_ADD) && is_res(p->exec[e + 2], a, mm)) g->m[LOOM__FU_RES] = e + 2;
    return true;
}

/* ---- memory: the bytes each tensor occupies ---- */
typedef struct span {
    const void *space;
    uintptr_t lo, hi;
    const loom_tensor *t;
    bool out; /* written by the group */
    bool placed;
} span;

static bool where_addr(const loom_plan *p, const loom_tensor *t, const void **space, uintptr_t *lo) {
    loom__addr a = p->addr[t->id];
    *space = a.buf, *lo = a.off;
    return a.buf != NULL;
}

static span span_of(const loom_plan *p, loom__fuse_where where, const loom_tensor *t, bool out) {
    span s = {NULL, 0, 0, t, out, false};
    s.placed = where(p, t, &s.space, &s.lo);
    s.hi = s.lo + loom__nbytes(t);
    return s;
}

static bool overlap(const span *a, const span *b) { return a->space == b->space && a->lo < b->hi && b->lo < a->hi; }

/* Overlaps that cannot change a result: identical spans where one is a
 * member's in-place output (down an in-place chain each element is read
 * before it is written), or where one is the group's last output (written
 * after everything else of its element, or its plane, is read: the CPU
 * backend's channel tasks, the GPU backends' elementwise passes) over a
 * tensor of the same shape. */
static bool benign(const loom_plan *p, int final_id, const span *a, const span *b) {
    if (final_id < 0) return false; /* attention groups: no overlap at all */
    if (a->space != b->space || a->lo != b->lo || a->hi != b->hi) return false;
    if (p->inplace[a->t->id] || p->inplace[b->t->id]) return true;
    return (a->t->id == final_id || b->t->id == final_id) && same_dims(a->t, b->t);
}

/* true when no span written by exec[first..last] (the members and the slices
 * the group moves past) overlaps another span they touch, bar benign ones */
static bool memory_ok(const loom_plan *p, loom__fuse_where where, const loom__fuse_group *g, int first, int last) {
    span s[64];
    int n = 0, final_id = p->exec[g->backward && g->m[LOOM__FU_GRAD] >= 0 ? g->m[LOOM__FU_GRAD] : last]->id;
    if (g->attn) final_id = -1;
    for (int e = first; e <= last; e++) {
        const loom_tensor *t = p->exec[e]; /* a member, or a slice the group moves past */
        if (n + 1 + t->nsrc > 64) return false;
        s[n++] = span_of(p, where, t, true);
        for (int k = 0; k < t->nsrc; k++) s[n++] = span_of(p, where, t->src[k], false);
    }
    for (int i = 0; i < n; i++) {
        if (!s[i].placed) return false;
        for (int j = 0; j < n; j++) {
            if (i == j || !s[i].out || s[i].t == s[j].t || !overlap(&s[i], &s[j])) continue;
            if (!benign(p, final_id, &s[i], &s[j])) return false;
        }
    }
    return true;
}

/* the bias group's memory: its outputs (the matmul's, the add's, the
 * gelu's or the residual add's) overlap none of its inputs (the product
 * reads a's rows after writing others' sums), and lie exactly over one
 * another or apart (an element's sums are read before they are overwritten) */
static bool bias_memory_ok(const loom_plan *p, loom__fuse_where where, const loom__fuse_group *g) {
    static const int roles[] = {LOOM__FU_MM, LOOM__FU_BIAS, LOOM__FU_GELU, LOOM__FU_RES};
    const loom_tensor *mt[4];
    span o[4];
    int no = 0;
    for (int r = 0; r < 4; r++)
        if (g->m[roles[r]] >= 0) mt[no] = p->exec[g->m[roles[r]]], o[no] = span_of(p, where, mt[no], true), no++;
    for (int k = 0; k < no; k++) {
        if (!o[k].placed) return false;
        for (int j = 0; j < k; j++)
            if (overlap(&o[j], &o[k]) && (o[j].lo != o[k].lo || o[j].hi != o[k].hi)) return false;
        for (int i = 0; i < mt[k]->nsrc; i++) { /* the inputs: sources that are not members */
            const loom_tensor *src = mt[k]->src[i];
            bool member = false;
            for (int j = 0; j < no; j++) member |= src == mt[j];
            if (member) continue;
            span s = span_of(p, where, src, false);
            if (!s.placed) return false;
            for (int j = 0; j < no; j++)
                if (overlap(&s, &o[j])) return false;
        }
    }
    return true;
}

/* the exec index of a group's last member */
static int last_member(const loom__fuse_group *g) {
    int end = -1;
    for (int r = 0; r < LOOM__FU_ROLES; r++)
        if (g->m[r] > end) end = g->m[r];
    return end;
}

loom_status loom__fusion_plan(const loom_plan *p, loom__fuse_where where, unsigned flags, loom__fusion **out) {
    *out = NULL;
    if (p->n_exec < 2) return LOOM_OK;
    if (!where) where = where_addr;
    loom__fusion *f = calloc(1, sizeof *f);
    if (f) f->group_at = malloc((size_t)p->n_exec * sizeof *f->group_at);
    if (f) f->groups = malloc((size_t)p->n_exec * sizeof *f->groups);
    if (!f || !f->group_at || !f->groups) {
        loom__fusion_free(f);
        return loom__err(p->ctx, LOOM_ERR_OOM, "plan: out of memory planning fused passes");
    }
    f->n_exec = p->n_exec;
    for (int e = 0; e < p->n_exec; e++) f->group_at[e] = -1;
    for (int e = 0; e < p->n_exec; e++) {
        loom__fuse_group g;
        int end = e;
        bool ok;
        if (is_op(p, e, LOOM_OP_MATMUL)) {
            ok = (flags & LOOM__FUSE_MM_BIAS) && match_bias(p, e, &g) && bias_memory_ok(p, where, &g);
            if (ok) end = last_member(&g);
        } else if (is_op(p, e, LOOM_OP_ATTENTION_GRAD)) {
            end = e + 2;
            ok = (flags & LOOM__FUSE_ATTN_GRAD) && match_attn(p, e, &g) && memory_ok(p, where, &g, e, end);
        } else if (is_op(p, e, LOOM_OP_BATCH_NORM)) {
            ok = match_forward(p, e, &g);
            if (ok) end = last_member(&g);
            ok = ok && memory_ok(p, where, &g, e, end);
        } else {
            ok = match_backward(p, e, &g, &end, false) && memory_ok(p, where, &g, e, end);
            if (!ok && (flags & LOOM__FUSE_POOL_GRAD))
                ok = match_backward(p, e, &g, &end, true) && memory_ok(p, where, &g, e, end);
        }
        if (!ok) continue;
        f->groups[f->n_groups] = g;
        for (int r = 0; r < LOOM__FU_ROLES; r++)
            if (g.m[r] >= 0) f->group_at[g.m[r]] = -2;
        f->group_at[e] = f->n_groups++;
        e = g.backward && g.m[LOOM__FU_PARAMS] >= 0 ? g.m[LOOM__FU_PARAMS] : end; /* slices after the params op run alone */
    }
    if (!f->n_groups) {
        loom__fusion_free(f);
        return LOOM_OK;
    }
    *out = f;
    return LOOM_OK;
}

void loom__fusion_free(loom__fusion *f) {
    if (!f) return;
    free(f->group_at), free(f->groups), free(f);
}
