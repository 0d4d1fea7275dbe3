/* core/ops/correct.c — the count of correct argmax predictions (accuracy on
 * the device): the builder loom_correct_count.
 *
 * correct_count(logits (N, C) float, targets (N) i32) -> f32 scalar (ndim 0):
 *   the number of rows i with argmax_c logits[i, c] == targets[i], where the
 *   argmax is the first index of the maximum: best = 0, then for c = 1..C-1
 *   best = c when logits[i, c] > logits[i, best] (a NaN never wins a
 *   comparison). A target outside [0, C) (ignore_index, e.g. -100) never
 *   matches, so padded rows do not count; it is not an error. The count is an
 *   integer, exact in f32 up to 2^24 rows, so every backend gives the same
 *   bits (LOOM__OPF_REPRO). No parameters, no gradient. */
#include "../impl.h"

loom_tensor *loom_correct_count(loom_graph *g, loom_tensor *logits, loom_tensor *targets) {
    if (!loom__ok(g, 2, logits, targets)) return NULL;
    char sl[96], st[96];
    loom_tensor_shape_str(logits, sl, sizeof sl);
    loom_tensor_shape_str(targets, st, sizeof st);
    if (!loom_dtype_is_float(logits->dtype))
        return loom__fail(g, LOOM_ERR_DTYPE, "correct_count: logits '%s' have dtype %s, a float dtype is required",
                          logits->name, loom_dtype_name(logits->dtype));
    if (targets->dtype != LOOM_I32)
        return loom__fail(g, LOOM_ERR_DTYPE, "correct_count: targets '%s' have dtype %s, i32 class indices are required",
                          targets->name, loom_dtype_name(targets->dtype));
    if (logits->ndim != 2 || logits->dims[1] < 1)
        return loom__fail(g, LOOM_ERR_SHAPE, "correct_count: logits '%s' have shape %s, expected (N, C) with C >= 1",
                          logits->name, sl);
    if (targets->ndim != 1 || targets->dims[0] != logits->dims[0])
        return loom__fail(g, LOOM_ERR_SHAPE,
                          "correct_count: targets '%s' have shape %s, expected [%lld] (one class index per row of "
                          "logits '%s' %s)",
                          targets->name, st, (long long)logits->dims[0], logits->name, sl);
    if (logits->dims[0] > (1 << 24))
        return loom__fail(g, LOOM_ERR_SHAPE, "correct_count: logits '%s' have %lld rows; at most 2^24 are counted exactly",
                          logits->name, (long long)logits->dims[0]);
    loom_tensor *src[2] = {logits, targets};
    loom_tensor *y = loom__node(g, LOOM_OP_CORRECT_COUNT, LOOM_F32, 0, NULL, 2, src);
    if (y) y->requires_grad = false;
    return y;
}
