#!/usr/bin/env bash
# bench/loader_guide.sh — the loader on the guide's own pipeline, side by
# side in one run, on the same files and cores, rounds interleaved:
#   loom plain:  `loom bench-loader --transform` Resize((256, 256)); RandomCrop(224);
#                RandomHorizontalFlip(); ColorJitter(0.2, 0.2, 0.2); RandomAffine(15,
#                translate=(0.1, 0.1), scale=(0.9, 1.1)) (+ ToTensor + Normalize,
#                ImageNet mean/std), workers auto, 2 epochs: the second epoch's images/s
#   loom order:  the same four random steps in RandomOrder([...])
#   torch:       bench/torch_loader.py --pipeline guide-exact / guide-order
#                (torchvision ImageFolder + DataLoader, batch 64), workers 1, 2, 3: its best
#   decode:      bench-decode_bound with LOOM_JPEG_HUFF=0 (the ImageFolder source's decode
#                with libjpeg-turbo's own decoder alone, at the scale the leading
#                Resize((256, 256)) allows, every core): the limit the issue names
#   own decode:  bench-decode_bound as loom decodes (its own Huffman decoder inside
#                libjpeg-turbo, loader/jpeg_huff.c): loom's decode alone, every core
# on two JPEG sets: the project's (bench/gen_jpegs.py: 500x375, quality 90) and
# bench/gen_jpegs_mixed.py (other sizes, qualities 70-95, 4:4:4 and 4:2:0).
# Prints a markdown report: medians (min-max) over the rounds, loom / torch's best
# (same pipeline), loom / decode-bound, loom / its own decode alone; below the table, the medians of each round's own
# ratios (its two sides measured a few seconds apart: slow swings of the machine cancel).
#
# usage: bench/loader_guide.sh [--loom PATH] [--decode PATH] [--python PY] [--rounds R]
#                              [--count N] [--count-mixed N] [--out FILE.md]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
loom="$here/../build/loom"
decode="$here/../build/bench/bench-decode_bound"
py=/work/venv-torch/bin/python
rounds=3 count=2000 count_mixed=1000 out=""
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
    --loom) loom=$2; shift 2 ;;
    --decode) decode=$2; shift 2 ;;
    --python) py=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --count-mixed) count_mixed=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "loader_guide.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
[ -x "$loom" ] && [ -x "$decode" ] || { echo "loader_guide.sh: build loom and bench-decode_bound first" >&2; exit 1; }
"$py" -c 'import torch, torchvision, PIL, numpy' 2>/dev/null || { echo "loader_guide.sh: $py lacks torch/torchvision/pillow/numpy" >&2; exit 1; }
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

# the data, regenerated when the count differs
gen() { # DIR COUNT SCRIPT
    local have
    have=$( (find "$1/train" -name '*.jpg' 2>/dev/null || true) | wc -l)
    if [ "$have" != "$2" ]; then rm -rf "$1"; "$py" "$here/$3" "$1" --count "$2" --classes 10 > /dev/null; fi
}
gen /tmp/loom-bench-jpegs "$count" gen_jpegs.py
gen /tmp/loom-bench-mixed "$count_mixed" gen_jpegs_mixed.py

rand='RandomCrop(224); RandomHorizontalFlip(); ColorJitter(0.2, 0.2, 0.2); RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1))'
plain="Resize((256, 256)); $rand"
order="Resize((256, 256)); RandomOrder([${rand//;/,}])"
field() { sed -n "s/.*RESULT.* $1=\([0-9.]*\).*/\1/p" | tail -n 1; }
loom_rate() { sed -n 's/^epoch [0-9]*: .*(\([0-9.]*\) images\/s).*/\1/p' | tail -n 1; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
cell() { local s; s=$(printf '%s\n' "$@" | sort -g); echo "$(median "$@") ($(head -n 1 <<<"$s")-$(tail -n 1 <<<"$s"))"; }
ratio() { awk -v a="$1" -v b="$2" -v pct="${3:-}" 'BEGIN { if (b <= 0) print "-"; else if (pct) printf "%.0f%%", 100 * a / b; else printf "%.1fx", a / b }'; }

report=$(mktemp)
trap 'rm -f "$report"' EXIT
say() { printf '%s\n' "$*" | tee -a "$report"; }
say "$(date -u '+%Y-%m-%d %H:%M UTC'), loom $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores" \
    "($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load average before: $(cut -d' ' -f1-3 /proc/loadavg);" \
    "$("$py" -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__)')"
say "command: bench/loader_guide.sh --rounds $rounds --count $count --count-mixed $count_mixed"
say ""
say "| JPEG set | decode-bound images/s (libjpeg-turbo) | loom's decode alone | loom plain | loom RandomOrder | torch plain (best of 1/2/3 workers) | torch RandomOrder (best) | loom / torch, plain | loom / torch, order | loom % of decode-bound, plain | order | loom % of its own decode, plain | order |"
say "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
paired=""
for set in jpegs mixed; do
    data=/tmp/loom-bench-$set
    dec=() own=() lp=() lo=() tp=() to=()
    for ((r = 0; r < rounds; r++)); do
        dec+=("$(LOOM_JPEG_HUFF=0 "$decode" "$data" --min 256x256 | field decode_images_per_s)")
        own+=("$("$decode" "$data" --min 256x256 | field decode_images_per_s)")
        lp+=("$("$loom" bench-loader --data-dir "$data" --transform "$plain" --workers auto --epochs 2 --breakdown 0 | loom_rate)")
        lo+=("$("$loom" bench-loader --data-dir "$data" --transform "$order" --workers auto --epochs 2 --breakdown 0 | loom_rate)")
        for p in guide-exact guide-order; do
            best=0
            for w in 1 2 3; do
                t=$("$py" "$here/torch_loader.py" --data-dir "$data" --pipeline "$p" --workers "$w" | field images_per_s)
                best=$(awk -v a="$t" -v b="$best" 'BEGIN { print (a > b ? a : b) }')
            done
            if [ "$p" = guide-exact ]; then tp+=("$best"); else to+=("$best"); fi
        done
        echo "round $((r + 1)) $set: decode ${dec[-1]} (own ${own[-1]}) loom ${lp[-1]} / ${lo[-1]} torch ${tp[-1]} / ${to[-1]}" >&2
    done
    d=$(median "${dec[@]}") o=$(median "${own[@]}") a=$(median "${lp[@]}") b=$(median "${lo[@]}") c=$(median "${tp[@]}") e=$(median "${to[@]}")
    rt=() ro=() rdp=() rdo=() # each round's own ratios
    for ((r = 0; r < rounds; r++)); do
        rt+=("$(awk -v a="${lp[r]}" -v b="${tp[r]}" 'BEGIN { print (b > 0 ? a / b : 0) }')")
        ro+=("$(awk -v a="${lo[r]}" -v b="${to[r]}" 'BEGIN { print (b > 0 ? a / b : 0) }')")
        rdp+=("$(awk -v a="${lp[r]}" -v b="${dec[r]}" 'BEGIN { print (b > 0 ? a / b : 0) }')")
        rdo+=("$(awk -v a="${lo[r]}" -v b="${dec[r]}" 'BEGIN { print (b > 0 ? a / b : 0) }')")
    done
    paired+="$set: loom / torch $(ratio "$(median "${rt[@]}")" 1) / $(ratio "$(median "${ro[@]}")" 1),"
    paired+=" loom % of decode-bound $(ratio "$(median "${rdp[@]}")" 1 pct) / $(ratio "$(median "${rdo[@]}")" 1 pct) (plain / order); "
    say "| $set | $(cell "${dec[@]}") | $(cell "${own[@]}") | $(cell "${lp[@]}") | $(cell "${lo[@]}") | $(cell "${tp[@]}") | $(cell "${to[@]}") |" \
        "$(ratio "$a" "$c") | $(ratio "$b" "$e") | $(ratio "$a" "$d" pct) | $(ratio "$b" "$d" pct) | $(ratio "$a" "$o" pct) | $(ratio "$b" "$o" pct) |"
done
say ""
say "medians of the rounds' own ratios: ${paired% }"
# where a loom image's time goes (one thread, the project's set)
say ""
say "loom, one thread, per image (bench-loader --breakdown 200, the project's set):"
for s in "$plain" "$order"; do
    say "  $("$loom" bench-loader --data-dir /tmp/loom-bench-jpegs --transform "$s" --workers 1 --breakdown 200 | grep '^per image')"
done
[ -n "$out" ] && cp "$report" "$out"
exit 0
