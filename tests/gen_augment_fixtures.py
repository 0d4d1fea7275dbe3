#!/usr/bin/env python3
"""Generate the random-transform fixtures in tests/data/augment/ with torchvision.

The random transforms (RandomResizedCrop, ColorJitter, RandomAffine,
RandomErasing) are checked through their functional pieces with FIXED
parameters: loom's draws come from Philox, torch's from its own generator,
so only the deterministic part can be compared.

Sources (HWC uint8, numpy seeded generator 20240611):
  src_a.npy (13, 17, 3)   src_b.npy (11, 9, 1)
Outputs (torchvision.transforms.v2.functional on the CHW uint8 tensor,
stored HWC uint8; the erase output CHW f4):
  rcrop_<s>_<k>.npy   resized_crop(img, top, left, h, w, [oh, ow], BILINEAR, antialias=True)
                      with RCROP[k] = (top, left, h, w, oh, ow)
  bright_<s>_<k>.npy  adjust_brightness(img, COLOR[k])      (and contrast_, satur_)
  hue_<s>_<k>.npy     adjust_hue(img, HUE[k])
  affine_<s>_<k>.npy  affine(img, angle, [tx, ty], scale, [shx, shy], interpolation, fill)
                      with AFFINE[k] = (angle, tx, ty, scale, shx, shy, nearest, fill)
  erase_a.npy         erase(to_dtype(src_a, f32, scale) normalized, 2, 3, 5, 7, v=[-1, 0, 2.5])
The parameter tables are repeated in tests/test-augment.c.

Usage: python3 tests/gen_augment_fixtures.py   (torch + torchvision; writes next to this script)
The repository's tests do not need Python: the fixtures are committed.
"""
import os

import numpy as np
import torch
from torchvision.transforms import InterpolationMode
from torchvision.transforms.v2 import functional as F

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "augment")

RCROP = [(0, 0, 13, 17, 8, 8), (2, 3, 9, 11, 20, 16), (5, 1, 6, 14, 6, 5), (1, 4, 7, 5, 7, 5), (0, 6, 13, 3, 4, 9)]
RCROP_B = [(0, 0, 11, 9, 5, 5), (3, 2, 6, 5, 12, 10)]
COLOR = [0.0, 0.45, 0.8, 1.0, 1.37, 2.5]
HUE = [-0.5, -0.27, -0.05, 0.0, 0.13, 0.31, 0.5]
AFFINE = [
    (0.0, 0, 0, 1.0, 0.0, 0.0, False, 0),
    (17.0, 0, 0, 1.0, 0.0, 0.0, False, 0),
    (-33.5, 2, -1, 0.9, 0.0, 0.0, False, 0),
    (10.0, 1, 2, 1.15, 8.0, -5.0, False, 127),
    (90.0, 0, 0, 1.0, 0.0, 0.0, True, 0),
    (23.0, -3, 1, 0.8, 12.0, 4.0, True, 200),
    (-7.0, 0, 0, 1.3, -20.0, 0.0, False, 255),
]


def save(name, arr):
    np.save(os.path.join(HERE, name), np.ascontiguousarray(arr))


def chw(a):
    return torch.from_numpy(a).permute(2, 0, 1).contiguous()


def hwc(t):
    return t.permute(1, 2, 0).contiguous().numpy()


def main():
    os.makedirs(HERE, exist_ok=True)
    rng = np.random.default_rng(20240611)
    src = {"a": rng.integers(0, 256, (13, 17, 3), dtype=np.uint8), "b": rng.integers(0, 256, (11, 9, 1), dtype=np.uint8)}
    src["a"][0:3, 0:4] = 255
    src["a"][9:13, 12:17] = 0
    src["a"][4:6, 0:3] = (200, 10, 10)  # saturated hues
    src["a"][6:8, 0:3] = (90, 90, 90)   # gray: hue undefined
    for s, a in src.items():
        save(f"src_{s}.npy", a)
        t = chw(a)
        for k, (top, left, h, w, oh, ow) in enumerate(RCROP if s == "a" else RCROP_B):
            out = F.resized_crop(t, top, left, h, w, [oh, ow], interpolation=InterpolationMode.BILINEAR, antialias=True)
            save(f"rcrop_{s}_{k}.npy", hwc(out))
        for k, f in enumerate(COLOR):
            save(f"bright_{s}_{k}.npy", hwc(F.adjust_brightness(t, f)))
            save(f"contrast_{s}_{k}.npy", hwc(F.adjust_contrast(t, f)))
            save(f"satur_{s}_{k}.npy", hwc(F.adjust_saturation(t, f)))
        for k, f in enumerate(HUE):
            save(f"hue_{s}_{k}.npy", hwc(F.adjust_hue(t, f)))
        for k, (ang, tx, ty, sc, shx, shy, nearest, fill) in enumerate(AFFINE):
            mode = InterpolationMode.NEAREST if nearest else InterpolationMode.BILINEAR
            out = F.affine(t, angle=ang, translate=[tx, ty], scale=sc, shear=[shx, shy], interpolation=mode,
                           fill=[float(fill)] * a.shape[2])
            save(f"affine_{s}_{k}.npy", hwc(out))
    x = F.normalize(F.to_dtype(chw(src["a"]), torch.float32, scale=True), mean=[0.485, 0.456, 0.406],
                    std=[0.229, 0.224, 0.225])
    save("erase_in_a.npy", x.numpy())
    save("erase_a.npy", F.erase(x, 2, 3, 5, 7, torch.tensor([-1.0, 0.0, 2.5]).view(3, 1, 1)).numpy())


if __name__ == "__main__":
    main()
