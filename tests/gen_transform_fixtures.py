#!/usr/bin/env python3
"""Generate the image-transform fixtures in tests/data/transforms/ with torchvision.

Sources (HWC uint8, numpy seeded generator 20240607):
  src_a.npy  (10, 12, 3)   src_b.npy  (9, 7, 1)
Outputs (torchvision.transforms.v2.functional on the CHW tensor, stored HWC
for u8 results and CHW for tensors):
  resize_<s>_<H>x<W>.npy  resize(img, [H, W], BILINEAR, antialias=True)
  crop_<s>_<H>x<W>.npy    center_crop(img, [H, W])
  hflip_<s>.npy, vflip_<s>.npy
  tt_a.npy               to_dtype(img, float32, scale=True)                    (3, 10, 12) f4
  ttn_a.npy              ... then normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD) f4
  ttn_a_f16.npy          ttn_a .to(float16)                                     f2
  ttn_a_bf16.npy         ttn_a .to(bfloat16), its bit patterns stored as f2 (numpy has no bf16)
  ttn_b.npy              src_b normalized with mean [0.5], std [0.25]           f4
  sizes.npy              i8 rows (h, w, size, max_size, out_h, out_w): the output
                         shape of resize(img, size, max_size=max_size or None)

Usage: python3 tests/gen_transform_fixtures.py   (torch + torchvision; writes next to this script)
The repository's tests do not need Python: the fixtures are committed.
"""
import os

import numpy as np
import torch
from torchvision.transforms import InterpolationMode
from torchvision.transforms.v2 import functional as F

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "transforms")

RESIZE = {"a": [(5, 7), (4, 12), (10, 5), (16, 20), (6, 17), (8, 9), (3, 2)], "b": [(3, 4), (20, 15), (9, 3), (5, 4)]}
CROP = {"a": [(7, 9), (5, 7), (10, 12), (1, 1)], "b": [(4, 4), (8, 6), (9, 7)]}
SIZES = [(10, 12, 8, 0), (9, 7, 4, 0), (10, 12, 5, 0), (100, 37, 16, 0), (37, 100, 16, 30), (375, 500, 256, 0),
         (500, 375, 224, 0), (480, 640, 224, 250), (33, 33, 7, 0)]
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def save(name, arr):
    np.save(os.path.join(HERE, name), np.ascontiguousarray(arr))


def chw(a):
    return torch.from_numpy(a).permute(2, 0, 1).contiguous()


def hwc(t):
    return t.permute(1, 2, 0).contiguous().numpy()


def main():
    os.makedirs(HERE, exist_ok=True)
    rng = np.random.default_rng(20240607)
    src = {"a": rng.integers(0, 256, (10, 12, 3), dtype=np.uint8), "b": rng.integers(0, 256, (9, 7, 1), dtype=np.uint8)}
    # a few flat and extreme patches so rounding and clamping are exercised
    src["a"][0:3, 0:4] = 255
    src["a"][7:10, 9:12] = 0
    for s, a in src.items():
        save(f"src_{s}.npy", a)
        t = chw(a)
        for h, w in RESIZE[s]:
            save(f"resize_{s}_{h}x{w}.npy", hwc(F.resize(t, [h, w], interpolation=InterpolationMode.BILINEAR, antialias=True)))
        for h, w in CROP[s]:
            save(f"crop_{s}_{h}x{w}.npy", hwc(F.center_crop(t, [h, w])))
        save(f"hflip_{s}.npy", hwc(F.horizontal_flip(t)))
        save(f"vflip_{s}.npy", hwc(F.vertical_flip(t)))
    ta = F.to_dtype(chw(src["a"]), torch.float32, scale=True)
    save("tt_a.npy", ta.numpy())
    na = F.normalize(ta, mean=MEAN, std=STD)
    save("ttn_a.npy", na.numpy())
    save("ttn_a_f16.npy", na.to(torch.float16).numpy())
    save("ttn_a_bf16.npy", na.to(torch.bfloat16).view(torch.int16).numpy().view(np.float16))
    tb = F.to_dtype(chw(src["b"]), torch.float32, scale=True)
    save("ttn_b.npy", F.normalize(tb, mean=[0.5], std=[0.25]).numpy())
    rows = []
    for h, w, size, mx in SIZES:
        out = F.resize(torch.zeros(1, h, w, dtype=torch.uint8), [size], max_size=mx or None, antialias=True)
        rows.append([h, w, size, mx, out.shape[1], out.shape[2]])
    save("sizes.npy", np.array(rows, dtype="<i8"))


if __name__ == "__main__":
    main()
