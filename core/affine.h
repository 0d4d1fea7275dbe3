/* core/affine.h — the nearest RandomAffine's source point, shared by the
 * loader's host transforms (loom_tf_affine, loader/transforms.c; the fused
 * tail, loader/tail*.c) and the CPU backend's device-augmentation reference
 * (backends/cpu/ops/augment.c), which must pick the same pixel: one
 * definition makes that equality structural. Both are compiled with
 * -ffp-contract=off (CMakeLists.txt): every product and sum below is its
 * own double rounding, in the order written; the GPU kernels of augment_u8
 * repeat it with fused multiply-add off. Library-private. */
#ifndef LOOM_CORE_AFFINE_H
#define LOOM_CORE_AFFINE_H

#include <stdbool.h>
#include <stdint.h>

/* nearbyint in the default rounding mode (half to even), inline */
static inline double loom__round_even(double v) {
    const double k = 6755399441055744.0; /* 1.5 * 2^52: adding it rounds to an integer */
    return (v < 0 ? -v : v) < 2251799813685248.0 ? (v + k) - k : v;
}

/* loom_tf_affine's source point of output pixel (ox, oy): m is the inverse
 * matrix about the centre (hx, hy) = ((W - 1) / 2, (H - 1) / 2). */
static inline void loom__affine_point(const double m[6], double hx, double hy, int64_t ox, int64_t oy, double *fx,
                                      double *fy) {
    double x = (double)ox - hx, y = (double)oy - hy;
    *fx = m[0] * x + m[1] * y + m[2] + hx, *fy = m[3] * x + m[4] * y + m[5] + hy;
}

/* Nearest sampling: the pixel index (y W + x) of source point (fx, fy), or
 * false when it falls outside (the fill). */
static inline bool loom__nearest_at(double fx, double fy, int64_t W, int64_t H, int64_t *at) {
    double rx = loom__round_even(fx), ry = loom__round_even(fy);
    if (!(rx >= 0 && rx < (double)W && ry >= 0 && ry < (double)H)) return false;
    *at = (int64_t)ry * W + (int64_t)rx;
    return true;
}

#endif
