#!/usr/bin/env python3
"""Generate tests/dtype_vectors.h: float32 -> float16 / bfloat16 reference vectors.

f16 results come from numpy (float32 -> float16 rounds to nearest, ties to
even). bf16 results are computed here from the float32 bits: the two bf16
neighbours of x are compared exactly (fractions.Fraction), ties go to the even
one, and a value at or past max_bf16 + ulp/2 rounds to infinity (IEEE 754).
The f16 results are cross-checked against the same exact-rounding procedure,
so numpy and this script must agree before the header is written.

Usage: python3 tests/gen_dtype_vectors.py > tests/dtype_vectors.h
The repository's tests do not need Python: the header is committed.
"""
import struct
import sys
from fractions import Fraction

import numpy as np


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bits_f32(u):
    return struct.unpack("<f", struct.pack("<I", u))[0]


def f32_exact(u):
    """Exact value of float32 bits u (finite) as a Fraction."""
    s = -1 if u >> 31 else 1
    e = (u >> 23) & 0xFF
    m = u & 0x7FFFFF
    if e == 0:
        return s * Fraction(m, 1 << 149)
    return s * Fraction((1 << 23) | m) * Fraction(2) ** (e - 150)


def small_exact(h, ebits, mbits):
    """Exact value of a 16-bit float's magnitude bits (finite)."""
    bias = (1 << (ebits - 1)) - 1
    e = h >> mbits
    m = h & ((1 << mbits) - 1)
    if e == 0:
        return Fraction(m) * Fraction(2) ** (1 - bias - mbits)
    return Fraction((1 << mbits) | m) * Fraction(2) ** (e - bias - mbits)


def round_exact(u, ebits, mbits):
    """RNE of float32 bits u to a 1+ebits+mbits float; returns its bits."""
    sign = (u >> 31) << (ebits + mbits)
    a = u & 0x7FFFFFFF
    inf = ((1 << ebits) - 1) << mbits
    if a > 0x7F800000:
        raise ValueError("NaN has no rounding")
    if a == 0x7F800000:
        return sign | inf
    x = f32_exact(a)
    # largest magnitude bits whose value is <= x (bisection over the ordered codes)
    lo, hi = 0, inf - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if small_exact(mid, ebits, mbits) <= x:
            lo = mid
        else:
            hi = mid - 1
    v_lo = small_exact(lo, ebits, mbits)
    if v_lo == x:
        return sign | lo
    up = lo + 1
    # the code after the largest finite is infinity; for rounding it sits at 2^(emax+1)
    v_up = small_exact(up, ebits, mbits) if up < inf else Fraction(2) ** ((1 << (ebits - 1)))
    d_lo, d_up = x - v_lo, v_up - x
    r = lo if d_lo < d_up or (d_lo == d_up and lo % 2 == 0) else up
    return sign | r


def f16_numpy(u):
    with np.errstate(over="ignore"):  # overflow to inf is one of the cases
        return int(np.array([u], dtype=np.uint32).view(np.float32).astype(np.float16).view(np.uint16)[0])


F16_ULP1 = 2.0 ** -10   # f16 spacing at 1.0
BF16_ULP1 = 2.0 ** -7   # bf16 spacing at 1.0
S16 = 2.0 ** -24        # smallest f16 subnormal

# (value or float32 bits, comment). Python floats are rounded to float32; the
# constructed ties are exact in float32 (checked).
f16_cases = [
    (1.0, "one"), (-2.5, "normal"), (0.1, "0.1 (inexact)"), (3.14159265, "pi"), (1.0 / 3.0, "1/3"),
    (-1234.5678, "normal, negative"), (0.000123, "small normal"), (2.0 ** -14, "smallest normal"),
    (1.0 + F16_ULP1 / 2, "tie between 1 and 1+ulp: to even (down)"),
    (1.0 + 3 * F16_ULP1 / 2, "tie between 1+ulp and 1+2ulp: to even (up)"),
    (-(1.0 + F16_ULP1 / 2), "negative tie: to even (down in magnitude)"),
    (-(1.0 + 3 * F16_ULP1 / 2), "negative tie: to even (up in magnitude)"),
    (1.0 + F16_ULP1 / 2 + 2.0 ** -23, "just above a tie: up"),
    (1.0 + F16_ULP1 / 2 - 2.0 ** -23, "just below a tie: down"),
    (2049.0, "tie at 2048 (ulp 2): to even (down)"), (2051.0, "tie at 2050: to even (up)"),
    (65504.0, "largest finite"), (-65504.0, "largest finite, negative"),
    (65519.0, "below max+ulp/2: largest finite"), (65520.0, "max + ulp/2: tie rounds to inf"),
    (-65520.0, "negative overflow tie: -inf"), (65536.0, "overflow: inf"), (1e10, "overflow: inf"),
    (3.4028234663852886e38, "FLT_MAX: inf"),
    (S16, "smallest subnormal"), (-S16, "smallest subnormal, negative"),
    (1023 * S16, "largest subnormal"), (512 * S16, "subnormal"), (37 * S16, "subnormal"),
    (1.5 * S16, "tie between subnormals 1 and 2: to even (2)"),
    (2.5 * S16, "tie between subnormals 2 and 3: to even (2)"),
    (3.5 * S16, "tie between subnormals 3 and 4: to even (4)"),
    (2.0 ** -25, "half the smallest subnormal: tie to 0"),
    (2.0 ** -25 + 2.0 ** -40, "just above half the smallest subnormal: smallest subnormal"),
    (2.0 ** -26, "quarter of the smallest subnormal: 0"), (-(2.0 ** -26), "tiny negative: -0"),
    (1023.5 * S16, "tie from the largest subnormal into the smallest normal"),
    (1023.7 * S16, "rounds from subnormal up into the normal range"),
    (1023.2 * S16, "rounds down to the largest subnormal"),
    (1e-40, "float32 subnormal: 0"), (-1e-40, "float32 subnormal, negative: -0"),
    (0.0, "zero"), (-0.0, "negative zero"), (float("inf"), "inf"), (float("-inf"), "-inf"),
]
bf16_cases = [
    (1.0, "one"), (-2.5, "normal"), (0.1, "0.1 (inexact)"), (3.14159265, "pi"), (1.0 / 3.0, "1/3"),
    (-1234.5678, "normal, negative"), (1e-30, "small normal"), (1e30, "large normal"),
    (2.0 ** -126, "smallest normal"),
    (1.0 + BF16_ULP1 / 2, "tie between 1 and 1+ulp: to even (down)"),
    (1.0 + 3 * BF16_ULP1 / 2, "tie between 1+ulp and 1+2ulp: to even (up)"),
    (-(1.0 + BF16_ULP1 / 2), "negative tie: to even (down in magnitude)"),
    (-(1.0 + 3 * BF16_ULP1 / 2), "negative tie: to even (up in magnitude)"),
    (1.0 + BF16_ULP1 / 2 + 2.0 ** -23, "just above a tie: up"),
    (1.0 + BF16_ULP1 / 2 - 2.0 ** -23, "just below a tie: down"),
    (0x7F7F0000, "largest finite bf16"), (0xFF7F0000, "largest finite bf16, negative"),
    (0x7F7F7FFF, "just below max+ulp/2: largest finite"), (0x7F7F8000, "max + ulp/2: tie rounds to inf"),
    (0xFF7F8000, "negative overflow tie: -inf"), (0x7F7FFFFF, "FLT_MAX: inf"),
    (0x00010000, "smallest bf16 subnormal"), (0x007F0000, "largest bf16 subnormal"),
    (0x00000001, "smallest f32 subnormal: 0"), (0x80000001, "smallest f32 subnormal, negative: -0"),
    (0x00008000, "tie between 0 and the smallest subnormal: 0"),
    (0x00018000, "tie between subnormals 1 and 2: to even (2)"),
    (0x00028000, "tie between subnormals 2 and 3: to even (2)"),
    (0x00018001, "just above a subnormal tie: up"),
    (0x007F8000, "tie from the largest subnormal into the smallest normal"),
    (0x007FFFFF, "largest f32 subnormal: rounds up to the smallest normal"),
    (0x007F7FFF, "rounds down to the largest subnormal"),
    (0.0, "zero"), (-0.0, "negative zero"), (float("inf"), "inf"), (float("-inf"), "-inf"),
]
nan_inputs = [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA00000, 0x7F802000, 0xFF800001, 0x7FFFFFFF, 0x7F801000]


def as_bits(v, what):
    """float32 bits of v (an int is taken as bits). Ties must be exact in f32."""
    if isinstance(v, int):
        return v
    u = f32_bits(v)
    if "tie" in what and bits_f32(u) != v:
        raise ValueError("%r (%s) is not exact in float32" % (v, what))
    return u


def main():
    out = sys.stdout
    out.write("/* tests/dtype_vectors.h - GENERATED by tests/gen_dtype_vectors.py (numpy %s); do not edit.\n"
              " *\n * float32 bits -> float16 / bfloat16 bits, round to nearest even. f16 results are\n"
              " * numpy's, cross-checked against exact rational rounding; bf16 results are exact\n"
              " * rational rounding of the float32 value. NaN inputs must give a NaN. */\n" % np.__version__)
    out.write("#ifndef LOOM_TEST_DTYPE_VECTORS_H\n#define LOOM_TEST_DTYPE_VECTORS_H\n\n#include <stdint.h>\n\n")
    out.write("typedef struct dtype_vec {\n    uint32_t f32;\n    uint16_t out;\n    const char *what;\n} dtype_vec;\n\n")
    out.write("static const dtype_vec f16_vectors[] = {\n")
    for v, what in f16_cases:
        u = as_bits(v, what)
        h = f16_numpy(u)
        ref = round_exact(u, 5, 10)
        if h != ref:
            raise SystemExit("numpy and exact rounding disagree for %08x: %04x vs %04x" % (u, h, ref))
        out.write("    {0x%08xu, 0x%04xu, \"%s\"}, /* %r */\n" % (u, h, what, float(bits_f32(u))))
    out.write("};\n\nstatic const dtype_vec bf16_vectors[] = {\n")
    for v, what in bf16_cases:
        u = as_bits(v, what)
        h = round_exact(u, 8, 7)
        out.write("    {0x%08xu, 0x%04xu, \"%s\"}, /* %r */\n" % (u, h, what, float(bits_f32(u))))
    out.write("};\n\n/* float16 bits -> float32 bits (numpy), a sample of every class */\n")
    out.write("static const uint32_t f16_to_f32_vectors[][2] = {\n")
    for h in [0x0000, 0x8000, 0x0001, 0x8001, 0x0200, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3555, 0x7BFF, 0xFBFF,
              0x7C00, 0xFC00, 0x4248, 0x0155, 0x5640, 0xC000]:
        f = np.array([h], dtype=np.uint16).view(np.float16).astype(np.float32).view(np.uint32)[0]
        out.write("    {0x%04xu, 0x%08xu},\n" % (h, int(f)))
    out.write("};\n\n/* NaN float32 inputs (quiet, signalling, negative, payload only in the low bits) */\n")
    out.write("static const uint32_t nan_f32_inputs[] = {%s};\n\n" % ", ".join("0x%08xu" % u for u in nan_inputs))
    out.write("#endif\n")


if __name__ == "__main__":
    main()
