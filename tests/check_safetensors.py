#!/usr/bin/env python3
"""tests/check_safetensors.py — loom's safetensors files against the reference
Python package.

    check_safetensors.py check FILE   FILE (written by tests/test-safetensors
                                      --python) loads with safetensors.numpy
                                      (and safetensors.torch when torch is
                                      installed) with the expected names,
                                      shapes, dtypes, values and metadata; the
                                      raw layout is checked by hand too.
    check_safetensors.py write FILE   write FILE with safetensors.numpy for
                                      loom to read back.

Exit codes: 0 ok, 1 mismatch, 77 (skip) when numpy or safetensors is missing.
The tensors and values mirror py_specs / py_values in test-safetensors.c.
"""
import json
import struct
import sys


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


try:
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import save_file
except ImportError as e:  # the test suite must not need Python packages
    skip("python package missing (%s): pip install safetensors numpy" % e)

# name: (dtype, shape)
SPECS = {
    "conv1.weight": ("F32", (2, 1, 3, 3)),
    "conv1.bias": ("F32", (2,)),
    "h.f16": ("F16", (3, 4)),
    "h.bf16": ("BF16", (2, 3)),
    "d.f64": ("F64", (2, 2, 2)),
    "ints": ("I32", (5,)),
    "bytes": ("U8", (7,)),
    "scalar": ("F32", ()),
    "empty": ("F32", (2, 0)),
    "five": ("U8", (1, 2, 1, 2, 1)),
    "na\u00efve \"quoted\"\n": ("F32", (1,)),
}
META = {"epoch": "3", "note": "line1\nline2\t\"q\" \\ \u00e9 \U0001F642", "empty": ""}
NP = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I32": np.int32, "U8": np.uint8}
SIZE = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I32": 4, "U8": 1}


def expected(dtype, shape):
    """The values test-safetensors.c writes, as float64 (or int64)."""
    n = int(np.prod(shape, dtype=np.int64))
    i = np.arange(n, dtype=np.int64)
    if dtype == "I32":
        v = 1000 * i - 2000
    elif dtype == "U8":
        v = (37 * i) % 256
    else:
        v = ((i % 13) - 6) / 2.0
    return v.reshape(shape)


failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL: " + what)


def check_raw(path):
    """The layout by hand: padding, offsets tiling the data, alignment."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    raw = blob[8 : 8 + n]
    check(n % 8 == 0, "header length %d is a multiple of 8" % n)
    check(raw.rstrip(b" ").endswith(b"}"), "header is padded with spaces only")
    header = json.loads(raw.decode("utf-8"))
    check(header.get("__metadata__") == META, "metadata %r" % header.get("__metadata__"))
    spans = sorted((v["data_offsets"][0], v["data_offsets"][1], k) for k, v in header.items() if k != "__metadata__")
    at = 0
    for b, e, k in spans:
        check(b == at, "%r starts at %d, expected %d" % (k, b, at))
        check(b % SIZE[header[k]["dtype"]] == 0, "%r is aligned to its element size" % k)
        at = e
    check(at == len(blob) - 8 - n, "the tensors cover the data area exactly")
    return header, blob[8 + n :]


def check_file(path):
    header, data = check_raw(path)
    names = set(k for k in header if k != "__metadata__")
    check(names == set(SPECS), "names %r" % sorted(names))
    with safe_open(path, framework="numpy") as f:
        check(f.metadata() == META, "metadata via safe_open: %r" % f.metadata())
        check(set(f.keys()) == set(SPECS), "keys via safe_open")
        for name, (dt, shape) in SPECS.items():
            if dt == "BF16":  # numpy has no bfloat16: decode the raw bits
                b, e = header[name]["data_offsets"]
                bits = np.frombuffer(data[b:e], dtype="<u2").astype(np.uint32) << 16
                v = bits.view(np.float32).reshape(shape)
            else:
                v = f.get_tensor(name)
                check(v.dtype == NP[dt], "%r dtype %s, expected %s" % (name, v.dtype, dt))
            check(tuple(v.shape) == shape, "%r shape %r, expected %r" % (name, v.shape, shape))
            check(np.array_equal(v.astype(np.float64), expected(dt, shape)), "%r values" % name)
    try:
        import torch
        from safetensors.torch import load_file
    except ImportError:
        print("torch not installed: the torch load is skipped")
        return
    tensors = load_file(path)
    tdt = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
           "I32": torch.int32, "U8": torch.uint8}
    for name, (dt, shape) in SPECS.items():
        t = tensors[name]
        check(t.dtype == tdt[dt] and tuple(t.shape) == shape, "torch %r: %s %r" % (name, t.dtype, tuple(t.shape)))
        check(np.array_equal(t.double().numpy(), expected(dt, shape)), "torch %r values" % name)
    print("torch %s loads all %d tensors" % (torch.__version__, len(tensors)))


def write_file(path):
    tensors = {}
    for name, (dt, shape) in SPECS.items():
        if dt != "BF16":
            tensors[name] = np.array(expected(dt, shape), dtype=NP[dt], order="C")  # keeps 0-dim (ascontiguousarray would not)
    save_file(tensors, path, metadata=META)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("check", "write"):
        print(__doc__)
        return 2
    if sys.argv[1] == "write":
        write_file(sys.argv[2])
        print("wrote %s" % sys.argv[2])
        return 0
    check_file(sys.argv[2])
    import safetensors

    print("%s: %s with safetensors %s (%d failures)" % (sys.argv[2], "ok" if not failures else "FAILED",
                                                         safetensors.__version__, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
