#!/usr/bin/env bash
# tests/gpu/lease.sh DIR RESULTS — one short GPU lease (under 9 minutes): the
# loaders from DIR (made by tests/gpu/pack.sh) unpacked, NVIDIA's Vulkan and
# OpenCL drivers found, tests/gpu/run.sh on DIR's build (CUDA op-check,
# parity, GEMM and cnn figures beside PyTorch, ResNet-50 table), then the
# op-check of Vulkan and OpenCL on the same GPU, loom compare across the
# backends and the Vulkan/OpenCL GEMM, while time is left. RESULTS/gpu.tgz
# holds every log; the summary is printed last.
set -u
dir=${1:?usage: tests/gpu/lease.sh DIR RESULTS} res=${2:?usage: tests/gpu/lease.sh DIR RESULTS}
root=$(cd "$(dirname "$0")/../.." && pwd)
t0=$SECONDS g=/tmp/loom-gpu-results
mkdir -p "$res" "$g"
for f in "$dir"/gl/*.deb; do dpkg -x "$f" /; done; ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e $icd ] && export VK_DRIVER_FILES=$icd
cb=$(ldconfig -p | awk '/libcublas.so.13 /{print $NF; exit}')
[ -z "$cb" ] && cb=$(ls /usr/local/cuda*/lib64/libcublas.so.13 /usr/local/cuda*/targets/x86_64-linux/lib/libcublas.so.13 2>/dev/null | head -1)
[ -z "$cb" ] && cb=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib', 'libcublas.so.13'))" 2>/dev/null)
echo "cuBLAS: ${cb:-none found}"
[ -n "$cb" ] && export LD_LIBRARY_PATH=$(dirname "$cb")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ocl=$(ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 2>/dev/null | head -1)
if [ -n "$ocl" ]; then
    mkdir -p /etc/OpenCL/vendors && echo "$ocl" >/etc/OpenCL/vendors/nvidia.icd
    dpkg -x "$dir"/debs/ocl-icd-libopencl1_*.deb / && ldconfig
fi
echo "OpenCL ICD: ${ocl:-none found}"
export LOOM_COMMIT=$(cat "$dir/commit") LOOM_GPU_DEBROOT=/tmp/loom-gpu-debroot
timeout -k 5 380 bash "$root/tests/gpu/run.sh" "$g" --build "$dir/b" --debs "$dir/debs" --data "$dir/data"
echo "run.sh: exit $? after $((SECONDS - t0))s"
d=$LOOM_GPU_DEBROOT/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$d/openblas-pthread:$d:$LD_LIBRARY_PATH
L=$dir/b/loom
"$L" info >"$g/info_all.log" 2>&1
have() { grep -q "^backend $1\$" "$g/info_all.log"; }
# extra NAME LIMIT CMD...: run while the lease has time (none started past 540 s)
extra() {
    local name=$1 lim=$2
    shift 2
    if [ $((SECONDS - t0 + lim)) -gt 540 ]; then echo "extra $name: skipped (no time left)"; return; fi
    timeout -k 3 "$lim" "$@" >"$g/x_$name.log" 2>&1
    echo "extra $name: exit $? ($((SECONDS - t0))s)"
    tail -25 "$g/x_$name.log"
}
have vulkan && extra opcheck_vulkan 45 "$dir/b/tests/test-opcheck" -b vulkan
have cuda && extra benchcompare_cuda 40 bash "$root/tests/bench-compare.sh" "$L" cuda
bes=cpu
for b in cuda vulkan opencl; do have $b && bes=$bes,$b; done
extra compare 60 "$L" compare --model resnet20 --backends $bes --steps 20 --batch 128
have vulkan && extra gemm_vulkan 30 "$dir/b/bench/bench-gemm_gpu" --backend vulkan --sizes 1024,4096 --modes f32,f16
have opencl && extra opcheck_opencl 45 "$dir/b/tests/test-opcheck" -b opencl
have opencl && extra gemm_opencl 30 "$dir/b/bench/bench-gemm_gpu" --backend opencl --sizes 1024,4096 --modes f32
tar czf "$res/gpu.tgz" -C "$(dirname $g)" "$(basename $g)"
cp "$g/summary.md" "$res/" 2>/dev/null
grep -v '^  ' "$g/info_all.log" | head -12
cat "$g/summary.md" 2>/dev/null
echo "lease: $((SECONDS - t0))s"
