#!/usr/bin/env python3
"""Generate tests/data/models/resnet*.safetensors: PyTorch's numbers for the
ResNet parity test (tests/test-models-resnet.c).

For each model below, two files:

  <name>.safetensors     the weights and batch-norm running statistics under
                         torchvision's names (no num_batches_tracked: loom
                         keeps no step counter per layer), float32
  <name>_io.safetensors  one training-mode step: "input" (N, C, H, W) f32,
                         "target" (N) i32, "logits" (N, classes), "loss" (),
                         "grad.<param>" for every parameter, and
                         "updated.<bn>.running_{mean,var}" after the step;
                         metadata: the loom_model_desc (arch, depth, width,
                         small_stem, num_classes)

The reference runs in float64 from the float32 weights and input, so the
fixtures hold the exact answer rounded once to float32. Batch norm's weight,
bias and running statistics are drawn away from their init (1, 0, 0, 1) so a
swapped or ignored tensor shows.

The module below follows torchvision.models.resnet (BasicBlock, Bottleneck
v1.5, _make_layer's projection downsample, init) with a base width other than
64; when torchvision is installed, the script checks that at width 64 its
state_dict names and shapes equal torchvision's resnet18/34/50 and that it
computes the same logits from torchvision's weights. It also writes
tests/data/models/resnet_names.txt: every tensor name and shape of
torchvision's resnet18 and resnet50 (10 classes; resnet34 has resnet50's
stages in BasicBlocks), which the C test compares with loom's full-size
builders. The fixtures stay under 1 MB together.

Usage: python3 tests/gen_resnet_fixtures.py   (torch, numpy, safetensors;
torchvision optional). The repository's tests do not need Python: the
fixtures are committed.
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.numpy import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "models")


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample(inplanes, planes, stride, self.expansion)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.downsample(x) if self.downsample is not None else x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.downsample = downsample(inplanes, planes, stride, self.expansion)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + (self.downsample(x) if self.downsample is not None else x))


def downsample(inplanes, planes, stride, expansion):
    if stride == 1 and inplanes == planes * expansion:
        return None
    return nn.Sequential(nn.Conv2d(inplanes, planes * expansion, 1, stride, bias=False),
                         nn.BatchNorm2d(planes * expansion))


class ResNet(nn.Module):
    """torchvision's ResNet with base width `width`; cifar: He et al.'s
    three-stage CIFAR network (always the small stem)."""

    def __init__(self, block, layers, width, num_classes, in_c=3, small_stem=False):
        super().__init__()
        if small_stem:
            self.conv1 = nn.Conv2d(in_c, width, 3, 1, 1, bias=False)
            self.maxpool = None
        else:
            self.conv1 = nn.Conv2d(in_c, width, 7, 2, 3, bias=False)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.bn1 = nn.BatchNorm2d(width)
        inplanes = width
        for i, n in enumerate(layers):
            blocks = []
            for b in range(n):
                blocks.append(block(inplanes, width << i, 2 if i > 0 and b == 0 else 1))
                inplanes = (width << i) * block.expansion
            setattr(self, "layer%d" % (i + 1), nn.Sequential(*blocks))
        self.nstages = len(layers)
        self.fc = nn.Linear(inplanes, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        if self.maxpool is not None:
            x = self.maxpool(x)
        for i in range(self.nstages):
            x = getattr(self, "layer%d" % (i + 1))(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


ARCHS = {  # loom arch -> block, blocks per stage, default width
    "resnet18": (BasicBlock, [2, 2, 2, 2], 64),
    "resnet34": (BasicBlock, [3, 4, 6, 3], 64),
    "resnet50": (Bottleneck, [3, 4, 6, 3], 64),
    "resnet20": (BasicBlock, [3, 3, 3], 16),
}

# fixture name, arch, width, small stem, input (N, C, H, W), classes
FIXTURES = [
    ("resnet18s_w4", "resnet18", 4, True, (4, 3, 16, 16), 10),
    ("resnet20_w8", "resnet20", 8, True, (4, 3, 16, 16), 10),
]


def make(arch, width, small_stem, in_c, classes):
    block, layers, _ = ARCHS[arch]
    return ResNet(block, layers, width, classes, in_c, small_stem or arch == "resnet20")


def state(model):
    return {k: v.detach().float().numpy().copy() for k, v in model.state_dict().items()
            if not k.endswith("num_batches_tracked")}


def fixture(name, arch, width, small_stem, shape, classes):
    torch.manual_seed(sum(map(ord, name)))
    model = make(arch, width, small_stem, shape[1], classes)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0, 0.2)
                m.running_mean.normal_(0, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    weights = state(model)
    x = torch.randn(*shape)
    target = torch.randint(0, classes, (shape[0],))
    model.double().train()
    logits = model(x.double())
    loss = F.cross_entropy(logits, target)
    loss.backward()
    io = {"input": x.numpy(), "target": target.numpy().astype(np.int32),
          "logits": logits.detach().float().numpy(), "loss": np.array(loss.item(), dtype=np.float32)}
    for k, p in model.named_parameters():
        io["grad." + k] = p.grad.float().numpy()
    for k, v in model.state_dict().items():
        if "running_" in k:
            io["updated." + k] = v.float().numpy()
    meta = {"arch": arch, "depth": "0", "width": str(width), "small_stem": "1" if small_stem else "0",
            "num_classes": str(classes)}
    save_file(weights, os.path.join(OUT, name + ".safetensors"))
    save_file(io, os.path.join(OUT, name + "_io.safetensors"), metadata=meta)
    n = sum(v.size for v in weights.values())
    print("%s: %d weights, loss %.6f" % (name, n, loss.item()))


def check_torchvision():
    try:
        import torchvision
    except ImportError:
        print("torchvision not installed: the check against it is skipped")
        return
    for arch in ("resnet18", "resnet34", "resnet50"):
        tv = getattr(torchvision.models, arch)(num_classes=10)
        ours = make(arch, 64, False, 3, 10)
        a = {k: tuple(v.shape) for k, v in tv.state_dict().items()}
        b = {k: tuple(v.shape) for k, v in ours.state_dict().items()}
        assert a == b, (arch, set(a) ^ set(b))
        ours.load_state_dict(tv.state_dict())
        x = torch.randn(2, 3, 64, 64)
        tv.eval(), ours.eval()
        with torch.no_grad():
            assert torch.allclose(tv(x), ours(x), rtol=1e-5, atol=1e-5), arch
        print("%s: names, shapes and logits equal torchvision's" % arch)


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in FIXTURES:
        fixture(*f)
    lines = []
    for arch in ("resnet18", "resnet50"):
        for k, v in make(arch, 64, False, 3, 10).state_dict().items():
            if not k.endswith("num_batches_tracked"):
                lines.append("%s %s %s" % (arch, k, ",".join(map(str, v.shape))))
    check_torchvision()
    with open(os.path.join(OUT, "resnet_names.txt"), "w") as f:
        f.write("# arch name shape: torchvision's state_dict (10 classes, less num_batches_tracked);\n"
                "# written by tests/gen_resnet_fixtures.py\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
