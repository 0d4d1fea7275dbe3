/* tests/ops/amp.c — op cases: the loss-scaling ops. amp_found_inf on finite
 * data, with an inf, with a NaN, chained; amp_unscale with and without a
 * non-finite flag, on applying and accumulating steps; amp_scaler_update
 * backing off, counting and growing (the harness compares the states it
 * writes). The scaler's state is f32 whatever the data dtype. */
#include <math.h>

#include "cases.h"
#include "optim_impl.h"

/* x (5, 7) of dtype dt; bad = 1: one element inf, 2: one NaN (x * c, c all 1 but one) */
static loom_tensor *data(loom_graph *g, const char *name, loom_dtype dt, int bad) {
    loom_tensor *x = tc_param(g, name, dt, TC_DIMS(5, 7), -2, 2);
    if (!bad) return x;
    float c[35];
    for (int i = 0; i < 35; i++) c[i] = 1.0f;
    c[17] = bad == 1 ? INFINITY : NAN;
    char cn[32];
    snprintf(cn, sizeof cn, "%s.c", name);
    loom_tensor *k = loom_constant(g, cn, LOOM_F32, TC_DIMS(5, 7), c);
    return loom_mul(g, x, dt == LOOM_F32 ? k : loom_cast(g, k, dt));
}

/* variant: 0 finite, 1 inf, 2 NaN, 3 finite then inf (chained), 4 inf then finite */
static loom_tensor *found(loom_graph *g, loom_dtype dt, int v) {
    if (v < 3) return loom__amp_found_inf(g, data(g, "x", dt, v), NULL);
    loom_tensor *f = loom__amp_found_inf(g, data(g, "x1", dt, v == 4), NULL);
    return loom__amp_found_inf(g, data(g, "x2", dt, v == 3), f);
}

static loom_tensor *hyper(loom_graph *g, float apply) {
    const float h[LOOM__HYPER_LEN] = {0.1f, 0.1f, 0.001f, apply, 0.5f, 0, 0, 0};
    return loom_constant(g, "hyper", LOOM_F32, TC_DIMS(LOOM__HYPER_LEN), h);
}

static loom_tensor *scalar_state(loom_graph *g, const char *name, double v) {
    return loom_state(g, name, LOOM_F32, TC_DIMS(1), &(loom_init){LOOM_INIT_CONST, v, 0});
}

/* variant bits: 0 inf in the data, 1 accumulating step (apply 0) */
static loom_tensor *unscale(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *f = loom__amp_found_inf(g, data(g, "x", dt, v & 1), NULL);
    return loom__amp_unscale(g, hyper(g, v & 2 ? 0.0f : 1.0f), scalar_state(g, "amp.scale", 1024), f);
}

/* variant: 0 inf (back off), 1 finite (count), 2 finite at the interval (grow), 3 accumulating (no change) */
static loom_tensor *update(loom_graph *g, loom_dtype dt, int v) {
    loom_tensor *f = loom__amp_found_inf(g, data(g, "x", dt, v == 0), NULL);
    return loom__amp_scaler_update(g, scalar_state(g, "amp.scale", 1024), scalar_state(g, "amp.growth_tracker", 4),
                                   scalar_state(g, "amp.skipped_steps", 2), f, hyper(g, v == 3 ? 0.0f : 1.0f), 2.0,
                                   0.5, v == 2 ? 5 : 2000);
}

const loom_op_case loom_cases_amp[] = {
    {"amp_found_inf finite", found, 0, 0, TC_NO_GRADCHECK},
    {"amp_found_inf inf", found, 1, 0, TC_NO_GRADCHECK},
    {"amp_found_inf NaN", found, 2, 0, TC_NO_GRADCHECK},
    {"amp_found_inf chained, inf second", found, 3, 0, TC_NO_GRADCHECK},
    {"amp_found_inf chained, inf first", found, 4, 0, TC_NO_GRADCHECK},
    {"amp_unscale finite", unscale, 0, 0, TC_NO_GRADCHECK},
    {"amp_unscale inf (skip)", unscale, 1, 0, TC_NO_GRADCHECK},
    {"amp_unscale inf, accumulating", unscale, 1 | 2, 0, TC_NO_GRADCHECK},
    {"amp_scaler_update back off", update, 0, 0, TC_NO_GRADCHECK},
    {"amp_scaler_update count", update, 1, 0, TC_NO_GRADCHECK},
    {"amp_scaler_update grow", update, 2, 0, TC_NO_GRADCHECK},
    {"amp_scaler_update accumulating", update, 3, 0, TC_NO_GRADCHECK},
    {0},
};
