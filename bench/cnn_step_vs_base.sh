#!/usr/bin/env bash
# bench/cnn_step_vs_base.sh [--rounds N] [--steps N] [--backends vulkan,opencl] [--base DIR]
#
# Issue 23's step point: the cnn training step (batch 64) on lavapipe and PoCL
# against the build before the issue's work (f18fdc9, "today" when the issue
# was filed), both builds measured in the same run, interleaved round by round.
# The base is built once (a clone of this repository at f18fdc9, -DLOOM_CUDA=OFF,
# Release) into DIR (default build/base-f18fdc9) and reused; this tree's build
# is build/loom. Each run:
#
#   loom train --data fashion-mnist --model cnn --epochs 1 --max-steps STEPS
#              --batch 64 --backend B --max-eval 64
#
# and the figure is its compute time per batch (the "compute ... ms/batch" line:
# the training loop alone, no loading, no evaluation). Both builds end every
# run at the same test accuracy (they compute the same thing); the script checks
# it. A warm-up run of each build and backend comes first (shader compilation).
# Prints one line per run, then per backend the medians, the ranges and the
# ratio base / main of the median step times.
set -euo pipefail
rounds=3 steps=30 backends=vulkan,opencl base=build/base-f18fdc9
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --backends) backends=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--steps N] [--backends vulkan,opencl] [--base DIR]" >&2; exit 2 ;;
    esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
main=$root/build/loom
[ -x "$main" ] || { echo "cnn_step_vs_base.sh: no $main (build this tree first)" >&2; exit 1; }
if [ ! -x "$base/build/loom" ]; then
    echo "building the base (f18fdc9) in $base ..." >&2
    rm -rf "$base"
    git clone -q "$root" "$base"
    git -C "$base" checkout -q f18fdc9
    cmake -S "$base" -B "$base/build" -DLOOM_CUDA=OFF -DCMAKE_BUILD_TYPE=Release > "$base.log" 2>&1
    cmake --build "$base/build" -j"$(nproc)" --target loom_cli >> "$base.log" 2>&1
fi
mkdir -p "$root/build/cache/mesa" "$root/build/cache/pocl" "$root/build/cache/loom-cl"
export MESA_SHADER_CACHE_DIR=$root/build/cache/mesa POCL_CACHE_DIR=$root/build/cache/pocl
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# one run: prints "ms acc"
one() {
    "$1" train --data fashion-mnist --model cnn --epochs 1 --max-steps "$3" --batch 64 --backend "$2" \
        --max-eval 64 > "$log" 2>&1 || { cat "$log" >&2; echo "cnn_step_vs_base.sh: $1 --backend $2 failed" >&2; exit 1; }
    local ms acc
    ms=$(grep -oE 'compute [0-9.]+ ms/batch' "$log" | grep -oE '[0-9.]+' | head -1)
    acc=$(grep -oE 'test_acc=[0-9.]+' "$log" | cut -d= -f2)
    echo "$ms $acc"
}

echo "cnn step (batch 64, $steps steps), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "main: $(git -C "$root" rev-parse --short HEAD), base: f18fdc9 ($base)"
IFS=, read -r -a bl <<< "$backends"
declare -A times
for b in "${bl[@]}"; do one "$base/build/loom" "$b" 3 > /dev/null; one "$main" "$b" 3 > /dev/null; done
for r in $(seq 1 "$rounds"); do
    for b in "${bl[@]}"; do
        read -r tb ab <<< "$(one "$base/build/loom" "$b" "$steps")"
        read -r tm am <<< "$(one "$main" "$b" "$steps")"
        [ "$ab" = "$am" ] || echo "warning: $b round $r: test accuracy differs (base $ab, main $am)"
        printf 'round %d %-7s base %8.1f ms/step   main %7.1f ms/step   %5.2fx\n' "$r" "$b" "$tb" "$tm" \
            "$(echo "$tb / $tm" | bc -l)"
        times[$b.base]+="$tb " times[$b.main]+="$tm "
    done
done
med() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2), a[1], a[NR] }'; }
for b in "${bl[@]}"; do
    read -r mb lb hb <<< "$(echo "${times[$b.base]}" | med)"
    read -r mm lm hm <<< "$(echo "${times[$b.main]}" | med)"
    printf '%-7s base %.1f ms/step (%.1f-%.1f), main %.1f (%.1f-%.1f): %.2fx (samples/s %.0f -> %.0f)\n' "$b" \
        "$mb" "$lb" "$hb" "$mm" "$lm" "$hm" "$(echo "$mb / $mm" | bc -l)" "$(echo "64000 / $mb" | bc -l)" \
        "$(echo "64000 / $mm" | bc -l)"
done
