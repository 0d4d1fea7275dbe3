/* backends/cpu/ops/augment.c — CPU kernel of augment_u8 (core/ops/augment.c),
 * the reference of the device augmentation: one output row of one channel
 * per work item, split across the thread pool. */
#include <string.h>

#include "../cpu_impl.h"

typedef struct aug_job {
    const uint8_t *x;
    const int32_t *prm;
    const float *lut;
    void *y;
    int64_t c, h, w, oh, ow;
    uint8_t fill;
} aug_job;

/* the brightness of core/ops/augment.c: trunc(clamp(v * f, 0, 255)) in f32 */
static uint8_t bright(uint8_t v, float f) {
    float r = (float)v * f;
    r = r > 0.0f ? r : 0.0f;
    r = r < 255.0f ? r : 255.0f;
    return (uint8_t)(int32_t)r;
}

/* columns [c0, c0 + cnt) of output row r of the (N, C, OH) rows: the u8
 * values before the lookup */
static void aug_row(const aug_job *j, int64_t r, int64_t c0, int64_t cnt, uint8_t *u) {
    int64_t oy = r % j->oh, k = (r / j->oh) % j->c, n = r / (j->oh * j->c);
    const int32_t *p = j->prm + n * LOOM_G_AUG_COUNT;
    const uint8_t *img = j->x + n * j->h * j->w * j->c;
    int64_t y0 = p[LOOM_G_AUG_Y0] > 0 ? p[LOOM_G_AUG_Y0] : 0, y1 = p[LOOM_G_AUG_Y1] < j->h ? p[LOOM_G_AUG_Y1] : j->h;
    int64_t x0 = p[LOOM_G_AUG_X0] > 0 ? p[LOOM_G_AUG_X0] : 0, x1 = p[LOOM_G_AUG_X1] < j->w ? p[LOOM_G_AUG_X1] : j->w;
    int64_t sy = (int64_t)p[LOOM_G_AUG_ROW0] + (int64_t)p[LOOM_G_AUG_RSTEP] * oy;
    float f;
    memcpy(&f, &p[LOOM_G_AUG_BFACTOR], sizeof f);
    for (int64_t ox = c0; ox < c0 + cnt; ox++) {
        int64_t sx = (int64_t)p[LOOM_G_AUG_COL0] + (int64_t)p[LOOM_G_AUG_CSTEP] * ox;
        uint8_t v = sy >= y0 && sy < y1 && sx >= x0 && sx < x1 ? img[(sy * j->w + sx) * j->c + k] : j->fill;
        u[ox - c0] = p[LOOM_G_AUG_BRIGHT] ? bright(v, f) : v;
    }
}

/* rows [r0, r1) of the (N, C, OH) output rows */
#define AUGMENT(T)                                                                 \
    static void aug_##T(void *v, int64_t r0, int64_t r1) {                         \
        const aug_job *j = v;                                                      \
        uint8_t u[256];                                                            \
        for (int64_t r = r0; r < r1; r++) {                                        \
            const float *lut = j->lut + ((r / j->oh) % j->c) * 256;                \
            T *o = (T *)j->y + r * j->ow;                                          \
            for (int64_t c0 = 0; c0 < j->ow; c0 += 256) {                          \
                int64_t n = j->ow - c0 < 256 ? j->ow - c0 : 256;                   \
                aug_row(j, r, c0, n, u);                                           \
                for (int64_t i = 0; i < n; i++) o[c0 + i] = (T)lut[u[i]];          \
            }                                                                      \
        }                                                                          \
    }
AUGMENT(float)
AUGMENT(double)

loom_status loom__cpu_augment_u8(const loom__cpu_args *a) {
    const loom_tensor *t = a->node, *x = t->src[0];
    aug_job j = {
        .x = a->x[0],
        .prm = a->x[1],
        .lut = a->x[2],
        .y = a->y,
        .c = x->dims[3],
        .h = x->dims[1],
        .w = x->dims[2],
        .oh = t->dims[2],
        .ow = t->dims[3],
        .fill = (uint8_t)t->p[LOOM_P_AUG_FILL],
    };
    int64_t rows = t->dims[0] * j.c * j.oh;
    loom__cpu_parallel(a->cpu, rows, 16, a->dt == LOOM_F64 ? aug_double : aug_float, &j);
    return LOOM_OK;
}
