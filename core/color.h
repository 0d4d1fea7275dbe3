/* core/color.h — per-pixel u8 color arithmetic shared by the loader's host
 * transforms (loader/transforms.c) and the CPU backend's device-augmentation
 * reference (backends/cpu/ops/augment.c), which must give the same bits:
 * one definition makes that equality structural. Library-private. */
#ifndef LOOM_CORE_COLOR_H
#define LOOM_CORE_COLOR_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* torch: the float result clamped to [0, 255], then .to(uint8) truncates */
static inline uint8_t loom__trunc_u8(float v) {
    v = v > 0.0f ? v : 0.0f; /* branch-free (maxss, minss) */
    v = v < 255.0f ? v : 255.0f;
    return (uint8_t)(int32_t)v;
}

static inline float loom__clamp01(float v) { return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; }

/* torchvision's adjust_hue of one RGB pixel by f (in [-0.5, 0.5]), in f32:
 * Pillow's rgb -> hsv, h = (h + f) mod 1 (Python's modulo), hsv -> rgb,
 * truncated to u8. in and out may be the same pixel. */
static inline void loom__hue_px(float f, const uint8_t *in, uint8_t *out) {
    const float inv = (float)(1.0 / 255.0);
    float r = (float)in[0] * inv, g = (float)in[1] * inv, b = (float)in[2] * inv;
    /* _rgb_to_hsv */
    float maxc = fmaxf(r, fmaxf(g, b)), minc = fminf(r, fminf(g, b));
    bool eqc = maxc == minc;
    float range = maxc - minc;
    float s = range / (eqc ? 1.0f : maxc);
    float div = eqc ? 1.0f : range;
    float rc = (maxc - r) / div, gc = (maxc - g) / div, bc = (maxc - b) / div;
    float hr = maxc == r ? bc - gc : 0.0f;
    float hg = (maxc == g && maxc != r) ? 2.0f + rc - bc : 0.0f;
    float hb = (maxc != g && maxc != r) ? 4.0f + gc - rc : 0.0f;
    float h = fmodf((hr + hg + hb) * (1.0f / 6.0f) + 1.0f, 1.0f), v = maxc;
    /* h.add_(f).remainder_(1.0): result in [0, 1) */
    h += f;
    h = h - floorf(h);
    if (h >= 1.0f) h = 0.0f;
    /* _hsv_to_rgb */
    float h6 = h * 6.0f, fi = floorf(h6), fr = h6 - fi;
    int sect = ((int)fi % 6 + 6) % 6;
    float sxf = s * fr;
    float q = loom__clamp01((1.0f - sxf) * v), t = loom__clamp01((sxf + (1.0f - s)) * v);
    float pp = loom__clamp01((1.0f - s) * v);
    float vpqt[4] = {v, pp, q, t};
    static const int sel[3][6] = {{0, 2, 1, 1, 3, 0}, {3, 0, 0, 2, 1, 1}, {1, 1, 3, 0, 0, 2}};
    uint8_t o[3];
    for (int k = 0; k < 3; k++) o[k] = loom__trunc_u8(vpqt[sel[k][sect]] * (255.0f + 1.0f - 1e-3f));
    out[0] = o[0], out[1] = o[1], out[2] = o[2];
}

#endif
