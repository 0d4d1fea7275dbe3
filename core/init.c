/* core/init.c — parameter and state initialisation from Philox.
 *
 * Values are a pure function of (graph seed, hash of the tensor's name,
 * element index), so they do not depend on creation order or backend. */
#include <math.h>

#include "impl.h"

/* fan_in = dims[1] * receptive field, fan_out = dims[0] * receptive field
 * (torch's convention for (out, in, kh, kw) weights; 1-D: both = dims[0]). */
static void fans(const loom_tensor *t, double *fan_in, double *fan_out) {
    if (t->ndim < 2) {
        *fan_in = *fan_out = t->ndim ? (double)t->dims[0] : 1.0;
        return;
    }
    double rf = 1;
    for (int i = 2; i < t->ndim; i++) rf *= (double)t->dims[i];
    *fan_in = (double)t->dims[1] * rf;
    *fan_out = (double)t->dims[0] * rf;
}

loom_status loom__init_values(const loom_tensor *t, uint64_t seed, double *out) {
    size_t n = (size_t)loom_tensor_numel(t);
    uint64_t stream = loom_hash_name(t->name);
    double fan_in, fan_out, a = t->init.a, b = t->init.b;
    fans(t, &fan_in, &fan_out);
    double lo = 0, hi = 0, mean = 0, std = 0;
    bool normal = false, uniform = false;
    switch (t->init.kind) {
    case LOOM_INIT_ZEROS: a = 0; /* fall through */
    case LOOM_INIT_CONST:
        for (size_t i = 0; i < n; i++) out[i] = a;
        return LOOM_OK;
    case LOOM_INIT_ONES:
        for (size_t i = 0; i < n; i++) out[i] = 1.0;
        return LOOM_OK;
    case LOOM_INIT_UNIFORM: uniform = true, lo = a, hi = b; break;
    case LOOM_INIT_NORMAL: normal = true, mean = a, std = b; break;
    case LOOM_INIT_KAIMING_UNIFORM:
    case LOOM_INIT_KAIMING_NORMAL: {
        double s = sqrt(2.0 / (1.0 + a * a)) / sqrt(fan_in);
        if (t->init.kind == LOOM_INIT_KAIMING_NORMAL)
            normal = true, std = s;
        else
            uniform = true, hi = sqrt(3.0) * s, lo = -hi;
        break;
    }
    case LOOM_INIT_XAVIER_UNIFORM:
    case LOOM_INIT_XAVIER_NORMAL: {
        double gain = a == 0 ? 1.0 : a;
        double s = gain * sqrt(2.0 / (fan_in + fan_out));
        if (t->init.kind == LOOM_INIT_XAVIER_NORMAL)
            normal = true, std = s;
        else
            uniform = true, hi = sqrt(3.0) * s, lo = -hi;
        break;
    }
    default:
        return loom__err(t->g->ctx, LOOM_ERR_INVALID_ARG, "init of '%s': unknown init kind %d", t->name,
                         (int)t->init.kind);
    }
    if (uniform)
        for (size_t i = 0; i < n; i++) out[i] = lo + (hi - lo) * loom_philox_uniform(seed, stream, i);
    if (normal)
        for (size_t i = 0; i < n; i++) out[i] = mean + std * loom_philox_normal(seed, stream, i);
    return LOOM_OK;
}
