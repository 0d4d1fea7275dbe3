#!/usr/bin/env bash
# tests/cli-hardening.sh LOOM — the command line against hostile input
# (issue 18): numbers are decimal only and range-checked, list items are
# never empty, non-finite weights are refused unless --allow-nonfinite,
# divergence stops the run before a bad checkpoint is written, --data-dir
# reports the real error of any dataset, resuming past the end is a
# message, and the logs report write errors naming the file.
set -u
LOOM=$1
. "$(dirname "$0")/cli_lib.sh"

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

# ---- --data-dir: any dataset the loader opens, its real error, classes checked ----
le() { local v=$1 n=$2 s="" t k; for ((k = 0; k < n; k++)); do printf -v t '\\x%02x' $(((v >> (8 * k)) & 255)); s+=$t; done; printf '%b' "$s"; }
npy() { # FILE DESCR SHAPE: a .npy file (version 1) with the data from stdin
  local hdr="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
  local pad=$(((64 - (10 + ${#hdr} + 1) % 64) % 64))
  hdr+=$(printf '%*s' "$pad" '')
  { printf '\x93NUMPY\x01\x00'; le $((${#hdr} + 1)) 2; printf '%s\n' "$hdr"; cat; } >"$1"
}
bmp() { # FILE W H: a small 24-bit BMP (rows of W BGR pixels padded to 4 bytes)
  local row=$((($2 * 3 + 3) / 4 * 4))
  { printf 'BM'; le $((54 + row * $3)) 4; le 0 4; le 54 4; le 40 4; le "$2" 4; le "$3" 4; le 1 2; le 24 2; le 0 4
    le $((row * $3)) 4; le 2835 4; le 2835 4; le 0 4; le 0 4; head -c $((row * $3)) /dev/zero | tr '\0' '\100'; } >"$1"
}
R=(--backend cpu --model mlp --max-steps 1 --batch 4 --max-eval 8)
mkdir -p "$tmp/np"
head -c 128 /dev/zero | tr '\0' '\100' | npy "$tmp/np/train-images.npy" '|u1' '(8, 4, 4)'
printf '\x00\x01\x00\x01\x00\x01\x00\x01' | npy "$tmp/np/train-labels.npy" '|u1' '(8,)'
expect 0 "train-images.npy: 8 images, 2 classes -> 1x4x4" -- train --data-dir "$tmp/np" "${R[@]}"
expect 0 "RESULT backend=cpu model=mlp epochs=1"           -- train --data-dir "$tmp/np" "${R[@]}"
expect 1 "skip-bad-samples is for an ImageFolder"          -- train --data-dir "$tmp/np" "${R[@]}" --skip-bad-samples
head -c 64 /dev/zero | npy "$tmp/np/test-images.npy" '|u1' '(4, 4, 4)'
printf '\x00\x01\x05\x01' | npy "$tmp/np/test-labels.npy" '|u1' '(4,)'
expect 1 "test sample 2 has label 5, but the model has 2 classes \(0..1: the largest training label \+ 1\)" -- train --data-dir "$tmp/np" "${R[@]}"
expect 0 "RESULT"                                          -- train --data-dir "$tmp/np" "${R[@]}" --classes 6
printf '\x00\x01\x00\x01\x00\x01\x00\xc8' | npy "$tmp/np/train-labels.npy" '|u1' '(8,)'
rm "$tmp/np/test-images.npy" "$tmp/np/test-labels.npy"
expect 0 "warning: .*training labels go up to 200 but only 3 of those 201 classes have samples" -- train --data-dir "$tmp/np" "${R[@]}"
expect 1 "training sample 7 has label 200, but the model has 10 classes \(0..9: --classes\)" -- train --data-dir "$tmp/np" "${R[@]}" --classes 10
printf 'garbage' >"$tmp/np/train-images.npy"
expect 1 "np/train-images.npy: "                           -- train --data-dir "$tmp/np" "${R[@]}"
refute "no train-images-idx3-ubyte"                        -- train --data-dir "$tmp/np" "${R[@]}"
head -c 512 /dev/zero | npy "$tmp/np/train-images.npy" '<f4' '(8, 4, 4)'
expect 1 "train-images.npy: float records: loom train trains on u8 images" -- train --data-dir "$tmp/np" "${R[@]}"
mkdir -p "$tmp/sh" && printf 'garbage, not a shard' >"$tmp/sh/train.shard"
expect 1 "sh/train.shard"                                  -- train --data-dir "$tmp/sh" "${R[@]}"
refute "no train-images-idx3-ubyte"                        -- train --data-dir "$tmp/sh" "${R[@]}"
mkdir -p "$tmp/if/train/ant" "$tmp/if/train/bee" "$tmp/if/val/ant" "$tmp/if/val/cat"
for f in a b c; do bmp "$tmp/if/train/ant/$f.bmp" 4 4; bmp "$tmp/if/val/ant/$f.bmp" 4 4; done
T=(--transform 'Resize((4, 4))')
expect 1 "if/train/bee.*no image"                          -- train --data-dir "$tmp/if" "${R[@]}" "${T[@]}"
for f in d e f; do bmp "$tmp/if/train/bee/$f.bmp" 4 4; bmp "$tmp/if/val/cat/$f.bmp" 4 4; done
expect 1 "if/val: the class folders differ from .*if/train's: class 1 is 'bee' there and 'cat' here" -- train --data-dir "$tmp/if" "${R[@]}" "${T[@]}"
mv "$tmp/if/val/cat" "$tmp/if/val/bee"
expect 0 "RESULT"                                          -- train --data-dir "$tmp/if" "${R[@]}" "${T[@]}"
expect 1 "--classes 3, but .*if declares 2 classes"        -- train --data-dir "$tmp/if" "${R[@]}" "${T[@]}" --classes 3
expect 2 "bad value '1' for --classes"                     -- train --classes 1 "${Q[@]}"

# ---- resume past the end, metadata bounds, --grad-accum past an epoch ----
M=(--backend cpu --model mlp --max-eval 64)
expect 0 "ok.st: the run is at epoch 1 of 1: nothing left to train" -- train "${M[@]}" --resume "$tmp/ok.st"
refute "RESULT|test_acc=nan"                                   -- train "${M[@]}" --resume "$tmp/ok.st"
# set_meta FILE KEY VALUE: rewrite the header's metadata value (the header length follows)
set_meta() {
  local hlen
  hlen=$(od -An -t u8 -N8 "$1" | tr -d ' ')
  head -c $((8 + hlen)) "$1" | tail -c "$hlen" | sed -E "s/\"$2\":\"[^\"]*\"/\"$2\":\"$3\"/" >"$tmp/hdr"
  { le "$(stat -c %s "$tmp/hdr")" 8; cat "$tmp/hdr"; tail -c +$((9 + hlen)) "$1"; } >"$1.new" && mv "$1.new" "$1"
}
for v in 99999999999999999999 -1 0x5 ' 1' 2147483647; do
  cp "$tmp/ok.st" "$tmp/meta.st"; set_meta "$tmp/meta.st" loom.epoch "$v"
  expect 1 "metadata 'loom.epoch' is '$v', expected an integer in 0..2147483646" -- train "${M[@]}" --max-steps 1 --epochs 3 --resume "$tmp/meta.st"
done
cp "$tmp/ok.st" "$tmp/meta.st"; set_meta "$tmp/meta.st" loom.seed 18446744073709551616
expect 1 "metadata 'loom.seed' is '18446744073709551616'" -- train "${M[@]}" --max-steps 1 --epochs 3 --resume "$tmp/meta.st"
cp "$tmp/ok.st" "$tmp/meta.st"; set_meta "$tmp/meta.st" loom.opt_steps 99
expect 1 "loom.opt_steps 99 is more than loom.opt_micro 2" -- train "${M[@]}" --max-steps 1 --epochs 3 --resume "$tmp/meta.st"
cp "$tmp/ok.st" "$tmp/meta.st"; set_meta "$tmp/meta.st" loom.epoch 2
expect 0 "RESULT backend=cpu model=mlp epochs=3"            -- train "${M[@]}" --max-steps 1 --epochs 3 --resume "$tmp/meta.st"
expect 2 "--grad-accum 5: the run has 3 batches \(3 per epoch x 1 epochs\): no optimizer step would be taken" -- train "${M[@]}" --max-steps 3 --grad-accum 5
expect 0 "warning: --grad-accum 5 is more than the 3 batches of an epoch: .*the first after 5 batches, in epoch 2" -- train "${M[@]}" --max-steps 3 --grad-accum 5 --epochs 2

# ---- logs and plots: no special files replaced, write errors name the file ----
L=(--backend cpu --model mlp --max-steps 40 --max-eval 64 --quiet)
expect 1 "the CSV log '/dev/full' exists and is not a regular file" -- train "${L[@]}" --log-csv /dev/full
mkfifo "$tmp/fifo.csv"
expect 1 "fifo.csv' exists and is not a regular file"        -- train "${L[@]}" --log-csv "$tmp/fifo.csv"
# a full disk, as the process sees it: a 1 KiB file-size limit (EFBIG, SIGXFSZ ignored)
full() { (trap '' XFSZ; ulimit -f 1; "$LOOM" "$@"); }
out=$(full train "${L[@]}" --log-csv "$tmp/big.csv" 2>&1); rc=$?
ok=0; [ "$rc" -eq 1 ] && grep -q "writing the CSV log '$tmp/big.csv' failed: File too large" <<<"$out" && ok=1
check "a full disk under --log-csv is an error naming the file (exit $rc: $out)" [ "$ok" = 1 ]
out=$(full train "${L[@]}" --tensorboard "$tmp/tbfull" 2>&1); rc=$?
ok=0; [ "$rc" -eq 1 ] && grep -q "tensorboard: writing '$tmp/tbfull/events.out.tfevents.*' failed: File too large" <<<"$out" && ok=1
check "a full disk under --tensorboard is an error naming the file (exit $rc: $out)" [ "$ok" = 1 ]
mkfifo "$tmp/lf.csv"
expect 1 "lf.csv exists and is not a regular file"           -- lr-find "${L[@]}" --lr-steps 12 --out "$tmp/lf"
rm "$tmp/lf.csv"
printf 'previous' >"$tmp/lf.svg"
out=$(full lr-find "${L[@]}" --lr-steps 12 --out "$tmp/lf" 2>&1); rc=$?
ok=0; [ "$rc" -eq 1 ] && [ "$(cat "$tmp/lf.svg")" = previous ] && ok=1
check "a full disk under lr-find is an error, the previous SVG stays (exit $rc: $out)" [ "$ok" = 1 ]
C=$(dirname "$0")/fuzz/corpus/plotcsv
expect 0 "wrote $tmp/long.svg \(1 rows"                     -- plot "$C/long_line.csv" -o "$tmp/long.svg"
expect 1 "bad_number.csv: line 2: column 'loss' is 'abc', not a number" -- plot "$C/bad_number.csv" -o "$tmp/x.svg"
expect 1 "short_row.csv: line 2: 3 fields, but the header has 4" -- plot "$C/short_row.csv" -o "$tmp/x.svg"
expect 1 "nul.csv: a NUL byte at offset 38"                 -- plot "$C/nul.csv" -o "$tmp/x.svg"
expect 1 "bad_kind.csv: line 2: kind 'bogus'"              -- plot "$C/bad_kind.csv" -o "$tmp/x.svg"
expect 1 "lrfind_short.csv: line 2: '0,1,2' is not step,lr,loss,smoothed_loss,suggested" -- plot "$C/lrfind_short.csv" -o "$tmp/x.svg"
expect 1 "missing_column.csv: line 1: no 'accuracy' column" -- plot "$C/missing_column.csv" -o "$tmp/x.svg"
expect 1 "/dev/full exists and is not a regular file"      -- plot "$C/run.csv" -o /dev/full
[ ! -e "$tmp/x.svg" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: a refused plot wrote $tmp/x.svg"; }

echo "cli-hardening: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
