#!/usr/bin/env bash
# tests/gpu/pack.sh DIR — prepare everything a short GPU lease needs, built on
# a machine without a GPU, so the lease spends its minutes on checks only:
#   DIR/b      loom, test-opcheck, test-parity, bench-gemm_gpu (stripped),
#              built with CUDA (sm_90 unless LOOM_GPU_ARCHS), Vulkan, OpenCL
#   DIR/debs   the .deb files of their run-time libraries (turbojpeg, OpenBLAS,
#              the OpenCL ICD loader) and DIR/gl the Vulkan loader's
#   DIR/data   Fashion-MNIST with the first 36000 training images (the lease
#              carries at most 64 MiB with the source tree)
#   DIR/commit the commit built
# Then, on the GPU machine, from the repository root:
#   bash tests/gpu/lease.sh DIR RESULTS
# Needs: apt-get (download only), nvcc (/usr/local/cuda), python3.
set -euo pipefail
dir=${1:?usage: tests/gpu/pack.sh DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${LOOM_GPU_PACK_BUILD:-$root/build-gpu}
mkdir -p "$dir"/{b/tests,b/bench,debs,gl,data}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLOOM_CUDA=ON -DLOOM_VULKAN=ON -DLOOM_OPENCL=ON -DLOOM_MPI=OFF \
    -DLOOM_TSAN_LOADER=OFF -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
    -DCMAKE_CUDA_ARCHITECTURES="${LOOM_GPU_ARCHS:-90-real}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target loom_cli test-opcheck test-parity bench-gemm_gpu >/dev/null
cp "$build/loom" "$dir/b/"
cp "$build/tests/test-opcheck" "$build/tests/test-parity" "$dir/b/tests/"
cp "$build/bench/bench-gemm_gpu" "$dir/b/bench/"
strip "$dir/b/loom" "$dir"/b/tests/* "$dir"/b/bench/*
(cd "$dir/debs" && apt-get download libturbojpeg0 libjpeg62-turbo libopenblas0-pthread libopenblas0 libgfortran5 \
    ocl-icd-libopencl1 >/dev/null 2>&1)
(cd "$dir/gl" && apt-get download libvulkan1 >/dev/null 2>&1)
python3 - "$dir/data" <<'PY'
import gzip, shutil, struct, sys
out, src, n = sys.argv[1], "/usr/share/datasets/fashion-mnist/", 36000
d = gzip.open(src + "train-images-idx3-ubyte.gz").read()
m, _, r, c = struct.unpack(">IIII", d[:16])
gzip.open(out + "/train-images-idx3-ubyte.gz", "wb", 9).write(struct.pack(">IIII", m, n, r, c) + d[16:16 + n * r * c])
d = gzip.open(src + "train-labels-idx1-ubyte.gz").read()
gzip.open(out + "/train-labels-idx1-ubyte.gz", "wb", 9).write(d[:4] + struct.pack(">I", n) + d[8:8 + n])
for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
    shutil.copy(src + f, out + "/" + f)
PY
git -C "$root" rev-parse --short HEAD >"$dir/commit"
du -sh "$dir"
