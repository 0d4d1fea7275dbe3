#!/usr/bin/env bash
# bench/train_vs_torch.sh — training throughput of `loom train` (CPU backend)
# against PyTorch CPU (bench/torch_train.py) on Fashion-MNIST (mlp, cnn,
# resnet20) and on text (gpt, tokens/s), same batch size, optimizer and
# thread count.
#
# loom:  loom train --backend cpu --model M --epochs 1 --max-steps S --batch B
#        --threads T --optimizer O --workers 0 --quiet; samples_per_s from its
#        RESULT line. --workers 0: batches are gathered on the training thread,
#        as torch_train.py does (no DataLoader, no workers), so both sides time
#        the same thing: batch gather + training step.
#        (training loop only, evaluation excluded; the first step is included).
# gpt:   loom train --model gpt --data-dir TOKENS (a token file that
#        `loom pack-text` makes of /usr/share/common-licenses, or --tokens)
#        with loom's default size (4 layers, 4 heads, embd 128, seq 128);
#        tokens_per_s from both sides' RESULT lines.
# torch: bench/torch_train.py --model M --steps S --batch B --threads T
#        --optimizer O (10 untimed warm-up steps first). Both follow their
#        default schedule (cosine over the run) and loom train's default lr.
# OPENBLAS_CORETYPE is unset for both sides unless --keep-coretype: only loom
# uses OpenBLAS, and a forced older core type slows its GEMMs (the header says
# which kernels OpenBLAS picked).
# Each round runs loom then torch for a model, so a load change on a shared
# machine hits both; every run is printed, then a table with the median and
# the best (highest) samples/s of the rounds, and their loom/torch ratios.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
threads=2 batch=64 steps_mlp=300 steps_cnn=100 steps_resnet20=10 steps_gpt=20 rounds=5 optimizer=sgd
python=${PYTHON:-python3} tokens=""
loom=${LOOM:-$root/build/loom}
models="mlp cnn"
coretype=unset

usage() {
    cat <<EOF
usage: bench/train_vs_torch.sh [options]
  --threads N        threads for both (default 2)
  --batch N          batch size (default 64)
  --steps N          timed steps for every model (default 300 mlp, 100 cnn)
  --optimizer NAME   sgd|adam|adamw (default sgd; lr and momentum: loom train's defaults)
  --rounds N         rounds per model (default 5)
  --models LIST      of "mlp cnn resnet20 gpt" (default "mlp cnn"); gpt trains with
                     AdamW whatever --optimizer says (as GPTs are trained)
  --tokens FILE      gpt's token file (default: made with loom pack-text from
                     /usr/share/common-licenses)
  --python PATH      the Python with torch (default \$PYTHON or python3)
  --loom PATH        the loom binary (default \$LOOM or build/loom)
  --keep-coretype    keep OPENBLAS_CORETYPE as the environment has it (default: unset it
                     for both sides, so OpenBLAS picks kernels for this CPU; only loom uses
                     OpenBLAS, torch uses MKL/oneDNN). Where OpenBLAS's CPU detection fails
                     (\`loom info\` then says so: some VMs), set OPENBLAS_CORETYPE and pass this
EOF
}

while [ $# -gt 0 ]; do
    case $1 in
    --threads) threads=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --steps) steps_mlp=$2; steps_cnn=$2; steps_resnet20=$2; steps_gpt=$2; shift 2 ;;
    --tokens) tokens=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --optimizer) optimizer=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --loom) loom=$2; shift 2 ;;
    --keep-coretype) coretype=keep; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "train_vs_torch.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done

if [ ! -x "$loom" ]; then
    echo "train_vs_torch.sh: no loom binary at $loom (build it: cmake -S . -B build && cmake --build build -j; or pass --loom)" >&2
    exit 1
fi
was=${OPENBLAS_CORETYPE-}
if [ "$coretype" = unset ]; then
    unset OPENBLAS_CORETYPE
    ct_note="OPENBLAS_CORETYPE unset for both sides (environment had '${was:-<not set>}'; --keep-coretype keeps it)"
else
    ct_note="OPENBLAS_CORETYPE='${was:-<not set>}' kept for both sides, as the environment has it"
fi
core=$(python3 -c 'import ctypes; l = ctypes.CDLL("libopenblas.so.0"); l.openblas_get_corename.restype = ctypes.c_char_p; print(l.openblas_get_corename().decode())' 2>/dev/null) &&
    ct_note="$ct_note: OpenBLAS uses its $core kernels"

have_torch=1
torch_why=$("$python" -c 'import torch' 2>&1) || have_torch=0

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else if (NR % 2) print a[(NR+1)/2]; else printf "%.0f\n", (a[NR/2]+a[NR/2+1])/2}'; }
best() { tr ' ' '\n' | grep -v '^$' | sort -g | tail -n 1 | grep . || echo "-"; }
ratio() { if [ "$1" = - ] || [ "$2" = - ]; then echo -; else awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; fi; }
pressure() { sed -n 's/^some avg10=\([^ ]*\).*/\1%/p' /proc/pressure/cpu 2>/dev/null || echo "?"; }
field() { sed -n "s/.*RESULT .*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" | tail -n 1; }

echo "loom train vs PyTorch CPU: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), load $(cut -d' ' -f1-3 /proc/loadavg)$(sed -n 's/^some avg10=\([^ ]*\) avg60=\([^ ]*\).*/, cpu pressure (some) avg10 \1% avg60 \2%/p' /proc/pressure/cpu 2>/dev/null)"
echo "loom: $loom, commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$root" diff --quiet HEAD 2>/dev/null || echo ' + working tree')"
[ $have_torch = 0 ] && echo "torch: SKIPPED, 'import torch' failed: $(printf '%s' "$torch_why" | tail -n 1)"
[ $have_torch = 1 ] && echo "torch: $("$python" -c 'import torch; print(torch.__version__, "BLAS:", "MKL" if torch.backends.mkl.is_available() else "?", "oneDNN:", torch.backends.mkldnn.is_available())' 2>/dev/null)"
echo "$ct_note"
echo "batch $batch, threads $threads, optimizer $optimizer, $rounds rounds, steps: mlp $steps_mlp, cnn $steps_cnn, resnet20 $steps_resnet20, gpt $steps_gpt"
case " $models " in *" gpt "*)
    if [ -z "$tokens" ]; then
        tmpd=$(mktemp -d "${TMPDIR:-/tmp}/loom-tvt.XXXXXX")
        trap 'rm -rf "$tmpd"' EXIT
        tokens=$tmpd/licenses.bin
        "$loom" pack-text /usr/share/common-licenses/* --out "$tokens" --val-fraction 0.05 > /dev/null
    fi
    echo "gpt tokens: $tokens ($(($(stat -c %s "$tokens") / 2)) tokens)" ;;
esac
echo

table=""
for m in $models; do
    eval "steps=\$steps_$m"
    metric=samples_per_s opt=$optimizer
    loom_args=(--data fashion-mnist --workers 0) torch_args=()
    if [ "$m" = gpt ]; then
        metric=tokens_per_s opt=adamw loom_args=(--data-dir "$tokens" --max-eval 64) torch_args=(--tokens "$tokens")
    fi
    lv="" tv=""
    for r in $(seq 1 "$rounds"); do
        out=$("$loom" train --backend cpu "${loom_args[@]}" --model "$m" --epochs 1 --max-steps "$steps" --batch "$batch" \
            --threads "$threads" --optimizer "$opt" --quiet 2>&1) || {
            echo "loom train failed for $m:"; echo "$out"; exit 1
        }
        l=$(printf '%s\n' "$out" | field $metric)
        lv="$lv $l"
        t="-"
        if [ $have_torch = 1 ]; then
            tout=$("$python" "$here/torch_train.py" --model "$m" --steps "$steps" --batch "$batch" --threads "$threads" \
                --optimizer "$opt" "${torch_args[@]}" 2>&1) || { echo "torch_train.py failed for $m:"; echo "$tout"; exit 1; }
            t=$(printf '%s\n' "$tout" | field $metric)
            tv="$tv $t"
        fi
        printf '%-8s round %d: loom %8s %s (after %s steps)   torch %8s   cpu pressure %s\n' \
            "$m" "$r" "$l" "$metric" "$steps" "$t" "$(pressure)"
    done
    lm=$(echo "$lv" | median) lb=$(echo "$lv" | best) tm=- tb=-
    if [ $have_torch = 1 ]; then tm=$(echo "$tv" | median) tb=$(echo "$tv" | best); fi
    target=">= 1.5"
    [ "$m" = mlp ] && target=">= 2.0"
    table="$table$(printf '| %-8s | %5s | %7s | %6s / %6s | %6s / %6s | %5s / %5s | %6s |' "$m" "$batch" "$threads" \
        "$lm" "$lb" "$tm" "$tb" "$(ratio "$lm" "$tm")" "$(ratio "$lb" "$tb")" "$target")\n"
done

echo
echo "samples/s (gpt: tokens/s) of the training step, median / best of $rounds rounds:"
echo "| model    | batch | threads | loom            | torch           | loom/torch    | target |"
echo "|----------|-------|---------|-----------------|-----------------|---------------|--------|"
printf "$table"
echo "cpu pressure (some, avg10) now: $(pressure). Where it was above a few % during the rounds, other jobs shared"
echo "the cores: torch (OpenMP spin-waits) then slows far more than loom, so the medians mislead; read the best-of"
echo "ratios or run again on a quiet machine."
