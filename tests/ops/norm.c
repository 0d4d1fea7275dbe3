/* tests/ops/norm.c — op cases: batch norm (train with and without affine
 * parameters, with running statistics, eval) and layer norm (over the last 1
 * and 2 axes, with and without affine parameters). The backward pass the
 * harness appends exercises batch_norm_grad(_params) and
 * layer_norm_grad(_params). */
#include "cases.h"

/* running statistics: f32 states for f32/f16/bf16 x, f64 for f64 x */
static loom_tensor *running(loom_graph *g, const char *name, loom_dtype dt, int64_t c, double lo, double hi) {
    loom_init init = {LOOM_INIT_UNIFORM, lo, hi};
    return loom_state(g, name, dt == LOOM_F64 ? LOOM_F64 : LOOM_F32, 1, (const int64_t[]){c}, &init);
}

/* variant: bit 0..1 shape (bit 6: shapes 4..), bit 2 gamma, bit 3 beta, bit 4 running stats, bit 5 eval.
 * The two large shapes give a channel more elements than a GPU work-group has invocations (N S = 585 and
 * 600 > 256), with S = 195 < 256 and S = 300 > 256, so a kernel that walks a channel by the group size
 * carries its (n, i) position across planes both ways. Shape 5 (BN_BIG2 | 1): planes of 164 = 4 x 41
 * elements, where float(41) * (1 / 41.0f) rounds below 1 (a float quotient needs its correction).
 * Shape 6 (BN_BIG2 | 2): planes of 64 elements, which OpenCL on a 16-wide device sums 16 per item.
 * Shape 7 (BN_BIG2 | 3): planes of 12 elements, 48 per image: OpenCL on an 8-wide device sums 8
 * positions per item, every other item's last 4 in the next channel. */
enum { BN_4x3 = 0, BN_4D = 1, BN_3D = 2, BN_BIG1 = 3, BN_G = 4, BN_B = 8, BN_RUN = 16, BN_EVAL = 32, BN_BIG2 = 64 };

static loom_tensor *batch_norm(loom_graph *g, loom_dtype dt, int v) {
    static const int64_t shapes[][4] = {{4, 3},         {2, 3, 5, 4},   {3, 4, 7}, {3, 2, 13, 15},
                                        {2, 2, 20, 15}, {2, 3, 164}, {2, 3, 8, 8},   {3, 4, 3, 4}};
    static const int nd[] = {2, 4, 3, 4, 4, 3, 4, 4};
    int s = (v & 3) + (v & BN_BIG2 ? 4 : 0);
    int64_t c = shapes[s][1];
    loom_tensor *x = tc_param(g, "x", dt, nd[s], shapes[s], -2, 3);
    loom_tensor *gamma = v & BN_G ? tc_param(g, "gamma", dt, 1, &c, 0.5, 1.5) : NULL;
    loom_tensor *beta = v & BN_B ? tc_param(g, "beta", dt, 1, &c, -0.5, 0.5) : NULL;
    loom_tensor *rm = NULL, *rv = NULL;
    if (v & (BN_RUN | BN_EVAL)) {
        rm = running(g, "running_mean", dt, c, -0.5, 0.5);
        rv = running(g, "running_var", dt, c, 0.5, 1.5);
    }
    return loom_batch_norm(g, x,
                           &(loom_batch_norm_desc){.gamma = gamma, .beta = beta, .running_mean = rm,
                                                   .running_var = rv, .eval = (v & BN_EVAL) != 0});
}

/* variant: bits 0..1 case (0: (4,7) over 1; 1: (2,3,4,5) over 2; 2: (3,5,6) over 2;
 * 3: (6,1,9) over 1), bit 2 gamma, bit 3 beta */
static loom_tensor *layer_norm(loom_graph *g, loom_dtype dt, int v) {
    static const int64_t shapes[][4] = {{4, 7}, {2, 3, 4, 5}, {3, 5, 6}, {6, 1, 9}};
    static const int nd[] = {2, 4, 3, 3}, norm[] = {1, 2, 2, 1};
    int s = v & 3;
    loom_tensor *x = tc_param(g, "x", dt, nd[s], shapes[s], -2, 3);
    const int64_t *ad = shapes[s] + nd[s] - norm[s];
    loom_tensor *gamma = v & 4 ? tc_param(g, "gamma", dt, norm[s], ad, 0.5, 1.5) : NULL;
    loom_tensor *beta = v & 8 ? tc_param(g, "beta", dt, norm[s], ad, -0.5, 0.5) : NULL;
    return loom_layer_norm(g, x, norm[s], gamma, beta, 1e-5);
}

const loom_op_case loom_cases_norm[] = {
    {"batch_norm train (4,3) affine", batch_norm, BN_4x3 | BN_G | BN_B, 0, 0, 0},
    {"batch_norm train (2,3,5,4) affine", batch_norm, BN_4D | BN_G | BN_B, 0, 0, 0},
    {"batch_norm train (4,3) no affine", batch_norm, BN_4x3, 0, 0, 0},
    {"batch_norm train (2,3,5,4) no affine", batch_norm, BN_4D, 0, 0, 0},
    {"batch_norm train (3,4,7) gamma only", batch_norm, BN_3D | BN_G, 0, 0, 0},
    {"batch_norm train (3,4,7) beta only + running stats", batch_norm, BN_3D | BN_B | BN_RUN, 0, 0, 0},
    {"batch_norm train (2,3,5,4) affine + running stats", batch_norm, BN_4D | BN_G | BN_B | BN_RUN, 0, 0, 0},
    {"batch_norm eval (2,3,5,4) affine", batch_norm, BN_4D | BN_G | BN_B | BN_EVAL, 0, 0, 0},
    {"batch_norm train (2,3,5,4) gamma only", batch_norm, BN_4D | BN_G, 0, 0, 0},
    {"batch_norm train (2,3,5,4) beta only + running stats", batch_norm, BN_4D | BN_B | BN_RUN, 0, 0, 0},
    /* f32/f64 only: bf16's 8-bit sums of 600 gradient terms exceed the 16-bit tolerance on the CPU too */
    {"batch_norm train (3,2,13,15) affine + running stats", batch_norm, BN_BIG1 | BN_G | BN_B | BN_RUN, 0, TC_NO_16BIT, 0},
    {"batch_norm train (2,2,20,15) affine", batch_norm, BN_BIG2 | BN_G | BN_B, 0, TC_NO_16BIT, 0},
    {"batch_norm train (2,3,164) affine", batch_norm, BN_BIG2 | 1 | BN_G | BN_B, 0, 0, 0},
    {"batch_norm train (2,3,8,8) affine + running stats", batch_norm, BN_BIG2 | 2 | BN_G | BN_B | BN_RUN, 0, 0, 0},
    {"batch_norm train (3,4,3,4) affine + running stats", batch_norm, BN_BIG2 | 3 | BN_G | BN_B | BN_RUN, 0, 0, 0},
    {"batch_norm eval (4,3) no affine", batch_norm, BN_4x3 | BN_EVAL, 0, 0, 0},
    {"batch_norm eval (3,4,7) gamma only", batch_norm, BN_3D | BN_G | BN_EVAL, 0, 0, 0},
    {"layer_norm (4,7) last 1 affine", layer_norm, 0 | 4 | 8, 0, 0, 0},
    {"layer_norm (4,7) last 1 no affine", layer_norm, 0, 0, 0, 0},
    {"layer_norm (2,3,4,5) last 2 affine", layer_norm, 1 | 4 | 8, 0, 0, 0},
    {"layer_norm (3,5,6) last 2 no affine", layer_norm, 2, 0, 0, 0},
    {"layer_norm (6,1,9) last 1 gamma only", layer_norm, 3 | 4, 0, 0, 0},
    {"layer_norm (2,3,4,5) last 2 beta only", layer_norm, 1 | 8, 0, 0, 0},
    {0},
};
