#!/usr/bin/env bash
# bench/loader_vs_torch.sh — images/s of loom's data loader (`loom
# bench-loader`) against PyTorch's DataLoader (bench/torch_loader.py) on the
# same ImageFolder of 500x375 JPEGs (bench/gen_jpegs.py, seeded), with the
# guide pipeline and the light one, for 0, 1, 2, 4 workers and auto, in one
# run; then the packed-shard path (`loom pack` once, bench-loader on the
# shard).
#
# loom:  bench-loader --pipeline P --workers W --epochs 2; the images/s of
#        the second epoch (the first starts the threads and tunes auto), and
#        first_batch_ms from loader creation.
# torch: ImageFolder + the same transforms + DataLoader(batch 64, num_workers
#        W, pin_memory False, persistent workers); one epoch timed after a
#        warm-up of 3 batches. torch has no "auto": its best row is the
#        baseline the targets compare against.
# Both sides run with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset; torch's
# main process uses torch.set_num_threads(1), as DataLoader sets in each
# worker (with 2 threads, workers 0 ran 6x slower here: 20 vs 135 images/s).
# Workers 0 = loading on the calling thread.
# Targets (issue 7): loom >= 5x torch's best on guide; packed shard >= 20x.
# --rounds R measures every row R times, loom and torch alternating, and
# reports the median (the range beside it): this machine's speed drifts.
#
# usage: bench/loader_vs_torch.sh [--loom PATH] [--python PY] [--data DIR] [--count N]
#                                 [--workers "0 1 2 4 auto"] [--rounds R] [--out FILE.md]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
loom="$here/../build/loom"
py=python3
[ -x /work/venv-bench/bin/python ] && py=/work/venv-bench/bin/python
data=/tmp/loom-bench-jpegs
count=2000
workers="0 1 2 4 auto"
rounds=1
out=""
usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
    --loom) loom=$2; shift 2 ;;
    --python) py=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "loader_vs_torch.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
[ -x "$loom" ] || { echo "loader_vs_torch.sh: no loom binary at $loom (build it, or pass --loom)" >&2; exit 1; }
"$py" -c 'import torch, torchvision, PIL, numpy' 2>/dev/null || {
    echo "loader_vs_torch.sh: $py lacks torch/torchvision/pillow/numpy: python3 -m venv /work/venv-bench &&" \
         "/work/venv-bench/bin/pip install torch torchvision pillow numpy" >&2; exit 1; }
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

# the data: count JPEGs, regenerated when the count differs
have=$( (find "$data/train" -name '*.jpg' 2>/dev/null || true) | wc -l)
if [ "$have" != "$count" ]; then
    rm -rf "$data"
    "$py" "$here/gen_jpegs.py" "$data" --count "$count" --classes 10 --seed 0
fi

report=$(mktemp)
trap 'rm -f "$report"' EXIT
say() { printf '%s\n' "$*" | tee -a "$report"; }
field() { sed -n "s/.*RESULT.* $1=\([0-9.]*\).*/\1/p" | tail -n 1; }
# loom's last "epoch N: ... (X images/s)" line
loom_rate() { sed -n 's/^epoch [0-9]*: .*(\([0-9.]*\) images\/s).*/\1/p' | tail -n 1; }
# the median of the arguments (numbers)
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# "median" or, over several rounds, "median (min-max)"
cell() { if [ $# -gt 1 ]; then echo "$(median "$@") ($(printf '%s\n' "$@" | sort -g | head -n 1)-$(printf '%s\n' "$@" | sort -g | tail -n 1))"; else echo "$1"; fi; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }'; }

cores=$(nproc)
rev=$(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo "?")
kb=$(du -sk "$data/train" | cut -f1)
say "# loom loader vs PyTorch DataLoader"
say ""
say "$(date -u '+%Y-%m-%d %H:%M UTC'), loom $rev, $cores cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
say "load average before: $(cut -d' ' -f1-3 /proc/loadavg);" \
    "$("$py" -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__)')"
say "data: $count JPEGs 500x375 in 10 classes ($((kb / count)) KB each on average, bench/gen_jpegs.py --seed 0), batch 64"
[ "$rounds" -gt 1 ] && say "$rounds rounds per row, loom and torch alternating: the median (min-max); best = the best median"
say ""
say "| pipeline | workers | loom images/s | loom first batch ms | torch images/s | torch first batch ms | loom / torch |"
say "|---|---|---|---|---|---|---|"
declare -A best_torch best_loom
for p in guide light; do
    best_torch[$p]=0 best_loom[$p]=0
    for w in $workers; do
        lrs=() lfs=() trs=() tfs=()
        for ((r = 0; r < rounds; r++)); do
            lo=$("$loom" bench-loader --data-dir "$data" --pipeline "$p" --workers "$w" --epochs 2 2>&1) ||
                { echo "$lo"; echo "loader_vs_torch.sh: loom bench-loader failed ($p, $w)" >&2; exit 1; }
            lrs+=("$(echo "$lo" | loom_rate)") lfs+=("$(echo "$lo" | field first_batch_ms)") lw=$(echo "$lo" | field workers)
            if [ "$w" != auto ]; then
                to=$("$py" "$here/torch_loader.py" --data-dir "$data" --pipeline "$p" --workers "$w" 2>&1) ||
                    { echo "$to"; echo "loader_vs_torch.sh: torch_loader.py failed ($p, $w)" >&2; exit 1; }
                trs+=("$(echo "$to" | field images_per_s)") tfs+=("$(echo "$to" | field first_batch_ms)")
            fi
        done
        lr=$(median "${lrs[@]}") tr="n/a"
        if [ "$w" != auto ]; then
            tr=$(median "${trs[@]}")
            best_torch[$p]=$(awk -v a="$tr" -v b="${best_torch[$p]}" 'BEGIN { print (a > b ? a : b) }')
        fi
        best_loom[$p]=$(awk -v a="$lr" -v b="${best_loom[$p]}" 'BEGIN { print (a > b ? a : b) }')
        wl=$w
        [ "$w" = auto ] && wl="auto ($lw)"
        say "| $p | $wl | $(cell "${lrs[@]}") | $(median "${lfs[@]}") | $([ "$tr" = n/a ] && echo n/a || cell "${trs[@]}") |" \
            "$([ "$tr" = n/a ] && echo n/a || median "${tfs[@]}") | $([ "$tr" = n/a ] && echo - || ratio "$lr" "$tr") |"
    done
done
# the fusion's share: the guide pipeline with every step on its own
lo=$(LOOM_LOADER_FUSE=0 "$loom" bench-loader --data-dir "$data" --pipeline guide --workers auto --epochs 2 2>&1)
say "| guide, unfused (LOOM_LOADER_FUSE=0) | auto ($(echo "$lo" | field workers)) | $(echo "$lo" | loom_rate) | $(echo "$lo" | field first_batch_ms) | | | |"

# the packed shard: decode + Resize(256) (shorter side: 256x341) once
mkdir -p "$data/pack"
t0=$(date +%s.%N)
"$loom" pack --data-dir "$data" --out "$data/pack/train.shard" --size 256x341 > /dev/null
t1=$(date +%s.%N)
say ""
say "packed shard: \`loom pack --size 256x341\` (decode + resize once) took $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s," \
    "$(( $(stat -c %s "$data/pack/train.shard") / 1048576 )) MiB; then bench-loader on it (guide: its Resize(256) is then a no-op)"
say ""
say "| pipeline | workers | shard images/s | first batch ms | vs torch's best |"
say "|---|---|---|---|---|"
declare -A best_shard
for p in guide light; do
    best_shard[$p]=0
    for w in $workers; do
        srs=() sfs=()
        for ((r = 0; r < rounds; r++)); do
            so=$("$loom" bench-loader --data-dir "$data/pack" --pipeline "$p" --workers "$w" --epochs 2 2>&1) ||
                { echo "$so"; echo "loader_vs_torch.sh: bench-loader on the shard failed ($p, $w)" >&2; exit 1; }
            srs+=("$(echo "$so" | loom_rate)") sfs+=("$(echo "$so" | field first_batch_ms)") sw=$(echo "$so" | field workers)
        done
        sr=$(median "${srs[@]}")
        best_shard[$p]=$(awk -v a="$sr" -v b="${best_shard[$p]}" 'BEGIN { print (a > b ? a : b) }')
        wl=$w
        [ "$w" = auto ] && wl="auto ($sw)"
        say "| $p | $wl | $(cell "${srs[@]}") | $(median "${sfs[@]}") | $(ratio "$sr" "${best_torch[$p]}") |"
    done
done
say ""
for p in guide light; do
    t1="" t2=""
    [ $p = guide ] && t1=" (target 5x)" t2=" (target 20x)"
    say "$p: loom best ${best_loom[$p]} images/s, torch best ${best_torch[$p]}: $(ratio "${best_loom[$p]}" "${best_torch[$p]}")$t1;" \
        "packed shard best ${best_shard[$p]}: $(ratio "${best_shard[$p]}" "${best_torch[$p]}")$t2"
done
say "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$out" ]; then cp "$report" "$out"; echo "written: $out"; fi
