#!/usr/bin/env bash
# tests/cli-hardening.sh LOOM — the command line against hostile input
# (issue 18): numbers are decimal only and range-checked, list items are
# never empty, non-finite weights are refused unless --allow-nonfinite,
# divergence stops the run before a bad checkpoint is written, --data-dir
# reports the real error of any dataset, resuming past the end is a
# message, and the logs report write errors naming the file.
set -u
LOOM=$1
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect CODE PATTERN -- ARGS...: exit code CODE and PATTERN in stdout+stderr
expect() {
  local code=$1 pat=$2
  shift 3
  local out rc
  out=$("$LOOM" "$@" 2>&1)
  rc=$?
  if [ "$rc" -eq "$code" ] && grep -qE -- "$pat" <<<"$out"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: loom $* -> exit $rc (want $code), output lacks /$pat/:"
    head -8 <<<"$out" | sed 's/^/    /'
  fi
}

# refute PATTERN -- ARGS...: PATTERN not in stdout+stderr (any exit code)
refute() {
  local pat=$1
  shift 2
  local out
  out=$("$LOOM" "$@" 2>&1)
  if grep -qE -- "$pat" <<<"$out"; then
    fail=$((fail + 1))
    echo "FAIL: loom $* -> output has /$pat/:"
    grep -E -- "$pat" <<<"$out" | head -3 | sed 's/^/    /'
  else
    pass=$((pass + 1))
  fi
}

# check WHAT CONDITION...: a condition on files
check() {
  local what=$1
  shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $what"; fi
}

# ---- numbers: decimal only, ranges checked, no empty list items ----
# (Q: a short run, should a value be taken)
Q=(--backend cpu --model mlp --max-steps 1 --max-eval 64 --quiet)
expect 2 "bad value '0x10' for --lr"            -- train --lr 0x10 "${Q[@]}"
expect 2 "bad value 'inf' for --lr"             -- train --lr inf "${Q[@]}"
expect 2 "bad value 'infinity' for --gamma"     -- train --gamma infinity "${Q[@]}"
expect 2 "bad value '1e308' for --lr \(at most 1e15\)" -- train --lr 1e308 "${Q[@]}"
expect 2 "bad value '1e999' for --lr"           -- train --lr 1e999 "${Q[@]}"
expect 2 "bad value ' 0.1' for --lr"            -- train --lr ' 0.1' "${Q[@]}"
expect 2 "bad value '0.1x' for --lr"            -- train --lr 0.1x "${Q[@]}"
expect 2 "bad value '0x1p-3' for --momentum"    -- train --momentum 0x1p-3 "${Q[@]}"
expect 2 "bad value '0x5' for --epochs"         -- train --epochs 0x5 "${Q[@]}"
expect 2 "bad value '\+5' for --epochs"         -- train --epochs +5 "${Q[@]}"
expect 2 "bad value ' 5' for --epochs"          -- train --epochs ' 5' "${Q[@]}"
expect 2 "bad value '5 ' for --batch"           -- train --batch '5 ' "${Q[@]}"
expect 2 "bad value '1e2' for --batch"          -- train --batch 1e2 "${Q[@]}"
expect 2 "bad value '99999999999999999999' for --seed" -- train --seed 99999999999999999999 "${Q[@]}"
expect 2 "bad value '1,,2' for --milestones"    -- train --milestones 1,,2 "${Q[@]}"
expect 2 "bad value '1,' for --milestones"      -- train --milestones 1, "${Q[@]}"
expect 2 "bad value ',1' for --milestones"      -- train --milestones ,1 "${Q[@]}"
expect 2 "bad value 'nan' for --milestones"     -- train --milestones nan "${Q[@]}"
expect 2 "bad value 'conv\*,,bn\*' for --freeze" -- train --freeze 'conv*,,bn*' "${Q[@]}"
expect 2 "bad value '0x8' for --workers"        -- train --workers 0x8 "${Q[@]}"
expect 2 "bad value '0x10' for --lr-steps"      -- lr-find --lr-steps 0x10 "${Q[@]}"
expect 2 "bad value for --size .*'0x1c'"        -- pack --size 0x1c
expect 2 "bad value for --size .*'28x'"         -- pack --size 28x
expect 2 "bad value for --size .*'28x0x10'"     -- pack --size 28x0x10
expect 2 "bad value for --size .*' 28'"         -- pack --size ' 28'
expect 2 "bad value for --batch.*'0x10'"        -- bench-loader --batch 0x10
expect 2 "bad value for --epochs.*'-1'"         -- bench-loader --epochs -1

# ---- non-finite weights: refused by --init-from and --resume unless --allow-nonfinite ----
# nan_at FILE TENSOR: the first value of TENSOR (f32) becomes a NaN
nan_at() {
  local hlen off
  hlen=$(od -An -t u8 -N8 "$1" | tr -d ' ')
  off=$(head -c $((8 + hlen)) "$1" | tail -c "$hlen" | grep -oE "\"$2\":\{[^}]*\}" | sed -E 's/.*"data_offsets":\[([0-9]+),.*/\1/')
  printf '\x00\x00\xc0\x7f' | dd of="$1" bs=1 seek=$((8 + hlen + off)) conv=notrunc status=none
}
"$LOOM" train --backend cpu --model mlp --max-steps 2 --max-eval 64 --quiet --save "$tmp/ok.st" >/dev/null 2>&1
cp "$tmp/ok.st" "$tmp/nan.st"
nan_at "$tmp/nan.st" fc1.weight
expect 1 "'fc1.weight' holds NaN at index 0" -- train --backend cpu --model mlp --max-steps 1 --init-from "$tmp/nan.st"
expect 1 "--allow-nonfinite loads"               -- train --backend cpu --model mlp --max-steps 1 --init-from "$tmp/nan.st"
expect 1 "'fc1.weight' holds NaN at index 0" -- train --backend cpu --model mlp --max-steps 1 --epochs 2 --resume "$tmp/nan.st"
# loaded on request: the NaN weight then makes the loss NaN, and the run stops there
expect 1 "init: loaded 6 tensors" -- train --backend cpu --model mlp --max-steps 1 --max-eval 64 --init-from "$tmp/nan.st" --allow-nonfinite
refute "holds NaN" -- train --backend cpu --model mlp --max-steps 1 --max-eval 64 --epochs 2 --resume "$tmp/nan.st" --allow-nonfinite

# ---- divergence: an error naming the step and the LR; the previous checkpoint stays as it was ----
"$LOOM" train --backend cpu --model mlp --max-steps 2 --max-eval 64 --quiet --save "$tmp/div.st" >/dev/null 2>&1
sum0=$(sha256sum < "$tmp/div.st")
expect 1 "the loss became -?nan at epoch 2 step [0-9]+ \(lr 1e\+06\): diverged" -- train --backend cpu --model mlp \
  --max-steps 20 --max-eval 64 --epochs 2 --schedule constant --lr 1e6 --resume "$tmp/div.st" --save "$tmp/div.st"
check "a diverged mlp run leaves the previous checkpoint as it was" [ "$(sha256sum < "$tmp/div.st")" = "$sum0" ]
# the cnn's loss stays finite (batch norm renormalises) while bn2.running_var overflows: the epoch-end check
"$LOOM" train --backend cpu --model cnn --max-steps 2 --max-eval 64 --quiet --save "$tmp/cnn.st" >/dev/null 2>&1
sum1=$(sha256sum < "$tmp/cnn.st")
expect 1 "diverged in epoch 2 \(optimizer step [0-9]+, lr 1e\+06\): 'bn[0-9].running_var' holds \+inf" -- train \
  --backend cpu --model cnn --max-steps 7 --max-eval 64 --epochs 2 --schedule constant --lr 1e6 --resume "$tmp/cnn.st" --save "$tmp/cnn.st"
check "a diverged cnn run leaves the previous checkpoint as it was" [ "$(sha256sum < "$tmp/cnn.st")" = "$sum1" ]
"$LOOM" train --backend cpu --model mlp --optimizer adam --max-steps 2 --max-eval 64 --quiet --save "$tmp/adam.st" >/dev/null 2>&1
sum2=$(sha256sum < "$tmp/adam.st")
expect 1 "the loss became -?nan at epoch 2 step [0-9]+ \(lr 1e\+14\): diverged" -- train --backend cpu --model mlp \
  --optimizer adam --max-steps 20 --max-eval 64 --epochs 2 --schedule constant --lr 1e14 --resume "$tmp/adam.st" --save "$tmp/adam.st"
check "a diverged adam run leaves the previous checkpoint as it was" [ "$(sha256sum < "$tmp/adam.st")" = "$sum2" ]

echo "cli-hardening: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
