#!/usr/bin/env python3
"""bench/torch_loader.py — the PyTorch side of bench/loader_vs_torch.sh:
torchvision.datasets.ImageFolder + DataLoader with the same pipelines as
`loom bench-loader --pipeline guide|light`, timed over one epoch after a
warm-up of a few batches (workers already started: persistent_workers).

  guide: Resize(256), RandomCrop(224), RandomHorizontalFlip(),
         ColorJitter(0.2, 0.2, 0.2), RandomAffine(15, translate=(0.1, 0.1),
         scale=(0.9, 1.1)), ToTensor(), Normalize(ImageNet mean/std)
  light: RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(),
         Normalize(ImageNet mean/std)
  guide-exact: the guide's own spec: Resize((256, 256)) (both sides),
         RandomCrop(224), RandomHorizontalFlip(), ColorJitter(0.2, 0.2, 0.2),
         RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1)), ToTensor(),
         Normalize(ImageNet mean/std)
  guide-order: the same with the four random steps in RandomOrder([...])

usage: torch_loader.py --data-dir DIR --pipeline guide|light|guide-exact|guide-order --workers N
                       [--batch 64] [--warmup 3] [--threads T]
ends with: RESULT images_per_s=... workers=N first_batch_ms=...
"""
import argparse
import os
import sys
import time

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def pipeline(name):
    if name == "guide":
        steps = [transforms.Resize(256), transforms.RandomCrop(224), transforms.RandomHorizontalFlip(),
                 transforms.ColorJitter(0.2, 0.2, 0.2),
                 transforms.RandomAffine(degrees=15, translate=(0.1, 0.1), scale=(0.9, 1.1))]
    elif name in ("guide-exact", "guide-order"):
        rand = [transforms.RandomCrop(224), transforms.RandomHorizontalFlip(), transforms.ColorJitter(0.2, 0.2, 0.2),
                transforms.RandomAffine(degrees=15, translate=(0.1, 0.1), scale=(0.9, 1.1))]
        steps = [transforms.Resize((256, 256))] + (rand if name == "guide-exact" else [transforms.RandomOrder(rand)])
    elif name == "light":
        steps = [transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip()]
    else:
        sys.exit("torch_loader.py: unknown pipeline %r (guide, light, guide-exact or guide-order)" % name)
    return transforms.Compose(steps + [transforms.ToTensor(), transforms.Normalize(MEAN, STD)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--pipeline", default="guide")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=3, help="batches before the timed epoch")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch.set_num_threads in the main process (default 1, as DataLoader gives each worker; "
                         "2 threads with --workers 0 measured 6x slower on the 2-core machine)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads if a.threads > 0 else (os.cpu_count() or 1))  # 0: every core
    root = os.path.join(a.data_dir, "train") if os.path.isdir(os.path.join(a.data_dir, "train")) else a.data_dir
    ds = datasets.ImageFolder(root, transform=pipeline(a.pipeline))
    ld = DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers, pin_memory=False,
                    persistent_workers=a.workers > 0, generator=torch.Generator().manual_seed(1))
    t0 = time.perf_counter()
    it = iter(ld)
    first_ms = None
    for _ in range(a.warmup):
        x, y = next(it)
        if first_ms is None:
            first_ms = 1e3 * (time.perf_counter() - t0)
    del it
    t1 = time.perf_counter()
    n = 0
    for x, y in ld:
        n += x.shape[0]
    el = time.perf_counter() - t1
    print("torch %s, %d images %s, pipeline %s, workers %d, threads %d: %d images in %.3f s (%.1f images/s)" %
          (torch.__version__, len(ds), tuple(x.shape[1:]), a.pipeline, a.workers, torch.get_num_threads(), n, el,
           n / el))
    print("RESULT images_per_s=%.1f workers=%d first_batch_ms=%.1f" % (n / el, a.workers, first_ms))


if __name__ == "__main__":
    main()
