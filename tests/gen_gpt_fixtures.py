#!/usr/bin/env python3
"""tests/gen_gpt_fixtures.py — PyTorch references for the text models
(train/models_gpt.c), checked by tests/test-models-gpt.c.

Writes tests/data/models/gpt.safetensors and transformer.safetensors: a small
model built here in torch with HuggingFace GPT-2's parameter names and
layouts (Conv1D weights (in, out)), its weights under their own names, one
batch (x: i32 ids (N, T); y: i32 targets), the logits, the loss and every
parameter's gradient under "grad.<name>". Computed in float64, stored as
float32 (x, y int32).

  gpt:         2 layers, 2 heads, embd 32, seq 16, vocab 256, batch 2; causal
               attention, tied LM head, loss = cross-entropy over the N*T
               positions against y (N*T)
  transformer: the same encoder without the mask (vocab 64, 5 classes),
               ln_f, mean over positions, head Linear(embd, 5); loss against
               y (N)

The GELU is the exact (erf) one (torch's default, loom_gelu), not GPT-2's
tanh approximation. Run: python3 tests/gen_gpt_fixtures.py (torch CPU).
"""
import json
import math
import os
import struct

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def block(p, i, x, heads, causal):
    n, t, e = x.shape
    pre = f"h.{i}."

    def ln(name, v):
        return F.layer_norm(v, (e,), p[pre + name + ".weight"], p[pre + name + ".bias"], 1e-5)

    def conv1d(name, v):
        return v @ p[pre + name + ".weight"] + p[pre + name + ".bias"]

    qkv = conv1d("attn.c_attn", ln("ln_1", x))
    q, k, v = qkv.split(e, dim=2)
    d = e // heads
    q, k, v = (z.view(n, t, heads, d).transpose(1, 2) for z in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    y = y.transpose(1, 2).reshape(n, t, e)
    x = x + conv1d("attn.c_proj", y)
    h = F.gelu(conv1d("mlp.c_fc", ln("ln_2", x)))
    return x + conv1d("mlp.c_proj", h)


def model(p, x, layers, heads, causal):
    t = x.shape[1]
    h = p["wte.weight"][x] + p["wpe.weight"][:t]
    for i in range(layers):
        h = block(p, i, h, heads, causal)
    e = h.shape[2]
    h = F.layer_norm(h, (e,), p["ln_f.weight"], p["ln_f.bias"], 1e-5)
    if causal:
        return (h @ p["wte.weight"].T).reshape(-1, p["wte.weight"].shape[0])
    return h.mean(dim=1) @ p["head.weight"].T + p["head.bias"]


def params(g, layers, embd, seq, vocab, classes):
    """GPT-2's initialisation with the weights' std scaled up 10x (at std
    0.02 the attention is nearly uniform and the gradients tiny), and a
    little noise on the ones and zeros, so that every gradient is exercised
    with generic values."""
    p = {}

    def normal(name, shape, std):
        p[name] = torch.randn(shape, generator=g) * std

    def near(name, shape, base):
        p[name] = base + 0.1 * torch.randn(shape, generator=g)

    normal("wte.weight", (vocab, embd), 0.02 * 10)
    normal("wpe.weight", (seq, embd), 0.02 * 10)
    proj = 0.02 / math.sqrt(2 * layers)
    for i in range(layers):
        pre = f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            near(pre + ln + ".weight", (embd,), 1.0)
            near(pre + ln + ".bias", (embd,), 0.0)
        for name, shape, std in (("attn.c_attn", (embd, 3 * embd), 0.02), ("attn.c_proj", (embd, embd), proj),
                                 ("mlp.c_fc", (embd, 4 * embd), 0.02), ("mlp.c_proj", (4 * embd, embd), proj)):
            normal(pre + name + ".weight", shape, std * 10)
            near(pre + name + ".bias", (shape[1],), 0.0)
    near("ln_f.weight", (embd,), 1.0)
    near("ln_f.bias", (embd,), 0.0)
    if classes:
        normal("head.weight", (classes, embd), 0.2)
        near("head.bias", (classes,), 0.0)
    return p


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def f32(t):
    t = t.detach().to(torch.float32).contiguous()
    return ("F32", tuple(t.shape), t.numpy().tobytes())


def i32(t):
    t = t.to(torch.int32).contiguous()
    return ("I32", tuple(t.shape), t.numpy().tobytes())


def make(path, causal, layers=2, heads=2, embd=32, seq=16, vocab=256, classes=0, batch=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    p = params(g, layers, embd, seq, vocab, classes)
    for v in p.values():
        v.requires_grad_(True)
    x = torch.randint(0, vocab, (batch, seq), generator=g)
    y = torch.randint(0, vocab, (batch * seq,), generator=g) if causal else torch.randint(0, classes, (batch,), generator=g)
    logits = model(p, x, layers, heads, causal)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    out = {name: f32(v) for name, v in p.items()}
    out.update({"grad." + name: f32(v.grad) for name, v in p.items()})
    out.update({"x": i32(x), "y": i32(y), "logits": f32(logits), "loss": f32(loss.reshape(1))})
    write_safetensors(path, out)
    print(f"{path}: loss {loss.item():.6f}, {len(p)} parameters, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "models")
    os.makedirs(d, exist_ok=True)
    make(os.path.join(d, "gpt.safetensors"), causal=True)
    make(os.path.join(d, "transformer.safetensors"), causal=False, vocab=64, classes=5, seed=1)
