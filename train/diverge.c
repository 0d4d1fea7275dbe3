/* train/diverge.c — the divergence stop at the end of an epoch: every
 * parameter and state of the training plan (weights, batch-norm statistics,
 * optimizer state) must be finite before the epoch is evaluated and its
 * checkpoint written. A step whose loss is not finite stops the run at once
 * (train/train.c); this catches what the loss does not show: a run whose loss
 * stays finite while a batch-norm running variance or a weight overflowed
 * (batch norm in training mode normalises huge activations back to a finite
 * loss). One read of the weights per epoch, the cost of a checkpoint. */
#include <math.h>

#include "train_impl.h"

loom_status loom__check_diverged(loom_trainer *t) {
    if (t->d.run.allow_nonfinite) return LOOM_OK; /* non-finite weights were loaded on purpose */
    const loom_graph *g = t->tr.g;
    int64_t most = 0;
    for (int i = 0; i < g->n; i++) {
        const loom_tensor *x = g->nodes[i];
        if ((x->leaf == LOOM__PARAM || x->leaf == LOOM__STATE) && loom_dtype_is_float(x->dtype) &&
            loom_tensor_numel(x) > most)
            most = loom_tensor_numel(x);
    }
    double *v = malloc((size_t)(most ? most : 1) * sizeof *v);
    if (!v) return loom__err(t->ctx, LOOM_ERR_OOM, "train: out of memory for the divergence check");
    loom_status st = LOOM_OK;
    for (int i = 0; i < g->n && st == LOOM_OK; i++) {
        const loom_tensor *x = g->nodes[i];
        if ((x->leaf != LOOM__PARAM && x->leaf != LOOM__STATE) || !loom_dtype_is_float(x->dtype)) continue;
        int64_t n = loom_tensor_numel(x), at = -1;
        if ((st = loom_plan_read_f64(t->tr.plan, x, v, (size_t)n)) != LOOM_OK) break;
        for (int64_t k = 0; k < n && at < 0; k++)
            if (!isfinite(v[k])) at = k;
        if (at >= 0)
            st = loom__err(t->ctx, LOOM_ERR_STATE,
                           "train: diverged in epoch %d (optimizer step %lld, lr %g): '%s' holds %s at index %lld "
                           "(flat); nothing saved: try a lower learning rate or gradient clipping",
                           t->epoch + 1, (long long)loom_optimizer_steps(t->opt), t->lr, x->name,
                           isnan(v[at]) ? "NaN" : v[at] > 0 ? "+inf" : "-inf", (long long)at);
    }
    free(v);
    return st;
}
