/* train/train_impl.h — library-private helpers shared by the training loop
 * (train/train.c) and the LR finder (train/lrfind.c). */
#ifndef LOOM_TRAIN_TRAIN_IMPL_H
#define LOOM_TRAIN_TRAIN_IMPL_H

#include "impl.h"
#include "loom/train.h"

/* A host copy of every parameter and state of a graph (weights, batch-norm
 * statistics, optimizer state) as stored in a plan, in their own dtypes. */
typedef struct loom__snapshot {
    int n;
    loom_tensor **t;
    void **data;
} loom__snapshot;

/* Take (or refresh: same graph) the copy; params_only skips optimizer state
 * (states named after a parameter with an optimizer suffix are still
 * states: params_only keeps parameters and batch-norm statistics, i.e. every
 * state whose name does not end in an optimizer suffix). */
loom_status loom__snapshot_take(loom__snapshot *s, loom_plan *plan, loom_graph *g, bool params_only);
loom_status loom__snapshot_restore(const loom__snapshot *s, loom_plan *plan);
void loom__snapshot_free(loom__snapshot *s);

#endif
