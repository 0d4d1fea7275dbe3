#!/usr/bin/env python3
"""Generate tests/sched_fixtures.h: learning rates from torch's LR schedulers.

For each schedule the LR at t = 0..20 is optimizer.param_groups[0]['lr'] read
before the t-th scheduler.step() (torch's get_last_lr at t). The warm-up
variant composes a linear warm-up in front the way torch users write it:
SequentialLR([LinearLR(start_factor 0.1, total_iters 3), sched], milestones
[3]), which is loom's documented warm-up (factor 0.1, 0.4, 0.7 at t = 0, 1, 2;
then the schedule from its own t = 0). loom's "constant" is LambdaLR(1).
Sequences are SequentialLR, products ChainedScheduler. ReduceLROnPlateau
(stateful) is fed a scripted metric sequence; its LR after each step() is
recorded.

Usage: python3 tests/gen_sched_fixtures.py > tests/sched_fixtures.h
The repository's tests do not need Python: the header is committed.
"""
import warnings

import torch
from torch.optim import lr_scheduler as L

warnings.filterwarnings("ignore")  # SequentialLR's step(epoch) deprecation note

BASE_LR = 0.1
T = 21
WARMUP, WARMUP_START = 3, 0.1

# name, loom kind, loom fields (C initialiser), torch constructor
CASES = [
    ("constant", "LOOM_SCHED_CONSTANT", "", lambda o: L.LambdaLR(o, lambda t: 1.0)),
    ("step", "LOOM_SCHED_STEP", ".step_size = 3, .gamma = 0.5", lambda o: L.StepLR(o, 3, 0.5)),
    ("multistep", "LOOM_SCHED_MULTISTEP", ".milestones = {2, 5, 7}, .n_milestones = 3, .gamma = 0.1",
     lambda o: L.MultiStepLR(o, [2, 5, 7], 0.1)),
    ("exponential", "LOOM_SCHED_EXPONENTIAL", ".gamma = 0.9", lambda o: L.ExponentialLR(o, 0.9)),
    ("cosine", "LOOM_SCHED_COSINE", ".t_max = 10, .eta_min = 0.001",
     lambda o: L.CosineAnnealingLR(o, 10, 0.001)),
    ("cosine-restarts(3,2)", "LOOM_SCHED_COSINE_RESTARTS", ".t0 = 3, .t_mult = 2, .eta_min = 0",
     lambda o: L.CosineAnnealingWarmRestarts(o, 3, 2, 0.0)),
    ("cosine-restarts(4,1)", "LOOM_SCHED_COSINE_RESTARTS", ".t0 = 4, .t_mult = 1",
     lambda o: L.CosineAnnealingWarmRestarts(o, 4, 1)),
    ("one-cycle", "LOOM_SCHED_ONE_CYCLE", ".t_max = 21",
     lambda o: L.OneCycleLR(o, BASE_LR, total_steps=21, cycle_momentum=False)),
    ("one-cycle linear", "LOOM_SCHED_ONE_CYCLE",
     ".t_max = 24, .pct_start = 0.25, .div_factor = 10, .final_div_factor = 100, .anneal_linear = true",
     lambda o: L.OneCycleLR(o, BASE_LR, total_steps=24, pct_start=0.25, div_factor=10, final_div_factor=100,
                            anneal_strategy="linear", cycle_momentum=False)),
    ("polynomial", "LOOM_SCHED_POLYNOMIAL", "", lambda o: L.PolynomialLR(o)),
    ("polynomial(8,2)", "LOOM_SCHED_POLYNOMIAL", ".t_max = 8, .power = 2.0", lambda o: L.PolynomialLR(o, 8, 2.0)),
    ("sequential(exp,cos)", "LOOM_SCHED_SEQUENTIAL",
     ".seq = (const loom_schedule[]){{.kind = LOOM_SCHED_EXPONENTIAL, .gamma = 0.9}, "
     "{.kind = LOOM_SCHED_COSINE, .t_max = 20, .eta_min = 0.001}}, .n_seq = 2, .milestones = {4}, .n_milestones = 1",
     lambda o: L.SequentialLR(o, [L.ExponentialLR(o, 0.9), L.CosineAnnealingLR(o, 20, 0.001)], [4])),
    ("sequential(step,multistep,exp)", "LOOM_SCHED_SEQUENTIAL",
     ".seq = (const loom_schedule[]){{.kind = LOOM_SCHED_STEP, .step_size = 3, .gamma = 0.5}, "
     "{.kind = LOOM_SCHED_MULTISTEP, .milestones = {2}, .n_milestones = 1, .gamma = 0.1}, "
     "{.kind = LOOM_SCHED_EXPONENTIAL, .gamma = 0.8}}, .n_seq = 3, .milestones = {5, 9}, .n_milestones = 2",
     lambda o: L.SequentialLR(o, [L.StepLR(o, 3, 0.5), L.MultiStepLR(o, [2], 0.1), L.ExponentialLR(o, 0.8)], [5, 9])),
    ("chain(exp,step)", "LOOM_SCHED_CHAIN",
     ".seq = (const loom_schedule[]){{.kind = LOOM_SCHED_EXPONENTIAL, .gamma = 0.9}, "
     "{.kind = LOOM_SCHED_STEP, .step_size = 4, .gamma = 0.5}}, .n_seq = 2",
     lambda o: L.ChainedScheduler([L.ExponentialLR(o, 0.9), L.StepLR(o, 4, 0.5)])),
]

# ReduceLROnPlateau: loom fields, torch kwargs; fed PLATEAU_METRICS
PLATEAU_METRICS = [1.0, 0.9, 0.9, 0.95, 0.9, 0.91, 0.92, 0.8, 0.8, 0.79995, 0.8, 0.8, 0.7, 0.75, 0.75, 0.75, 0.75,
                   0.75, 0.75, 0.75, 0.75]
PLATEAU = [
    ("plateau min", ".factor = 0.5, .patience = 2, .cooldown = 1, .min_lr = 0.01",
     dict(factor=0.5, patience=2, cooldown=1, min_lr=0.01)),
    ("plateau min patience 0", ".factor = 0.5, .patience = -1", dict(factor=0.5, patience=0)),
    ("plateau defaults patience 3", ".patience = 3", dict(patience=3)),
    ("plateau max abs", ".maximize = true, .abs_threshold = true, .threshold = 0.01, .patience = 1, .min_lr = 0.002",
     dict(mode="max", threshold_mode="abs", threshold=0.01, patience=1, min_lr=0.002)),
]


def run(make, warmup):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=BASE_LR)
    s = make(opt)
    if warmup:
        s = L.SequentialLR(opt, [L.LinearLR(opt, WARMUP_START, 1.0, WARMUP), s], [WARMUP])
    out = []
    for t in range(T):
        out.append(opt.param_groups[0]["lr"])
        if t + 1 < T:  # OneCycleLR refuses steps past total_steps
            opt.step()
            s.step()
    return out


def run_plateau(kw):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=BASE_LR)
    s = L.ReduceLROnPlateau(opt, **kw)
    out = []
    for m in PLATEAU_METRICS:
        opt.step()
        s.step(m)
        out.append(opt.param_groups[0]["lr"])
    return out


def main():
    print(f"/* tests/sched_fixtures.h - GENERATED by tests/gen_sched_fixtures.py (torch {torch.__version__}); do not edit.")
    print(" *")
    print(f" * lr[t], t = 0..{T - 1}: torch's scheduler (base lr {BASE_LR}), read before the t-th step().")
    print(f" * warmup 3: SequentialLR(LinearLR(start_factor {WARMUP_START}, total_iters {WARMUP}), sched, milestones [{WARMUP}]). */")
    print("#ifndef LOOM_TEST_SCHED_FIXTURES_H")
    print("#define LOOM_TEST_SCHED_FIXTURES_H")
    print()
    print('#include "loom/optim.h"')
    print()
    print(f"#define SCHED_FIX_T {T}")
    print()
    print("typedef struct sched_fixture {")
    print("    const char *name;")
    print("    loom_schedule s; /* warmup, warmup_start as torch's */")
    print(f"    double lr[{T}];")
    print("} sched_fixture;")
    print()
    print("static const sched_fixture sched_fixtures[] = {")
    for name, kind, fields, make in CASES:
        # SequentialLR cannot nest a SequentialLR / ChainedScheduler (torch raises): no warm-up variant
        for warmup in (0,) if name.startswith(("sequential", "chain")) else (0, WARMUP):
            lrs = run(make, warmup)
            init = f".kind = {kind}, .lr = {BASE_LR!r}"
            if fields:
                init += ", " + fields
            if warmup:
                init += f", .warmup = {warmup}, .warmup_start = {WARMUP_START!r}"
            print(f'    {{"{name}{" + warmup" if warmup else ""}", {{{init}}},')
            vals = [repr(v) for v in lrs]  # shortest round-trip form
            print("     {" + ", ".join(vals[:7]) + ",")
            print("      " + ", ".join(vals[7:14]) + ",")
            print("      " + ", ".join(vals[14:]) + "}},")
    print("};")
    print()
    print(f"/* ReduceLROnPlateau(base lr {BASE_LR}): lr after step(metric[t]) */")
    print(f"static const double plateau_metrics[{T}] = {{{', '.join(map(repr, PLATEAU_METRICS))}}};")
    print("typedef struct plateau_fixture {")
    print("    const char *name;")
    print("    loom_plateau p;")
    print(f"    double lr[{T}];")
    print("} plateau_fixture;")
    print()
    print("static const plateau_fixture plateau_fixtures[] = {")
    for name, fields, kw in PLATEAU:
        vals = [repr(v) for v in run_plateau(kw)]
        print(f'    {{"{name}", {{{fields}}},')
        print("     {" + ", ".join(vals[:7]) + ",")
        print("      " + ", ".join(vals[7:14]) + ",")
        print("      " + ", ".join(vals[14:]) + "}},")
    print("};")
    print()
    print("#endif")


if __name__ == "__main__":
    main()
