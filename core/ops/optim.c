/* core/ops/optim.c — the optimizer's device-side ops: SGD and Adam/AdamW
 * parameter updates, gradient accumulation and the global-norm clipping
 * coefficient. These are effect ops: they write persistent tensors (params,
 * optimizer state) in place; their own output is a one-element placeholder.
 *
 * Every update op reads the step's hyper-parameters from `hyper`, an f32 (8)
 * input the host writes before each run (see core/optim.c):
 * (indices LOOM_G_HYPER_* in core/params.h)
 *   LR lr              BC1 1 - beta1^t        BC2 1 - beta2^t
 *   APPLY (1: update this run, 0: accumulate only)
 *   GMULT gradient multiplier (1/micro-batches; later 1/loss scale)
 *   FIRST first step (1 when t == 1)
 *
 * sgd_step(param, grad, hyper, buf?, coef?)  torch.optim.SGD semantics
 *   p[LOOM_P_SGD_BUF] has momentum buffer, p[LOOM_P_SGD_NESTEROV],
 *   p[LOOM_P_OPT_ZERO_GRAD] zero grad after applying, p[LOOM_P_OPT_COEF] src
 *   index of coef (-1 none); f[LOOM_F_SGD_MOMENTUM], f[LOOM_F_SGD_DAMPENING],
 *   f[LOOM_F_SGD_WD] weight decay (coupled: g += wd p).
 * adam_step(param, grad, hyper, m, v, coef?)  torch.optim.Adam / AdamW
 *   p[LOOM_P_ADAM_DECOUPLED] decoupled weight decay (AdamW),
 *   p[LOOM_P_OPT_ZERO_GRAD], p[LOOM_P_OPT_COEF] as sgd; f[LOOM_F_ADAM_BETA1],
 *   f[LOOM_F_ADAM_BETA2], f[LOOM_F_ADAM_EPS], f[LOOM_F_ADAM_WD] weight decay.
 * accumulate(acc, grad): acc += grad.
 * clip_coef(sumsq, hyper) -> f32 scalar min(1, max_norm / (sqrt(sumsq) *
 *   hyper[4] + 1e-6)), torch's clip_grad_norm_ coefficient; f[LOOM_F_CLIP_MAX_NORM].
 *
 * Kernels form the scalar factors 1 - beta1, 1 - beta2, 1 - dampening,
 * lr / (1 - beta1^t) and 1 - lr wd in double from f[] and hyper[], then round
 * once to the param dtype, as torch does: 1 - (float)0.999 is 0.00099998713,
 * which would bias Adam's second moment by 1.3e-5 against its correction.
 */
#include "../impl.h"
#include "../params.h"
#include "../optim_impl.h"

static loom_tensor *effect_out(loom_graph *g, int op, loom_tensor **src, int n) {
    loom_tensor *y = loom__node(g, op, LOOM_F32, 0, NULL, n, src);
    if (y) y->requires_grad = false;
    return y;
}

static bool check_param(loom_graph *g, const char *op, const loom_tensor *p, const loom_tensor *grad,
                        const loom_tensor *hyper) {
    char a[96], b[96];
    if (p->dtype != LOOM_F32 && p->dtype != LOOM_F64) {
        loom__fail(g, LOOM_ERR_DTYPE, "%s: parameter '%s' is %s; optimizers update f32 (or f64) master weights", op,
                   p->name, loom_dtype_name(p->dtype));
        return false;
    }
    if (!loom__same_shape(p, grad) || p->dtype != grad->dtype) {
        loom__fail(g, LOOM_ERR_SHAPE, "%s: gradient '%s' %s %s does not match parameter '%s' %s %s", op, grad->name,
                   loom_tensor_shape_str(grad, a, sizeof a), loom_dtype_name(grad->dtype), p->name,
                   loom_tensor_shape_str(p, b, sizeof b), loom_dtype_name(p->dtype));
        return false;
    }
    if (hyper->dtype != LOOM_F32 || hyper->ndim != 1 || hyper->dims[0] != LOOM__HYPER_LEN) {
        loom__fail(g, LOOM_ERR_SHAPE, "%s: hyper '%s' must be f32 (%d)", op, hyper->name, LOOM__HYPER_LEN);
        return false;
    }
    return true;
}

static bool check_state(loom_graph *g, const char *op, const loom_tensor *p, const loom_tensor *s) {
    char a[96], b[96];
    if (s->leaf != LOOM__STATE || !loom__same_shape(p, s) || s->dtype != p->dtype) {
        loom__fail(g, LOOM_ERR_SHAPE, "%s: state '%s' %s %s must be a state tensor shaped like '%s' %s %s", op,
                   s->name, loom_tensor_shape_str(s, a, sizeof a), loom_dtype_name(s->dtype), p->name,
                   loom_tensor_shape_str(p, b, sizeof b), loom_dtype_name(p->dtype));
        return false;
    }
    return true;
}

loom_tensor *loom__sgd_step(loom_graph *g, loom_tensor *param, loom_tensor *grad, loom_tensor *hyper,
                            loom_tensor *buf, loom_tensor *coef, const loom__sgd_params *sp) {
    if (!loom__ok(g, 3, param, grad, hyper)) return NULL;
    if (!check_param(g, "sgd_step", param, grad, hyper)) return NULL;
    if (buf && !check_state(g, "sgd_step", param, buf)) return NULL;
    loom_tensor *src[5] = {param, grad, hyper};
    int n = 3;
    if (buf) src[n++] = buf;
    int ci = coef ? n : -1;
    if (coef) src[n++] = coef;
    loom_tensor *y = effect_out(g, LOOM_OP_SGD_STEP, src, n);
    if (y) {
        y->p[LOOM_P_SGD_BUF] = buf != NULL, y->p[LOOM_P_SGD_NESTEROV] = sp->nesterov,
        y->p[LOOM_P_OPT_ZERO_GRAD] = sp->zero_grad, y->p[LOOM_P_OPT_COEF] = ci;
        y->f[LOOM_F_SGD_MOMENTUM] = sp->momentum, y->f[LOOM_F_SGD_DAMPENING] = sp->dampening,
        y->f[LOOM_F_SGD_WD] = sp->weight_decay;
    }
    return y;
}

loom_tensor *loom__adam_step(loom_graph *g, loom_tensor *param, loom_tensor *grad, loom_tensor *hyper,
                             loom_tensor *m, loom_tensor *v, loom_tensor *coef, const loom__adam_params *ap) {
    if (!loom__ok(g, 5, param, grad, hyper, m, v)) return NULL;
    if (!check_param(g, "adam_step", param, grad, hyper) || !check_state(g, "adam_step", param, m) ||
        !check_state(g, "adam_step", param, v))
        return NULL;
    loom_tensor *src[6] = {param, grad, hyper, m, v, coef};
    loom_tensor *y = effect_out(g, LOOM_OP_ADAM_STEP, src, coef ? 6 : 5);
    if (y) {
        y->p[LOOM_P_ADAM_DECOUPLED] = ap->decoupled, y->p[LOOM_P_OPT_ZERO_GRAD] = ap->zero_grad,
        y->p[LOOM_P_OPT_COEF] = coef ? 5 : -1;
        y->f[LOOM_F_ADAM_BETA1] = ap->beta1, y->f[LOOM_F_ADAM_BETA2] = ap->beta2, y->f[LOOM_F_ADAM_EPS] = ap->eps,
        y->f[LOOM_F_ADAM_WD] = ap->weight_decay;
    }
    return y;
}

loom_tensor *loom__accumulate(loom_graph *g, loom_tensor *acc, loom_tensor *grad) {
    if (!loom__ok(g, 2, acc, grad)) return NULL;
    if (!check_state(g, "accumulate", grad, acc)) return NULL;
    loom_tensor *src[2] = {acc, grad};
    return effect_out(g, LOOM_OP_ACCUMULATE, src, 2);
}

loom_tensor *loom__clip_coef(loom_graph *g, loom_tensor *sumsq, loom_tensor *hyper, double max_norm) {
    if (!loom__ok(g, 2, sumsq, hyper)) return NULL;
    if (loom_tensor_numel(sumsq) != 1 || !loom_dtype_is_float(sumsq->dtype) || !(max_norm > 0))
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "clip_coef: needs a one-element float sum of squares and max_norm > 0 (got %g)",
                          max_norm);
    loom_tensor *src[2] = {sumsq, hyper};
    loom_tensor *y = loom__node(g, LOOM_OP_CLIP_COEF, LOOM_F32, 0, NULL, 2, src);
    if (y) y->requires_grad = false, y->f[LOOM_F_CLIP_MAX_NORM] = max_norm;
    return y;
}
