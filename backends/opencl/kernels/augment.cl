/* backends/opencl/kernels/augment.cl — augment_u8 (core/ops/augment.c), as
 * backends/cpu/ops/augment.c bit for bit: integer indexing, the ColorJitter
 * adjustments in f32 (contraction is off; division correctly rounded where
 * the device has the build option) and the table lookup. Three kernels, no
 * barriers: augment_u8_rows (one work-item per output row: the gray sum of
 * the row before contrast, for samples with contrast), augment_u8_mean (one
 * per sample: the f32 mean of its row sums) and augment_u8 (one per output
 * pixel, every channel). A RandomAffine's source point in double as
 * core/affine.h computes it (contraction off, common.cl; rint is round half
 * to even, exact): only where the device has cl_khr_fp64 (the host side
 * refuses an affine node elsewhere). */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

/* double k of the affine's inverse matrix: columns M + 2k (low word), M + 2k + 1 */
inline double aug_m(__global const int *p, int k) {
    return as_double(((ulong)(uint)p[LOOM_G_AUG_M + 2 * k + 1] << 32) | (ulong)(uint)p[LOOM_G_AUG_M + 2 * k]);
}

/* the jittered pixel (*sy, *sx) that output (oy, ox) shows; 0 when outside (the affine's fill) */
inline int aug_affine(__global const int *p, int oh, int ow, int oy, int ox, int *sy, int *sx) {
    double hx = 0.5 * (double)(ow - 1), hy = 0.5 * (double)(oh - 1);
    double x = (double)ox - hx, y = (double)oy - hy;
    double fx = aug_m(p, 0) * x + aug_m(p, 1) * y + aug_m(p, 2) + hx;
    double fy = aug_m(p, 3) * x + aug_m(p, 4) * y + aug_m(p, 5) + hy;
    double rx = rint(fx), ry = rint(fy);
    if (!(rx >= 0.0 && rx < (double)ow && ry >= 0.0 && ry < (double)oh)) return 0;
    *sx = (int)rx, *sy = (int)ry;
    return 1;
}
#endif

/* T(r) of core/ops/augment.c */
inline uint aug_trunc(float v) {
    v = v > 0.0f ? v : 0.0f;
    v = v < 255.0f ? v : 255.0f;
    return (uint)v;
}

inline uint aug_gray(const uint *v, int c) {
    if (c != 3) return v[0];
    return (uint)((float)v[0] * 0.2989f + (float)v[1] * 0.587f + (float)v[2] * 0.114f);
}

inline float aug_clamp01(float v) { return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; }

inline void aug_hue(float f, uint *v) {
    const float inv = 0.00392156886f; /* (float)(1.0 / 255.0) */
    float r = (float)v[0] * inv, g = (float)v[1] * inv, b = (float)v[2] * inv;
    float maxc = fmax(r, fmax(g, b)), minc = fmin(r, fmin(g, b));
    bool eqc = maxc == minc;
    float range = maxc - minc;
    float s = range / (eqc ? 1.0f : maxc);
    float dv = eqc ? 1.0f : range;
    float rc = (maxc - r) / dv, gc = (maxc - g) / dv, bc = (maxc - b) / dv;
    float hr = maxc == r ? bc - gc : 0.0f;
    float hg = (maxc == g && maxc != r) ? 2.0f + rc - bc : 0.0f;
    float hb = (maxc != g && maxc != r) ? 4.0f + gc - rc : 0.0f;
    float h = (hr + hg + hb) * 0.166666672f + 1.0f; /* 1 / 6 */
    h = h - floor(h); /* fmod(h, 1) of a positive h */
    h += f;
    h = h - floor(h);
    if (h >= 1.0f) h = 0.0f;
    float h6 = h * 6.0f, fi = floor(h6), fr = h6 - fi;
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

inline int aug_code(__global const int *p, int i) {
    return (int)(((uint)p[LOOM_G_AUG_JITTER] >> (LOOM_K_AUG_BITS * i)) & ((1u << LOOM_K_AUG_BITS) - 1u));
}

/* one adjustment on the c values of one pixel (mean: the contrast mean) */
inline void aug_adjust(int code, __global const int *p, float mean, int c, uint *v) {
    if (code == LOOM_K_AUG_BRIGHT) {
        float f = as_float(p[LOOM_G_AUG_BFACTOR]);
        for (int k = 0; k < c; k++) v[k] = aug_trunc((float)v[k] * f);
    } else if (code == LOOM_K_AUG_CONTRAST) {
        float f = as_float(p[LOOM_G_AUG_CFACTOR]), add = mean * as_float(p[LOOM_G_AUG_CGAIN]);
        for (int k = 0; k < c; k++) v[k] = aug_trunc((float)v[k] * f + add);
    } else if (code == LOOM_K_AUG_SAT && c == 3) {
        float f = as_float(p[LOOM_G_AUG_SFACTOR]), add = (float)aug_gray(v, c) * as_float(p[LOOM_G_AUG_SGAIN]);
        for (int k = 0; k < 3; k++) v[k] = aug_trunc((float)v[k] * f + add);
    } else if (code == LOOM_K_AUG_HUE && c == 3) {
        aug_hue(as_float(p[LOOM_G_AUG_HFACTOR]), v);
    }
}

/* the c values of output pixel (oy, ox) of sample n before the adjustments */
inline void aug_fetch(__global const uchar *img, __global const int *p, int c, int h, int w, int oy, int ox, uint fill,
                      uint *v) {
    int sy = p[LOOM_G_AUG_ROW0] + p[LOOM_G_AUG_RSTEP] * oy, sx = p[LOOM_G_AUG_COL0] + p[LOOM_G_AUG_CSTEP] * ox;
    int y0 = max(p[LOOM_G_AUG_Y0], 0), y1 = min(p[LOOM_G_AUG_Y1], h);
    int x0 = max(p[LOOM_G_AUG_X0], 0), x1 = min(p[LOOM_G_AUG_X1], w);
    bool in = sy >= y0 && sy < y1 && sx >= x0 && sx < x1;
    for (int k = 0; k < c; k++) v[k] = in ? (uint)img[((long)sy * w + sx) * c + k] : fill;
}

/* rows (N, OH) u32: the sum of the floored grays of output row r before
 * contrast (0 for a sample without contrast) */
__kernel void augment_u8_rows(__global const uchar *x, ulong xo, __global const int *prm, ulong po,
                              __global uint *rows, long total, int c, int h, int w, int oh, int ow, int fill) {
    long r = get_global_id(0);
    if (r >= total) return;
    long n = r / oh;
    int oy = (int)(r % oh);
    __global const int *p = prm + po + n * LOOM_G_AUG_COUNT;
    __global const uchar *img = x + xo + n * h * w * c;
    int before = 0;
    while (before < 4 && aug_code(p, before) != 0 && aug_code(p, before) != LOOM_K_AUG_CONTRAST) before++;
    uint sum = 0;
    if (before < 4 && aug_code(p, before) == LOOM_K_AUG_CONTRAST)
        for (int ox = 0; ox < ow; ox++) {
            uint v[4];
            aug_fetch(img, p, c, h, w, oy, ox, (uint)fill, v);
            for (int i = 0; i < before; i++) aug_adjust(aug_code(p, i), p, 0.0f, c, v);
            sum += aug_gray(v, c);
        }
    rows[r] = sum;
}

/* mean (N) f32: sum / (OH OW) correctly rounded (as the CPU's division in
 * double, then to f32: the same value below 2^28 pixels), by a long
 * division of the u32 sum */
__kernel void augment_u8_mean(__global const uint *rows, __global float *mean, long n_total, int oh, int ow) {
    long n = get_global_id(0);
    if (n >= n_total) return;
    uint sum = 0, hw = (uint)oh * (uint)ow;
    for (int i = 0; i < oh; i++) sum += rows[n * oh + i];
    float out = 0.0f;
    if (sum != 0) {
        uint m = sum / hw, r = sum % hw; /* sum / hw = (m + r / hw) 2^-e */
        int e = 0;
        while (m < (1u << 24)) {
            r <<= 1;
            m = (m << 1) | (r >= hw ? 1u : 0u);
            r = r >= hw ? r - hw : r;
            e++;
        }
        uint mant = m >> 1; /* 24 bits, then the round bit m & 1 and the sticky r != 0 */
        if ((m & 1u) && (r != 0u || (mant & 1u))) mant++;
        out = (float)mant * as_float((uint)(128 - e) << 23); /* * 2^(1 - e), exact */
    }
    mean[n] = out;
}

/* x (N, H, W, C) u8, prm (N, LOOM_G_AUG_COUNT) i32, lut (C, 256) f32,
 * mean (N) f32, y (N, C, OH, OW); total = N OH OW; affine: the node's
 * LOOM_P_AUG_AFFINE (1 only with cl_khr_fp64) */
__kernel void augment_u8(__global const uchar *x, ulong xo, __global const int *prm, ulong po,
                         __global const float *lut, ulong lo, __global const float *mean, __global T *y, ulong yo,
                         long total, int c, int h, int w, int oh, int ow, int fill, int affine) {
    long i = get_global_id(0);
    if (i >= total) return;
    int ox = (int)(i % ow), oy = (int)((i / ow) % oh);
    long n = i / ((long)ow * oh);
    __global const int *p = prm + po + n * LOOM_G_AUG_COUNT;
    uint v[4];
    int sy = oy, sx = ox, inside = 1;
#ifdef cl_khr_fp64
    if (affine && p[LOOM_G_AUG_AFFINE] != 0) inside = aug_affine(p, oh, ow, oy, ox, &sy, &sx);
#endif
    if (inside) {
        aug_fetch(x + xo + n * h * w * c, p, c, h, w, sy, sx, (uint)fill, v);
        for (int k = 0; k < 4 && aug_code(p, k) != 0; k++) aug_adjust(aug_code(p, k), p, mean[n], c, v);
    } else { /* the affine's fill, not adjusted */
        for (int k = 0; k < 4; k++) v[k] = ((uint)p[LOOM_G_AUG_AFILL] >> (8 * k)) & 255u;
    }
    for (int k = 0; k < c; k++) ST(y + yo, ((n * c + k) * oh + oy) * ow + ox, lut[lo + k * 256 + v[k]]);
}
