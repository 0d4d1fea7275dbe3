#!/usr/bin/env bash
# tests/cli.sh LOOM — the command line: bad flags and values give a usage
# message and exit code 2; bad files and runtime failures exit 1 with a message
# naming the problem; a short good run prints the RESULT line.
# LOOM_CLI_QUICK=1 (the sanitizer build): the amp runs evaluate 256 test samples,
# not the 10000 (two minutes of cnn evaluation in emulated 16 bits under ASan).
set -u
LOOM=$1
amp_eval=()
[ -n "${LOOM_CLI_QUICK:-}" ] && amp_eval=(--max-eval 256)
. "$(dirname "$0")/cli_lib.sh"

expect 2 "usage: loom"                      -- 
expect 2 "unknown command 'frobnicate'"      -- frobnicate
expect 2 "unknown option '--bogus'"          -- info --bogus
expect 2 "unknown option '--bogus'"          -- train --bogus
expect 2 "usage: loom train"                 -- train --bogus
expect 2 "bad value 'abc' for --epochs"      -- train --epochs abc
expect 2 "bad value '0' for --epochs"        -- train --epochs 0
expect 2 "--batch needs a value"             -- train --batch
expect 2 "bad value '-1' for --lr"           -- train --lr -1
expect 2 "bad value 'nan' for --lr"          -- train --lr nan
expect 2 "bad value '1.5' for --label-smoothing" -- train --label-smoothing 1.5
expect 2 "unknown model 'resnet'"            -- train --model resnet
expect 2 "unknown model 'resnet19'"          -- train --model resnet19
expect 2 "bad value '21' for --depth .resnet20: 6n\+2" -- train --model resnet20 --depth 21
expect 2 "bad value '20' for --depth .resnet18: 18, 34, 50, 101 or 152" -- train --model resnet18 --depth 20
expect 2 "bad value '4' for --depth"         -- train --model resnet20 --depth 4
expect 2 "bad value '0' for --width"         -- train --model resnet20 --width 0
expect 2 "are for the resnet models, not 'cnn'" -- train --model cnn --small-stem
expect 2 "unknown optimizer 'lbfgs'"         -- train --optimizer lbfgs
expect 2 "unknown schedule 'wavy'"           -- train --schedule wavy
expect 2 "bad value '2,x' for --milestones"  -- train --milestones 2,x
expect 2 "nesterov is for sgd only"          -- train --optimizer adam --nesterov
expect 2 "unknown dataset 'imagenet'"        -- train --data imagenet
expect 2 "unknown monitor 'f1'"             -- train --monitor f1
expect 2 "bad value 'fp8' for --amp"        -- train --amp fp8
expect 1 "reproducible mode: node .* uses f16; the mode is f32 only" -- train --backend cpu --reproducible --amp fp16 --max-steps 1 --quiet
expect 1 "reproducible mode: op 'clip_coef' .* has no canonical kernel" -- train --backend cpu --model mlp --reproducible --clip-grad 1 --max-steps 1 --quiet
expect 1 "frozen_16bit .* needs amp" -- train --backend cpu --model cnn --freeze 'conv*' --frozen-16bit --max-steps 1 --quiet
expect 0 "16 bits only" -- train --backend cpu --model cnn --freeze 'conv*,bn*' --amp fp16 --frozen-16bit --max-steps 2 --max-eval 256
expect 2 "bad value 'x' for --workers"      -- train --workers x
expect 2 "bad value '0' for --max-eval"     -- train --max-eval 0
expect 2 "early-stop needs --val-split"     -- train --early-stop 3
expect 2 "bad value '1' for --val-split"    -- train --val-split 1
expect 2 "lr-end must be above"             -- lr-find --lr-start 1 --lr-end 0.5
expect 2 "bad value 'conv1' for --init-map" -- train --init-map conv1
expect 2 "bad value 'fc1.*a.b=c.' for --init-map" -- train --init-map 'fc1.*=x.*,a*b=c*'
expect 2 "bad value 'x.=y' for --init-map"  -- train --init-map 'x*=y'
expect 2 "bad value 'conv1,,bn1' for --freeze" -- train --freeze conv1,,bn1
expect 2 "bad value '0' for --backbone-lr-mult" -- train --backbone-lr-mult 0
expect 2 "no CSV file given"                -- plot
expect 1 "no-such.csv"                      -- plot "$tmp/no-such.csv"
expect 1 "$tmp/none.*no train-images"        -- train --data-dir "$tmp/none" --quiet

# loom pack: a tiny ImageFolder of 24-bit BMPs of several sizes (written here,
# no image tools needed), packed, then trained on from the shard
le() { local v=$1 n=$2 s="" t k; for ((k = 0; k < n; k++)); do printf -v t '\\x%02x' $(((v >> (8 * k)) & 255)); s+=$t; done; printf '%b' "$s"; }
bmp() { # FILE W H SEED: bottom-up rows of W BGR pixels padded to 4 bytes
  local f=$1 w=$2 h=$3 seed=$4 x y s t row=$((($2 * 3 + 3) / 4 * 4))
  {
    printf 'BM'; le $((54 + row * h)) 4; le 0 4; le 54 4
    le 40 4; le "$w" 4; le "$h" 4; le 1 2; le 24 2; le 0 4; le $((row * h)) 4; le 2835 4; le 2835 4; le 0 4; le 0 4
    for ((y = 0; y < h; y++)); do
      s=""
      for ((x = 0; x < w; x++)); do
        printf -v t '\\x%02x\\x%02x\\x%02x' $(((seed * 40 + x * 9) & 255)) $(((y * 13 + seed) & 255)) $(((x * y + 3 * seed) & 255))
        s+=$t
      done
      for ((x = w * 3; x < row; x++)); do s+='\x00'; done
      printf '%b' "$s"
    done
  } >"$f"
}
mkdir -p "$tmp/if/train/ant" "$tmp/if/train/bee"
bmp "$tmp/if/train/ant/a.bmp" 8 6 1; bmp "$tmp/if/train/ant/b.bmp" 10 12 2; bmp "$tmp/if/train/ant/c.bmp" 7 7 3
bmp "$tmp/if/train/bee/d.bmp" 9 5 4; bmp "$tmp/if/train/bee/e.bmp" 16 16 5; bmp "$tmp/if/train/bee/f.bmp" 5 9 6
# RandomOrder as torchvision means it: the guide's spec trains, one checkpoint for 0, 1, 2 and auto workers; orders that end at different sizes are refused
mkdir -p "$tmp/ro/train"; cp -r "$tmp/if/train/ant" "$tmp/if/train/bee" "$tmp/ro/train/"
ro='Resize((256, 256)); RandomOrder([RandomCrop(224), RandomHorizontalFlip(), ColorJitter(0.2, 0.2, 0.2), RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1))])'
for w in 0 1 2 auto; do expect 0 "RESULT backend=cpu model=mlp" -- train --data-dir "$tmp/ro" --transform "$ro" --model mlp --epochs 1 --max-steps 2 --batch 4 --backend cpu --workers $w --quiet --save "$tmp/ro-$w.st"; done
for w in 1 2 auto; do cmp -s "$tmp/ro-0.st" "$tmp/ro-$w.st" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: RandomOrder: workers $w trained another checkpoint than workers 0"; }; done
expect 1 "the order RandomCrop [(]step 3[)], Resize [(]step 4[)] turns 256x256 into 240x240 but the order Resize [(]step 4[)], RandomCrop [(]step 3[)] into 224x224" -- train --data-dir "$tmp/ro" --transform 'Resize((256, 256)); RandomOrder([RandomCrop(224), Resize((240, 240))])' --model mlp --max-steps 1 --backend cpu --quiet
expect 2 "--data-dir is required"           -- pack --out "$tmp/x.shard"
expect 2 "--out is required"                -- pack --data-dir "$tmp/if"
expect 2 "bad value for --size .*'8y8'"     -- pack --data-dir "$tmp/if" --out "$tmp/x.shard" --size 8y8
expect 1 "$tmp/nodir: no train-images"      -- pack --data-dir "$tmp/nodir" --out "$tmp/x.shard"
expect 1 "ant/b.bmp: an image of 12x10 .* every record of a shard has one size" -- pack --data-dir "$tmp/if" --out "$tmp/x.shard"
[ ! -e "$tmp/x.shard" ] && [ ! -e "$tmp/x.shard.tmp" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: a failed pack left $tmp/x.shard[.tmp]"; }
expect 0 "6 records of 8x8x3 u8, 2 classes" -- pack --data-dir "$tmp/if" --out "$tmp/if/train.shard" --size 8x8
# the images differ in size: without --transform only the shard can be trained on
expect 0 "if/train.shard: 6 images, 2 classes -> 3x8x8" -- train --data-dir "$tmp/if" --model mlp --epochs 1 --max-steps 2 --batch 4 --backend cpu --quiet
expect 0 "RESULT backend=cpu model=mlp epochs=1 " -- train --data-dir "$tmp/if" --model mlp --epochs 1 --max-steps 2 --batch 4 --backend cpu --quiet
# packing again reads the images, not the shard that --data-dir now finds first
expect 0 "if/train -> .*: 6 records of 4x4x3 u8" -- pack --data-dir "$tmp/if" --out "$tmp/if/train.shard" --size 4
expect 0 "if/train.shard: 6 images, 2 classes -> 3x4x4" -- train --data-dir "$tmp/if" --model mlp --epochs 1 --max-steps 1 --batch 6 --backend cpu --quiet
printf 'garbage' >"$tmp/bad.st"
if [ -d /usr/share/datasets/fashion-mnist ]; then
  expect 1 "backend 'nosuch' is not built"   -- train --backend nosuch --quiet
  expect 1 "bad.st"                          -- train --resume "$tmp/bad.st" --quiet
  expect 0 "RESULT backend=cpu model=mlp epochs=1 test_acc=" -- train --model mlp --max-steps 20 --quiet
  expect 0 "epoch 1/1: train loss"          -- train --model mlp --max-steps 5 --backend cpu --threads 1
  expect 0 "RESULT backend=cpu model=resnet20 " -- train --model resnet20 --depth 8 --width 4 --max-steps 2 --max-eval 256 --backend cpu --quiet
  expect 0 "RESULT backend=cpu model=resnet18 " -- train --model resnet18 --small-stem --width 4 --max-steps 2 --max-eval 256 --backend cpu --quiet
  expect 0 "restored the weights of epoch 1" -- train --model mlp --max-steps 10 --epochs 3 --val-split 0.1 --early-stop 1 --min-delta 100 --backend cpu
  # IDX + --transform: augmentation drawn every epoch; an identity transform (and the split it makes) trains the same
  # weights as none; a real one others; one that changes the size is refused naming the size and the fix
  V=(--model mlp --epochs 2 --max-steps 10 --val-split 0.1 --backend cpu --quiet)
  expect 0 "RESULT"                          -- train "${V[@]}" --save "$tmp/aug0.st"
  expect 0 "augmented anew every epoch by 'RandomCrop[(]28[)]'" -- train "${V[@]}" --transform 'RandomCrop(28)' --save "$tmp/aug1.st"
  expect 0 "RESULT"                          -- train "${V[@]}" --transform 'RandomCrop(28, padding=4); RandomHorizontalFlip()' --save "$tmp/aug2.st"
  cmp -s "$tmp/aug0.st" "$tmp/aug1.st" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: IDX --transform 'RandomCrop(28)' trained other weights than no transform"; }
  cmp -s "$tmp/aug0.st" "$tmp/aug2.st" && { fail=$((fail + 1)); echo "FAIL: IDX --transform RandomCrop+flip trained the same weights as no transform"; } || pass=$((pass + 1))
  expect 1 "turns Fashion-MNIST's 1x28x28 training images into 1x24x24: on IDX data the steps .* must keep their size" -- train --model mlp --max-steps 1 --backend cpu --quiet --transform 'RandomCrop(24)'
  expect 1 "freeze pattern 'encoder[.][*]' matches no parameter" -- train --model mlp --freeze 'fc1*,encoder.*' --quiet --backend cpu
  expect 1 "head pattern 'cls[.][*]' matches no parameter" -- train --model mlp --backbone-lr-mult 0.1 --head 'cls.*' --quiet --backend cpu
  expect 1 "$tmp/none.st"                    -- train --model mlp --init-from "$tmp/none.st" --quiet --backend cpu
  expect 0 "RESULT"                          -- train --model mlp --max-steps 5 --backend cpu --quiet --save "$tmp/pre.st"
  expect 0 "transfer: 2 parameter tensors frozen .* head 2 tensors" -- train --model mlp --max-steps 5 --backend cpu --init-from "$tmp/pre.st" --freeze 'fc1*' --backbone-lr-mult 0.1
  expect 0 "init: 2 missing .*fc3"           -- train --model mlp --max-steps 5 --backend cpu --init-from "$tmp/pre.st" --init-map 'fc3.*=old.*'
  expect 0 "SUGGESTED lr="                   -- lr-find --model mlp --lr-steps 30 --out "$tmp/lf" --backend cpu --quiet
  expect 0 "wrote $tmp/lf-plot.svg"          -- plot "$tmp/lf.csv" -o "$tmp/lf-plot.svg"
  expect 0 "RESULT"                          -- train --model mlp --max-steps 5 --backend cpu --quiet --log-csv "$tmp/run.csv" --tensorboard "$tmp/tb"
  expect 0 "wrote $tmp/run.svg"              -- plot "$tmp/run.csv"
  # mixed precision: a short run of each; fp16 reports its loss scale
  expect 0 "amp: loss scale [0-9]+, [0-9]+ skipped" -- train --model cnn --max-steps 10 --backend cpu --amp fp16 "${amp_eval[@]}"
  expect 0 "RESULT backend=cpu model=cnn.*amp=bf16" -- train --model cnn --max-steps 10 --backend cpu --amp bf16 --quiet "${amp_eval[@]}"
  # --deterministic: the same checkpoint, bit for bit, with 1 and 3 CPU threads
  # (without the flag ~280k of its bytes differ)
  for t in 1 3; do
    expect 0 "RESULT" -- train --model cnn --max-steps 3 --max-eval 256 --backend cpu --quiet --workers 0 --deterministic --threads $t --save "$tmp/det$t.st"
  done
  cmp -s "$tmp/det1.st" "$tmp/det3.st" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: --deterministic: the checkpoints of --threads 1 and 3 differ"; }
  ls "$tmp"/tb/events.out.tfevents.* >/dev/null 2>&1 && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: no event file"; }
  [ -s "$tmp/lf.csv" ] && grep -q "</svg>" "$tmp/lf.svg" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: lr-find files"; }
  # the OpenCL backend, when `loom info` finds a device for it (ctest sets
  # POCL_CACHE_DIR and LOOM_OPENCL_CACHE inside the build tree: the first run
  # compiles the kernels, ~10 s on PoCL, later runs reuse them)
  if "$LOOM" info 2>/dev/null | grep -qx "backend opencl"; then
    expect 0 "RESULT backend=opencl model=mlp epochs=1 test_acc=" -- train --backend opencl --model mlp --max-steps 20 --epochs 1 --quiet
    out=$(LOOM_OPENCL_DEVICE=99 "$LOOM" train --backend opencl --max-steps 1 --quiet 2>&1)
    rc=$?
    if [ "$rc" -eq 1 ] && grep -q "LOOM_OPENCL_DEVICE: device '99' does not exist" <<<"$out"; then
      pass=$((pass + 1))
    else
      fail=$((fail + 1))
      echo "FAIL: LOOM_OPENCL_DEVICE=99 loom train --backend opencl -> exit $rc (want 1), output lacks the device index:"
      head -5 <<<"$out" | sed 's/^/    /'
    fi
  else
    echo "note: the opencl backend is not available here, its CLI checks are skipped"
  fi
  # the Vulkan backend (lavapipe in CI; ctest turns the validation layer on:
  # any message fails the run), a few steps of each model
  if "$LOOM" info 2>/dev/null | grep -qx "backend vulkan"; then
    expect 0 "RESULT backend=vulkan model=mlp epochs=1 test_acc=" -- train --backend vulkan --model mlp --max-steps 20 --max-eval 1000 --quiet
    expect 0 "RESULT backend=vulkan model=cnn epochs=1 test_acc=" -- train --backend vulkan --model cnn --max-steps 2 --max-eval 256 --quiet
    expect 0 "RESULT backend=vulkan model=cnn.*amp=fp16" -- train --backend vulkan --model cnn --max-steps 2 --max-eval 256 --amp fp16 --quiet
    # reproducible mode: the same run on cpu and vulkan prints the same RESULT numbers
    rc_=$("$LOOM" train --backend cpu --model mlp --max-steps 20 --max-eval 1000 --quiet --reproducible 2>&1 | grep -o 'test_acc=.* train_loss=[0-9.]*')
    rv_=$("$LOOM" train --backend vulkan --model mlp --max-steps 20 --max-eval 1000 --quiet --reproducible 2>&1 | grep -o 'test_acc=.* train_loss=[0-9.]*')
    if [ -n "$rc_" ] && [ "$rc_" = "$rv_" ]; then
      pass=$((pass + 1))
    else
      fail=$((fail + 1))
      echo "FAIL: --reproducible mlp: cpu '$rc_' vs vulkan '$rv_'"
    fi
    out=$(LOOM_VULKAN_DEVICE=99 "$LOOM" train --backend vulkan --max-steps 1 --quiet 2>&1)
    rc=$?
    if [ "$rc" -eq 1 ] && grep -q "LOOM_VULKAN_DEVICE" <<<"$out"; then
      pass=$((pass + 1))
    else
      fail=$((fail + 1))
      echo "FAIL: LOOM_VULKAN_DEVICE=99 loom train --backend vulkan -> exit $rc (want 1), output lacks the variable:"
      head -5 <<<"$out" | sed 's/^/    /'
    fi
  else
    echo "note: the vulkan backend is not available here, its CLI checks are skipped"
  fi
else
  echo "note: Fashion-MNIST absent, the data-dependent CLI checks are skipped"
fi
# pack-text, train --model gpt|transformer, generate: a small text, byte tokens
for i in $(seq 1 60); do echo "line $i: the quick brown fox jumps over the lazy dog"; done > "$tmp/a.txt"
: > "$tmp/empty.txt"
expect 2 "--out is required"                -- pack-text "$tmp/a.txt"
expect 2 "no input files given"             -- pack-text --out "$tmp/t.bin"
expect 2 "bad value for --val-fraction .*'1'" -- pack-text "$tmp/a.txt" --out "$tmp/t.bin" --val-fraction 1
expect 2 "bad value for --val-fraction .*'x'" -- pack-text "$tmp/a.txt" --out "$tmp/t.bin" --val-fraction x
expect 1 "cannot open '$tmp/nope.txt'"      -- pack-text "$tmp/nope.txt" --out "$tmp/t.bin"
expect 1 "hold no text"                     -- pack-text "$tmp/empty.txt" --out "$tmp/t.bin"
[ ! -e "$tmp/t.bin" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: a failed pack-text left $tmp/t.bin"; }
expect 0 "t.val.bin: 318 tokens .*unigram entropy [0-9.]+ nats" -- pack-text "$tmp/a.txt" --out "$tmp/t.bin"
n_all=$(wc -c < "$tmp/a.txt")
if [ "$(stat -c %s "$tmp/t.bin")" -eq $(( 2 * (n_all - 318) )) ] && [ "$(stat -c %s "$tmp/t.val.bin")" -eq 636 ] &&
   [ "$(od -An -tu2 -N4 "$tmp/t.bin" | tr -s ' ')" = " 108 105" ]; then  # "li", uint16 little-endian
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: pack-text sizes or contents of $tmp/t.bin, $tmp/t.val.bin"
fi
expect 2 "unknown model 'gpt3'"             -- train --model gpt3
expect 2 "bad value '0' for --heads"        -- train --model gpt --heads 0
expect 2 "lr-find is for mlp and cnn"       -- lr-find --model gpt
expect 2 "--resume, .* not supported for text models" -- train --model gpt --resume x.st
expect 1 "give --data-dir FILE or DIR"      -- train --model gpt --backend cpu --quiet
expect 1 "heads must divide embd"           -- train --model gpt --backend cpu --data-dir "$tmp/t.bin" --heads 3 --embd 16 --seq-len 8 --quiet
expect 1 "$tmp/a.txt: .*not a whole number" -- train --model gpt --backend cpu --data-dir "$tmp/a.txt" --seq-len 8 --quiet
gpt=(--backend cpu --data-dir "$tmp/t.bin" --layers 1 --heads 2 --embd 16 --seq-len 16 --batch 8 --optimizer adamw --lr 3e-3)
expect 0 "RESULT .*model=gpt .*val_loss=[0-9.]+ " -- train --model gpt "${gpt[@]}" --epochs 2 --save "$tmp/gpt.st"
expect 0 "RESULT .*model=transformer .*val_loss=[0-9.]+ " -- train --model transformer "${gpt[@]}" --save "$tmp/tr.st"
expect 0 "^line 1"                          -- generate --ckpt "$tmp/gpt.st" --prompt "line 1" --tokens 20 --seed 3
expect 2 "--ckpt is required"               -- generate --prompt x
expect 2 "bad value"                        -- generate --ckpt "$tmp/gpt.st" --temperature -1
expect 1 "not a gpt checkpoint .*transformer" -- generate --ckpt "$tmp/tr.st" --prompt x
expect 1 "$tmp/none.st"                     -- generate --ckpt "$tmp/none.st" --prompt x
g1=$("$LOOM" generate --ckpt "$tmp/gpt.st" --prompt "line" --tokens 30 --seed 7 2>&1)
g2=$("$LOOM" generate --ckpt "$tmp/gpt.st" --prompt "line" --tokens 30 --seed 7 2>&1)
[ "$g1" = "$g2" ] && [ ${#g1} -ge 30 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: generate with one seed twice: '$g1' vs '$g2'"; }
expect 0 "op table"                         -- info

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
