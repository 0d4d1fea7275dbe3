#!/usr/bin/env bash
# tests/dist-repro-sizes.sh MPIRUN LOOM — reproducible mode across world sizes:
# with --reproducible --repro-shards 4 and the same global batch (64 = 1 x 64 =
# 2 x 32 = 4 x 16), the checkpoints after N steps are byte-identical on 1, 2 and
# 4 processes, for the mlp (SGD, then AdamW with gradient accumulation 2) and the
# cnn (batch norm: running statistics; dropout 0.5). And the check can fail:
# the same 2-process run with its default shard count (2) differs from the
# 4-shard result, and so does one process without shards, so equal bytes come
# from the shard order, not from a test that compares nothing.
# Needs Fashion-MNIST (/usr/share/datasets/fashion-mnist); skips without it.
set -uo pipefail
mpirun=${1:?usage: dist-repro-sizes.sh MPIRUN LOOM}
loom=${2:?usage: dist-repro-sizes.sh MPIRUN LOOM}
if [ ! -d /usr/share/datasets/fashion-mnist ]; then echo "SKIP: Fashion-MNIST absent"; exit 77; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
common=(train --backend cpu --threads 1 --workers 0 --max-eval 64 --quiet --seed 3 --reproducible)

# run NAME NP SHARDS ARGS...: NP processes, global batch 64 (0 shards: the default)
run() {
    local name=$1 np=$2 shards=$3
    shift 3
    local extra=()
    [ "$shards" -gt 0 ] && extra=(--repro-shards "$shards")
    if ! "$mpirun" -np "$np" --oversubscribe "$loom" "${common[@]}" --batch $((64 / np)) "${extra[@]}" "$@" \
        --save "$work/$name.st" > "$work/$name.log" 2>&1; then
        echo "FAIL: $name: $np processes exited non-zero:"; tail -5 "$work/$name.log"; fail=1
    fi
}
hash() { sha256sum < "$work/$1.st" 2>/dev/null | cut -c1-16; }
same() { # label A B ...: every checkpoint equals A's
    local label=$1 a=$2 ok=1
    shift 2
    for b in "$@"; do [ "$(hash "$a")" = "$(hash "$b")" ] && [ -n "$(hash "$a")" ] || ok=0; done
    if [ $ok = 1 ]; then echo "ok: $label: $(hash "$a")"; else
        echo "FAIL: $label:"; for x in "$a" "$@"; do echo "  $x $(hash "$x")"; done; fail=1; fi
}
differ() { # label A B
    if [ -n "$(hash "$2")" ] && [ "$(hash "$2")" != "$(hash "$3")" ]; then echo "ok: $1: $(hash "$2") != $(hash "$3")"
    else echo "FAIL: $1: $2 and $3 are the same ($(hash "$2"))"; fail=1; fi
}

mlp=(--model mlp --max-steps 8)
for np in 1 2 4; do run "mlp$np" $np 4 "${mlp[@]}"; done
same "mlp, SGD, 4 shards: 1, 2 and 4 processes bitwise equal" mlp1 mlp2 mlp4
acc=(--model mlp --max-steps 8 --optimizer adamw --grad-accum 2)
for np in 1 2 4; do run "acc$np" $np 4 "${acc[@]}"; done
same "mlp, AdamW, grad-accum 2, 4 shards: 1, 2 and 4 processes bitwise equal" acc1 acc2 acc4
cnn=(--model cnn --max-steps 3)
for np in 1 2 4; do run "cnn$np" $np 4 "${cnn[@]}"; done
same "cnn (batch norm, dropout), 4 shards: 1, 2 and 4 processes bitwise equal" cnn1 cnn2 cnn4
# the check can fail: another split of the global batch gives other bits
run mlp2-default 2 0 "${mlp[@]}"
differ "mlp, 2 processes with the default 2 shards vs 4 shards" mlp2-default mlp1
run mlp1-whole 1 0 "${mlp[@]}"
differ "mlp, 1 process without shards vs 4 shards" mlp1-whole mlp1
run mlp1-k2 1 2 "${mlp[@]}"
same "mlp, 2 processes (default shards) = 1 process --repro-shards 2" mlp2-default mlp1-k2
# a shard count the world size does not divide is an error naming it
if "$mpirun" -np 2 --oversubscribe "$loom" "${common[@]}" --model mlp --max-steps 1 --batch 32 --repro-shards 3 \
    > "$work/bad.log" 2>&1; then echo "FAIL: --repro-shards 3 on 2 processes ran"; fail=1
elif grep -q "multiple of the world size" "$work/bad.log"; then echo "ok: --repro-shards 3 on 2 processes: an error"
else echo "FAIL: --repro-shards 3 on 2 processes: unclear error:"; tail -3 "$work/bad.log"; fail=1; fi
exit $fail
