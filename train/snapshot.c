/* train/snapshot.c — host copies of a plan's parameters and states (see
 * train/train_impl.h): the best epoch's weights for early stopping, and
 * everything the LR range test changes. */
#include "train_impl.h"

/* ---- host copies of parameters and states ---- */
loom_status loom__snapshot_take(loom__snapshot *s, loom_plan *plan, loom_graph *g, bool params_only) {
    if (!s->t) {
        int n = 0;
        for (int i = 0; i < g->n; i++) n += g->nodes[i]->leaf == LOOM__PARAM || g->nodes[i]->leaf == LOOM__STATE;
        s->t = calloc((size_t)(n ? n : 1), sizeof *s->t);
        s->data = calloc((size_t)(n ? n : 1), sizeof *s->data);
        if (!s->t || !s->data) return loom__err(g->ctx, LOOM_ERR_OOM, "snapshot: out of memory");
        for (int i = 0; i < g->n; i++) {
            loom_tensor *t = g->nodes[i];
            if (t->leaf != LOOM__PARAM && t->leaf != LOOM__STATE) continue;
            if (params_only && t->leaf == LOOM__STATE && loom__is_optimizer_state(t->name)) continue;
            if (!(s->data[s->n] = malloc(loom__nbytes(t) ? loom__nbytes(t) : 1)))
                return loom__err(g->ctx, LOOM_ERR_OOM, "snapshot: out of memory for '%s'", t->name);
            s->t[s->n++] = t;
        }
    }
    for (int i = 0; i < s->n; i++) {
        loom_status st = loom_plan_read(plan, s->t[i], s->data[i], loom__nbytes(s->t[i]));
        if (st != LOOM_OK) return st;
    }
    return LOOM_OK;
}

loom_status loom__snapshot_restore(const loom__snapshot *s, loom_plan *plan) {
    for (int i = 0; i < s->n; i++) {
        loom_status st = loom_plan_write(plan, s->t[i], s->data[i], loom__nbytes(s->t[i]));
        if (st != LOOM_OK) return st;
    }
    return LOOM_OK;
}

void loom__snapshot_free(loom__snapshot *s) {
    for (int i = 0; s->data && i < s->n; i++) free(s->data[i]);
    free(s->t), free(s->data);
    memset(s, 0, sizeof *s);
}
