#!/usr/bin/env bash
# bench/getting_started_torch.sh — the getting-started guide's last step, checked
# with real PyTorch: train the cnn briefly with `loom train --save`, run the guide's
# Python blocks (docs/getting-started.md) on that checkpoint, then evaluate the
# loaded torch network on the whole Fashion-MNIST test set and compare its accuracy
# and loss with the RESULT line loom printed for the same weights.
#
#   bench/getting_started_torch.sh LOOM_BIN PYTHON [STEPS]
#
# PYTHON must import torch, safetensors and numpy (a venv with PyPI's torch).
set -euo pipefail
loom=$(readlink -f "${1:?usage: getting_started_torch.sh LOOM_BIN PYTHON [STEPS]}")
py=${2:?python with torch}
steps=${3:-200}
src=$(cd "$(dirname "$0")/.." && pwd)
data=${LOOM_FASHION_DIR:-/usr/share/datasets/fashion-mnist}
work=$(mktemp -d "${TMPDIR:-/tmp}/loom-gs.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

"$loom" train --model cnn --epochs 1 --max-steps "$steps" --backend cpu --data-dir "$data" \
    --save cnn.safetensors --quiet | tee loom.out
result=$(grep '^RESULT' loom.out)

awk '/^```python/{f=1;next} /^```/{f=0} f' "$src/docs/getting-started.md" > check.py
cat >> check.py <<PYEOF
import gzip, numpy as np
def idx(path):
    raw = gzip.open(path, "rb").read() if path.endswith(".gz") else open(path, "rb").read()
    nd = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * nd).reshape(dims)
import os
def find(name):
    for p in ("$data/" + name, "$data/" + name + ".gz"):
        if os.path.exists(p):
            return p
    raise SystemExit("no " + name + " in $data")
x = torch.tensor(idx(find("t10k-images-idx3-ubyte")), dtype=torch.float32)[:, None] / 255.0
y = torch.tensor(idx(find("t10k-labels-idx1-ubyte")).astype(np.int64))
with torch.no_grad():
    logits = net((x - 0.2860) / 0.3530)
acc = (logits.argmax(1) == y).float().mean().item()
loss = torch.nn.functional.cross_entropy(logits, y).item()
print("TORCH test_acc=%.4f test_loss=%.4f torch=%s" % (acc, loss, torch.__version__))
PYEOF
"$py" check.py | tee torch.out
torch_line=$(grep '^TORCH' torch.out)
la=$(sed 's/.*test_acc=\([^ ]*\).*/\1/' <<< "$result"); ll=$(sed 's/.*test_loss=\([^ ]*\).*/\1/' <<< "$result")
ta=$(sed 's/.*test_acc=\([^ ]*\).*/\1/' <<< "$torch_line"); tl=$(sed 's/.*test_loss=\([^ ]*\).*/\1/' <<< "$torch_line")
echo "loom:  test_acc=$la test_loss=$ll"
echo "torch: test_acc=$ta test_loss=$tl"
awk -v a="$la" -v b="$ta" -v c="$ll" -v d="$tl" 'BEGIN {
    da = a - b; if (da < 0) da = -da; dl = c - d; if (dl < 0) dl = -dl
    if (da > 0.0001 || dl > 0.0002) { print "MISMATCH"; exit 1 } print "MATCH" }'
