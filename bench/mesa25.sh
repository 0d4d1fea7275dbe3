#!/usr/bin/env bash
# bench/mesa25.sh [DIR] — the lavapipe of Debian bookworm-backports (Mesa 25)
# beside the system's (Mesa 22.3), for one command at a time: downloads the
# backport's Vulkan driver and its libraries into DIR (default build/mesa25)
# with an apt state of its own (the system's packages, sources and lists stay
# as they are), unpacks them there and writes DIR/env, which selects that
# driver:
#
#   bench/mesa25.sh && . build/mesa25/env && build/loom info | grep -A1 'device 0: llvm'
#   (env VK_ICD_FILENAMES=... LD_LIBRARY_PATH=... build/loom train --backend vulkan ...)
#
# Measured with it: bench/results/2026-12-05-gemm-lavapipe-mesa25.md (the cnn
# step 1.39x faster on Mesa 25, its GEMM slower). The mirror is the one the
# system's own apt sources use for bookworm. Needs apt-get and dpkg-deb;
# re-running reuses what DIR holds.
set -euo pipefail
dir=$(mkdir -p "${1:-build/mesa25}" && cd "${1:-build/mesa25}" && pwd)
lib=$dir/root/usr/lib/x86_64-linux-gnu
if [ ! -e "$lib/libvulkan_lvp.so" ]; then
    uri=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Created-By: Packages' 2>/dev/null |
        awk '$2 == "bookworm" { print $1; exit }')
    [ -n "$uri" ] || { echo "mesa25.sh: no bookworm source in the system's apt sources (run apt-get update?)" >&2; exit 1; }
    mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/debs"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri bookworm-backports main" > "$dir/apt/sources.list"
    opts=(-o "Dir::Etc::SourceList=$dir/apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
          -o "Dir::State::Lists=$dir/apt/lists" -o "Dir::Cache=$dir/apt/cache" -o "APT::Sandbox::User=root")
    apt-get "${opts[@]}" -qq update
    (cd "$dir/debs" && apt-get "${opts[@]}" -qq download mesa-vulkan-drivers mesa-libgallium libdrm2 libdrm-amdgpu1)
    for d in "$dir"/debs/*.deb; do dpkg-deb -x "$d" "$dir/root"; done
fi
[ -e "$lib/libvulkan_lvp.so" ] || { echo "mesa25.sh: no libvulkan_lvp.so in what was downloaded" >&2; exit 1; }
sed "s#\"library_path\": *\"[^\"]*\"#\"library_path\": \"$lib/libvulkan_lvp.so\"#" \
    "$dir/root/usr/share/vulkan/icd.d/lvp_icd.json" > "$dir/lvp_icd.json"
printf 'export VK_ICD_FILENAMES=%s\nexport LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n' \
    "$dir/lvp_icd.json" "$lib" > "$dir/env"
echo "mesa25.sh: Mesa $(dpkg-deb -f "$(ls "$dir"/debs/mesa-vulkan-drivers_*.deb)" Version) in $dir; select it with: . $dir/env"
