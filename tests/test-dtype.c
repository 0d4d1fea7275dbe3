/* tests/test-dtype.c — dtype table and conversions (core/dtype.c).
 *
 * - f32 -> f16 / bf16 on generated reference vectors (tests/dtype_vectors.h,
 *   from tests/gen_dtype_vectors.py: numpy and exact rational rounding)
 * - every f16 and bf16 bit pattern: -> f32 equals an independent decoding,
 *   and -> f32 -> back gives the same bits (NaNs stay NaN)
 * - every rounding tie of f16 and bf16 (and one f32 step either side of it)
 * - loom_convert between every pair of dtypes, loom_dtype_parse/name/size
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtype_vectors.h"
#include "loom/loom.h"
#include "testutil.h"

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static bool f16_is_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu); }
static bool bf16_is_nan(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu); }

/* Decoding written from the format definition, independent of core/dtype.c. */
static float ref_f16_to_f32(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (float)(h & 0x8000u ? -v : v);
}
static float ref_bf16_to_f32(uint16_t h) {
    int e = (h >> 7) & 255, m = h & 127;
    double v = e == 0 ? ldexp(m, -133) : e == 255 ? (m ? NAN : INFINITY) : ldexp(128 + m, e - 134);
    return (float)(h & 0x8000u ? -v : v);
}

static void test_vectors(void) {
    int bad = 0;
    for (size_t i = 0; i < sizeof f16_vectors / sizeof *f16_vectors; i++) {
        const dtype_vec *v = &f16_vectors[i];
        uint16_t got = loom_f32_to_f16(from_bits(v->f32));
        if (got != v->out) bad++;
        CHECK(got == v->out, "f16: %08x (%s): got %04x, expected %04x", (unsigned)v->f32, v->what, got, v->out);
    }
    for (size_t i = 0; i < sizeof bf16_vectors / sizeof *bf16_vectors; i++) {
        const dtype_vec *v = &bf16_vectors[i];
        uint16_t got = loom_f32_to_bf16(from_bits(v->f32));
        if (got != v->out) bad++;
        CHECK(got == v->out, "bf16: %08x (%s): got %04x, expected %04x", (unsigned)v->f32, v->what, got, v->out);
    }
    for (size_t i = 0; i < sizeof f16_to_f32_vectors / sizeof *f16_to_f32_vectors; i++) {
        uint16_t h = (uint16_t)f16_to_f32_vectors[i][0];
        uint32_t got = bits(loom_f16_to_f32(h));
        CHECK(got == f16_to_f32_vectors[i][1], "f16 %04x -> f32: got %08x, expected %08x", h, (unsigned)got,
              (unsigned)f16_to_f32_vectors[i][1]);
    }
    for (size_t i = 0; i < sizeof nan_f32_inputs / sizeof *nan_f32_inputs; i++) {
        float f = from_bits(nan_f32_inputs[i]);
        uint16_t h = loom_f32_to_f16(f), b = loom_f32_to_bf16(f);
        CHECK(f16_is_nan(h), "f16 of NaN %08x is %04x, not a NaN", (unsigned)nan_f32_inputs[i], h);
        CHECK(bf16_is_nan(b), "bf16 of NaN %08x is %04x, not a NaN", (unsigned)nan_f32_inputs[i], b);
        CHECK(isnan(loom_f16_to_f32(h)) && isnan(loom_bf16_to_f32(b)), "NaN %08x does not come back as NaN",
              (unsigned)nan_f32_inputs[i]);
    }
    /* the same vectors through loom_convert's array loops */
    enum { NV = sizeof f16_vectors / sizeof *f16_vectors, NB = sizeof bf16_vectors / sizeof *bf16_vectors };
    float in[NV > NB ? NV : NB];
    uint16_t out[NV > NB ? NV : NB];
    for (int i = 0; i < NV; i++) in[i] = from_bits(f16_vectors[i].f32);
    loom_convert(in, LOOM_F32, out, LOOM_F16, NV);
    int same = 0;
    for (int i = 0; i < NV; i++) same += out[i] == f16_vectors[i].out;
    CHECK(same == NV, "loom_convert f32->f16: %d of %d vectors match", same, NV);
    for (int i = 0; i < NB; i++) in[i] = from_bits(bf16_vectors[i].f32);
    loom_convert(in, LOOM_F32, out, LOOM_BF16, NB);
    same = 0;
    for (int i = 0; i < NB; i++) same += out[i] == bf16_vectors[i].out;
    CHECK(same == NB, "loom_convert f32->bf16: %d of %d vectors match", same, NB);
    printf("reference vectors: %d f16, %d bf16, %d mismatches\n", NV, NB, bad);
}

/* Every 16-bit pattern: decode == independent decode, and decode -> encode is
 * the identity (NaN -> NaN). */
static void test_exhaustive_round_trip(void) {
    int dec_bad = 0, rt_bad = 0, bdec_bad = 0, brt_bad = 0;
    for (uint32_t u = 0; u < 65536; u++) {
        uint16_t h = (uint16_t)u;
        float f = loom_f16_to_f32(h), r = ref_f16_to_f32(h);
        uint16_t back = loom_f32_to_f16(f);
        if (f16_is_nan(h)) {
            if (!isnan(f)) dec_bad++;
            if (!f16_is_nan(back)) rt_bad++;
        } else {
            if (bits(f) != bits(r)) {
                if (dec_bad++ < 5)
                    printf("  f16 %04x -> %08x, expected %08x\n", h, (unsigned)bits(f), (unsigned)bits(r));
            }
            if (back != h) {
                if (rt_bad++ < 5) printf("  f16 %04x -> f32 -> %04x\n", h, back);
            }
        }
        float bf = loom_bf16_to_f32(h), br = ref_bf16_to_f32(h);
        uint16_t bback = loom_f32_to_bf16(bf);
        if (bf16_is_nan(h)) {
            if (!isnan(bf)) bdec_bad++;
            if (!bf16_is_nan(bback)) brt_bad++;
        } else {
            if (bits(bf) != bits(br) || bits(bf) != (uint32_t)h << 16) {
                if (bdec_bad++ < 5)
                    printf("  bf16 %04x -> %08x, expected %08x\n", h, (unsigned)bits(bf), (unsigned)bits(br));
            }
            if (bback != h) {
                if (brt_bad++ < 5) printf("  bf16 %04x -> f32 -> %04x\n", h, bback);
            }
        }
    }
    CHECK(dec_bad == 0, "f16 -> f32: %d of 65536 patterns decode wrongly", dec_bad);
    CHECK(rt_bad == 0, "f16 -> f32 -> f16: %d of 65536 patterns change", rt_bad);
    CHECK(bdec_bad == 0, "bf16 -> f32: %d of 65536 patterns decode wrongly", bdec_bad);
    CHECK(brt_bad == 0, "bf16 -> f32 -> bf16: %d of 65536 patterns change", brt_bad);
    printf("exhaustive round trip: f16 %d/%d bad, bf16 %d/%d bad (decode/round trip)\n", dec_bad, rt_bad, bdec_bad,
           brt_bad);
}

/* Every tie of both formats: the f32 midpoint m between neighbours k and k+1
 * must round to the even one, m - 1 ulp(f32) to k and m + 1 ulp to k+1.
 * Past the largest finite, the next neighbour is infinity. */
static void test_all_ties(void) {
    int bad = 0, n = 0;
    for (uint32_t k = 0; k <= 0x7bffu; k++) {
        double lo = ref_f16_to_f32((uint16_t)k), hi = k == 0x7bffu ? 65536.0 : ref_f16_to_f32((uint16_t)(k + 1));
        uint32_t m = bits((float)((lo + hi) / 2)); /* exact: 12 significant bits */
        uint16_t even = (uint16_t)(k & 1 ? k + 1 : k);
        for (uint32_t sign = 0; sign <= 1; sign++) {
            uint32_t s32 = sign << 31;
            uint16_t s16 = (uint16_t)(sign << 15);
            uint16_t a = loom_f32_to_f16(from_bits(s32 | m)), b = loom_f32_to_f16(from_bits(s32 | (m - 1))),
                     c = loom_f32_to_f16(from_bits(s32 | (m + 1)));
            n += 3;
            if (a != (s16 | even) || b != (s16 | k) || c != (s16 | (k + 1))) {
                if (bad++ < 5)
                    printf("  f16 tie after %04x (f32 %08x): got %04x %04x %04x\n", k, (unsigned)(s32 | m), b, a, c);
            }
        }
    }
    CHECK(bad == 0, "f16 ties: %d of %d neighbourhoods wrong", bad, n / 3);
    int bbad = 0, bn = 0;
    for (uint32_t k = 0; k <= 0x7f7fu; k++) {
        uint32_t m = (k << 16) | 0x8000u;
        uint16_t even = (uint16_t)(k & 1 ? k + 1 : k);
        for (uint32_t sign = 0; sign <= 1; sign++) {
            uint32_t s32 = sign << 31;
            uint16_t s16 = (uint16_t)(sign << 15);
            uint16_t a = loom_f32_to_bf16(from_bits(s32 | m)), b = loom_f32_to_bf16(from_bits(s32 | (m - 1))),
                     c = loom_f32_to_bf16(from_bits(s32 | (m + 1)));
            bn += 3;
            if (a != (s16 | even) || b != (s16 | k) || c != (s16 | (k + 1))) {
                if (bbad++ < 5) printf("  bf16 tie after %04x: got %04x %04x %04x\n", k, b, a, c);
            }
        }
    }
    CHECK(bbad == 0, "bf16 ties: %d of %d neighbourhoods wrong", bbad, bn / 3);
    printf("ties: %d f16 and %d bf16 conversions checked, %d + %d neighbourhoods wrong\n", n, bn, bad, bbad);
}

/* ---- loom_convert between every pair ---- */
static const double conv_values[] = {0.0, 1.0, -1.5, 2.75, 100.0, 255.0, 256.0, -3.0, 0.5, 300.0, -7.75};
enum { NCV = sizeof conv_values / sizeof *conv_values };

/* What value v becomes when stored in dt (the chosen values are exact in
 * every float dtype; ints truncate toward zero, u8 saturates). */
static double stored(loom_dtype dt, double v) {
    switch (dt) {
    case LOOM_I32: return trunc(v);
    case LOOM_U8: return v <= 0 ? 0 : v >= 255 ? 255 : trunc(v);
    default: return v;
    }
}

static void put(void *p, loom_dtype dt, int i, double v) {
    switch (dt) {
    case LOOM_F32: ((float *)p)[i] = (float)v; break;
    case LOOM_F16: ((uint16_t *)p)[i] = loom_f32_to_f16((float)v); break;
    case LOOM_BF16: ((uint16_t *)p)[i] = loom_f32_to_bf16((float)v); break;
    case LOOM_F64: ((double *)p)[i] = v; break;
    case LOOM_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case LOOM_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    default: break;
    }
}

static double get(const void *p, loom_dtype dt, int i) {
    switch (dt) {
    case LOOM_F32: return ((const float *)p)[i];
    case LOOM_F16: return loom_f16_to_f32(((const uint16_t *)p)[i]);
    case LOOM_BF16: return loom_bf16_to_f32(((const uint16_t *)p)[i]);
    case LOOM_F64: return ((const double *)p)[i];
    case LOOM_I32: return ((const int32_t *)p)[i];
    case LOOM_U8: return ((const uint8_t *)p)[i];
    default: return NAN;
    }
}

static void test_convert_pairs(void) {
    int pairs = 0;
    for (int s = 0; s < LOOM_DTYPE_COUNT; s++)
        for (int d = 0; d < LOOM_DTYPE_COUNT; d++) {
            double src[NCV];
            unsigned char sbuf[NCV * 8], dbuf[NCV * 8 + 8];
            for (int i = 0; i < NCV; i++) {
                src[i] = stored((loom_dtype)s, conv_values[i]);
                put(sbuf, (loom_dtype)s, i, src[i]);
            }
            memset(dbuf, 0xAB, sizeof dbuf);
            loom_convert(sbuf, (loom_dtype)s, dbuf, (loom_dtype)d, NCV);
            int bad = 0;
            for (int i = 0; i < NCV; i++) {
                double want = stored((loom_dtype)d, src[i]), got = get(dbuf, (loom_dtype)d, i);
                if (got != want) {
                    if (bad++ < 3)
                        printf("  convert %s -> %s: %g -> %g, expected %g\n", loom_dtype_name((loom_dtype)s),
                               loom_dtype_name((loom_dtype)d), src[i], got, want);
                }
            }
            /* nothing past n elements is written */
            size_t end = NCV * loom_dtype_size((loom_dtype)d);
            CHECK(dbuf[end] == 0xAB, "convert %s -> %s wrote past the end", loom_dtype_name((loom_dtype)s),
                  loom_dtype_name((loom_dtype)d));
            CHECK(bad == 0, "convert %s -> %s: %d of %d values wrong", loom_dtype_name((loom_dtype)s),
                  loom_dtype_name((loom_dtype)d), bad, NCV);
            pairs++;
        }
    /* float -> int edge cases: truncation toward zero, saturation, NaN -> 0 */
    const double edge[] = {3.9, -3.9, 1e10, -1e10, NAN, -0.5, 254.99};
    int32_t i32[7];
    uint8_t u8[7];
    loom_convert(edge, LOOM_F64, i32, LOOM_I32, 7);
    loom_convert(edge, LOOM_F64, u8, LOOM_U8, 7);
    CHECK(i32[0] == 3 && i32[1] == -3 && i32[2] == INT32_MAX && i32[3] == INT32_MIN && i32[4] == 0 && i32[5] == 0 &&
              i32[6] == 254,
          "f64 -> i32 edges: %d %d %d %d %d %d %d", i32[0], i32[1], i32[2], i32[3], i32[4], i32[5], i32[6]);
    CHECK(u8[0] == 3 && u8[1] == 0 && u8[2] == 255 && u8[3] == 0 && u8[4] == 0 && u8[5] == 0 && u8[6] == 254,
          "f64 -> u8 edges: %d %d %d %d %d %d %d", u8[0], u8[1], u8[2], u8[3], u8[4], u8[5], u8[6]);
    /* f64 -> f16 rounds (through f32) like the scalar function; inf and NaN survive */
    const double fe[] = {65520.0, 1.0 + 1.0 / 2048, INFINITY, NAN};
    uint16_t h[4];
    loom_convert(fe, LOOM_F64, h, LOOM_F16, 4);
    CHECK(h[0] == 0x7c00u && h[1] == 0x3c00u && h[2] == 0x7c00u && f16_is_nan(h[3]), "f64 -> f16: %04x %04x %04x %04x",
          h[0], h[1], h[2], h[3]);
    printf("loom_convert: %d dtype pairs x %d values\n", pairs, NCV);
}

static void test_table(void) {
    static const struct {
        const char *name;
        loom_dtype dt;
        size_t size;
        bool is_float;
    } want[] = {{"f32", LOOM_F32, 4, true}, {"f16", LOOM_F16, 2, true},  {"bf16", LOOM_BF16, 2, true},
                {"f64", LOOM_F64, 8, true}, {"i32", LOOM_I32, 4, false}, {"u8", LOOM_U8, 1, false}};
    CHECK(LOOM_DTYPE_COUNT == 6, "LOOM_DTYPE_COUNT is %d; this test knows 6 dtypes", (int)LOOM_DTYPE_COUNT);
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        CHECK(loom_dtype_parse(want[i].name) == (int)want[i].dt, "parse('%s') = %d", want[i].name,
              loom_dtype_parse(want[i].name));
        CHECK(strcmp(loom_dtype_name(want[i].dt), want[i].name) == 0, "name(%d) = '%s'", (int)want[i].dt,
              loom_dtype_name(want[i].dt));
        CHECK(loom_dtype_size(want[i].dt) == want[i].size, "size(%s) = %zu", want[i].name, loom_dtype_size(want[i].dt));
        CHECK(loom_dtype_is_float(want[i].dt) == want[i].is_float, "is_float(%s)", want[i].name);
    }
    CHECK(loom_dtype_parse("f8") == -1, "parse('f8') = %d", loom_dtype_parse("f8"));
    CHECK(loom_dtype_parse("F32") == -1, "parse is case-sensitive: parse('F32') = %d", loom_dtype_parse("F32"));
    CHECK(loom_dtype_parse("") == -1, "parse('') = %d", loom_dtype_parse(""));
    CHECK(loom_dtype_parse(NULL) == -1, "parse(NULL) = %d", loom_dtype_parse(NULL));
    CHECK(loom_dtype_size((loom_dtype)99) == 0, "size(99) = %zu", loom_dtype_size((loom_dtype)99));
    CHECK(strcmp(loom_dtype_name((loom_dtype)99), "?") == 0, "name(99) = '%s'", loom_dtype_name((loom_dtype)99));
    CHECK(!loom_dtype_is_float((loom_dtype)-1), "is_float(-1)");
}

/* The array conversions (loom_convert: an F16C fast path on x86-64 CPUs that
 * have it) give exactly the scalar conversions: every f16 pattern (NaNs with
 * their payloads, signalling ones included) to f32, and f32 patterns around
 * every f16 rounding boundary, all f16-range exponents, NaNs and infinities,
 * plus a pseudo-random sweep, to f16. Odd lengths exercise the tails. */
static void test_array_paths(void) {
    enum { NH = 65536 + 3 };
    static uint16_t h[NH];
    static float f[NH];
    for (uint32_t u = 0; u < NH; u++) h[u] = (uint16_t)(u * 40503u);
    loom_convert(h, LOOM_F16, f, LOOM_F32, NH);
    int bad = 0;
    for (uint32_t u = 0; u < NH; u++) {
        float r = loom_f16_to_f32(h[u]);
        bad += memcmp(&f[u], &r, 4) != 0;
    }
    CHECK(!bad, "loom_convert f16->f32 = loom_f16_to_f32 bit for bit on all 65536 patterns (%d differ)", bad);
    enum { NF = 1 << 20 };
    static float g[NF + 5];
    static uint16_t o[NF + 5];
    uint32_t x = 12345u;
    for (uint32_t i = 0; i < NF + 5; i++) {
        uint32_t b;
        if (i < 65536 * 8) { /* each f16 value's neighbourhood: +-0..3 ulp of f32 around its midpoints */
            uint32_t hv = i / 8, k = i % 8;
            float v = loom_f16_to_f32((uint16_t)hv), w = loom_f16_to_f32((uint16_t)(hv + 1));
            float mid = (v + w) / 2;
            memcpy(&b, &mid, 4);
            b += k < 4 ? k : (uint32_t)-(int32_t)(k - 3);
        } else {
            x = x * 1664525u + 1013904223u;
            b = x;
        }
        memcpy(&g[i], &b, 4);
    }
    loom_convert(g, LOOM_F32, o, LOOM_F16, NF + 5);
    bad = 0;
    for (uint32_t i = 0; i < NF + 5; i++) bad += o[i] != loom_f32_to_f16(g[i]);
    CHECK(!bad, "loom_convert f32->f16 = loom_f32_to_f16 on %d patterns (%d differ)", NF + 5, bad);
}

int main(void) {
    test_array_paths();
    test_vectors();
    test_exhaustive_round_trip();
    test_all_ties();
    test_convert_pairs();
    test_table();
    return tu_summary();
}
