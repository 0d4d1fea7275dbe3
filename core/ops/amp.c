/* core/ops/amp.c — dynamic loss scaling for mixed-precision training, with
 * PyTorch GradScaler semantics, entirely on the device (no host round trip
 * per step): loom_scale_loss, the three ops below, and the builders the
 * optimizer uses (core/optim.c).
 *
 * State (f32 (1) state tensors, so checkpoints carry them):
 *   "amp.scale"          the loss scale (init_scale, default 2^16)
 *   "amp.growth_tracker" consecutive finite optimizer steps since the last change
 *   "amp.skipped_steps"  optimizer steps skipped because a gradient was inf/NaN
 *
 * amp_found_inf(x, prev?) -> f32 () : prev + (1 if any element of x is inf
 *   or NaN, else 0). Chained over every gradient.
 * amp_unscale(hyper, scale, found) -> f32 (8): a copy of the optimizer's
 *   hyper input with the gradient multiplier divided by the scale and, when
 *   found > 0 on an applying step (hyper[3] != 0), hyper[3] = -1: the update
 *   ops then leave parameters and optimizer state untouched and only clear
 *   gradient accumulators. (On an accumulating micro-step, hyper[3] = 0, the
 *   non-finite value stays in the accumulator until the applying step skips.)
 * amp_scaler_update(scale, tracker, skipped, found, hyper) -> placeholder;
 *   effect op, after the updates, on applying steps only (hyper[3] != 0 in
 *   the host-written hyper): found > 0: scale *= backoff, tracker = 0,
 *   skipped += 1; else tracker += 1 and, when it reaches the interval,
 *   scale *= growth (only if that stays finite, as torch), tracker = 0.
 *   f[LOOM_F_AMP_GROWTH], f[LOOM_F_AMP_BACKOFF], p[LOOM_P_AMP_INTERVAL].
 */
#include <math.h>
#include <string.h>

#include "../backend_impl.h"
#include "../optim_impl.h"

static loom_tensor *scalar_state(loom_graph *g, const char *name, double init) {
    loom_init in = {LOOM_INIT_CONST, init, 0};
    return loom_state(g, name, LOOM_F32, 1, (const int64_t[]){1}, &in);
}

loom_tensor *loom_scale_loss(loom_graph *g, loom_tensor *loss, const loom_loss_scale_desc *desc) {
    if (!loom__ok(g, 1, loss)) return NULL;
    loom_loss_scale_desc d = desc ? *desc : (loom_loss_scale_desc){0};
    if (d.init_scale == 0) d.init_scale = 65536.0;
    if (d.growth_factor == 0) d.growth_factor = 2.0;
    if (d.backoff_factor == 0) d.backoff_factor = 0.5;
    if (d.growth_interval == 0) d.growth_interval = 2000;
    if (!(d.init_scale > 0) || !isfinite(d.init_scale) || !(d.growth_factor >= 1) || !isfinite(d.growth_factor) ||
        !(d.backoff_factor > 0 && d.backoff_factor < 1) || d.growth_interval < 1)
        return loom__fail(g, LOOM_ERR_INVALID_ARG,
                          "loss scaling: init_scale %g must be > 0, growth_factor %g >= 1, backoff_factor %g in (0, 1) "
                          "and growth_interval %d >= 1",
                          d.init_scale, d.growth_factor, d.backoff_factor, d.growth_interval);
    if (g->amp.scale)
        return loom__fail(g, LOOM_ERR_STATE, "loss scaling: loom_scale_loss was already called on this graph");
    if (g->has_backward)
        return loom__fail(g, LOOM_ERR_STATE, "loss scaling: call loom_scale_loss before loom_backward");
    if (loom_tensor_numel(loss) != 1 || !loom_dtype_is_float(loss->dtype))
        return loom__fail(g, LOOM_ERR_SHAPE, "loss scaling: the loss '%s' must be a one-element float tensor",
                          loss->name);
    loom_tensor *scale = scalar_state(g, "amp.scale", d.init_scale);
    loom_tensor *tracker = scalar_state(g, "amp.growth_tracker", 0);
    loom_tensor *skipped = scalar_state(g, "amp.skipped_steps", 0);
    if (!scale || !tracker || !skipped) return NULL;
    g->amp.scale = scale, g->amp.tracker = tracker, g->amp.skipped = skipped;
    g->amp.growth = d.growth_factor, g->amp.backoff = d.backoff_factor, g->amp.interval = d.growth_interval;
    loom_tensor *s = scale;
    if (loss->dtype != LOOM_F32) s = loom_cast(g, s, loss->dtype);
    if (loss->ndim == 0) s = loom_reshape(g, s, 0, NULL);
    return loom_mul(g, loss, s);
}

loom_tensor *loom__amp_found_inf(loom_graph *g, loom_tensor *x, loom_tensor *prev) {
    if (!loom__ok(g, 1, x)) return NULL;
    if (!loom_dtype_is_float(x->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "amp_found_inf: '%s' has dtype %s, a float dtype is required", x->name,
                          loom_dtype_name(x->dtype));
    if (prev && (prev->dtype != LOOM_F32 || loom_tensor_numel(prev) != 1))
        return loom__fail(g, LOOM_ERR_SHAPE, "amp_found_inf: the running flag '%s' must be an f32 scalar", prev->name);
    loom_tensor *src[2] = {x, prev};
    loom_tensor *y = loom__node(g, LOOM_OP_AMP_FOUND_INF, LOOM_F32, 0, NULL, prev ? 2 : 1, src);
    if (y) y->requires_grad = false;
    return y;
}

static bool check_scalar(loom_graph *g, const char *op, const loom_tensor *t) {
    if (t->dtype == LOOM_F32 && loom_tensor_numel(t) == 1) return true;
    loom__fail(g, LOOM_ERR_SHAPE, "%s: '%s' must be a one-element f32 tensor", op, t->name);
    return false;
}

static bool check_hyper(loom_graph *g, const char *op, const loom_tensor *h) {
    if (h->dtype == LOOM_F32 && h->ndim == 1 && h->dims[0] == LOOM__HYPER_LEN) return true;
    loom__fail(g, LOOM_ERR_SHAPE, "%s: hyper '%s' must be f32 (%d)", op, h->name, LOOM__HYPER_LEN);
    return false;
}

loom_tensor *loom__amp_unscale(loom_graph *g, loom_tensor *hyper, loom_tensor *scale, loom_tensor *found) {
    if (!loom__ok(g, 3, hyper, scale, found)) return NULL;
    if (!check_hyper(g, "amp_unscale", hyper) || !check_scalar(g, "amp_unscale", scale) ||
        !check_scalar(g, "amp_unscale", found))
        return NULL;
    loom_tensor *src[3] = {hyper, scale, found};
    loom_tensor *y = loom__node(g, LOOM_OP_AMP_UNSCALE, LOOM_F32, 1, (const int64_t[]){LOOM__HYPER_LEN}, 3, src);
    if (y) y->requires_grad = false;
    return y;
}

loom_tensor *loom__amp_scaler_update(loom_graph *g, loom_tensor *scale, loom_tensor *tracker, loom_tensor *skipped,
                                     loom_tensor *found, loom_tensor *hyper, double growth, double backoff,
                                     int64_t interval) {
    if (!loom__ok(g, 5, scale, tracker, skipped, found, hyper)) return NULL;
    const char *op = "amp_scaler_update";
    if (!check_scalar(g, op, scale) || !check_scalar(g, op, tracker) || !check_scalar(g, op, skipped) ||
        !check_scalar(g, op, found) || !check_hyper(g, op, hyper))
        return NULL;
    if (scale->leaf != LOOM__STATE || tracker->leaf != LOOM__STATE || skipped->leaf != LOOM__STATE)
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "%s: scale, tracker and skipped count must be state tensors", op);
    loom_tensor *src[5] = {scale, tracker, skipped, found, hyper};
    loom_tensor *y = loom__node(g, LOOM_OP_AMP_SCALER_UPDATE, LOOM_F32, 0, NULL, 5, src);
    if (y) {
        y->requires_grad = false;
        y->f[LOOM_F_AMP_GROWTH] = growth, y->f[LOOM_F_AMP_BACKOFF] = backoff, y->p[LOOM_P_AMP_INTERVAL] = interval;
    }
    return y;
}

loom_status loom_loss_scale_read(loom_plan *p, double *scale, int64_t *skipped) {
    loom_graph *g = p->g;
    if (!g->amp.scale)
        return loom__err(g->ctx, LOOM_ERR_STATE, "loss scaling: the plan's graph has no loss scale (loom_scale_loss)");
    float s = 0, k = 0;
    loom_status st = loom_plan_read(p, g->amp.scale, &s, sizeof s);
    if (st == LOOM_OK) st = loom_plan_read(p, g->amp.skipped, &k, sizeof k);
    if (st != LOOM_OK) return st;
    if (scale) *scale = s;
    if (skipped) *skipped = (int64_t)k;
    return LOOM_OK;
}
