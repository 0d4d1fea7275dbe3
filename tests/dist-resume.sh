#!/usr/bin/env bash
# tests/dist-resume.sh MPIRUN LOOM — checkpoints of a data-parallel run: rank 0
# writes them, every rank resumes from them. Two ranks training 2 epochs
# straight, and 1 epoch then a resumed second one (same job size), end with
# byte-identical checkpoints. Needs Fashion-MNIST; skips (77) without it.
set -uo pipefail
mpirun=${1:?usage: dist-resume.sh MPIRUN LOOM}
loom=${2:?usage: dist-resume.sh MPIRUN LOOM}
if [ ! -d /usr/share/datasets/fashion-mnist ]; then echo "SKIP: Fashion-MNIST absent"; exit 77; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(train --model mlp --backend cpu --threads 1 --workers 0 --max-steps 10 --max-eval 128 --quiet --seed 3
      --schedule constant --optimizer adamw --grad-accum 2)
run() { "$mpirun" -np 2 --oversubscribe "$loom" "${args[@]}" "$@" || { echo "FAIL: mpirun ... $*"; exit 1; }; }
run --epochs 2 --save "$work/straight.st"
run --epochs 1 --save "$work/resumed.st"
run --epochs 2 --resume "$work/resumed.st" --save "$work/resumed.st"
if cmp "$work/straight.st" "$work/resumed.st"; then
    echo "dist-resume: 2 ranks, 2 epochs straight = 1 epoch + resumed: checkpoints byte-identical"
    exit 0
fi
echo "FAIL: the resumed run's checkpoint differs from the uninterrupted one"
exit 1
