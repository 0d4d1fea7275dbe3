#!/usr/bin/env python3
"""tests/gpu/torch_gemm.py — torch.matmul TFLOP/s on the GPU for the shapes and
dtype modes of bench/gemm_gpu.c (square C = A B, A and B uniform in [-1, 1]):
f32 (allow_tf32 off), tf32 (allow_tf32 on), bf16, f16. Each timing: REPS
matmuls between two CUDA events after warm-up, best of several rounds.

Prints one line per cell:
  RESULT impl=torch torch=2.11.0 mode=f32 n=4096 tflops=51.0 ms=2.69
"""
import argparse

import torch

p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
p.add_argument("--sizes", default="1024,2048,4096,8192")
p.add_argument("--modes", default="f32,tf32,bf16,f16")
p.add_argument("--device", default="cuda")
args = p.parse_args()

REPS = 8
dev = torch.device(args.device)
for mode in args.modes.split(","):
    dt = {"f32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[mode]
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    torch.backends.cudnn.allow_tf32 = mode == "tf32"
    for n in (int(s) for s in args.sizes.split(",")):
        g = torch.Generator(device=dev).manual_seed(11)
        a = (torch.rand(n, n, device=dev, generator=g) * 2 - 1).to(dt)
        b = (torch.rand(n, n, device=dev, generator=g) * 2 - 1).to(dt)
        for _ in range(3):
            c = torch.matmul(a, b)
        torch.cuda.synchronize()
        best = float("inf")
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        total = 0.0
        rounds = 0
        while rounds < 3 or (total < 0.3 and rounds < 200):
            start.record()
            for _ in range(REPS):
                c = torch.matmul(a, b)
            end.record()
            end.synchronize()
            t = start.elapsed_time(end) / 1e3
            total += t
            rounds += 1
            best = min(best, t)
        tflops = 2.0 * n ** 3 * REPS / best * 1e-12
        print(f"RESULT impl=torch torch={torch.__version__} mode={mode} n={n} tflops={tflops:.2f} "
              f"ms={1e3 * best / REPS:.3f}", flush=True)
        del a, b, c
