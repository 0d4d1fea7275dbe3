/* tests/ops/matmul.c — op cases: matmul (transposes, batched, broadcast
 * batch) and linear (with/without bias, 1-D and 3-D inputs). */
#include "cases.h"

static loom_tensor *mm(loom_graph *g, loom_dtype dt, int v) {
    bool ta = v & 1, tb = v & 2;
    int64_t M = 5, K = 7, N = 3;
    loom_tensor *a = ta ? tc_param(g, "a", dt, TC_DIMS(K, M), -1, 1) : tc_param(g, "a", dt, TC_DIMS(M, K), -1, 1);
    loom_tensor *b = tb ? tc_param(g, "b", dt, TC_DIMS(N, K), -1, 1) : tc_param(g, "b", dt, TC_DIMS(K, N), -1, 1);
    return loom_matmul(g, a, b, ta, tb);
}
static loom_tensor *bmm(loom_graph *g, loom_dtype dt, int v) {
    switch (v) {
    case 0: /* batched both */
        return loom_matmul(g, tc_param(g, "a", dt, TC_DIMS(3, 4, 6), -1, 1), tc_param(g, "b", dt, TC_DIMS(3, 6, 2), -1, 1),
                           false, false);
    case 1: /* shared 2-D b: folded into one gemm */
        return loom_matmul(g, tc_param(g, "a", dt, TC_DIMS(2, 3, 4, 6), -1, 1), tc_param(g, "b", dt, TC_DIMS(5, 6), -1, 1),
                           false, true);
    case 2: /* broadcast batch (2,1) x (3) with a transposed */
        return loom_matmul(g, tc_param(g, "a", dt, TC_DIMS(2, 1, 6, 4), -1, 1), tc_param(g, "b", dt, TC_DIMS(3, 6, 5), -1, 1),
                           true, false);
    default: /* 2-D a, batched b */
        return loom_matmul(g, tc_param(g, "a", dt, TC_DIMS(4, 6), -1, 1), tc_param(g, "b", dt, TC_DIMS(2, 6, 3), -1, 1),
                           false, false);
    }
}
/* big enough (M*N*K >= 2^18) for the CPU backend to split the product into
 * panels across threads: by columns (N >= M) and by rows (M > N), transposed;
 * NT and TN with K past a vector multiple and edge tiles on both axes (the
 * OpenCL register GEMM's dot and outer forms, kernels/gemm_reg.cl) */
static loom_tensor *big(loom_graph *g, loom_dtype dt, int v) {
    if (v == 2)
        return loom_matmul(g, tc_param(g, "a", dt, TC_DIMS(40, 70), -1, 1), tc_param(g, "b", dt, TC_DIMS(90, 70), -1, 1),
                           false, true);
    if (v == 3)
        return loom_matmul(g, tc_param(g, "a", dt, TC_DIMS(70, 40), -1, 1), tc_param(g, "b", dt, TC_DIMS(70, 90), -1, 1),
                           true, false);
    if (v == 0)
        return loom_matmul(g, tc_param(g, "a", dt, TC_DIMS(67, 45), -1, 1), tc_param(g, "b", dt, TC_DIMS(45, 93), -1, 1),
                           false, false);
    return loom_matmul(g, tc_param(g, "a", dt, TC_DIMS(41, 150), -1, 1), tc_param(g, "b", dt, TC_DIMS(50, 41), -1, 1),
                       true, true);
}

/* shapes whose K and leading dimensions are multiples of 4 (v < 4) or 8:
 * the Vulkan backend's wide-load GEMM (gemmw4_* / gemmw8_*) takes them; M
 * and N leave partial tiles. v & 3: the transposes; v = 8: batched. */
static loom_tensor *aligned(loom_graph *g, loom_dtype dt, int v) {
    if (v == 8)
        return loom_matmul(g, tc_param(g, "a", dt, TC_DIMS(3, 12, 16), -1, 1), tc_param(g, "b", dt, TC_DIMS(3, 16, 8), -1, 1),
                           false, false);
    bool ta = v & 1, tb = v & 2;
    int64_t M = v < 4 ? 20 : 24, K = v < 4 ? 12 : 16, N = v < 4 ? 36 : 40;
    loom_tensor *a = ta ? tc_param(g, "a", dt, TC_DIMS(K, M), -1, 1) : tc_param(g, "a", dt, TC_DIMS(M, K), -1, 1);
    loom_tensor *b = tb ? tc_param(g, "b", dt, TC_DIMS(N, K), -1, 1) : tc_param(g, "b", dt, TC_DIMS(K, N), -1, 1);
    return loom_matmul(g, a, b, ta, tb);
}

static loom_tensor *linear(loom_graph *g, loom_dtype dt, int v) {
    if (v == 8) /* K = 16: the wide-load GEMM with the bias epilogue */
        return loom_linear(g, tc_param(g, "x", dt, TC_DIMS(5, 16), -1, 1), tc_param(g, "w", dt, TC_DIMS(12, 16), -0.5, 0.5),
                           tc_param(g, "bias", dt, TC_DIMS(12), -1, 1));
    loom_tensor *w = tc_param(g, "w", dt, TC_DIMS(6, 9), -0.5, 0.5);
    loom_tensor *b = v & 1 ? tc_param(g, "bias", dt, TC_DIMS(6), -1, 1) : NULL;
    loom_tensor *x = v & 2 ? tc_param(g, "x", dt, TC_DIMS(2, 3, 9), -1, 1)
                   : v & 4 ? tc_param(g, "x", dt, TC_DIMS(9), -1, 1)
                           : tc_param(g, "x", dt, TC_DIMS(5, 9), -1, 1);
    return loom_linear(g, x, w, b);
}

const loom_op_case loom_cases_matmul[] = {
    {"matmul NN", mm, 0, 0, 0},
    {"matmul TN", mm, 1, 0, 0},
    {"matmul NT", mm, 2, 0, 0},
    {"matmul TT", mm, 3, 0, 0},
    {"bmm batched", bmm, 0, 0, 0},
    {"bmm shared b^T", bmm, 1, 0, 0},
    {"bmm broadcast batch a^T", bmm, 2, 0, 0},
    {"bmm 2-D a", bmm, 3, 0, 0},
    {"matmul 67x45x93 (column panels)", big, 0, 0, 0},
    {"matmul 150x41x50 TT (row panels)", big, 1, 0, 0},
    {"matmul 40x70x90 NT", big, 2, 0, 0},
    {"matmul 40x70x90 TN", big, 3, 0, 0},
    {"linear no bias", linear, 0, 0, 0},
    {"linear bias", linear, 1, 0, 0},
    {"linear 3-D x bias", linear, 3, 0, 0},
    {"linear 1-D x bias", linear, 5, 0, 0},
    {"matmul 20x12x36 NN (k, ld multiples of 4)", aligned, 0, 0, 0},
    {"matmul 20x12x36 TN (k, ld multiples of 4)", aligned, 1, 0, 0},
    {"matmul 20x12x36 NT (k, ld multiples of 4)", aligned, 2, 0, 0},
    {"matmul 20x12x36 TT (k, ld multiples of 4)", aligned, 3, 0, 0},
    {"matmul 24x16x40 NN (k, ld multiples of 8)", aligned, 4, 0, 0},
    {"matmul 24x16x40 TN (k, ld multiples of 8)", aligned, 5, 0, 0},
    {"matmul 24x16x40 NT (k, ld multiples of 8)", aligned, 6, 0, 0},
    {"matmul 24x16x40 TT (k, ld multiples of 8)", aligned, 7, 0, 0},
    {"bmm 3x12x16x8 (k, ld multiples of 8)", aligned, 8, 0, 0},
    {"linear 5x16 -> 12 bias (k multiple of 8)", linear, 8, 0, 0},
    {0},
};
