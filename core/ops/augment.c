/* core/ops/augment.c — augment_u8: the loader's per-sample crops, flips,
 * ColorJitter and ToTensor + Normalize run on the training backend (device
 * augmentation, loader/device_aug.c). A data op: no gradient (its inputs are
 * data, never parameters).
 *
 * augment_u8(x u8 (N, H, W, C), prm i32 (N, LOOM_G_AUG_COUNT), lut f32 (C, 256))
 *     -> y (N, C, OH, OW) in a float dtype. Output pixel (n, y, x) reads the
 *     source pixel (r, s) = (ROW0 + RSTEP y, COL0 + CSTEP x) of sample n (its
 *     row of prm, columns in core/params.h); outside the window rows
 *     [Y0, Y1), columns [X0, X1) of prm (clipped to the image) the value is
 *     p[LOOM_P_AUG_FILL] in every channel. Then the colour adjustments listed
 *     in JITTER run in that order on the pixel's C values v (f32, every
 *     product and sum rounded on its own; T(r) = trunc(clamp(r, 0, 255))),
 *     as the loader's ColorJitter computes them (loader/transforms.c):
 *       brightness  v = T(v f)
 *       contrast    v = T(v f + mean g), mean: the gray of the whole OH x OW
 *                   image as it stands before contrast (fill pixels too),
 *                   floored per pixel, summed exactly, divided in double and
 *                   rounded to f32
 *       saturation  v = T(v f + gray g), gray = floor of the pixel's gray
 *       hue         the RGB -> HSV -> RGB round trip of adjust_hue
 *     where gray = floor(0.2989 r + 0.587 g + 0.114 b) for C = 3 and the
 *     first channel otherwise; saturation and hue leave C != 3 alone. With
 *     `affine` (p[LOOM_P_AUG_AFFINE]), a sample whose AFFINE column is 1
 *     then moves that jittered OH x OW image by a nearest RandomAffine:
 *     output (y, x) takes the jittered pixel at the source point of the
 *     inverse matrix m (columns M..) about the centre hx = (OW - 1) / 2,
 *     hy = (OH - 1) / 2, as loom_tf_affine computes it in double (core/
 *     affine.h: fx = m0 (x - hx) + m1 (y - hy) + m2 + hx, each product and
 *     sum rounded on its own, in that order; fy likewise with m3, m4, m5),
 *     rounded half to even; outside the image the affine's fill (AFILL),
 *     not adjusted (the host writes it after the jitter; contrast's mean
 *     stays that of the image before the affine). Then y[n, k, y, x] =
 *     lut[k][v_k], converted to y's dtype (round to nearest even).
 *
 * Integer indexing, correctly rounded f32 operations and a table lookup:
 * every backend gives the CPU's bits (LOOM__OPF_REPRO) where its f32
 * division is correctly rounded (hue divides; OpenCL builds with
 * -cl-fp32-correctly-rounded-divide-sqrt where the device has it; a Vulkan
 * device may divide within 2.5 ulp, then hue may move a value by one u8
 * step). The GPUs form the contrast mean from the u32 sum by an integer
 * long division (no doubles there): the same f32. Indices are computed in 32
 * bits on the GPUs: the table's values must keep |ROW0| + |RSTEP| OH and
 * |COL0| + |CSTEP| OW below 2^31; OH OW is at most LOOM_K_AUG_MAX_PIXELS.
 * The affine's point is the CPU's double arithmetic on every backend (no
 * fused multiply-add: GLSL `precise`, OpenCL FP_CONTRACT OFF, CUDA
 * __dmul_rn / __dadd_rn), so it needs 64-bit floats: a Vulkan device
 * without shaderFloat64 or an OpenCL one without cl_khr_fp64 refuses an
 * `affine` node (the loader keeps the affine on the host there). */
#include "../impl.h"
#include "../params.h"

loom_tensor *loom_augment_u8(loom_graph *g, loom_tensor *x, loom_tensor *prm, loom_tensor *lut, loom_dtype dt,
                             int64_t oh, int64_t ow, int fill, bool affine) {
    if (!loom__ok(g, 3, x, prm, lut)) return NULL;
    char sx[96], sp[96], sl[96];
    if (x->dtype != LOOM_U8 || x->ndim != 4 || x->dims[3] < 1 || x->dims[3] > 4)
        return loom__fail(g, LOOM_ERR_SHAPE, "augment_u8: x '%s' is %s %s, expected u8 (N, H, W, C) with C in 1..4",
                          x->name, loom_dtype_name(x->dtype), loom_tensor_shape_str(x, sx, sizeof sx));
    int64_t n = x->dims[0], c = x->dims[3];
    if (prm->dtype != LOOM_I32 || prm->ndim != 2 || prm->dims[0] != n || prm->dims[1] != LOOM_G_AUG_COUNT)
        return loom__fail(g, LOOM_ERR_SHAPE, "augment_u8: prm '%s' is %s %s, expected i32 (%lld, %d)", prm->name,
                          loom_dtype_name(prm->dtype), loom_tensor_shape_str(prm, sp, sizeof sp), (long long)n,
                          LOOM_G_AUG_COUNT);
    if (lut->dtype != LOOM_F32 || lut->ndim != 2 || lut->dims[0] != c || lut->dims[1] != 256)
        return loom__fail(g, LOOM_ERR_SHAPE, "augment_u8: lut '%s' is %s %s, expected f32 (%lld, 256)", lut->name,
                          loom_dtype_name(lut->dtype), loom_tensor_shape_str(lut, sl, sizeof sl), (long long)c);
    if (!loom_dtype_is_float(dt))
        return loom__fail(g, LOOM_ERR_DTYPE, "augment_u8: output dtype %s, a float dtype is required",
                          loom_dtype_name(dt));
    if (oh < 1 || ow < 1 || oh > LOOM_K_AUG_MAX_PIXELS || ow > LOOM_K_AUG_MAX_PIXELS ||
        oh * ow > LOOM_K_AUG_MAX_PIXELS || fill < 0 || fill > 255)
        return loom__fail(g, LOOM_ERR_INVALID_ARG,
                          "augment_u8: output %lldx%lld, fill %d (expected sizes >= 1, at most %d pixels, and a fill "
                          "in 0..255)", (long long)oh, (long long)ow, fill, LOOM_K_AUG_MAX_PIXELS);
    loom_tensor *src[3] = {x, prm, lut};
    loom_tensor *y = loom__node(g, LOOM_OP_AUGMENT_U8, dt, 4, (int64_t[]){n, c, oh, ow}, 3, src);
    if (y) y->p[LOOM_P_AUG_FILL] = fill, y->p[LOOM_P_AUG_AFFINE] = affine;
    return y;
}
