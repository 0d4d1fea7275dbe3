/* core/ops/resize.c — resize_u8: the loader's leading Resize run on the
 * training backend (device augmentation, loader/device_aug.c), before
 * augment_u8. A data op: no gradient (its inputs are data, never
 * parameters).
 *
 * resize_u8(x u8 (N, H, W, C), taps i32 (OH + OW, 2 + S)) -> y u8 (N, OH, OW, C).
 *     Row i < OH of taps is output row i: (first, count, w_0 .. w_{S-1});
 *     row OH + j is output column j, the same way. With F =
 *     LOOM_K_RESIZE_FIX_BITS and U(a) = clamp(a >> F, 0, 255):
 *       tmp[n, r, j, k] = U(2^(F-1) + sum_t<count wc_t x[n, r, first_c + t, k])  (width pass)
 *       y[n, i, j, k]   = U(2^(F-1) + sum_t<count wr_t tmp[n, first_r + t, j, k]) (height pass)
 *     in 32-bit integers: the width-then-height passes of loom_tf_resize
 *     (loader/transforms.c, sep_run), so the taps of loom__tf_resize_taps
 *     give its bits on every backend (exact integer sums in any order).
 *     Indices are clamped into the image and counts into 0..S, so a bad
 *     table reads no memory outside x (its values are then unspecified). */
#include "../impl.h"
#include "../params.h"

loom_tensor *loom_resize_u8(loom_graph *g, loom_tensor *x, loom_tensor *taps, int64_t oh, int64_t ow) {
    if (!loom__ok(g, 2, x, taps)) return NULL;
    char sx[96], st[96];
    if (x->dtype != LOOM_U8 || x->ndim != 4 || x->dims[3] < 1 || x->dims[3] > 4 || x->dims[1] > INT32_MAX ||
        x->dims[2] > INT32_MAX)
        return loom__fail(g, LOOM_ERR_SHAPE, "resize_u8: x '%s' is %s %s, expected u8 (N, H, W, C) with C in 1..4 "
                          "(H, W < 2^31)", x->name, loom_dtype_name(x->dtype), loom_tensor_shape_str(x, sx, sizeof sx));
    if (oh < 1 || ow < 1 || oh > INT32_MAX || ow > INT32_MAX)
        return loom__fail(g, LOOM_ERR_INVALID_ARG, "resize_u8: output %lldx%lld (expected sizes 1..2^31 - 1)",
                          (long long)oh, (long long)ow);
    if (taps->dtype != LOOM_I32 || taps->ndim != 2 || taps->dims[0] != oh + ow || taps->dims[1] < 3 ||
        taps->dims[1] > INT32_MAX)
        return loom__fail(g, LOOM_ERR_SHAPE, "resize_u8: taps '%s' is %s %s, expected i32 (%lld, 2 + S) with S >= 1 "
                          "(the rows of the %lld output rows, then of the %lld output columns)", taps->name,
                          loom_dtype_name(taps->dtype), loom_tensor_shape_str(taps, st, sizeof st),
                          (long long)(oh + ow), (long long)oh, (long long)ow);
    loom_tensor *src[2] = {x, taps};
    return loom__node(g, LOOM_OP_RESIZE_U8, LOOM_U8, 4, (int64_t[]){x->dims[0], oh, ow, x->dims[3]}, 2, src);
}
