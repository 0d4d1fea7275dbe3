#!/usr/bin/env bash
# tests/gpu/run.sh — the self-contained check of the CUDA backend on a GPU
# machine (issue 5), meant to finish in under 8 minutes on one H200 once the
# build exists. It needs the NVIDIA driver, the CUDA toolkit (to build),
# CMake, python3 with PyTorch (for the side-by-side numbers); no network and
# no package manager: extra libraries and data come from .deb files it is
# given (--debs), unpacked with dpkg-deb or ar + tar.
#
#   tests/gpu/run.sh OUT [--build DIR] [--debs DIR] [--data DIR] [--quick]
#
#   OUT           results folder (created): summary.md and one log per phase
#   --build DIR   a loom build with the CUDA backend (default: configure and
#                 build one in $LOOM_GPU_BUILD or /tmp/loom-gpu-build, for
#                 this GPU's architecture only, if DIR has no loom binary)
#   --debs DIR    .deb files to unpack first (e.g. zlib1g-dev, libopenblas,
#                 dataset-fashion-mnist): their usr/ joins the compiler,
#                 linker and loader paths, and a Fashion-MNIST inside is used
#   --data DIR    Fashion-MNIST IDX files (default: from --debs, else
#                 /usr/share/datasets/fashion-mnist)
#   --quick       smaller GEMM sizes and fewer training steps
#
# Phases (each under `timeout`; a phase that fails is recorded and the
# script goes on):
#   1. loom info                       (info.log)
#   2. op-check, CUDA vs CPU f64, every op and dtype (opcheck.log)
#   3. loss parity, cnn 50 steps f32, CUDA vs CPU, SGD + momentum (bar 1e-4)
#      and AdamW (bar 1e-3): test-parity --ordinary --batch 64 (parity.log; CUDA has
#      no reproducible mode yet, so the ordinary kernels are compared)
#   4. GEMM TFLOP/s f32 / TF32 / bf16 / f16: bench-gemm_gpu vs
#      tests/gpu/torch_gemm.py (torch.matmul) on the same shapes (gemm.log)
#   5. cnn training samples/s: `loom train --backend cuda` vs
#      bench/torch_train.py --device cuda (PyTorch eager), batch 64 and 256,
#      SGD + momentum, f32 (train_loom_b64.log, train_torch_b64.log, ...);
#      and on Vulkan, batch 256, the convolutions as implicit GEMM and over
#      column buffers (train_vk_imp1.log, train_vk_imp0.log)
#   6. the guide's table for ResNet-50 (224x224 synthetic images, batch 24,
#      epoch = 1281167 samples): `loom bench` on CUDA and, when the build has
#      it (LOOM_GPU_VULKAN=ON builds it), Vulkan (bench_cuda.log, bench_vulkan.log
#      and their .csv/.json)
#   7. the rest of ctest (ctest.log), if time is left
# Dry runs elsewhere: LOOM_GPU_BACKEND (default cuda) names the backend
# checked, LOOM_GPU_SIZES the GEMM sizes, LOOM_GPU_STEPS the training steps.
# summary.md gathers the numbers with the date, commit and GPU. Exit status:
# 0 when the op-check and the parity check passed, 1 otherwise.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="" build="" debs="" data="" quick=0
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --debs) debs=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,37p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) out=$1; shift ;;
    esac
done
[ -n "$out" ] || { echo "usage: tests/gpu/run.sh OUT [--build DIR] [--debs DIR] [--data DIR] [--quick]" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
t_start=$SECONDS
log() { echo "[$((SECONDS - t_start))s] $*" | tee -a "$out/run.log"; }
# phase NAME TIMEOUT_S CMD...: run with a time limit, output to NAME.log; status in $out/NAME.rc
phase() {
    local name=$1 limit=$2
    shift 2
    log "phase $name (limit ${limit}s): $*"
    local t0=$SECONDS
    timeout --kill-after=10 "$limit" "$@" >>"$out/$name.log" 2>&1
    local rc=$?
    echo "$rc" >"$out/$name.rc"
    log "phase $name: exit $rc after $((SECONDS - t0))s"
    return $rc
}

# ---- .deb files: unpack, add to the paths ----
if [ -n "$debs" ]; then
    droot=${LOOM_GPU_DEBROOT:-/tmp/loom-gpu-debroot}
    mkdir -p "$droot"
    for d in "$debs"/*.deb; do
        [ -e "$d" ] || continue
        if command -v dpkg-deb >/dev/null; then
            dpkg-deb -x "$d" "$droot"
        else
            tmp=$(mktemp -d)
            (cd "$tmp" && ar x "$d" && tar -xf data.tar.* -C "$droot")
            rm -rf "$tmp"
        fi
        log "unpacked $(basename "$d")"
    done
    for lib in "$droot/usr/lib/x86_64-linux-gnu" "$droot/usr/lib"; do
        [ -d "$lib" ] || continue
        export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        export LIBRARY_PATH="$lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
    done
    # OpenBLAS from a .deb lives under usr/lib/x86_64-linux-gnu/openblas-pthread/
    for lib in "$droot"/usr/lib/x86_64-linux-gnu/openblas*; do
        [ -d "$lib" ] && export LD_LIBRARY_PATH="$lib:$LD_LIBRARY_PATH" LIBRARY_PATH="$lib:$LIBRARY_PATH"
    done
    [ -d "$droot/usr/include" ] && export CPATH="$droot/usr/include${CPATH:+:$CPATH}"
    export CMAKE_PREFIX_PATH="$droot/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
    [ -z "$data" ] && [ -e "$droot/usr/share/datasets/fashion-mnist" ] && data="$droot/usr/share/datasets/fashion-mnist"
fi
[ -z "$data" ] && data=/usr/share/datasets/fashion-mnist

# ---- the machine ----
gpu="unknown GPU"
cc=""
if command -v nvidia-smi >/dev/null; then
    nvidia-smi >"$out/nvidia-smi.log" 2>&1
    gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
fi
log "GPU: $gpu (compute capability ${cc:-?})"
commit=${LOOM_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
if git -C "$root" status --porcelain 2>/dev/null | grep -q .; then commit="$commit+local changes"; fi

# ---- the build ----
if [ -z "$build" ] || [ ! -x "$build/loom" ]; then
    build=${build:-${LOOM_GPU_BUILD:-/tmp/loom-gpu-build}}
    nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    archs=${LOOM_GPU_ARCHS:-${cc:+${cc}-real}}
    archs=${archs:-90-real}
    log "building into $build (CUDA architectures $archs, nvcc $nvcc)"
    phase build 420 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLOOM_CUDA=ON -DLOOM_OPENCL=OFF \
        -DLOOM_VULKAN=${LOOM_GPU_VULKAN:-OFF} -DLOOM_TSAN_LOADER=OFF -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$archs" ||
        { log "configure failed: see build.log"; exit 1; }
    phase build 420 cmake --build "$build" -j"$(nproc)" || { log "build failed: see build.log"; exit 1; }
fi
build=$(cd "$build" && pwd)
t_checks=$SECONDS
loom="$build/loom"
be=${LOOM_GPU_BACKEND:-cuda}

# ---- 1. info ----
phase info 30 "$loom" info
if ! grep -q "^backend $be\$" "$out/info.log"; then
    log "the $be backend is not available here (see info.log); stopping"
    exit 1
fi

# ---- 2. op-check ----
phase opcheck 200 "$build/tests/test-opcheck" -b "$be"
opcheck_rc=$(cat "$out/opcheck.rc")
# device augmentation: host and device batches equal, on every backend of the build (devaug.log)
phase devaug 60 "$build/tests/test-devaug"

# ---- 3. loss parity (needs Fashion-MNIST where loom looks by default) ----
parity_rc=1
if [ ! -e /usr/share/datasets/fashion-mnist ] && [ -e "$data" ]; then
    mkdir -p /usr/share/datasets 2>/dev/null && ln -s "$data" /usr/share/datasets/fashion-mnist 2>/dev/null &&
        log "linked /usr/share/datasets/fashion-mnist -> $data"
fi
if [ -e /usr/share/datasets/fashion-mnist ]; then
    phase parity 150 "$build/tests/test-parity" --ordinary --batch 64
    parity_rc=$(cat "$out/parity.rc")
else
    log "parity: skipped: no Fashion-MNIST (pass --data DIR or a dataset .deb with --debs)"
    echo "SKIP: no Fashion-MNIST" >"$out/parity.log"
fi

# ---- 4. GEMM ----
sizes=1024,2048,4096,8192
[ $quick = 1 ] && sizes=1024,4096
sizes=${LOOM_GPU_SIZES:-$sizes}
phase gemm 120 "$build/bench/bench-gemm_gpu" --backend "$be" --sizes $sizes --modes f32,tf32,bf16,f16
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    phase gemm 120 python3 "$here/torch_gemm.py" --sizes $sizes --modes f32,tf32,bf16,f16
    have_torch=1
else
    log "PyTorch with CUDA not importable: no torch columns"
    have_torch=0
fi

# ---- 5. cnn training throughput ----
steps=400
[ $quick = 1 ] && steps=150
steps=${LOOM_GPU_STEPS:-$steps}
if [ -e "$data" ]; then
    for b in 64 256; do
        phase train_loom_b$b 90 "$loom" train --backend "$be" --model cnn --data-dir "$data" --epochs 1 --max-steps $steps \
            --batch $b --optimizer sgd --quiet
        if [ $have_torch = 1 ]; then
            phase train_torch_b$b 90 python3 "$root/bench/torch_train.py" --device cuda --model cnn --data-dir "$data" \
                --steps $steps --warmup 20 --batch $b --optimizer sgd --threads "$(nproc)"
        fi
    done
    # the Vulkan cnn step with the convolutions as implicit GEMM (a GPU's default) and over
    # column buffers (LOOM_VULKAN_CONV_IMPLICIT=0): the speed side of a change measured for memory only
    if grep -q "^backend vulkan\$" "$out/info.log"; then
        for imp in 1 0; do
            phase train_vk_imp$imp 60 env LOOM_VULKAN_CONV_IMPLICIT=$imp "$loom" train --backend vulkan --model cnn \
                --data-dir "$data" --epochs 1 --max-steps 100 --batch 256 --optimizer sgd --quiet
        done
    fi
else
    log "train: skipped: no Fashion-MNIST at $data"
fi

# ---- 6. the guide's table, ResNet-50, on CUDA and Vulkan ----
for bb in cuda vulkan; do
    if grep -q "^backend $bb\$" "$out/info.log"; then
        phase bench_$bb 150 "$loom" bench --model resnet50 --backend $bb --size 224 --batch 24 --steps 10 \
            --epoch-size 1281167 --csv "$out/bench_$bb.csv" --json "$out/bench_$bb.json"
    else
        log "bench: $bb not in this build or not available: skipped"
    fi
done

# ---- 7. the rest of ctest, with what time is left of 8 minutes ----
left=$((470 - (SECONDS - t_checks)))
if [ $left -gt 40 ]; then
    (cd "$build" && phase ctest $left ctest -E "test-opcheck|loader-tsan" --timeout $left)
else
    log "ctest: skipped: only ${left}s left of the 8 minutes"
fi
log "checks took $((SECONDS - t_checks))s (8-minute budget: 480s)"

# ---- summary ----
python3 - "$out" "$commit" "$gpu" "$opcheck_rc" "$parity_rc" "$((SECONDS - t_checks))" "$be" <<'EOF'
import datetime, os, re, sys
out, commit, gpu, op_rc, par_rc, secs, be = sys.argv[1:8]
def read(name):
    p = os.path.join(out, name)
    return open(p, errors="replace").read() if os.path.exists(p) else ""
def kv(line):
    return dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line))
L = [f"# {be} backend check (tests/gpu/run.sh) — {datetime.date.today().isoformat()}", "",
     f"- commit: {commit}", f"- GPU: {gpu}", f"- checks took {secs} s (budget 480 s)", ""]
op = read("opcheck.log")
m = re.search(r"backend " + be + r": (\d+) OK, (\d+) FAIL, (\d+) NO CASE, (\d+) not supported, (\d+) untested", op)
L.append("## op-check (CUDA vs CPU f64, every op x f32/f16/bf16)")
L.append(f"- exit {op_rc}: " + (m.group(0) if m else "no summary line (see opcheck.log)"))
fails = [l for l in op.splitlines() if "FAIL" in l and f"backend {be}:" not in l][:20]
L += ["  - " + l.strip() for l in fails]
L += ["", "## loss parity (cnn, 50 steps, f32; bars 1e-4 SGD+momentum, 1e-3 AdamW)", f"- exit {par_rc}"]
L += ["  - " + l.strip() for l in read("parity.log").splitlines() if l.startswith((be, "FAIL", "SKIP")) or "passed" in l]
g = [kv(l) for l in read("gemm.log").splitlines() if l.startswith("RESULT")]
cells = {}
for r in g:
    cells.setdefault((r.get("mode"), r.get("n")), {})[r.get("impl")] = r
L += ["", "## GEMM (square, TFLOP/s; loom = cuBLAS through a loom plan, 8 GEMMs per run)", "",
      "| mode | n | loom | torch.matmul | loom/torch | loom relerr |", "|---|---|---|---|---|---|"]
for (mode, n), c in cells.items():
    lo, to = c.get("loom", {}), c.get("torch", {})
    lt, tt = lo.get("tflops"), to.get("tflops")
    ratio = f"{float(lt) / float(tt):.2f}" if lt and tt and float(tt) > 0 else "-"
    L.append(f"| {mode} | {n} | {lt or lo.get('error', '-')} | {tt or '-'} | {ratio} | {lo.get('relerr', '-')} |")
L += ["", "## cnn training, samples/s (f32, SGD + momentum; loom train vs PyTorch eager, same GPU)", "",
      "| batch | loom | torch eager | loom/torch |", "|---|---|---|---|"]
for b in ("64", "256"):
    res = {}
    for impl in ("loom", "torch"):
        r = [kv(l) for l in read(f"train_{impl}_b{b}.log").splitlines() if l.startswith("RESULT")]
        res[impl] = r[-1].get("samples_per_s") if r else None
    lo, to = res["loom"], res["torch"]
    ratio = f"{float(lo) / float(to):.2f}" if lo and to and float(to) > 0 else "-"
    L.append(f"| {b} | {lo or '-'} | {to or '-'} | {ratio} |")
vk = {}
for imp in ("1", "0"):
    r = [kv(l) for l in read(f"train_vk_imp{imp}.log").splitlines() if l.startswith("RESULT")]
    vk[imp] = r[-1].get("samples_per_s") if r else None
if vk["1"] or vk["0"]:
    L += ["", "## Vulkan cnn, batch 256, samples/s: convolutions as implicit GEMM (default) / over column buffers", "",
          f"- {vk['1'] or '-'} / {vk['0'] or '-'}"]
for bb in ("cuda", "vulkan"):
    t = read(f"bench_{bb}.log").strip()
    if t:
        L += ["", f"## loom bench, ResNet-50 on {bb} (the guide's rows)", "", "```", t, "```"]
ct = read("ctest.log")
m = re.search(r"\d+% tests passed.*", ct)
L += ["", "## ctest (without the op-check)", "- " + (m.group(0) if m else "not run or no summary (see ctest.log)")]
open(os.path.join(out, "summary.md"), "w").write("\n".join(L) + "\n")
print("\n".join(L))
EOF
[ "$opcheck_rc" = 0 ] && [ "$parity_rc" = 0 ]
