/* tests/ops/augment.c — op cases of augment_u8 (device augmentation): u8
 * images of 3 and 1 channels, per-sample tables with padded crops (reads
 * outside the image or the window take the fill), horizontal and vertical
 * flips, and brightness alone or the full ColorJitter (brightness,
 * contrast, saturation, hue in a different order per sample: contrast
 * first, in the middle and last, so its mean is of images adjusted in
 * different ways, padding included), into the normalising table of the
 * loader; and a contrast mean that a truncating division would get wrong.
 * RandomAffine (nearest, the node's affine on): rotation, translation,
 * scale and shear, alone or after crops, flips and the full ColorJitter;
 * source points exactly on .5 (angle 0, integer translation, scale 2 on
 * odd and 0.5 on even sizes: half to even decides), the affine's fill
 * (unlike the crop's, and not jittered), a row without the affine (its
 * matrix ignored), 1 and 3 channels; and matrices (found by a search)
 * whose source point is a tie that a fused multiply-add (either product
 * fused with the other's sum) would move off it to another pixel.
 * The CPU's bits on every backend (a pixel one u8 step off is an f32 NMSE
 * near 1e-6, far above the tolerance); a data op: no gradient check. */
#include <stdlib.h>
#include <string.h>

#include "cases.h"

#include "loom/transforms.h"

#include "../../core/params.h"

static void set_f32(int32_t *row, int col, float f) { memcpy(&row[col], &f, sizeof f); }

/* the codes a, b, c, d (LOOM_K_AUG_*, 0 ends) as LOOM_G_AUG_JITTER lists them */
static int32_t order(int a, int b, int c, int d) {
    return a | b << LOOM_K_AUG_BITS | c << 2 * LOOM_K_AUG_BITS | d << 3 * LOOM_K_AUG_BITS;
}

/* variant: bit 0: 1 channel (else 3); bit 1: the full ColorJitter, larger images */
static loom_tensor *augment(loom_graph *g, loom_dtype dt, int v) {
    bool jit = v & 2;
    int64_t c = v & 1 ? 1 : 3, n = 3, h = v & 1 ? 9 : 7, w = v & 1 ? 5 : 6, oh = 5, ow = 4;
    if (jit) h = 23, w = 19, oh = 17, ow = 21;
    loom_tensor *x = tc_bytes(g, "x", TC_DIMS(n, h, w, c), 777, (uint64_t)v);
    if (!x) return NULL;
    float f1 = 1.3f, f2 = 0.6f;
    int32_t p[3][LOOM_G_AUG_COUNT] = {
        {-2, 1, -1, 1, 0, 0, 0, 99, -5, 99},                            /* a crop of the padded image */
        {(int32_t)h - 1, -1, (int32_t)w - 1, -1, 1, 0, 1, 5, 0, 4},       /* both flips, brighter, a window */
        {3, 1, (int32_t)w + 1, -1, 1, 0, 0, (int32_t)h, 0, (int32_t)w},   /* a flip with padding, darker */
    };
    memcpy(&p[1][LOOM_G_AUG_BFACTOR], &f1, sizeof f1);
    memcpy(&p[2][LOOM_G_AUG_BFACTOR], &f2, sizeof f2);
    if (jit) {
        enum { B = LOOM_K_AUG_BRIGHT, C = LOOM_K_AUG_CONTRAST, S = LOOM_K_AUG_SAT, H = LOOM_K_AUG_HUE };
        p[0][LOOM_G_AUG_JITTER] = order(H, S, C, B), p[1][LOOM_G_AUG_JITTER] = order(C, B, H, S);
        p[2][LOOM_G_AUG_JITTER] = order(S, C, 0, 0);
        p[1][LOOM_G_AUG_ROW0] = (int32_t)h - 3, p[1][LOOM_G_AUG_COL0] = (int32_t)w + 1;
        p[1][LOOM_G_AUG_Y1] = 20, p[1][LOOM_G_AUG_X1] = (int32_t)w - 2;
        /* brightness, contrast, saturation, hue */
        const float fs[3][4] = {{1.2f, 0.6f, 1.7f, -0.3f}, {0.8f, 1.4f, 0.3f, 0.45f}, {1.0f, 0.75f, 0.0f, 0.1f}};
        for (int i = 0; i < 3; i++) {
            set_f32(p[i], LOOM_G_AUG_BFACTOR, fs[i][0]);
            set_f32(p[i], LOOM_G_AUG_CFACTOR, fs[i][1]), set_f32(p[i], LOOM_G_AUG_CGAIN, (float)(1.0 - fs[i][1]));
            set_f32(p[i], LOOM_G_AUG_SFACTOR, fs[i][2]), set_f32(p[i], LOOM_G_AUG_SGAIN, (float)(1.0 - fs[i][2]));
            set_f32(p[i], LOOM_G_AUG_HFACTOR, fs[i][3]);
        }
    }
    loom_tensor *prm = loom_constant(g, "prm", LOOM_I32, 2, (int64_t[]){n, LOOM_G_AUG_COUNT}, p);
    float lut[3][256];
    const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
    for (int k = 0; k < c; k++)
        for (int i = 0; i < 256; i++) lut[k][i] = ((float)i / 255.0f - mean[k]) / sd[k];
    loom_tensor *l = loom_constant(g, "lut", LOOM_F32, 2, (int64_t[]){c, 256}, lut);
    return loom_augment_u8(g, x, prm, l, dt, oh, ow, v & 1 ? 0 : 128, false);
}

/* contrast's mean rounded: one image pixel of 254 in 400 x 400 pixels of
 * fill 255, contrast factor 0: every output is T(mean); the mean
 * 255 - 1/160000 rounds to 255 in f32 (truncating it gives 254) */
static loom_tensor *augment_mean(loom_graph *g, loom_dtype dt, int v) {
    (void)v;
    loom_tensor *x = loom_constant(g, "x", LOOM_U8, 4, (int64_t[]){1, 1, 1, 1}, (uint8_t[]){254});
    int32_t p[LOOM_G_AUG_COUNT] = {0, 1, 0, 1, LOOM_K_AUG_CONTRAST, 0, 0, 1, 0, 1};
    set_f32(p, LOOM_G_AUG_CFACTOR, 0.0f), set_f32(p, LOOM_G_AUG_CGAIN, 1.0f);
    loom_tensor *prm = loom_constant(g, "prm", LOOM_I32, 2, (int64_t[]){1, LOOM_G_AUG_COUNT}, p);
    float lut[256];
    for (int i = 0; i < 256; i++) lut[i] = ((float)i / 255.0f - 0.5f) / 0.25f;
    loom_tensor *l = loom_constant(g, "lut", LOOM_F32, 2, (int64_t[]){1, 256}, lut);
    return loom_augment_u8(g, x, prm, l, dt, 400, 400, 255, false);
}

/* the affine of torchvision's parameters into row p (loom_tf_affine_inverse, as the loader) */
static void set_affine(int32_t *p, double angle, double tx, double ty, double scale, double shx, double shy) {
    double m[6];
    loom_tf_affine_inverse(angle, tx, ty, scale, shx, shy, m);
    p[LOOM_G_AUG_AFFINE] = 1;
    for (int k = 0; k < 6; k++) {
        uint64_t b;
        memcpy(&b, &m[k], sizeof b);
        p[LOOM_G_AUG_M + 2 * k] = (int32_t)(uint32_t)b, p[LOOM_G_AUG_M + 2 * k + 1] = (int32_t)(uint32_t)(b >> 32);
    }
    p[LOOM_G_AUG_AFILL] = 200 | 100 << 8 | 50 << 16;
}

/* variant: bit 0: 1 channel (else 3); bit 1: crops, flips and the full
 * ColorJitter before the affine (else the affine alone); bit 2: odd sizes */
static loom_tensor *augment_affine(loom_graph *g, loom_dtype dt, int v) {
    int64_t c = v & 1 ? 1 : 3, n = 4, oh = v & 4 ? 11 : 10, ow = v & 4 ? 13 : 12, h = oh, w = ow;
    if (v & 2) h = oh + 5, w = ow + 3;
    loom_tensor *x = tc_bytes(g, "x", TC_DIMS(n, h, w, c), 778, (uint64_t)v);
    if (!x) return NULL;
    int32_t p[4][LOOM_G_AUG_COUNT];
    memset(p, 0, sizeof p);
    for (int i = 0; i < 4; i++) /* the whole image, as it is */
        p[i][LOOM_G_AUG_RSTEP] = p[i][LOOM_G_AUG_CSTEP] = 1, p[i][LOOM_G_AUG_Y1] = (int32_t)h,
        p[i][LOOM_G_AUG_X1] = (int32_t)w;
    if (v & 2) {
        enum { B = LOOM_K_AUG_BRIGHT, C = LOOM_K_AUG_CONTRAST, S = LOOM_K_AUG_SAT, H = LOOM_K_AUG_HUE };
        p[0][LOOM_G_AUG_ROW0] = (int32_t)h - 1, p[0][LOOM_G_AUG_RSTEP] = -1, p[0][LOOM_G_AUG_COL0] = 2; /* a flip */
        p[1][LOOM_G_AUG_ROW0] = -2, p[1][LOOM_G_AUG_COL0] = (int32_t)w + 1, p[1][LOOM_G_AUG_CSTEP] = -1; /* padded */
        p[2][LOOM_G_AUG_ROW0] = 3, p[2][LOOM_G_AUG_COL0] = 1, p[2][LOOM_G_AUG_Y0] = 6; /* a window */
        p[3][LOOM_G_AUG_ROW0] = 1, p[3][LOOM_G_AUG_COL0] = -1;
        p[0][LOOM_G_AUG_JITTER] = order(C, B, H, S), p[1][LOOM_G_AUG_JITTER] = order(H, S, C, B);
        p[2][LOOM_G_AUG_JITTER] = order(B, 0, 0, 0), p[3][LOOM_G_AUG_JITTER] = order(S, C, 0, 0);
        const float fs[4][4] = {{1.2f, 0.6f, 1.7f, -0.3f}, {0.8f, 1.4f, 0.3f, 0.45f}, {1.3f, 1, 1, 0},
                                {1.0f, 0.75f, 0.0f, 0.1f}};
        for (int i = 0; i < 4; i++) {
            set_f32(p[i], LOOM_G_AUG_BFACTOR, fs[i][0]);
            set_f32(p[i], LOOM_G_AUG_CFACTOR, fs[i][1]), set_f32(p[i], LOOM_G_AUG_CGAIN, (float)(1.0 - fs[i][1]));
            set_f32(p[i], LOOM_G_AUG_SFACTOR, fs[i][2]), set_f32(p[i], LOOM_G_AUG_SGAIN, (float)(1.0 - fs[i][2]));
            set_f32(p[i], LOOM_G_AUG_HFACTOR, fs[i][3]);
        }
    }
    set_affine(p[0], 0, 1, -2, 2.0, 0, 0);  /* m0 = m4 = 0.5: ties on odd sizes */
    set_affine(p[1], 0, 3, 1, 0.5, 0, 0);   /* m0 = m4 = 2: every point a tie on even sizes */
    set_affine(p[2], 17, -2, 3, 1.1, 12, -7); /* rotation, translation, scale, shear */
    set_affine(p[3], 90, 5, 5, 0.7, 0, 0);
    p[3][LOOM_G_AUG_AFFINE] = 0; /* no affine in this row: its matrix is not read */
    loom_tensor *prm = loom_constant(g, "prm", LOOM_I32, 2, (int64_t[]){n, LOOM_G_AUG_COUNT}, p);
    float lut[3][256];
    const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
    for (int k = 0; k < c; k++)
        for (int i = 0; i < 256; i++) lut[k][i] = ((float)i / 255.0f - mean[k]) / sd[k];
    loom_tensor *l = loom_constant(g, "lut", LOOM_F32, 2, (int64_t[]){c, 256}, lut);
    return loom_augment_u8(g, x, prm, l, dt, oh, ow, 128, true);
}

/* m as given (no fill: the points are inside) */
static void set_m(int32_t *p, const double m[6]) {
    p[LOOM_G_AUG_AFFINE] = 1;
    for (int k = 0; k < 6; k++) {
        uint64_t b;
        memcpy(&b, &m[k], sizeof b);
        p[LOOM_G_AUG_M + 2 * k] = (int32_t)(uint32_t)b, p[LOOM_G_AUG_M + 2 * k + 1] = (int32_t)(uint32_t)(b >> 32);
    }
}

/* 11 x 12 images; in each row of the table one output pixel's source point
 * is exactly on .5 unrounded-product by unrounded-product, and off it with
 * fma(m0, x, m1 y) or fma(m1, y, m0 x): rows 0, 1 in x (at (8, 2): 1.5 vs
 * 1.4999999999999991; 0.5 vs 0.50000000000000089), row 2 in y (at (0, 2):
 * 1.5 vs 1.4999999999999996); the other axis is the identity */
static loom_tensor *augment_fma(loom_graph *g, loom_dtype dt, int v) {
    (void)v;
    int64_t c = 3, n = 3, h = 11, w = 12;
    loom_tensor *x = tc_bytes(g, "x", TC_DIMS(n, h, w, c), 779, 0);
    if (!x) return NULL;
    int32_t p[3][LOOM_G_AUG_COUNT];
    memset(p, 0, sizeof p);
    for (int i = 0; i < 3; i++)
        p[i][LOOM_G_AUG_RSTEP] = p[i][LOOM_G_AUG_CSTEP] = 1, p[i][LOOM_G_AUG_Y1] = (int32_t)h,
        p[i][LOOM_G_AUG_X1] = (int32_t)w;
    set_m(p[0], (const double[6]){0x1.d2eb3959a5d67p-1, -0x1.7725f1eeee4bep-2, 0x1.29e0674053cp-2, 0, 1, 0});
    set_m(p[1], (const double[6]){0x1.02844b8b0508ap+0, -0x1.af4d14ef5e9a2p-2, -0x1.9db93f2f3b7p-3, 0, 1, 0});
    set_m(p[2], (const double[6]){1, 0, 0, -0x1.570bcc66ae17ap-2, 0x1.0118269702305p+0, 0x1.6539b864ca73p-2});
    loom_tensor *prm = loom_constant(g, "prm", LOOM_I32, 2, (int64_t[]){n, LOOM_G_AUG_COUNT}, p);
    float lut[3][256];
    for (int k = 0; k < c; k++)
        for (int i = 0; i < 256; i++) lut[k][i] = (float)i / 255.0f - 0.5f;
    loom_tensor *l = loom_constant(g, "lut", LOOM_F32, 2, (int64_t[]){c, 256}, lut);
    return loom_augment_u8(g, x, prm, l, dt, h, w, 0, true);
}

const loom_op_case loom_cases_augment[] = {
    {"augment_u8 3 channels: padded crop, flips, brightness", augment, 0, 0, TC_NO_GRADCHECK, 0},
    {"augment_u8 1 channel: padded crop, flips, brightness", augment, 1, 0, TC_NO_GRADCHECK, 0},
    {"augment_u8 3 channels: crops, flips, full ColorJitter", augment, 2, 0, TC_NO_GRADCHECK, 0},
    {"augment_u8 1 channel: crops, flips, full ColorJitter", augment, 3, 0, TC_NO_GRADCHECK, 0},
    {"augment_u8 contrast mean rounded to nearest", augment_mean, 0, 0, TC_NO_GRADCHECK, 0},
    {"augment_u8 3 channels: RandomAffine alone, even sizes", augment_affine, 0, 0, TC_NO_GRADCHECK, 0},
    {"augment_u8 1 channel: RandomAffine alone, odd sizes", augment_affine, 5, 0, TC_NO_GRADCHECK, 0},
    {"augment_u8 3 channels: crops, flips, ColorJitter, RandomAffine, odd", augment_affine, 6, 0, TC_NO_GRADCHECK, 0},
    {"augment_u8 3 channels: crops, flips, ColorJitter, RandomAffine, even", augment_affine, 2, 0, TC_NO_GRADCHECK,
     0},
    {"augment_u8 1 channel: crops, flips, ColorJitter, RandomAffine, even", augment_affine, 3, 0, TC_NO_GRADCHECK,
     0},
    {"augment_u8 RandomAffine ties a fused multiply-add would break", augment_fma, 0, 0, TC_NO_GRADCHECK, 0},
    {0},
};
