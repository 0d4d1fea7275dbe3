#!/usr/bin/env python3
"""bench/gen_jpegs_mixed.py — a second seeded ImageFolder of JPEGs for the
loader benchmarks, made independently of bench/gen_jpegs.py: other
dimensions (landscape and portrait, 300 to 1280 pixels a side), qualities
(70 to 95) and chroma subsampling (4:4:4 and 4:2:0, alternating), and other
content (shapes drawn with PIL over sinusoidal colour waves, softened, with
grain).

usage: gen_jpegs_mixed.py OUT_DIR [--count 1000] [--classes 10] [--seed 7]
writes OUT_DIR/train/class_XX/img_NNNNN.jpg and prints a summary line.
"""
import argparse
import collections
import os

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

SIZES = [(640, 480), (480, 640), (800, 600), (1024, 683), (333, 500), (400, 300), (1280, 720), (512, 512)]
QUALITIES = [70, 80, 90, 95]
SUBSAMPLING = [(0, "4:4:4"), (2, "4:2:0")]  # PIL's subsampling codes


def one_image(rng, w, h):
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.zeros((h, w, 3), np.float32)
    for c in range(3):  # a few colour waves per channel
        for _ in range(3):
            fx, fy = rng.uniform(0.002, 0.02, size=2)
            img[..., c] += rng.uniform(20, 60) * np.sin(2 * np.pi * (fx * x + fy * y) + rng.uniform(0, 6.3))
    img += rng.uniform(60, 190, size=3)
    pic = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))
    d = ImageDraw.Draw(pic)
    for _ in range(int(rng.integers(4, 12))):  # rectangles and ellipses of flat colour
        x0, y0 = int(rng.integers(0, w)), int(rng.integers(0, h))
        x1, y1 = x0 + int(rng.integers(10, w // 2)), y0 + int(rng.integers(10, h // 2))
        fill = tuple(int(v) for v in rng.integers(0, 256, size=3))
        (d.rectangle if rng.random() < 0.5 else d.ellipse)([x0, y0, x1, y1], fill=fill)
    pic = pic.filter(ImageFilter.GaussianBlur(radius=float(rng.uniform(0.8, 2.5))))
    arr = np.asarray(pic, np.float32) + rng.normal(0, 3, size=(h, w, 3))
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    kinds, total = collections.Counter(), 0
    for i in range(a.count):
        w, h = SIZES[int(rng.integers(len(SIZES)))]
        q = QUALITIES[int(rng.integers(len(QUALITIES)))]
        ss, ss_name = SUBSAMPLING[i % 2]
        cls = os.path.join(a.out, "train", "class_%02d" % (i % a.classes))
        os.makedirs(cls, exist_ok=True)
        path = os.path.join(cls, "img_%05d.jpg" % i)
        one_image(rng, w, h).save(path, "JPEG", quality=q, subsampling=ss)
        kinds[(ss_name, q)] += 1
        total += os.path.getsize(path)
    print("gen_jpegs_mixed: %d JPEGs in %d classes, %d KB on average; %s" %
          (a.count, a.classes, total // max(a.count, 1) // 1024,
           ", ".join("%s q%d: %d" % (k[0], k[1], v) for k, v in sorted(kinds.items()))))


if __name__ == "__main__":
    main()
