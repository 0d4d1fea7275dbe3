/* tests/ops/optim.c — op cases: the optimizer's effect ops. The harness
 * compares the parameters and states they write after one run. Updates run
 * on f32 (and f64 reference) master weights, so 16-bit runs use f32 too. */
#include "cases.h"
#include "optim_impl.h"

static loom_dtype master(loom_dtype dt) { return dt == LOOM_F64 ? LOOM_F64 : LOOM_F32; }

static loom_tensor *hyper(loom_graph *g, float lr, float first, float apply) {
    const float h[LOOM__HYPER_LEN] = {lr, 0.1f, 0.001f, apply, 0.5f, first, 0, 0};
    return loom_constant(g, "hyper", LOOM_F32, TC_DIMS(LOOM__HYPER_LEN), h);
}

static loom_tensor *state_of(loom_graph *g, const char *name, loom_dtype dt, double lo, double hi, bool by4) {
    loom_init u = {LOOM_INIT_UNIFORM, lo, hi};
    return by4 ? loom_state(g, name, dt, TC_DIMS(4, 6), &u) : loom_state(g, name, dt, TC_DIMS(5, 7), &u);
}
static loom_tensor *state(loom_graph *g, const char *name, loom_dtype dt, double lo, double hi) {
    return state_of(g, name, dt, lo, hi, false);
}

/* variant bits: 0 momentum, 1 nesterov, 2 weight decay, 3 first step, 4 clip coef, 5 (4, 6) tensors
 * (24 elements: the Vulkan backend's four-per-invocation form and the OpenCL backend's eight on CPU
 * devices), else (5, 7), 6 zero grad after */
static loom_tensor *sgd(loom_graph *g, loom_dtype dt, int v) {
    dt = master(dt);
    bool by4 = v & 32;
    loom_tensor *p = by4 ? tc_param(g, "w", dt, TC_DIMS(4, 6), -1, 1) : tc_param(g, "w", dt, TC_DIMS(5, 7), -1, 1);
    loom_tensor *gr = state_of(g, "grad", dt, -1, 1, by4);
    loom_tensor *buf = v & 1 ? state_of(g, "w.momentum_buffer", dt, -0.5, 0.5, by4) : NULL;
    loom_tensor *coef = NULL;
    if (v & 16) coef = loom_constant(g, "coef", LOOM_F32, 0, NULL, &(float){0.25f});
    loom__sgd_params sp = {v & 1 ? 0.9 : 0, 0, v & 4 ? 0.01 : 0, (v & 2) != 0, (v & 64) != 0};
    return loom__sgd_step(g, p, gr, hyper(g, 0.1f, v & 8 ? 1.0f : 0.0f, 1), buf, coef, &sp);
}

/* variant bits: 0 AdamW, 1 weight decay, 2 zero grad after, 3 skip (apply 0), 4 skipped by loss scaling
 * (apply -1), 5 (4, 6) tensors (the OpenCL backend's eight-per-item form on CPU devices), else (5, 7) */
static loom_tensor *adam(loom_graph *g, loom_dtype dt, int v) {
    dt = master(dt);
    bool by4 = v & 32;
    loom_tensor *p = by4 ? tc_param(g, "w", dt, TC_DIMS(4, 6), -1, 1) : tc_param(g, "w", dt, TC_DIMS(5, 7), -1, 1);
    loom_tensor *gr = state_of(g, "grad", dt, -1, 1, by4);
    loom_tensor *m = state_of(g, "w.exp_avg", dt, -0.1, 0.1, by4), *s = state_of(g, "w.exp_avg_sq", dt, 0, 0.01, by4);
    loom__adam_params ap = {0.9, 0.999, 1e-8, v & 2 ? 0.05 : 0, (v & 1) != 0, (v & 4) != 0};
    return loom__adam_step(g, p, gr, hyper(g, 0.01f, 0, v & 16 ? -1.0f : v & 8 ? 0.0f : 1.0f), m, s, NULL, &ap);
}

static loom_tensor *accumulate(loom_graph *g, loom_dtype dt, int v) {
    (void)v;
    dt = master(dt);
    return loom__accumulate(g, state(g, "acc", dt, -1, 1), tc_param(g, "grad", dt, TC_DIMS(5, 7), -1, 1));
}

/* the coefficient of a sum of squares through an SGD step that uses it */
static loom_tensor *clip(loom_graph *g, loom_dtype dt, int v) {
    dt = master(dt);
    loom_tensor *p = tc_param(g, "w", dt, TC_DIMS(5, 7), -1, 1);
    loom_tensor *gr = state(g, "grad", dt, -1, 1);
    loom_tensor *h = hyper(g, 0.1f, 0, 1);
    loom_tensor *ss = loom_sum(g, loom_mul(g, gr, gr), 0, false);
    loom_tensor *coef = loom__clip_coef(g, ss, h, v ? 0.5 : 100.0); /* clipping / not clipping */
    loom__sgd_params sp = {0};
    loom__sgd_step(g, p, gr, h, NULL, coef, &sp);
    return coef;
}

const loom_op_case loom_cases_optim[] = {
    {"sgd plain", sgd, 0, 0, TC_NO_GRADCHECK},
    {"sgd momentum", sgd, 1, 0, TC_NO_GRADCHECK},
    {"sgd momentum first step", sgd, 1 | 8, 0, TC_NO_GRADCHECK},
    {"sgd nesterov weight decay", sgd, 1 | 2 | 4, 0, TC_NO_GRADCHECK},
    {"sgd momentum clip coef", sgd, 1 | 16, 0, TC_NO_GRADCHECK},
    {"sgd plain (4, 6)", sgd, 32, 0, TC_NO_GRADCHECK},
    {"sgd momentum first step (4, 6)", sgd, 1 | 8 | 32, 0, TC_NO_GRADCHECK},
    {"sgd nesterov weight decay (4, 6)", sgd, 1 | 2 | 4 | 32, 0, TC_NO_GRADCHECK},
    {"sgd momentum zero grad (4, 6)", sgd, 1 | 32 | 64, 0, TC_NO_GRADCHECK},
    {"adam", adam, 0, 0, TC_NO_GRADCHECK},
    {"adam weight decay", adam, 2, 0, TC_NO_GRADCHECK},
    {"adamw weight decay zero grad", adam, 1 | 2 | 4, 0, TC_NO_GRADCHECK},
    {"adam skipped step (apply 0)", adam, 8, 0, TC_NO_GRADCHECK},
    {"adam step skipped by loss scaling, zero grad (apply -1)", adam, 16 | 4, 0, TC_NO_GRADCHECK},
    {"adam weight decay (4, 6)", adam, 2 | 32, 0, TC_NO_GRADCHECK},
    {"adamw weight decay zero grad (4, 6)", adam, 1 | 2 | 4 | 32, 0, TC_NO_GRADCHECK},
    {"adam skipped step (apply 0) (4, 6)", adam, 8 | 32, 0, TC_NO_GRADCHECK},
    {"adam step skipped by loss scaling, zero grad (apply -1) (4, 6)", adam, 16 | 4 | 32, 0, TC_NO_GRADCHECK},
    {"accumulate", accumulate, 0, 0, TC_NO_GRADCHECK},
    {"clip coef clipping", clip, 1, 0, TC_NO_GRADCHECK},
    {"clip coef not clipping", clip, 0, 0, TC_NO_GRADCHECK},
    {0},
};
