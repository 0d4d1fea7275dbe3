#!/usr/bin/env python3
"""bench/torch_train.py — PyTorch twin of `loom train` (CPU, or a GPU with --device cuda), for comparison.

Mirrors loom's built-in models (train/models.c) and training step: same layers
and PyTorch default initialisation, cross-entropy (mean), SGD with momentum
(dampening 0) / Adam / AdamW, the same batch size and thread count. The data
set is read once into memory as a normalised float tensor,
(x/255 - 0.2860)/0.3530; each batch is an index_select of a shuffled
permutation (drop_last), with no DataLoader and no workers: what is timed is
the training step (batch gather + forward + backward + optimizer step).

Throughput mode (default): --warmup steps, then --steps timed steps; prints
  RESULT impl=torch model=cnn batch=64 threads=2 steps=100 samples_per_s=...
Accuracy mode (--epochs N): N full epochs, then test accuracy on t10k:
  RESULT impl=torch ... epochs=N test_acc=... samples_per_s=... (training only)
The learning rate follows --schedule per step (loom train's default: cosine
from lr to 0 over the run).

--model resnet20 is He et al.'s CIFAR ResNet-20 as loom builds it (the module
of tests/gen_resnet_fixtures.py: 3x3 stem of 16 channels, projection
shortcuts, torchvision's init) on the same 1x28x28 data. --model gpt is loom's
byte-level GPT (train/models_gpt.c: learned position embeddings, pre-norm
blocks, causal scaled-dot-product attention, exact GELU, final layer norm,
tied head) trained on --tokens (a uint16 token file, as `loom pack-text`
writes) with batches of --batch random windows of --seq-len + 1 tokens;
it prints tokens_per_s (batch * seq_len per step) as well.

Threads: OMP_NUM_THREADS / MKL_NUM_THREADS are set before torch is imported,
and torch.set_num_threads(--threads), torch.set_num_interop_threads(1).
"""
import argparse
import gzip
import os
import struct
import sys
import time

p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
p.add_argument("--model", choices=["mlp", "cnn", "resnet20", "gpt"], default="cnn")
p.add_argument("--tokens", default=None, help="gpt: the token file (uint16, `loom pack-text`)")
p.add_argument("--layers", type=int, default=4, help="gpt (as loom train's default)")
p.add_argument("--heads", type=int, default=4, help="gpt")
p.add_argument("--embd", type=int, default=128, help="gpt")
p.add_argument("--seq-len", type=int, default=128, help="gpt")
p.add_argument("--batch", type=int, default=64)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--steps", type=int, default=100, help="timed steps (throughput mode)")
p.add_argument("--warmup", type=int, default=10, help="untimed steps first (throughput mode)")
p.add_argument("--optimizer", choices=["sgd", "adam", "adamw"], default="sgd")
p.add_argument("--lr", type=float, default=None, help="default 0.01 sgd, 0.001 adam/adamw (as loom train)")
p.add_argument("--momentum", type=float, default=None, help="sgd; default 0.9 (as loom train)")
p.add_argument("--schedule", choices=["cosine", "constant"], default="cosine",
               help="per-step lr schedule over the run, as loom train's default (cosine to 0)")
p.add_argument("--epochs", type=int, default=0, help="> 0: train full epochs and report test accuracy")
p.add_argument("--seed", type=int, default=1)
p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
p.add_argument("--device", default="cpu", help="torch device: cpu (default) or cuda[:N] (data, model and steps on it)")
args = p.parse_args()

for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[var] = str(args.threads)

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # the shell driver looks for this line
    print(f"torch_train.py: cannot import torch: {e}", file=sys.stderr)
    sys.exit(3)

torch.set_num_threads(args.threads)
try:
    torch.set_num_interop_threads(1)
except RuntimeError:
    pass
torch.manual_seed(args.seed)


def read_idx(path):
    """IDX (optionally gzip) -> numpy array."""
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        raw = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(">" + "I" * ndim, raw[4 : 4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(split):
    def path(kind):
        base = os.path.join(args.data_dir, f"{split}-{kind}-ubyte")
        return base + ".gz" if os.path.exists(base + ".gz") else base

    x = read_idx(path("images-idx3"))
    y = read_idx(path("labels-idx1"))
    x = torch.from_numpy(x.astype(np.float32)).unsqueeze(1)  # (N, 1, 28, 28)
    x = (x / 255.0 - 0.2860) / 0.3530
    return x.contiguous().to(args.device), torch.from_numpy(y.astype(np.int64)).to(args.device)


class MLP(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 128)
        self.fc3 = nn.Linear(128, classes)

    def forward(self, x):
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class CNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(64)
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(128, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        x = torch.flatten(x, 1)
        x = self.drop(F.relu(self.fc1(x)))
        return self.fc2(x)


class Block(nn.Module):
    def __init__(self, embd, heads):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(embd), nn.LayerNorm(embd)
        self.c_attn, self.c_proj = nn.Linear(embd, 3 * embd), nn.Linear(embd, embd)
        self.c_fc, self.mlp_proj = nn.Linear(embd, 4 * embd), nn.Linear(4 * embd, embd)

    def forward(self, x):
        n, t, e = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(e, dim=2)
        q, k, v = (z.view(n, t, self.heads, e // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(n, t, e)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, layers, heads, embd, seq, vocab=256):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, embd), nn.Embedding(seq, embd)
        self.h = nn.ModuleList(Block(embd, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(embd)
        for name, prm in self.named_parameters():  # GPT-2's initialisation
            if name.endswith("weight") and prm.dim() == 2:
                std = 0.02 / (2 * layers) ** 0.5 if ("c_proj" in name or "mlp_proj" in name) else 0.02
                nn.init.normal_(prm, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(prm)

    def forward(self, x):
        h = self.wte(x) + self.wpe.weight[: x.shape[1]]
        for b in self.h:
            h = b(h)
        return self.ln_f(h) @ self.wte.weight.T  # tied head


def make_opt(model):
    lr = args.lr if args.lr is not None else (0.01 if args.optimizer == "sgd" else 0.001)
    if args.optimizer == "sgd":
        mom = args.momentum if args.momentum is not None else 0.9
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=mom)
    if args.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=lr)
    return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)


def main_gpt():
    if not args.tokens:
        sys.exit("torch_train.py: --model gpt needs --tokens FILE")
    toks = torch.from_numpy(np.fromfile(args.tokens, dtype="<u2").astype(np.int64))
    T, B = args.seq_len, args.batch
    model = GPT(args.layers, args.heads, args.embd, T).to(args.device)
    opt = make_opt(model)
    total = args.warmup + args.steps
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total) if args.schedule == "cosine" else None
    gen = torch.Generator().manual_seed(args.seed)
    ar = torch.arange(T + 1)

    def step():
        starts = torch.randint(0, toks.numel() - T - 1, (B,), generator=gen)
        w = toks[starts[:, None] + ar].to(args.device)
        logits = model(w[:, :T])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if sched:
            sched.step()
        return loss.item()

    model.train()
    for _ in range(args.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    dt = time.perf_counter() - t0
    print(f"RESULT impl=torch torch={torch.__version__} device={args.device} model=gpt batch={B} "
          f"threads={torch.get_num_threads()} optimizer={args.optimizer} layers={args.layers} heads={args.heads} "
          f"embd={args.embd} seq_len={T} steps={args.steps} samples_per_s={args.steps * B / dt:.1f} "
          f"tokens_per_s={args.steps * B * T / dt:.0f} seconds={dt:.2f} loss={loss:.4f}")


def main():
    if args.model == "gpt":
        return main_gpt()
    xtr, ytr = load("train")
    if args.model == "resnet20":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
        try:
            from gen_resnet_fixtures import make
        except ImportError as e:  # the fixture script saves with safetensors
            sys.exit(f"torch_train.py: --model resnet20 builds its model with tests/gen_resnet_fixtures.py, "
                     f"which needs {e.name} in this Python: pip install {e.name}")
        model = make("resnet20", 16, True, 1, 10).to(args.device)
    else:
        model = (MLP() if args.model == "mlp" else CNN()).to(args.device)
    opt = make_opt(model)
    B = args.batch
    n_batches = xtr.shape[0] // B
    total = args.epochs * n_batches if args.epochs > 0 else args.warmup + args.steps
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total) if args.schedule == "cosine" else None
    gen = torch.Generator().manual_seed(args.seed)

    def batches():
        while True:
            perm = torch.randperm(xtr.shape[0], generator=gen).to(args.device)
            for i in range(n_batches):
                yield perm[i * B : (i + 1) * B]

    def step(idx):
        x = xtr.index_select(0, idx)
        y = ytr.index_select(0, idx)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if sched:
            sched.step()
        return loss.item()  # loom train reads the loss back every step too

    model.train()
    head = (f"RESULT impl=torch torch={torch.__version__} device={args.device} model={args.model} batch={B} "
            f"threads={torch.get_num_threads()} optimizer={args.optimizer}")
    if args.epochs <= 0:
        it = batches()
        for _ in range(args.warmup):
            step(next(it))
        t0 = time.perf_counter()
        for _ in range(args.steps):
            loss = step(next(it))
        dt = time.perf_counter() - t0
        print(f"{head} steps={args.steps} samples_per_s={args.steps * B / dt:.0f} seconds={dt:.2f} loss={loss:.4f}")
        return

    xte, yte = load("t10k")
    it = batches()
    t_train = 0.0
    for e in range(args.epochs):
        model.train()
        t0 = time.perf_counter()
        loss_sum = 0.0
        for _ in range(n_batches):
            loss_sum += step(next(it))
        t_train += time.perf_counter() - t0
        model.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, xte.shape[0], 1000):
                correct += int((model(xte[i : i + 1000]).argmax(1) == yte[i : i + 1000]).sum())
        acc = correct / xte.shape[0]
        print(f"epoch {e + 1}/{args.epochs}: train loss {loss_sum / n_batches:.4f}, test acc {100 * acc:.2f}%", flush=True)
    print(f"{head} epochs={args.epochs} test_acc={acc:.4f} samples_per_s={args.epochs * n_batches * B / t_train:.0f} "
          f"seconds={t_train:.1f}")


if __name__ == "__main__":
    main()
