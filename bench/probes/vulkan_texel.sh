#!/usr/bin/env bash
# bench/probes/vulkan_texel.sh [N]: builds bench/probes/vulkan_texel.{c,comp} into a temporary
# folder and runs the storage-buffer and texel-buffer GEMMs for several register blocks
# (RM x RN) on the first Vulkan device (lavapipe here). Needs glslangValidator, gcc,
# libvulkan-dev. Results: bench/results/2026-12-05-vulkan-texel-gemm-probe.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
n=${1:-1024}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MESA_SHADER_CACHE_DIR=$tmp/mesa
for cfg in "8 8" "4 8" "8 4" "8 16" "16 4" "16 8"; do
    set -- $cfg
    glslangValidator -V -DRM=$1 -DRN=$2 "$here/vulkan_texel.comp" -o "$tmp/ssbo.spv" > /dev/null
    glslangValidator -V -DRM=$1 -DRN=$2 -DTEXEL "$here/vulkan_texel.comp" -o "$tmp/texel.spv" > /dev/null
    gcc -O2 -DRMH=$1 -DRNH=$2 "$here/vulkan_texel.c" -o "$tmp/probe" -lvulkan
    echo "RM=$1 RN=$2"
    "$tmp/probe" "$n" "$tmp/ssbo.spv" "$tmp/texel.spv"
done
