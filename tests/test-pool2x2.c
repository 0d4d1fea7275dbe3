/* tests/test-pool2x2.c — the CPU backend's AVX-512 2x2 stride-2 max pooling
 * of a plane and its gradient (backends/cpu/ops/pool2x2.c) against the
 * scalar loops (backends/cpu/f32_inline.h), bit for bit: plane widths 2 to
 * 40 (window rows shorter than, equal to and longer than a vector, masked
 * tails), odd heights and widths (the last row/column outside every window
 * gets zero gradient), values drawn from a few levels (many ties: the first
 * maximum wins), signed zeros, infinities and NaNs (the row pair takes the
 * scalar rule; the last NaN wins), and dy with -0 and NaN. Both outputs are
 * also written over a canary, so a store past the plane fails. On a CPU
 * without AVX-512 the test skips. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../backends/cpu/f32_inline.h"
#include "testutil.h"

#define CANARY 64

static uint32_t rs = 12345;
static uint32_t rnd(void) { return rs = rs * 1664525u + 1013904223u; }

/* a value with many ties: one of 5 levels, rarely a special value */
static float draw(int special) {
    uint32_t r = rnd() >> 8;
    if (special && r % 97 == 0) return NAN;
    if (special && r % 89 == 0) return -INFINITY;
    if (r % 13 == 0) return (r & 256) ? 0.0f : -0.0f;
    return (float)((int)(r % 5) - 2) * 0.75f;
}

static int same(const float *a, const float *b, int64_t n) { return !memcmp(a, b, (size_t)n * sizeof *a); }

static void check(int64_t H, int64_t W, int special) {
    int64_t OH = H / 2, OW = W / 2;
    float x[42 * 42], dy[21 * 21], y0[21 * 21 + CANARY], y1[21 * 21 + CANARY], d0[42 * 42 + CANARY],
        d1[42 * 42 + CANARY];
    for (int64_t i = 0; i < H * W; i++) x[i] = draw(special);
    for (int64_t i = 0; i < OH * OW; i++) dy[i] = rnd() % 17 == 0 ? (special ? NAN : -0.0f) : draw(0) + 0.25f;
    memset(y0, 0x5a, sizeof y0), memset(y1, 0x5a, sizeof y1);
    memset(d0, 0x5a, sizeof d0), memset(d1, 0x5a, sizeof d1);
    loom__max2_plane(x, y0, H, W, OH, OW);
    loom__max2_plane_avx512(x, y1, H, W, OH, OW);
    CHECK(same(y0, y1, OH * OW + CANARY), "max pool %lldx%lld (special %d): AVX-512 differs from scalar", (long long)H,
          (long long)W, special);
    loom__max2_grad_plane(x, dy, d0, H, W, OH, OW);
    loom__max2_grad_plane_avx512(x, dy, d1, H, W, OH, OW);
    CHECK(same(d0, d1, H * W + CANARY), "max pool grad %lldx%lld (special %d): AVX-512 differs from scalar",
          (long long)H, (long long)W, special);
}

int main(void) {
    if (!loom__max2_avx512_ok()) return tu_skip("the CPU has no AVX-512 (or LOOM_CPU_POOL_AVX512=0)");
    for (int special = 0; special < 2; special++)
        for (int64_t W = 2; W <= 40; W++)
            for (int64_t H = 2; H <= 9; H++)
                for (int rep = 0; rep < 4; rep++) check(H, W, special);
    /* a known case: ties take the first maximum; a NaN wins over numbers */
    float x[16] = {1, 3, 3, 0, /**/ 3, 2, 1, NAN, /**/ 0, 0, 0, 0, /**/ 0, 0, 0, 0};
    float dy[4] = {10, 20, 30, 40}, d[16], y[4];
    loom__max2_plane_avx512(x, y, 4, 4, 2, 2);
    CHECK(y[0] == 3 && isnan(y[1]) && y[2] == 0 && y[3] == 0, "known maxima: %g %g %g %g", y[0], y[1], y[2], y[3]);
    loom__max2_grad_plane_avx512(x, dy, d, 4, 4, 2, 2);
    CHECK(d[1] == 10 && d[0] == 0 && d[4] == 0 && d[7] == 20 && d[2] == 0 && d[8] == 30 && d[9] == 0 && d[10] == 40,
          "known gradient: %g %g %g %g %g %g %g %g", d[0], d[1], d[4], d[7], d[2], d[8], d[9], d[10]);
    return tu_summary();
}
