/* backends/cuda/ops/augment.cu — augment_u8 (core/ops/augment.c), a port of
 * backends/opencl/kernels/augment.cl (as backends/cpu/ops/augment.c bit for
 * bit: integer indexing, the ColorJitter adjustments in f32 (built with
 * --fmad=false and IEEE division), the table lookup). The row sums before
 * contrast (one thread per output row), the contrast means (one per
 * sample), then one thread per output pixel. A RandomAffine's source point
 * in double as core/affine.h computes it, every product and sum rounded on
 * its own (__dmul_rn / __dadd_rn: never contracted) and rint (half to
 * even). */
#include "../common.cuh"

/* T(r) of core/ops/augment.c */
__device__ static unsigned aug_trunc(float v) {
    v = v > 0.0f ? v : 0.0f;
    v = v < 255.0f ? v : 255.0f;
    return (unsigned)v;
}

__device__ static unsigned aug_gray(const unsigned *v, int c) {
    if (c != 3) return v[0];
    return (unsigned)((float)v[0] * 0.2989f + (float)v[1] * 0.587f + (float)v[2] * 0.114f);
}

__device__ static float aug_clamp01(float v) { return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; }

__device__ static void aug_hue(float f, unsigned *v) {
    const float inv = 0.00392156886f; /* (float)(1.0 / 255.0) */
    float r = (float)v[0] * inv, g = (float)v[1] * inv, b = (float)v[2] * inv;
    float maxc = fmaxf(r, fmaxf(g, b)), minc = fminf(r, fminf(g, b));
    bool eqc = maxc == minc;
    float range = maxc - minc;
    float s = range / (eqc ? 1.0f : maxc);
    float dv = eqc ? 1.0f : range;
    float rc = (maxc - r) / dv, gc = (maxc - g) / dv, bc = (maxc - b) / dv;
    float hr = maxc == r ? bc - gc : 0.0f;
    float hg = (maxc == g && maxc != r) ? 2.0f + rc - bc : 0.0f;
    float hb = (maxc != g && maxc != r) ? 4.0f + gc - rc : 0.0f;
    float h = (hr + hg + hb) * 0.166666672f + 1.0f; /* 1 / 6 */
    h = h - floorf(h);                              /* fmod(h, 1) of a positive h */
    h += f;
    h = h - floorf(h);
    if (h >= 1.0f) h = 0.0f;
    float h6 = h * 6.0f, fi = floorf(h6), fr = h6 - fi;
    int sect = ((int)fi % 6 + 6) % 6;
    float sxf = s * fr;
    float q = aug_clamp01((1.0f - sxf) * maxc), t = aug_clamp01((sxf + (1.0f - s)) * maxc);
    float pp = aug_clamp01((1.0f - s) * maxc);
    float o[3];
    o[0] = sect == 0 || sect == 5 ? maxc : sect == 1 ? q : sect == 4 ? t : pp;
    o[1] = sect == 1 || sect == 2 ? maxc : sect == 0 ? t : sect == 3 ? q : pp;
    o[2] = sect == 3 || sect == 4 ? maxc : sect == 2 ? t : sect == 5 ? q : pp;
    for (int k = 0; k < 3; k++) v[k] = aug_trunc(o[k] * 255.998993f); /* 255 + 1 - 1e-3 */
}

__device__ static int aug_code(const int *p, int i) {
    return (int)(((unsigned)p[LOOM_G_AUG_JITTER] >> (LOOM_K_AUG_BITS * i)) & ((1u << LOOM_K_AUG_BITS) - 1u));
}

/* one adjustment on the c values of one pixel (mean: the contrast mean) */
__device__ static void aug_adjust(int code, const int *p, float mean, int c, unsigned *v) {
    if (code == LOOM_K_AUG_BRIGHT) {
        float f = __int_as_float(p[LOOM_G_AUG_BFACTOR]);
        for (int k = 0; k < c; k++) v[k] = aug_trunc((float)v[k] * f);
    } else if (code == LOOM_K_AUG_CONTRAST) {
        float f = __int_as_float(p[LOOM_G_AUG_CFACTOR]), add = mean * __int_as_float(p[LOOM_G_AUG_CGAIN]);
        for (int k = 0; k < c; k++) v[k] = aug_trunc((float)v[k] * f + add);
    } else if (code == LOOM_K_AUG_SAT && c == 3) {
        float f = __int_as_float(p[LOOM_G_AUG_SFACTOR]);
        float add = (float)aug_gray(v, c) * __int_as_float(p[LOOM_G_AUG_SGAIN]);
        for (int k = 0; k < 3; k++) v[k] = aug_trunc((float)v[k] * f + add);
    } else if (code == LOOM_K_AUG_HUE && c == 3) {
        aug_hue(__int_as_float(p[LOOM_G_AUG_HFACTOR]), v);
    }
}

/* the c values of output pixel (oy, ox) of one sample before the adjustments */
__device__ static void aug_fetch(const uint8_t *img, const int *p, int c, int h, int w, int oy, int ox, unsigned fill,
                                 unsigned *v) {
    int sy = p[LOOM_G_AUG_ROW0] + p[LOOM_G_AUG_RSTEP] * oy, sx = p[LOOM_G_AUG_COL0] + p[LOOM_G_AUG_CSTEP] * ox;
    int y0 = max(p[LOOM_G_AUG_Y0], 0), y1 = min(p[LOOM_G_AUG_Y1], h);
    int x0 = max(p[LOOM_G_AUG_X0], 0), x1 = min(p[LOOM_G_AUG_X1], w);
    bool in = sy >= y0 && sy < y1 && sx >= x0 && sx < x1;
    for (int k = 0; k < c; k++) v[k] = in ? (unsigned)img[((int64_t)sy * w + sx) * c + k] : fill;
}

/* rows (N, OH) u32: the sum of the floored grays of output row r before
 * contrast (0 for a sample without contrast) */
__global__ void augment_rows_k(const uint8_t *x, const int *prm, unsigned *rows, int64_t total, int c, int h, int w,
                               int oh, int ow, int fill) {
    int64_t r = gid1();
    if (r >= total) return;
    int64_t n = r / oh;
    int oy = (int)(r % oh);
    const int *p = prm + n * LOOM_G_AUG_COUNT;
    const uint8_t *img = x + n * h * w * c;
    int before = 0;
    while (before < 4 && aug_code(p, before) != 0 && aug_code(p, before) != LOOM_K_AUG_CONTRAST) before++;
    unsigned sum = 0;
    if (before < 4 && aug_code(p, before) == LOOM_K_AUG_CONTRAST)
        for (int ox = 0; ox < ow; ox++) {
            unsigned v[4];
            aug_fetch(img, p, c, h, w, oy, ox, (unsigned)fill, v);
            for (int i = 0; i < before; i++) aug_adjust(aug_code(p, i), p, 0.0f, c, v);
            sum += aug_gray(v, c);
        }
    rows[r] = sum;
}

/* mean (N) f32: sum / (OH OW) correctly rounded, by a long division of the
 * u32 sum (as augment.cl) */
__global__ void augment_mean_k(const unsigned *rows, float *mean, int64_t n_total, int oh, int ow) {
    int64_t n = gid1();
    if (n >= n_total) return;
    unsigned sum = 0, hw = (unsigned)oh * (unsigned)ow;
    for (int i = 0; i < oh; i++) sum += rows[n * oh + i];
    float out = 0.0f;
    if (sum != 0) {
        unsigned m = sum / hw, r = sum % hw;
        int e = 0;
        while (m < (1u << 24)) {
            r <<= 1;
            m = (m << 1) | (r >= hw ? 1u : 0u);
            r = r >= hw ? r - hw : r;
            e++;
        }
        unsigned mant = m >> 1;
        if ((m & 1u) && (r != 0u || (mant & 1u))) mant++;
        out = (float)mant * __uint_as_float((unsigned)(128 - e) << 23);
    }
    mean[n] = out;
}

/* double k of the affine's inverse matrix: columns M + 2k (low word), M + 2k + 1 */
__device__ static double aug_m(const int *p, int k) {
    return __hiloint2double(p[LOOM_G_AUG_M + 2 * k + 1], p[LOOM_G_AUG_M + 2 * k]);
}

/* the jittered pixel (*sy, *sx) that output (oy, ox) shows; false when outside (the affine's fill) */
__device__ static bool aug_affine(const int *p, int oh, int ow, int oy, int ox, int *sy, int *sx) {
    double hx = __dmul_rn(0.5, (double)(ow - 1)), hy = __dmul_rn(0.5, (double)(oh - 1));
    double x = __dsub_rn((double)ox, hx), y = __dsub_rn((double)oy, hy);
    double fx = __dadd_rn(__dadd_rn(__dadd_rn(__dmul_rn(aug_m(p, 0), x), __dmul_rn(aug_m(p, 1), y)), aug_m(p, 2)), hx);
    double fy = __dadd_rn(__dadd_rn(__dadd_rn(__dmul_rn(aug_m(p, 3), x), __dmul_rn(aug_m(p, 4), y)), aug_m(p, 5)), hy);
    double rx = rint(fx), ry = rint(fy);
    if (!(rx >= 0.0 && rx < (double)ow && ry >= 0.0 && ry < (double)oh)) return false;
    *sx = (int)rx, *sy = (int)ry;
    return true;
}

/* x (N, H, W, C) u8, prm (N, LOOM_G_AUG_COUNT) i32, lut (C, 256) f32,
 * mean (N) f32, y (N, C, OH, OW); total = N OH OW; affine: the node's
 * LOOM_P_AUG_AFFINE */
template <typename T>
__global__ void augment_k(const uint8_t *x, const int *prm, const float *lut, const float *mean, T *y, int64_t total,
                          int c, int h, int w, int oh, int ow, int fill, int affine) {
    int64_t i = gid1();
    if (i >= total) return;
    int ox = (int)(i % ow), oy = (int)((i / ow) % oh);
    int64_t n = i / ((int64_t)ow * oh);
    const int *p = prm + n * LOOM_G_AUG_COUNT;
    unsigned v[4];
    int sy = oy, sx = ox;
    if (!affine || p[LOOM_G_AUG_AFFINE] == 0 || aug_affine(p, oh, ow, oy, ox, &sy, &sx)) {
        aug_fetch(x + n * h * w * c, p, c, h, w, sy, sx, (unsigned)fill, v);
        for (int k = 0; k < 4 && aug_code(p, k) != 0; k++) aug_adjust(aug_code(p, k), p, mean[n], c, v);
    } else { /* the affine's fill, not adjusted */
        for (int k = 0; k < 4; k++) v[k] = ((unsigned)p[LOOM_G_AUG_AFILL] >> (8 * k)) & 255u;
    }
    for (int k = 0; k < c; k++) st(y, ((n * c + k) * oh + oy) * ow + ox, lut[k * 256 + v[k]]);
}

template <typename T>
static loom_status run(loom__cu_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0];
    int64_t n = y->dims[0], oh = y->dims[2], ow = y->dims[3];
    int c = (int)x->dims[3], h = (int)x->dims[1], w = (int)x->dims[2], fill = (int)y->p[LOOM_P_AUG_FILL];
    unsigned *rows;
    float *mean;
    loom_status st;
    if ((st = loom__cu_scratch(o, (size_t)(n * oh) * sizeof(unsigned), (void **)&rows)) != LOOM_OK ||
        (st = loom__cu_scratch(o, (size_t)n * sizeof(float), (void **)&mean)) != LOOM_OK)
        return st;
    const uint8_t *xp = loom__cu_ptr<uint8_t>(o, x);
    const int *pp = loom__cu_ptr<int>(o, y->src[1]);
    if ((st = loom__cu_launch(o, augment_rows_k, loom__cu_grid1d(n * oh), LOOM__CU_THREADS, 0, xp, pp, rows, n * oh, c,
                              h, w, (int)oh, (int)ow, fill)) != LOOM_OK ||
        (st = loom__cu_launch(o, augment_mean_k, loom__cu_grid1d(n), LOOM__CU_THREADS, 0, (const unsigned *)rows, mean,
                              n, (int)oh, (int)ow)) != LOOM_OK)
        return st;
    return loom__cu_launch(o, augment_k<T>, loom__cu_grid1d(n * oh * ow), LOOM__CU_THREADS, 0, xp, pp,
                           loom__cu_ptr<float>(o, y->src[2]), (const float *)mean, loom__cu_ptr<T>(o, y),
                           n * oh * ow, c, h, w, (int)oh, (int)ow, fill, (int)y->p[LOOM_P_AUG_AFFINE]);
}

loom_status loom__cu_augment_u8(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run, o); }
