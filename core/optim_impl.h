/* core/optim_impl.h — library-private builders of the optimizer ops
 * (core/ops/optim.c), used by the host-side optimizer (core/optim.c). */
#ifndef LOOM_CORE_OPTIM_IMPL_H
#define LOOM_CORE_OPTIM_IMPL_H

#include "impl.h"
#include "params.h"

/* the hyper tensor's layout: core/params.h (LOOM_G_HYPER_*) */
#define LOOM__HYPER_LEN LOOM_G_HYPER_LEN
enum {
    LOOM__H_LR = LOOM_G_HYPER_LR,
    LOOM__H_BC1 = LOOM_G_HYPER_BC1,
    LOOM__H_BC2 = LOOM_G_HYPER_BC2,
    LOOM__H_APPLY = LOOM_G_HYPER_APPLY,
    LOOM__H_GMULT = LOOM_G_HYPER_GMULT,
    LOOM__H_FIRST = LOOM_G_HYPER_FIRST
};

typedef struct loom__sgd_params {
    double momentum, dampening, weight_decay;
    bool nesterov, zero_grad;
} loom__sgd_params;

typedef struct loom__adam_params {
    double beta1, beta2, eps, weight_decay;
    bool decoupled, zero_grad;
} loom__adam_params;

loom_tensor *loom__sgd_step(loom_graph *g, loom_tensor *param, loom_tensor *grad, loom_tensor *hyper,
                            loom_tensor *buf, loom_tensor *coef, const loom__sgd_params *sp);
loom_tensor *loom__adam_step(loom_graph *g, loom_tensor *param, loom_tensor *grad, loom_tensor *hyper,
                             loom_tensor *m, loom_tensor *v, loom_tensor *coef, const loom__adam_params *ap);
loom_tensor *loom__accumulate(loom_graph *g, loom_tensor *acc, loom_tensor *grad);
loom_tensor *loom__clip_coef(loom_graph *g, loom_tensor *sumsq, loom_tensor *hyper, double max_norm);

/* dynamic loss scaling (core/ops/amp.c) */
loom_tensor *loom__amp_found_inf(loom_graph *g, loom_tensor *x, loom_tensor *prev);
loom_tensor *loom__amp_unscale(loom_graph *g, loom_tensor *hyper, loom_tensor *scale, loom_tensor *found);
loom_tensor *loom__amp_scaler_update(loom_graph *g, loom_tensor *scale, loom_tensor *tracker, loom_tensor *skipped,
                                     loom_tensor *found, loom_tensor *hyper, double growth, double backoff,
                                     int64_t interval);

#endif
