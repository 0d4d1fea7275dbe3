#!/usr/bin/env bash
# bench/ckpt_hashes.sh LOOM [BACKENDS] — the fixed 200-step cnn run whose checkpoint
# bytes must not change when the code is restructured (behaviour unchanged, bit for
# bit): prints one "sha256 name" line per run. Runs, each from the same seed:
#   cpu        default kernels, all cores
#   cpu-det    --deterministic --threads 2
#   cpu-repro, vulkan-repro, opencl-repro   --reproducible (canonical kernels)
# BACKENDS (comma-separated, default cpu,cpu-det,cpu-repro,vulkan-repro,opencl-repro)
# picks a subset. Needs the Debian dataset-fashion-mnist files.
set -euo pipefail
loom=$(readlink -f "${1:?usage: bench/ckpt_hashes.sh LOOM [BACKENDS]}")
runs=${2:-cpu,cpu-det,cpu-repro,vulkan-repro,opencl-repro}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export MESA_SHADER_CACHE_DIR=${MESA_SHADER_CACHE_DIR:-$work/cache} POCL_CACHE_DIR=${POCL_CACHE_DIR:-$work/cache}
common=(train --model cnn --max-steps 200 --max-eval 256 --seed 1 --quiet)
for r in ${runs//,/ }; do
    case $r in
    cpu) args=(--backend cpu) ;;
    cpu-det) args=(--backend cpu --deterministic --threads 2) ;;
    cpu-repro) args=(--backend cpu --reproducible) ;;
    vulkan-repro) args=(--backend vulkan --reproducible) ;;
    opencl-repro) args=(--backend opencl --reproducible) ;;
    *) echo "ckpt_hashes: unknown run '$r'" >&2; exit 2 ;;
    esac
    if ! "$loom" "${common[@]}" "${args[@]}" --save "$work/$r.st" > "$work/$r.log" 2>&1; then
        echo "ckpt_hashes: run $r failed:" >&2; tail -5 "$work/$r.log" >&2; exit 1
    fi
    echo "$(sha256sum < "$work/$r.st" | cut -d' ' -f1) $r"
done
