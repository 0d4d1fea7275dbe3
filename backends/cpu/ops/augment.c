/* backends/cpu/ops/augment.c — CPU kernel of augment_u8 (core/ops/augment.c),
 * the reference of the device augmentation. Two passes: the contrast mean of
 * each sample that has one (one sample per work item), then one output row
 * (all channels) per work item, split across the thread pool.
 *
 * Built with -ffp-contract=off (CMakeLists.txt): every product and sum is
 * its own f32 rounding, as in the loader's ColorJitter (loader/transforms.c):
 * hue and the u8 truncation are the same functions (core/color.h); brightness,
 * contrast and saturation repeat the expressions the host's lookup tables
 * are built from; a RandomAffine's source point is the host's too
 * (core/affine.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../../core/affine.h"
#include "../../../core/color.h"
#include "../cpu_impl.h"

typedef struct aug_job {
    const uint8_t *x;
    const int32_t *prm;
    const float *lut;
    void *y;
    float *mean; /* (N) the contrast mean of each sample (unused where it has none) */
    int c; /* 1..4 */
    int64_t h, w, oh, ow;
    uint8_t fill;
    bool affine; /* the node's LOOM_P_AUG_AFFINE: rows may apply a RandomAffine */
} aug_job;

static float f32_at(const int32_t *p, int col) {
    float f;
    memcpy(&f, &p[col], sizeof f);
    return f;
}

/* floor of rgb_to_grayscale: the (weighted) gray of one pixel, an integer */
static int32_t gray_floor(const uint8_t *v, int c) {
    if (c != 3) return v[0];
    return (int32_t)((float)v[0] * 0.2989f + (float)v[1] * 0.587f + (float)v[2] * 0.114f);
}

/* one adjustment (code LOOM_K_AUG_*) on the c values of one pixel of the
 * sample whose row of the table is p; mean: its contrast mean. Brightness
 * and contrast run on all four lanes (those past c are unused). */
static void adjust(int code, const int32_t *p, float mean, int c, uint8_t v[4]) {
    if (code == LOOM_K_AUG_BRIGHT) {
        float f = f32_at(p, LOOM_G_AUG_BFACTOR);
        for (int k = 0; k < 4; k++) v[k] = loom__trunc_u8((float)v[k] * f);
    } else if (code == LOOM_K_AUG_CONTRAST) {
        float f = f32_at(p, LOOM_G_AUG_CFACTOR), add = mean * f32_at(p, LOOM_G_AUG_CGAIN);
        for (int k = 0; k < 4; k++) v[k] = loom__trunc_u8((float)v[k] * f + add);
    } else if (code == LOOM_K_AUG_SAT && c == 3) {
        float f = f32_at(p, LOOM_G_AUG_SFACTOR), add = (float)gray_floor(v, c) * f32_at(p, LOOM_G_AUG_SGAIN);
        for (int k = 0; k < 3; k++) v[k] = loom__trunc_u8((float)v[k] * f + add);
    } else if (code == LOOM_K_AUG_HUE && c == 3) {
        loom__hue_px(f32_at(p, LOOM_G_AUG_HFACTOR), v, v);
    }
}

/* double k of a RandomAffine's inverse matrix (two columns from LOOM_G_AUG_M) */
static double m_at(const int32_t *p, int k) {
    uint64_t bits = (uint64_t)(uint32_t)p[LOOM_G_AUG_M + 2 * k] | (uint64_t)(uint32_t)p[LOOM_G_AUG_M + 2 * k + 1] << 32;
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* Where output pixel (oy, ox) of the sample whose row is p reads the
 * jittered image: itself without an affine; else the affine's nearest
 * source point (*sy, *sx), false when outside (then the affine's fill,
 * not jittered). The host's arithmetic (core/affine.h). */
static bool affine_src(const aug_job *j, const int32_t *p, int64_t oy, int64_t ox, int64_t *sy, int64_t *sx) {
    *sy = oy, *sx = ox;
    if (!j->affine || p[LOOM_G_AUG_AFFINE] == 0) return true;
    double m[6], fx, fy;
    for (int k = 0; k < 6; k++) m[k] = m_at(p, k);
    loom__affine_point(m, 0.5 * (double)(j->ow - 1), 0.5 * (double)(j->oh - 1), ox, oy, &fx, &fy);
    int64_t at;
    if (!loom__nearest_at(fx, fy, j->ow, j->oh, &at)) return false;
    *sy = at / j->ow, *sx = at % j->ow;
    return true;
}

static int code_at(const int32_t *p, int i) {
    return (int)(((uint32_t)p[LOOM_G_AUG_JITTER] >> (LOOM_K_AUG_BITS * i)) & ((1u << LOOM_K_AUG_BITS) - 1));
}

/* the c values of output pixel (oy, ox) of sample n before the adjustments
 * (then zeros up to four) */
static void fetch(const aug_job *j, int64_t n, int64_t oy, int64_t ox, uint8_t v[4]) {
    const int32_t *p = j->prm + n * LOOM_G_AUG_COUNT;
    int64_t y0 = p[LOOM_G_AUG_Y0] > 0 ? p[LOOM_G_AUG_Y0] : 0, y1 = p[LOOM_G_AUG_Y1] < j->h ? p[LOOM_G_AUG_Y1] : j->h;
    int64_t x0 = p[LOOM_G_AUG_X0] > 0 ? p[LOOM_G_AUG_X0] : 0, x1 = p[LOOM_G_AUG_X1] < j->w ? p[LOOM_G_AUG_X1] : j->w;
    int64_t sy = (int64_t)p[LOOM_G_AUG_ROW0] + (int64_t)p[LOOM_G_AUG_RSTEP] * oy;
    int64_t sx = (int64_t)p[LOOM_G_AUG_COL0] + (int64_t)p[LOOM_G_AUG_CSTEP] * ox;
    bool in = sy >= y0 && sy < y1 && sx >= x0 && sx < x1;
    memset(v, 0, 4);
    for (int k = 0; k < j->c; k++) v[k] = in ? j->x[((n * j->h + sy) * j->w + sx) * j->c + k] : j->fill;
}

/* samples [n0, n1): the mean of the gray (floored) of the image as it
 * stands before contrast, over all oh x ow pixels, in double and rounded to
 * f32 (loader/transforms.c loom__gray_mean) */
static void aug_means(void *v, int64_t n0, int64_t n1) {
    const aug_job *j = v;
    for (int64_t n = n0; n < n1; n++) {
        const int32_t *p = j->prm + n * LOOM_G_AUG_COUNT;
        int before = 0; /* the adjustments ahead of contrast */
        while (before < 4 && code_at(p, before) != 0 && code_at(p, before) != LOOM_K_AUG_CONTRAST) before++;
        j->mean[n] = 0.0f;
        if (before == 4 || code_at(p, before) != LOOM_K_AUG_CONTRAST) continue;
        int64_t sum = 0;
        for (int64_t oy = 0; oy < j->oh; oy++)
            for (int64_t ox = 0; ox < j->ow; ox++) {
                uint8_t px[4];
                fetch(j, n, oy, ox, px);
                for (int i = 0; i < before; i++) adjust(code_at(p, i), p, 0.0f, j->c, px);
                sum += gray_floor(px, j->c);
            }
        j->mean[n] = (float)((double)sum / (double)(j->oh * j->ow));
    }
}

/* rows [r0, r1) of the (N, OH) output rows, every channel: the pixel the
 * affine (if any) picks, the adjustments in the table's order (not on the
 * affine's fill), then y[n, k, oy, ox] = lut[k][v[k]] */
#define AUGMENT(T)                                                                    \
    static void aug_##T(void *v, int64_t r0, int64_t r1) {                            \
        const aug_job *j = v;                                                         \
        for (int64_t r = r0; r < r1; r++) {                                           \
            int64_t n = r / j->oh, oy = r % j->oh;                                    \
            const int32_t *p = j->prm + n * LOOM_G_AUG_COUNT;                         \
            for (int64_t ox = 0; ox < j->ow; ox++) {                                  \
                uint8_t px[4];                                                        \
                int64_t sy, sx;                                                       \
                if (affine_src(j, p, oy, ox, &sy, &sx)) {                             \
                    fetch(j, n, sy, sx, px);                                          \
                    for (int i = 0; i < 4 && code_at(p, i) != 0; i++)                 \
                        adjust(code_at(p, i), p, j->mean[n], j->c, px);               \
                } else {                                                              \
                    for (int k = 0; k < 4; k++)                                       \
                        px[k] = (uint8_t)((uint32_t)p[LOOM_G_AUG_AFILL] >> (8 * k));  \
                }                                                                     \
                for (int k = 0; k < j->c; k++)                                        \
                    ((T *)j->y)[((n * j->c + k) * j->oh + oy) * j->ow + ox] =         \
                        (T)j->lut[k * 256 + px[k]];                                   \
            }                                                                         \
        }                                                                             \
    }
AUGMENT(float)
AUGMENT(double)

loom_status loom__cpu_augment_u8(const loom__cpu_args *a) {
    const loom_tensor *t = a->node, *x = t->src[0];
    int64_t n = t->dims[0];
    aug_job j = {
        .x = a->x[0],
        .prm = a->x[1],
        .lut = a->x[2],
        .y = a->y,
        .mean = malloc((size_t)(n > 0 ? n : 1) * sizeof(float)),
        .c = (int)x->dims[3],
        .h = x->dims[1],
        .w = x->dims[2],
        .oh = t->dims[2],
        .ow = t->dims[3],
        .fill = (uint8_t)t->p[LOOM_P_AUG_FILL],
        .affine = t->p[LOOM_P_AUG_AFFINE] != 0,
    };
    if (!j.mean)
        return loom__err(t->g->ctx, LOOM_ERR_OOM, "augment_u8: cannot allocate %lld contrast means (node '%s')",
                         (long long)n, t->name);
    loom__cpu_parallel(a->cpu, n, 1, aug_means, &j);
    loom__cpu_parallel(a->cpu, n * j.oh, 4, a->dt == LOOM_F64 ? aug_double : aug_float, &j);
    free(j.mean);
    return LOOM_OK;
}
