#!/usr/bin/env python3
"""Generate the .npy fixtures in tests/data/npy/ with numpy's own writer.

Each array's values follow a formula that tests/test-npy.c recomputes in C
(element k of the flattened C-order array):
  u1  (2, 3, 4)  (k * 37 + 5) % 256
  i4  (3, 4)     (k - 6) * 1000003
  i8  (5,)       (k - 2) * 2**40 + k
  f2  (2, 5)     (k - 4) / 4            (exact in f16)
  f4  (3, 2, 2)  (k - 5) * 0.375        (exact in f32)
  f8  (7,)       k / 3.0                (the same IEEE division in C)
Files:
  <dt>.npy            format 1.0 (np.save), one per dtype
  f4_v2.npy, f4_v3.npy, u1_v2.npy   the same arrays as format 2.0 / 3.0
  scalar_f8.npy       shape (), value 2.5
  empty_i4.npy        shape (0, 3)
  fortran_f4.npy      the f4 array in Fortran order (the reader rejects it)
  big_i4.npy          the i4 array big-endian ('>i4'; rejected)
  bool.npy            a bool array ('|b1'; unsupported dtype, rejected)
  wide.npy            shape (1, 2, 1, 3, 1, 1, 2, 1, 1), u1 (9 dims; rejected, max 8)

Usage: python3 tests/gen_npy_fixtures.py   (writes next to this script)
The repository's tests do not need Python: the fixtures are committed.
"""
import os

import numpy as np
from numpy.lib import format as npf

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "npy")


def arrays():
    k = lambda n: np.arange(n, dtype=np.int64)
    return {
        "u1": ((k(24) * 37 + 5) % 256).astype("|u1").reshape(2, 3, 4),
        "i4": ((k(12) - 6) * 1000003).astype("<i4").reshape(3, 4),
        "i8": ((k(5) - 2) * 2**40 + k(5)).astype("<i8"),
        "f2": ((k(10) - 4) / 4).astype("<f2").reshape(2, 5),
        "f4": ((k(12) - 5) * 0.375).astype("<f4").reshape(3, 2, 2),
        "f8": (k(7) / 3.0).astype("<f8"),
    }


def write(name, arr, version=None):
    with open(os.path.join(HERE, name), "wb") as f:
        npf.write_array(f, arr, version=version, allow_pickle=False)


def main():
    os.makedirs(HERE, exist_ok=True)
    a = arrays()
    for dt, arr in a.items():
        write(dt + ".npy", arr)
    write("f4_v2.npy", a["f4"], (2, 0))
    write("f4_v3.npy", a["f4"], (3, 0))
    write("u1_v2.npy", a["u1"], (2, 0))
    write("scalar_f8.npy", np.array(2.5, dtype="<f8"))
    write("empty_i4.npy", np.zeros((0, 3), dtype="<i4"))
    write("fortran_f4.npy", np.asfortranarray(a["f4"]))
    write("big_i4.npy", a["i4"].astype(">i4"))
    write("bool.npy", np.array([True, False, True]))
    write("wide.npy", np.arange(12, dtype="|u1").reshape(1, 2, 1, 3, 1, 1, 2, 1, 1))


if __name__ == "__main__":
    main()
