#!/usr/bin/env bash
# tests/dist-bench.sh MPIRUN LOOM — `mpirun -np 2 loom bench` fills the guide's
# data-parallel row: rank 0 prints the table once, the row has the previous
# row's per-rank batch (8) and positive memory, epoch time and samples/s; the
# CSV row has every column and the JSON says "built": true for all four rows.
set -uo pipefail
mpirun=${1:?usage: dist-bench.sh MPIRUN LOOM}
loom=${2:?usage: dist-bench.sh MPIRUN LOOM}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
small=(--model resnet20 --width 4 --size 16 --batch 4 --steps 2 --backend cpu --epoch-size 1000)
out=$("$mpirun" -np 2 --oversubscribe "$loom" bench "${small[@]}" --csv "$work/b.csv" --json "$work/b.json" 2>&1)
rc=$?
fail=0
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: mpirun -np 2 loom bench exited $rc"; fail=1; }
[ "$(grep -c '^configuration ' <<<"$out")" -eq 1 ] || { echo "FAIL: the table is not printed once (rank 0 only)"; fail=1; }
row=$(grep -E '^\+ data parallel, 2 processes \(MPI\) ' <<<"$out")
if awk '{ n = NF; exit !($(n-4) + 0 > 0 && $(n-3) == 8 && $(n-1) + 0 > 0 && $n + 0 > 0) }' <<<"$row"; then
    echo "ok: the data-parallel row is filled: $row"
else
    echo "FAIL: the data-parallel row is not filled: '$row'"; fail=1
fi
if grep -qE '^"\+ data parallel, 2 processes \(MPI\)",[0-9]+,8,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+$' "$work/b.csv" &&
   [ "$(grep -o '"built": true' "$work/b.json" | wc -l)" -eq 4 ]; then
    echo "ok: CSV and JSON rows filled"
else
    echo "FAIL: CSV/JSON:"; cat "$work/b.csv" "$work/b.json"; fail=1
fi
exit $fail
