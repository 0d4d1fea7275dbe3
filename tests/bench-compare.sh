#!/usr/bin/env bash
# tests/bench-compare.sh LOOM BACKEND — `loom compare` and `loom bench` on a
# small ResNet-20 (width 4, 16x16 images, a few steps) on BACKEND (cpu,
# vulkan, opencl; exit 77 when it is not available here): the table's shape,
# the CSV and JSON rows, divergence from the CPU finite and small; with cpu
# also the flags' bad input and gpt's --token-budget flags.
LOOM=$1 BE=$2
. "$(dirname "$0")/cli_lib.sh"

small=(--model resnet20 --width 4 --size 16 --batch 4 --steps 2)
if [ "$BE" != cpu ]; then
  out=$("$LOOM" compare "${small[@]}" --backends "$BE" 2>&1)
  if grep -q "is not available" <<<"$out"; then echo "SKIP: $BE: $out"; exit 77; fi
fi

# compare: a row per backend, cpu the reference; CSV and JSON with the same rows
out=$("$LOOM" compare "${small[@]}" --backends "$BE" --csv "$tmp/c.csv" --json "$tmp/c.json" 2>&1)
rc=$?
rows=$(grep -cE "^(cpu|vulkan|opencl|cuda) +[0-9.]+ +[0-9.]+ +[0-9.]+ " <<<"$out")
grep -qE "^cpu .*\(ref\) +\(ref\)$" <<<"$out" || rows=-1
want=1; [ "$BE" != cpu ] && want=2
if [ "$rc" -eq 0 ] && [ "$rows" -eq "$want" ] && [ "$(wc -l < "$tmp/c.csv")" -eq $((want + 1)) ] &&
   [ "$(grep -o '"backend"' "$tmp/c.json" | wc -l)" -eq "$want" ] && grep -q '"rows": \[' "$tmp/c.json"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: compare rows: table $rows, csv $(wc -l < "$tmp/c.csv"), want $want"; echo "$out"
fi
if [ "$BE" != cpu ]; then
  # the divergence columns: finite, loss within 1e-2, weights within 5e-2
  if sed 's/,"[^"]*",/,OPS,/' "$tmp/c.csv" | awk -F, -v be="$BE" '$1 == be { ok = ($7 + 0 == $7 && $8 + 0 == $8 && $7 < 1e-2 && $8 < 5e-2 &&
                                          $7 != "nan" && $8 != "nan" && $7 != "inf" && $8 != "inf"); found = 1 }
                          END { exit !(found && ok) }'; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL: divergence of $BE from cpu:"; cat "$tmp/c.csv"
  fi
fi

# bench: the guide's four rows, data parallel not run in one process (built with MPI:
# the row says to use mpirun; without: not built; tests/dist-bench.sh fills it);
# CSV 7 columns, JSON 4 rows
out=$("$LOOM" bench "${small[@]}" --backend "$BE" --epoch-size 1000 --csv "$tmp/b.csv" --json "$tmp/b.json" 2>&1)
if [ $? -eq 0 ] && grep -qE "^baseline: f32, loading on the training thread +[0-9.]+ +4 " <<<"$out" &&
   grep -qE "^\+ loader workers \(auto\) +[0-9.]+ +4 " <<<"$out" &&
   grep -qE "^\+ mixed precision \(fp16\), batch doubled +[0-9.]+ +8 " <<<"$out" &&
   grep -qE "^\+ data parallel .*\((not built: loom was built without MPI|one process: run under mpirun -np N .*)\)$" <<<"$out"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: bench table:"; echo "$out"
fi
if [ "$(wc -l < "$tmp/b.csv")" -eq 5 ] && sed 's/^"[^"]*",//' "$tmp/b.csv" |
     awk -F, 'NR > 1 && NR < 5 { if (NF != 6 || $1 + 0 <= 0 || $5 + 0 <= 0) bad = 1 } END { exit bad }' && grep -q '^"+ mixed precision (fp16), batch doubled",[0-9]*,8,' "$tmp/b.csv" &&
   [ "$(grep -o '"configuration"' "$tmp/b.json" | wc -l)" -eq 4 ] && grep -q '"built": false' "$tmp/b.json"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: bench CSV/JSON:"; cat "$tmp/b.csv" "$tmp/b.json"
fi

if [ "$BE" = cpu ]; then
  expect 2 "--model is required"                  -- compare --steps 2
  expect 2 "bad value '0' for --steps"            -- compare --model resnet20 --steps 0
  expect 2 "bad value 'x' for --steps"            -- compare --model resnet20 --steps x
  expect 2 "bad value '\(missing\)' for --steps"  -- compare --model resnet20 --steps
  expect 2 "bad value 'cpu,,opencl' for --backends" -- compare --model resnet20 --backends cpu,,opencl
  expect 2 "bad value 'cpu,' for --backends"      -- compare --model resnet20 --backends cpu,
  expect 1 "backend 'nope' in --backends is not available" -- compare --model resnet20 --backends nope
  expect 2 "unknown option '--frobnicate'"        -- compare --model resnet20 --frobnicate 1
  expect 2 "'gpt' is a text model"                -- compare --model gpt
  expect 1 "compare: cpu: .*resnet99"             -- compare --model resnet99 --steps 1
  expect 1 "cannot write '$tmp/no/c.csv'"         -- compare "${small[@]}" --backends cpu --steps 1 --csv "$tmp/no/c.csv"
  expect 2 "--model is required"                  -- bench --backend cpu
  expect 2 "bad value 'fp8' for --amp"            -- bench --model resnet20 --amp fp8
  expect 2 "bad value '0' for --epoch-size"       -- bench --model resnet20 --epoch-size 0
  expect 2 "bad value '-4' for --batch"           -- bench --model resnet20 --batch -4
  expect 1 "backend 'nope' is not available"      -- bench --model resnet20 --backend nope
  expect 2 "'transformer' is a text model"        -- bench --model transformer
  # gpt dynamic batching flags
  for i in $(seq 1 40); do echo "line $i: the quick brown fox"; done > "$tmp/a.txt"
  "$LOOM" pack-text "$tmp/a.txt" --out "$tmp/t.bin" > /dev/null
  g=(--backend cpu --data-dir "$tmp/t.bin" --layers 1 --heads 2 --embd 16 --seq-len 16 --quiet)
  expect 0 "RESULT .*model=gpt .*val_loss=[0-9.]+ " -- train --model gpt "${g[@]}" --token-budget 64 --eod 10
  expect 2 "--micro-tokens and --eod need --token-budget" -- train --model gpt "${g[@]}" --eod 10
  expect 1 "token budget 8 is below seq_len 16"   -- train --model gpt "${g[@]}" --token-budget 8
  expect 1 "micro-batch tokens 8 must be in"      -- train --model gpt "${g[@]}" --token-budget 64 --micro-tokens 8
  expect 1 "end-of-document token 300 is outside" -- train --model gpt "${g[@]}" --token-budget 64 --eod 300
  expect 1 "for gpt only"                         -- train --model transformer "${g[@]}" --token-budget 64
  expect 2 "bad value '-1' for --eod"             -- train --model gpt "${g[@]}" --token-budget 64 --eod -1
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
