/* tests/test-vmath.c — the CPU backend's vectorisable exp and normal CDF
 * (backends/cpu/vmath.h) against double-precision libm:
 * - loom__vexpf within 2 ulp of e^x over the whole normal range, +inf above
 *   it, 0 far below it, NaN for NaN;
 * - loom__vnormcdf within 5e-6 relative on [-5, 8] (both tails: GELU's small
 *   negative outputs), within 3e-7 absolute everywhere (5 ulp of 1/2), monotone;
 * - the same bits from loops compiled for the baseline, AVX2 and AVX-512
 *   (the kernels pick one at run time). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backends/cpu/vmath.h"
#include "testutil.h"

#define N (1 << 16)

static void exp_base(const float *x, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = loom__vexpf(x[i]);
}
LOOM__TARGET("avx2") static void exp_avx2(const float *x, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = loom__vexpf(x[i]);
}
LOOM__TARGET("avx512f") static void exp_avx512(const float *x, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = loom__vexpf(x[i]);
}
static void cdf_base(const float *x, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = loom__vnormcdf(x[i]);
}
LOOM__TARGET("avx2") static void cdf_avx2(const float *x, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = loom__vnormcdf(x[i]);
}
LOOM__TARGET("avx512f") static void cdf_avx512(const float *x, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = loom__vnormcdf(x[i]);
}

static void check_exp(void) {
    double worst = 0, at = 0;
    for (double x = -86.4; x <= 88.7; x += 1.3e-4) {
        float xf = (float)x, y = loom__vexpf(xf);
        double r = exp((double)xf), e = fabs(y - r) / r;
        if (e > worst) worst = e, at = xf;
    }
    printf("vexpf: worst relative error %.3g (%.2f ulp) at %g\n", worst, worst / ldexp(1, -24), at);
    CHECK(worst <= 2 * ldexp(1, -24), "vexpf: relative error %.3g at %g (> 2 ulp)", worst, at);
    CHECK(loom__vexpf(0) == 1, "vexpf(0) = %g", loom__vexpf(0));
    CHECK(isinf(loom__vexpf(89)) && loom__vexpf(89) > 0, "vexpf(89) = %g, expected +inf", loom__vexpf(89));
    CHECK(isinf(loom__vexpf(INFINITY)), "vexpf(inf) = %g", loom__vexpf(INFINITY));
    CHECK(loom__vexpf(-100) == 0 && loom__vexpf(-INFINITY) == 0, "vexpf(-100) = %g, vexpf(-inf) = %g",
          loom__vexpf(-100), loom__vexpf(-INFINITY));
    CHECK(isnan(loom__vexpf(NAN)), "vexpf(nan) = %g", loom__vexpf(NAN));
}

static void check_cdf(void) {
    double worst = 0, at = 0, worst_abs = 0, at_abs = 0;
    float prev = 0;
    int monotone = 1;
    for (double x = -40; x <= 40; x += 1e-4) {
        float xf = (float)x, y = loom__vnormcdf(xf);
        double r = 0.5 * erfc(-(double)xf / sqrt(2.0));
        if (fabs(y - r) > worst_abs) worst_abs = fabs(y - r), at_abs = xf;
        if (xf >= -5 && xf <= 8 && fabs(y - r) / r > worst) worst = fabs(y - r) / r, at = xf;
        if (y < prev) monotone = 0;
        prev = y;
    }
    printf("vnormcdf: worst relative error on [-5, 8] %.3g at %g; worst absolute %.3g at %g\n", worst, at, worst_abs,
           at_abs);
    CHECK(worst <= 5e-6, "vnormcdf: relative error %.3g at %g (> 5e-6)", worst, at);
    CHECK(worst_abs <= 3e-7, "vnormcdf: absolute error %.3g at %g (> 3e-7)", worst_abs, at_abs);
    CHECK(monotone, "vnormcdf is not monotone on [-40, 40]");
    CHECK(loom__vnormcdf(0) == 0.5f, "vnormcdf(0) = %.9g", loom__vnormcdf(0));
    CHECK(loom__vnormcdf(INFINITY) == 1 && loom__vnormcdf(-INFINITY) == 0, "vnormcdf(+-inf) = %g, %g",
          loom__vnormcdf(INFINITY), loom__vnormcdf(-INFINITY));
    CHECK(isnan(loom__vnormcdf(NAN)), "vnormcdf(nan) = %g", loom__vnormcdf(NAN));
}

static void check_variants(void) {
    float *x = malloc(N * sizeof *x), *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    if (!x || !a || !b) {
        CHECK(0, "out of memory");
        return;
    }
    unsigned s = 12345;
    for (int i = 0; i < N; i++) { /* uniform bits over a wide range, plus specials */
        s = s * 1103515245u + 12345u;
        x[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * (i % 3 ? 30.0f : 200.0f);
    }
    x[0] = NAN, x[1] = INFINITY, x[2] = -INFINITY, x[3] = 0, x[4] = -0.0f;
    struct {
        const char *name, *isa;
        void (*base)(const float *, float *, int), (*fn)(const float *, float *, int);
    } v[] = {{"vexpf avx2", "avx2", exp_base, exp_avx2},
             {"vexpf avx512", "avx512f", exp_base, exp_avx512},
             {"vnormcdf avx2", "avx2", cdf_base, cdf_avx2},
             {"vnormcdf avx512", "avx512f", cdf_base, cdf_avx512}};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        bool have = !strcmp(v[k].isa, "avx2") ? LOOM__HAS("avx2") : LOOM__HAS("avx512f");
        if (!have) {
            printf("%s: this CPU lacks %s, not checked\n", v[k].name, v[k].isa);
            continue;
        }
        v[k].base(x, a, N), v[k].fn(x, b, N);
        int diff = 0;
        for (int i = 0; i < N; i++) diff += memcmp(&a[i], &b[i], sizeof a[i]) != 0;
        printf("%s: %d of %d results differ from the baseline loop's bits\n", v[k].name, diff, N);
        CHECK(diff == 0, "%s: %d results differ from the baseline loop", v[k].name, diff);
    }
    free(x), free(a), free(b);
}

int main(void) {
    check_exp();
    check_cdf();
    check_variants();
    return tu_summary();
}
