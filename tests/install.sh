#!/usr/bin/env bash
# tests/install.sh BUILD SRC — loom installs and is consumed like any C library:
# `cmake --install` into a temporary prefix; the shared library exports only
# loom_* symbols and carries a versioned SONAME; neither it nor bin/loom
# records a GPU library as NEEDED, and a backend whose library is hidden
# (LOOM_OPENCL_LIBRARY, LOOM_CUBLAS_LIBRARY) names it in `loom info` and
# `loom train`; the .deb (cpack) depends on no GPU library; examples/consumer builds
# against the installed tree with pkg-config (shared and --static) and with
# find_package(loom CONFIG) (loom::loom and loom::loom_static), and each
# program runs; a required backend component that is not built fails
# find_package with a message naming it.
set -euo pipefail
build=$(readlink -f "${1:?usage: tests/install.sh BUILD SRC}")
src=$(readlink -f "${2:?usage: tests/install.sh BUILD SRC}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install: FAIL: $*"; exit 1; }
for tool in pkg-config nm readelf cc; do
    command -v $tool >/dev/null || { echo "install: skipped: '$tool' not found"; exit 77; }
done
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install"; }

so=$(find "$prefix" -name 'libloom.so.*.*' | head -1)
[ -n "$so" ] || fail "no libloom.so.X.Y.Z under $prefix"
[ -f "$(find "$prefix" -name libloom.a | head -1)" ] || fail "no libloom.a under $prefix"
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname =~ ^libloom\.so\.[0-9]+$ ]] || fail "SONAME is '$soname', expected libloom.so.N"
others=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v -E '^loom_[^_]' || true)
[ -z "$others" ] || fail "the shared library exports symbols other than loom_*: $(echo $others | head -c 300)"
syms=$(nm -D --defined-only "$so")
grep -q ' loom_plan_run$' <<< "$syms" || fail "loom_plan_run is not exported"
[ -x "$prefix/bin/loom" ] || fail "no bin/loom"
"$prefix/bin/loom" info --no-ops > /dev/null || fail "installed 'loom info' fails"
echo "install: $(basename "$so") (SONAME $soname), $(nm -D --defined-only "$so" | wc -l) symbols, all loom_*"

# no backend library is a link-time dependency: each backend opens what it
# needs at run time, or reports it missing by name
gpu_libs='lib(OpenCL|vulkan|cuda|cudart|cublas|cublasLt|cudnn|nccl)\.so'
for f in "$so" "$prefix/bin/loom"; do
    needed=$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    bad=$(grep -E "^$gpu_libs" <<< "$needed" || true)
    [ -z "$bad" ] || fail "$(basename "$f") records a backend library as NEEDED: $(echo $bad)"
done
backends=$(sed -n 's/^set(loom_BACKENDS \(.*\))/\1/p' "$(find "$prefix" -name loomConfig.cmake | head -1)")
# expect_missing BACKEND NAME ENV...: with the environment ENV, `loom info` runs and
# names NAME, and `loom train --backend BACKEND` fails (no crash) naming NAME
expect_missing() {
    local backend=$1 name=$2 out rc
    shift 2
    out=$(env "$@" "$prefix/bin/loom" info --no-ops 2>&1) || fail "'loom info' with $* fails: $out"
    grep -q "^$backend: built, not available (.*$name" <<< "$out" ||
        fail "'loom info' with $* does not name $name: $(grep "^$backend" <<< "$out")"
    rc=0
    out=$(env "$@" "$prefix/bin/loom" train --model mlp --max-steps 1 --backend "$backend" 2>&1) || rc=$?
    [ $rc -eq 1 ] || fail "'loom train --backend $backend' with $* exits $rc, expected 1: $out"
    grep -q "$name" <<< "$out" || fail "'loom train --backend $backend' with $* does not name $name: $out"
}
if grep -qw opencl <<< "$backends"; then
    expect_missing opencl /nonexistent/libOpenCL.so.1 LOOM_OPENCL_LIBRARY=/nonexistent/libOpenCL.so.1
    expect_missing opencl "has no clGetPlatformIDs" LOOM_OPENCL_LIBRARY="$(ldd "$so" | sed -n 's/.*libz\.so\.1 => \([^ ]*\).*/\1/p')"
fi
if grep -qw cuda <<< "$backends"; then
    # a stand-in driver library gets past the driver check on any machine
    mkdir -p "$tmp/fakecuda"
    echo 'int loom_test_not_a_driver;' > "$tmp/fakecuda/f.c"
    cc -shared -fPIC -o "$tmp/fakecuda/libcuda.so.1" "$tmp/fakecuda/f.c" || fail "building a stand-in libcuda.so.1"
    expect_missing cuda /nonexistent/libcublas.so LD_LIBRARY_PATH="$tmp/fakecuda" LOOM_CUBLAS_LIBRARY=/nonexistent/libcublas.so.13
    if ! /sbin/ldconfig -p 2>/dev/null | grep -q "libcuda\.so\.1 "; then
        expect_missing cuda libcuda.so.1 LD_LIBRARY_PATH=/nonexistent
    fi
fi
echo "install: no backend library is NEEDED (built: ${backends//;/ }); missing ones are named at run time"

# the Debian package depends on what the library links, never on a GPU API
# (ICD loaders: Recommends; drivers, cuBLAS: Suggests)
if command -v cpack > /dev/null && command -v dpkg-deb > /dev/null && command -v dpkg-shlibdeps > /dev/null; then
    (cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/deb") > "$tmp/deb.log" 2>&1 ||
        { cat "$tmp/deb.log"; fail "cpack -G DEB"; }
    deb=$(find "$tmp/deb" -maxdepth 1 -name 'loom_*.deb' | head -1)
    [ -n "$deb" ] || fail "cpack made no loom_*.deb"
    depends=$(dpkg-deb -f "$deb" Depends)
    recommends=$(dpkg-deb -f "$deb" Recommends)
    grep -q libc6 <<< "$depends" || fail "the .deb Depends lacks libc6: '$depends'"
    if grep -qiE 'opencl|vulkan|cuda|cublas|nvidia|pocl|mesa' <<< "$depends"; then
        fail "the .deb Depends names a GPU library: '$depends'"
    fi
    if grep -qw opencl <<< "$backends" && ! grep -q ocl-icd-libopencl1 <<< "$recommends"; then
        fail "the .deb does not recommend the OpenCL ICD loader: '$recommends'"
    fi
    if grep -qw vulkan <<< "$backends" && ! grep -q libvulkan1 <<< "$recommends"; then
        fail "the .deb does not recommend the Vulkan loader: '$recommends'"
    fi
    echo "install: $(basename "$deb"): Depends: $depends; Recommends: $recommends"
else
    echo "install: the .deb check skipped (needs cpack, dpkg-deb and dpkg-shlibdeps)"
fi

pcdir=$(dirname "$(find "$prefix" -name loom.pc | head -1)")
[ -d "$pcdir" ] || fail "no loom.pc under $prefix"
export PKG_CONFIG_PATH=$pcdir
libdir=$(pkg-config --variable=libdir loom)
cc -std=c11 -o "$tmp/pc-shared" "$src/examples/consumer/consumer.c" $(pkg-config --cflags --libs loom) -lm ||
    fail "pkg-config shared build"
LD_LIBRARY_PATH=$libdir "$tmp/pc-shared" || fail "pkg-config shared consumer"
loaded=$(LD_LIBRARY_PATH=$libdir ldd "$tmp/pc-shared" | sed -n 's/.*libloom\.so[.0-9]* => \(.*\) (.*/\1/p')
[ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$(readlink -f "$so")" ] ||
    fail "the shared consumer loads '$loaded', not the installed $so"
cc -std=c11 -o "$tmp/pc-static" "$src/examples/consumer/consumer.c" -I"$(pkg-config --variable=includedir loom)" \
    "$libdir/libloom.a" $(pkg-config --static --libs-only-other --libs-only-L loom) \
    $(pkg-config --static --libs-only-l loom | sed 's/-lloom//') -lm || fail "pkg-config static build"
"$tmp/pc-static" || fail "pkg-config static consumer"
if ldd "$tmp/pc-static" | grep -q libloom.so; then fail "the static consumer loads libloom.so"; fi
echo "install: pkg-config consumers (shared, static) pass"

for kind in OFF ON; do
    cmake -S "$src/examples/consumer" -B "$tmp/cm-$kind" -DCMAKE_PREFIX_PATH="$prefix" -DLOOM_STATIC=$kind \
        > "$tmp/cm-$kind.log" 2>&1 || { cat "$tmp/cm-$kind.log"; fail "find_package(loom) configure (static $kind)"; }
    cmake --build "$tmp/cm-$kind" > "$tmp/cmb-$kind.log" 2>&1 || { cat "$tmp/cmb-$kind.log"; fail "CMake consumer build (static $kind)"; }
    "$tmp/cm-$kind/consumer" || fail "CMake consumer (static $kind)"
done
echo "install: CMake package consumers (loom::loom, loom::loom_static) pass"

mkdir -p "$tmp/nocomp"
cat > "$tmp/nocomp/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(nocomp LANGUAGES C)
find_package(loom CONFIG REQUIRED COMPONENTS no_such_backend)
CM
if cmake -S "$tmp/nocomp" -B "$tmp/nocomp/b" -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/nocomp.log" 2>&1; then
    fail "find_package accepted a backend component that is not built"
fi
tr -s " \n" "  " < "$tmp/nocomp.log" | grep -q "without the no_such_backend backend" || { cat "$tmp/nocomp.log"; fail "no message naming the missing component"; }
echo "install: a missing backend component is refused by name"

# examples/neural-texture: a Vulkan application built against the installed package,
# trained while it renders, headless, under the validation layer (any message fails);
# then with --window under xvfb-run when it was built with GLFW
if grep -q vulkan <<< "$(sed -n 's/^set(loom_BACKENDS \(.*\))/\1/p' "$(find "$prefix" -name loomConfig.cmake | head -1)")" &&
    command -v glslangValidator > /dev/null && [ -f /usr/include/stb/stb_image_write.h ]; then
    cmake -S "$src/examples/neural-texture" -B "$tmp/nt" -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/nt.log" 2>&1 &&
        cmake --build "$tmp/nt" >> "$tmp/nt.log" 2>&1 || { cat "$tmp/nt.log"; fail "neural-texture build"; }
    rc=0
    (cd "$tmp" && MESA_SHADER_CACHE_DIR="$tmp/cache" LD_LIBRARY_PATH=$libdir "$tmp/nt/neural-texture" --validation \
        --frames 100 --every 50 --min-psnr 25 --out "$tmp/nt-frame") > "$tmp/nt.out" 2>&1 || rc=$?
    cat "$tmp/nt.out"
    [ $rc -eq 77 ] && echo "install: neural-texture skipped (no Vulkan device)"
    [ $rc -eq 0 ] || [ $rc -eq 77 ] || fail "neural-texture (exit $rc)"
    [ $rc -eq 77 ] || echo "install: neural-texture trained while rendering, PSNR >= 25 dB, no validation message"
    # --window: the same loop presenting target | reconstruction through a swapchain,
    # on a virtual X display, under the validation layer
    if [ $rc -eq 0 ] && ! grep -q '^NT_WINDOW:INTERNAL=ON' "$tmp/nt/CMakeCache.txt"; then
        echo "install: neural-texture --window skipped (built without GLFW: libglfw3-dev)"
    elif [ $rc -eq 0 ] && ! command -v xvfb-run > /dev/null; then
        echo "install: neural-texture --window skipped (no xvfb-run: apt install xvfb xauth)"
    elif [ $rc -eq 0 ]; then
        rc=0
        (cd "$tmp" && MESA_SHADER_CACHE_DIR="$tmp/cache" LD_LIBRARY_PATH=$libdir xvfb-run -a "$tmp/nt/neural-texture" \
            --window --validation --frames 24 --every 12 --out "$tmp/nt-window") > "$tmp/ntw.out" 2>&1 || rc=$?
        cat "$tmp/ntw.out"
        [ $rc -eq 0 ] || fail "neural-texture --window (exit $rc)"
        grep -q "^window: 2[0-9] frames presented" "$tmp/ntw.out" || fail "neural-texture --window presented too few frames"
        echo "install: neural-texture --window presented its frames under xvfb, no validation message"
    fi
else
    echo "install: neural-texture skipped (needs the vulkan component, glslangValidator and libstb-dev)"
fi
