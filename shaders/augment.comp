/* shaders/augment.comp — augment_u8 (core/ops/augment.c), as
 * backends/cpu/ops/augment.c bit for bit where f32 division is correctly
 * rounded: integer indexing, the ColorJitter adjustments in f32 (`precise`:
 * every product and sum rounded on its own) and the table lookup. Three
 * kernels, no barriers: K_AUG_ROWS (one invocation per output row: the gray
 * sum of the row before contrast, for samples with contrast), K_AUG_MEAN
 * (one per sample: the f32 mean of its row sums) and the main one (one per
 * output pixel, every channel). */
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#if defined(K_AUG_MEAN)
/* rows (N, OH) u32 -> mean (N) f32: sum / (OH OW) correctly rounded (as the
 * CPU's division in double, then to f32: the same value below 2^28 pixels),
 * by a long division of the u32 sum */
TENSOR_IN(0, uint, rows);
TENSOR_OUT(1, float, mean);
PUSH { uint n, oh, ow; } pc;

void main() {
    uint n = loom_gid();
    if (n >= pc.n) return;
    uint sum = 0u, hw = pc.oh * pc.ow;
    for (uint i = 0u; i < pc.oh; i++) sum += rows[n * pc.oh + i];
    float res = 0.0;
    if (sum != 0u) {
        uint m = sum / hw, r = sum % hw; /* sum / hw = (m + r / hw) 2^-e */
        int e = 0;
        while (m < (1u << 24)) {
            r <<= 1;
            m = (m << 1) | (r >= hw ? 1u : 0u);
            r = r >= hw ? r - hw : r;
            e++;
        }
        uint mant = m >> 1; /* 24 bits, then the round bit m & 1 and the sticky r != 0 */
        if ((m & 1u) != 0u && (r != 0u || (mant & 1u) != 0u)) mant++;
        res = float(mant) * uintBitsToFloat(uint(128 - e) << 23); /* * 2^(1 - e), exact */
    }
    mean[n] = res;
}

#else
#if defined(K_AUG_ROWS)
/* x (N, H, W, C) u8, prm (N, LOOM_G_AUG_COUNT) i32 -> rows (N, OH) u32: the
 * sum of the floored grays of output row r before contrast (0 for a sample
 * without contrast) */
TENSOR_IN(0, uint8_t, x);
TENSOR_IN(1, int, prm);
TENSOR_OUT(2, uint, rows);
PUSH { uint xo, po, total, c, h, w, oh, ow, fill; } pc;
#else
/* x (N, H, W, C) u8, prm (N, LOOM_G_AUG_COUNT) i32, lut (C, 256) f32,
 * mean (N) f32 -> y (N, C, OH, OW); total = N OH OW */
TENSOR_IN(0, uint8_t, x);
TENSOR_IN(1, int, prm);
TENSOR_IN(2, float, lut);
TENSOR_IN(3, float, mean);
TENSOR_OUT(4, T, y);
PUSH { uint xo, po, lo, yo, total, c, h, w, oh, ow, fill; } pc;
#endif

/* T(r) of core/ops/augment.c */
uint aug_trunc(float v) {
    v = v > 0.0 ? v : 0.0;
    v = v < 255.0 ? v : 255.0;
    return uint(v);
}

uint aug_gray(uint v[4], uint c) {
    if (c != 3u) return v[0];
    precise float g = float(v[0]) * 0.2989 + float(v[1]) * 0.587 + float(v[2]) * 0.114;
    return uint(g);
}

float aug_clamp01(float v) { return v < 0.0 ? 0.0 : v > 1.0 ? 1.0 : v; }

void aug_hue(float f, inout uint v[4]) {
    const float inv = 0.00392156886; /* (float)(1.0 / 255.0) */
    precise float r = float(v[0]) * inv, g = float(v[1]) * inv, b = float(v[2]) * inv;
    precise float maxc = max(r, max(g, b)), minc = min(r, min(g, b));
    bool eqc = maxc == minc;
    precise float range = maxc - minc;
    precise float s = range / (eqc ? 1.0 : maxc);
    precise float dv = eqc ? 1.0 : range;
    precise float rc = (maxc - r) / dv, gc = (maxc - g) / dv, bc = (maxc - b) / dv;
    precise float hr = maxc == r ? bc - gc : 0.0;
    precise float hg = (maxc == g && maxc != r) ? 2.0 + rc - bc : 0.0;
    precise float hb = (maxc != g && maxc != r) ? 4.0 + gc - rc : 0.0;
    precise float h = (hr + hg + hb) * 0.166666672 + 1.0; /* 1 / 6 */
    h = h - floor(h); /* fmod(h, 1) of a positive h */
    h += f;
    h = h - floor(h);
    if (h >= 1.0) h = 0.0;
    precise float h6 = h * 6.0, fi = floor(h6), fr = h6 - fi;
    int sect = (int(fi) % 6 + 6) % 6;
    precise float sxf = s * fr;
    precise float q0 = (1.0 - sxf) * maxc, t0 = (sxf + (1.0 - s)) * maxc, p0 = (1.0 - s) * maxc;
    float q = aug_clamp01(q0), t = aug_clamp01(t0), pp = aug_clamp01(p0);
    float o0 = sect == 0 || sect == 5 ? maxc : sect == 1 ? q : sect == 4 ? t : pp;
    float o1 = sect == 1 || sect == 2 ? maxc : sect == 0 ? t : sect == 3 ? q : pp;
    float o2 = sect == 3 || sect == 4 ? maxc : sect == 2 ? t : sect == 5 ? q : pp;
    precise float s0 = o0 * 255.998993, s1 = o1 * 255.998993, s2 = o2 * 255.998993; /* 255 + 1 - 1e-3 */
    v[0] = aug_trunc(s0), v[1] = aug_trunc(s1), v[2] = aug_trunc(s2);
}

/* the sample's row of prm starts at pb */
uint aug_code(uint pb, uint i) {
    return (uint(prm[pb + uint(LOOM_G_AUG_JITTER)]) >> (uint(LOOM_K_AUG_BITS) * i)) & ((1u << LOOM_K_AUG_BITS) - 1u);
}

float aug_f(uint pb, int col) { return intBitsToFloat(prm[pb + uint(col)]); }

/* one adjustment on the c values of one pixel (mean: the contrast mean) */
void aug_adjust(uint code, uint pb, float mean, uint c, inout uint v[4]) {
    if (code == uint(LOOM_K_AUG_BRIGHT)) {
        precise float f = aug_f(pb, LOOM_G_AUG_BFACTOR);
        for (uint k = 0u; k < c; k++) {
            precise float r = float(v[k]) * f;
            v[k] = aug_trunc(r);
        }
    } else if (code == uint(LOOM_K_AUG_CONTRAST)) {
        precise float f = aug_f(pb, LOOM_G_AUG_CFACTOR), add = mean * aug_f(pb, LOOM_G_AUG_CGAIN);
        for (uint k = 0u; k < c; k++) {
            precise float r = float(v[k]) * f + add;
            v[k] = aug_trunc(r);
        }
    } else if (code == uint(LOOM_K_AUG_SAT) && c == 3u) {
        precise float f = aug_f(pb, LOOM_G_AUG_SFACTOR), add = float(aug_gray(v, c)) * aug_f(pb, LOOM_G_AUG_SGAIN);
        for (uint k = 0u; k < 3u; k++) {
            precise float r = float(v[k]) * f + add;
            v[k] = aug_trunc(r);
        }
    } else if (code == uint(LOOM_K_AUG_HUE) && c == 3u) {
        aug_hue(aug_f(pb, LOOM_G_AUG_HFACTOR), v);
    }
}

/* the c values of output pixel (oy, ox) of sample n before the adjustments */
void aug_fetch(uint xo, uint pb, uint n, uint c, uint h, uint w, uint oy, uint ox, uint fill, out uint v[4]) {
    int sy = prm[pb + uint(LOOM_G_AUG_ROW0)] + prm[pb + uint(LOOM_G_AUG_RSTEP)] * int(oy);
    int sx = prm[pb + uint(LOOM_G_AUG_COL0)] + prm[pb + uint(LOOM_G_AUG_CSTEP)] * int(ox);
    int y0 = max(prm[pb + uint(LOOM_G_AUG_Y0)], 0), y1 = min(prm[pb + uint(LOOM_G_AUG_Y1)], int(h));
    int x0 = max(prm[pb + uint(LOOM_G_AUG_X0)], 0), x1 = min(prm[pb + uint(LOOM_G_AUG_X1)], int(w));
    bool inside = sy >= y0 && sy < y1 && sx >= x0 && sx < x1;
    v = uint[4](fill, fill, fill, fill);
    if (inside)
        for (uint k = 0u; k < c; k++) v[k] = uint(x[xo + ((n * h + uint(sy)) * w + uint(sx)) * c + k]);
}

#if defined(K_AUG_AFFINE)
/* double k of the affine's inverse matrix: columns M + 2k (low word), M + 2k + 1 */
double aug_m(uint pb, int k) {
    return packDouble2x32(uvec2(uint(prm[pb + uint(LOOM_G_AUG_M + 2 * k)]), uint(prm[pb + uint(LOOM_G_AUG_M + 2 * k + 1)])));
}

/* x rounded to the nearest integer, ties to even, from floor and exact
 * compares: lavapipe's roundEven of a double disagreed with ties-to-even at
 * x.5 on an AVX2-only CPU (AMD Zen 3; tests/test-devaug.c: a scale-2 affine
 * moved 44% of the values away from the host loop, loom__round_even) */
double round_even_d(double x) {
    precise double f = floor(x), d = x - f;
    if (d > 0.5LF) return f + 1.0LF;
    if (d < 0.5LF) return f;
    return (floor(f * 0.5LF) * 2.0LF == f) ? f : f + 1.0LF;
}

/* the jittered pixel (sy, sx) that output (oy, ox) shows; false when outside (the affine's fill) */
bool aug_affine(uint pb, uint oh, uint ow, uint oy, uint ox, out uint sy, out uint sx) {
    precise double hx = 0.5LF * double(int(ow) - 1), hy = 0.5LF * double(int(oh) - 1);
    precise double x = double(ox) - hx, y = double(oy) - hy;
    precise double fx = aug_m(pb, 0) * x + aug_m(pb, 1) * y + aug_m(pb, 2) + hx;
    precise double fy = aug_m(pb, 3) * x + aug_m(pb, 4) * y + aug_m(pb, 5) + hy;
    double rx = round_even_d(fx), ry = round_even_d(fy);
    sy = 0u, sx = 0u;
    if (!(rx >= 0.0LF && rx < double(ow) && ry >= 0.0LF && ry < double(oh))) return false;
    sx = uint(rx), sy = uint(ry);
    return true;
}
#endif

#if defined(K_AUG_ROWS)
void main() {
    uint r = loom_gid();
    if (r >= pc.total) return;
    uint n = r / pc.oh, oy = r % pc.oh, pb = pc.po + n * uint(LOOM_G_AUG_COUNT);
    uint before = 0u;
    while (before < 4u && aug_code(pb, before) != 0u && aug_code(pb, before) != uint(LOOM_K_AUG_CONTRAST)) before++;
    uint sum = 0u;
    if (before < 4u && aug_code(pb, before) == uint(LOOM_K_AUG_CONTRAST))
        for (uint ox = 0u; ox < pc.ow; ox++) {
            uint v[4];
            aug_fetch(pc.xo, pb, n, pc.c, pc.h, pc.w, oy, ox, pc.fill, v);
            for (uint i = 0u; i < before; i++) aug_adjust(aug_code(pb, i), pb, 0.0, pc.c, v);
            sum += aug_gray(v, pc.c);
        }
    rows[r] = sum;
}

#else
void main() {
    uint i = loom_gid();
    if (i >= pc.total) return;
    uint ox = i % pc.ow, oy = (i / pc.ow) % pc.oh, n = i / (pc.ow * pc.oh);
    uint pb = pc.po + n * uint(LOOM_G_AUG_COUNT);
    uint v[4];
    uint sy = oy, sx = ox;
    bool inside = true;
#if defined(K_AUG_AFFINE)
    if (prm[pb + uint(LOOM_G_AUG_AFFINE)] != 0) inside = aug_affine(pb, pc.oh, pc.ow, oy, ox, sy, sx);
#endif
    if (inside) {
        aug_fetch(pc.xo, pb, n, pc.c, pc.h, pc.w, sy, sx, pc.fill, v);
        for (uint k = 0u; k < 4u && aug_code(pb, k) != 0u; k++) aug_adjust(aug_code(pb, k), pb, mean[n], pc.c, v);
    } else { /* the affine's fill, not adjusted */
        uint f = uint(prm[pb + uint(LOOM_G_AUG_AFILL)]);
        v = uint[4](f & 255u, (f >> 8) & 255u, (f >> 16) & 255u, f >> 24);
    }
    for (uint k = 0u; k < pc.c; k++)
        ST(y, pc.yo + ((n * pc.c + k) * pc.oh + oy) * pc.ow + ox, lut[pc.lo + k * 256u + v[k]]);
}
#endif
#endif
