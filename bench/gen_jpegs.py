#!/usr/bin/env python3
"""bench/gen_jpegs.py — a seeded ImageFolder of 500x375 RGB JPEGs for the
loader benchmarks (bench/loader_vs_torch.sh).

Content is smooth random colour fields (low-resolution noise enlarged with
bicubic interpolation, a few blobs, mild grain), so the JPEGs have realistic
sizes (~60-90 KB at quality 90, ImageNet's are ~110 KB) rather than the few KB of flat images or
the hundreds of KB of white noise.

usage: gen_jpegs.py OUT_DIR [--count 2000] [--classes 10] [--seed 0]
writes OUT_DIR/train/class_XX/img_NNNNN.jpg and prints a summary line.
"""
import argparse
import os
import sys

import numpy as np
from PIL import Image


def one_image(rng, w=500, h=375):
    # a coarse random field, enlarged: smooth colour regions
    gw, gh = int(rng.integers(4, 12)), int(rng.integers(3, 9))
    coarse = rng.integers(0, 256, size=(gh, gw, 3), dtype=np.uint8)
    img = np.asarray(Image.fromarray(coarse).resize((w, h), Image.BICUBIC), dtype=np.float32)
    # a few soft blobs of another colour
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    for _ in range(int(rng.integers(2, 6))):
        cx, cy, r = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(20, 120)
        a = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * r * r))[..., None]
        img = img * (1 - 0.7 * a) + 0.7 * a * rng.uniform(0, 255, size=3).astype(np.float32)
    # mid-frequency texture (foliage, fabric) and grain, as a camera's
    tex = rng.normal(0, 1, size=(h // 6, w // 6, 3)).astype(np.float32)
    tex = np.asarray(Image.fromarray(np.clip(128 + 40 * tex, 0, 255).astype(np.uint8)).resize((w, h), Image.BICUBIC),
                     dtype=np.float32) - 128
    img += 0.8 * tex + rng.normal(0, 7.0, size=img.shape).astype(np.float32)
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quality", type=int, default=90)
    a = ap.parse_args()
    if a.count < 1 or a.classes < 1:
        sys.exit("gen_jpegs.py: --count and --classes must be >= 1")
    rng = np.random.default_rng(a.seed)
    total = 0
    for i in range(a.count):
        d = os.path.join(a.out, "train", "class_%02d" % (i % a.classes))
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, "img_%05d.jpg" % i)
        one_image(rng).save(p, quality=a.quality)
        total += os.path.getsize(p)
    print("gen_jpegs: %d images 500x375 in %d classes under %s/train, mean %.1f KB" %
          (a.count, a.classes, a.out, total / a.count / 1024))


if __name__ == "__main__":
    main()
