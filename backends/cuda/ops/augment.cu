/* backends/cuda/ops/augment.cu — augment_u8 (core/ops/augment.c), a port of
 * backends/opencl/kernels/augment.cl (as backends/cpu/ops/augment.c bit for
 * bit: integer indexing, one f32 product with __fmul_rn so that it is never
 * contracted, the table lookup). One thread per output element. */
#include "../common.cuh"

/* x (N, H, W, C) u8, prm (N, LOOM_G_AUG_COUNT) i32, lut (C, 256) f32, y (N, C, OH, OW) */
template <typename T>
__global__ void augment_k(const uint8_t *x, const int *prm, const float *lut, T *y, int64_t total, int c, int h, int w,
                          int oh, int ow, int fill) {
    int64_t i = gid1();
    if (i >= total) return;
    int ox = (int)(i % ow), oy = (int)((i / ow) % oh), k = (int)((i / ((int64_t)ow * oh)) % c);
    int64_t n = i / ((int64_t)ow * oh * c);
    const int *p = prm + n * LOOM_G_AUG_COUNT;
    int sy = p[LOOM_G_AUG_ROW0] + p[LOOM_G_AUG_RSTEP] * oy, sx = p[LOOM_G_AUG_COL0] + p[LOOM_G_AUG_CSTEP] * ox;
    unsigned u = (unsigned)fill;
    int y0 = max(p[LOOM_G_AUG_Y0], 0), y1 = min(p[LOOM_G_AUG_Y1], h);
    int x0 = max(p[LOOM_G_AUG_X0], 0), x1 = min(p[LOOM_G_AUG_X1], w);
    if (sy >= y0 && sy < y1 && sx >= x0 && sx < x1) u = x[((n * h + sy) * w + sx) * c + k];
    if (p[LOOM_G_AUG_BRIGHT] != 0) {
        float r = __fmul_rn((float)u, __int_as_float(p[LOOM_G_AUG_BFACTOR]));
        r = r > 0.0f ? r : 0.0f;
        r = r < 255.0f ? r : 255.0f;
        u = (unsigned)r;
    }
    st(y, i, lut[k * 256 + u]);
}

template <typename T>
static loom_status run(loom__cu_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t total = loom_tensor_numel(y);
    return loom__cu_launch(o, augment_k<T>, loom__cu_grid1d(total), LOOM__CU_THREADS, 0, loom__cu_ptr<uint8_t>(o, x),
                           loom__cu_ptr<int>(o, y->src[1]), loom__cu_ptr<float>(o, y->src[2]), loom__cu_ptr<T>(o, y),
                           total, (int)x->dims[3], (int)x->dims[1], (int)x->dims[2], (int)y->dims[2], (int)y->dims[3],
                           (int)y->p[LOOM_P_AUG_FILL]);
}

loom_status loom__cu_augment_u8(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run, o); }
