#!/usr/bin/env bash
# bench/data_parallel.sh LOOM [MODEL] [STEPS] — data-parallel step time on this
# machine: one process against two (mpirun -np 2) at the same global batch, on
# the CPU backend, and a gradient-bucket-size sweep with two processes. Prints
# a Markdown table: per-step time of the global batch, samples/s, scaling
# efficiency (two-process throughput / (2 x one-process-with-one-thread
# throughput)). Each configuration runs twice, interleaved, and the faster run
# counts (the machine is shared). Needs Fashion-MNIST and mpirun.
set -euo pipefail
loom=$(readlink -f "${1:?usage: bench/data_parallel.sh LOOM [MODEL] [STEPS]}")
model=${2:-cnn}
steps=${3:-60}
gb=128 # global batch
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
common=(train --model "$model" --backend cpu --max-steps "$steps" --max-eval 128 --workers 1 --quiet --seed 1)

# samples/s of the global batch for: NP THREADS BATCH_PER_RANK [extra args]
rate() {
    local np=$1 th=$2 b=$3
    shift 3
    local out
    if [ "$np" -eq 1 ]; then
        out=$("$loom" "${common[@]}" --launcher none --threads "$th" --batch "$b" "$@")
    else
        out=$(mpirun -np "$np" --oversubscribe --bind-to none "$loom" "${common[@]}" --threads "$th" --batch "$b" "$@")
    fi
    # rank 0 reports its own samples/s: the global rate is np times it
    echo "$out" | sed -n 's/^RESULT .*samples_per_s=\([0-9.]*\).*/\1/p' | awk -v np="$np" '{printf "%.1f", $1 * np}'
}

best() { # the larger of two rates
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (a > b ? a : b) }'
}

declare -A r
configs=("1 1 $gb" "1 2 $gb" "2 1 $((gb / 2))")
for rep in 1 2; do
    for c in "${configs[@]}"; do
        v=$(rate $c)
        r[$c]=$(best "${r[$c]:-0}" "$v")
    done
done
echo "model $model, CPU backend, global batch $gb, $steps steps, $(nproc) cores"
echo
echo "| processes x threads | batch per rank | ms per step | samples/s | scaling efficiency |"
echo "|---|---|---|---|---|"
base=${r["1 1 $gb"]}
for c in "${configs[@]}"; do
    set -- $c
    v=${r[$c]}
    awk -v np="$1" -v th="$2" -v b="$3" -v v="$v" -v base="$base" -v gb="$gb" 'BEGIN {
        printf "| %d x %d | %d | %.1f | %.0f | %.2f |\n", np, th, b, 1000 * gb / v, v, v / (np * th * base) }'
done
echo
echo "bucket-size sweep, 2 processes x 1 thread, batch $((gb / 2)) per rank:"
echo
echo "| --bucket-mb | ms per step | samples/s |"
echo "|---|---|---|"
for mb in 0.05 0.25 1 25; do
    a=$(rate 2 1 $((gb / 2)) --bucket-mb "$mb")
    b=$(rate 2 1 $((gb / 2)) --bucket-mb "$mb")
    v=$(best "$a" "$b")
    awk -v mb="$mb" -v v="$v" -v gb="$gb" 'BEGIN { printf "| %s | %.1f | %.0f |\n", mb, 1000 * gb / v, v }'
done
