/* backends/cpu/ops/amp.c — CPU kernels of the loss-scaling ops (semantics:
 * core/ops/amp.c). Reference loops that are also the fast path: the scan is
 * one pass over the gradient (16-bit gradients arrive converted to f32 by the
 * dispatcher; inf and NaN survive the conversion); the rest is a few scalars. */
#include <math.h>

#include "../cpu_impl.h"
#include "../../../core/optim_impl.h"

/* y = prev + (any non-finite element in x) */
loom_status loom__cpu_amp_found_inf(const loom__cpu_args *a) {
    const loom_tensor *x = a->node->src[0];
    int64_t n = loom_tensor_numel(x);
    int bad = 0;
    if (a->xdt[0] == LOOM_F64) {
        const double *v = a->x[0];
        for (int64_t i = 0; i < n; i++) bad |= !isfinite(v[i]);
    } else {
        const float *v = a->x[0];
        for (int64_t i = 0; i < n; i++) bad |= !isfinite(v[i]);
    }
    float prev = a->node->nsrc > 1 ? *(const float *)a->x[1] : 0.0f;
    *(float *)a->y = prev + (float)bad;
    return LOOM_OK;
}

/* y = hyper with gmult / scale; apply -> -1 when found on an applying step */
loom_status loom__cpu_amp_unscale(const loom__cpu_args *a) {
    const float *h = a->x[0];
    float scale = *(const float *)a->x[1], found = *(const float *)a->x[2];
    float *y = a->y;
    memcpy(y, h, LOOM__HYPER_LEN * sizeof *y);
    y[LOOM_G_HYPER_GMULT] = h[LOOM_G_HYPER_GMULT] / scale;
    if (found != 0 && h[LOOM_G_HYPER_APPLY] != 0) y[LOOM_G_HYPER_APPLY] = -1.0f;
    return LOOM_OK;
}

/* on applying steps: back off after a non-finite step, grow after `interval` finite ones */
loom_status loom__cpu_amp_scaler_update(const loom__cpu_args *a) {
    float *scale = a->x[0], *tracker = a->x[1], *skipped = a->x[2];
    float found = *(const float *)a->x[3];
    const float *h = a->x[4];
    *(float *)a->y = 0; /* the placeholder output */
    if (h[LOOM_G_HYPER_APPLY] == 0) return LOOM_OK;
    const loom_tensor *t = a->node;
    if (found != 0) {
        *scale = (float)(*scale * t->f[LOOM_F_AMP_BACKOFF]);
        *tracker = 0;
        *skipped += 1;
    } else {
        *tracker += 1;
        if (*tracker >= (float)t->p[LOOM_P_AMP_INTERVAL]) { /* torch: grow only to a finite scale */
            float grown = (float)(*scale * t->f[LOOM_F_AMP_GROWTH]);
            if (isfinite(grown)) *scale = grown;
            *tracker = 0;
        }
    }
    return LOOM_OK;
}
