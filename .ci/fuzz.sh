#!/usr/bin/env bash
# .ci/fuzz.sh — a short fixed-time libFuzzer run of every target in
# tests/fuzz under AddressSanitizer and UndefinedBehaviorSanitizer, each
# starting from its committed corpus (tests/fuzz/corpus/<name>, read only:
# new inputs go to a scratch directory). Any crash, timeout (-timeout) or
# allocation over -rss_limit_mb fails the run; the input that did it is
# left under $FUZZ_OUT for a corpus file and a fix.
#
#   FUZZ_SECONDS   seconds per target (default 25)
#   FUZZ_BUILD     build directory (default build-fuzz)
#   FUZZ_OUT       artifacts and scratch corpora (default $FUZZ_BUILD/fuzz-out)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-25}
build=${FUZZ_BUILD:-build-fuzz}
out=${FUZZ_OUT:-$build/fuzz-out}
jobs=${JOBS:-$(nproc)}

cmake -S . -B "$build" -DLOOM_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLOOM_CUDA=OFF -DLOOM_VULKAN=OFF -DLOOM_OPENCL=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target fuzz_all

targets=$(sed -n 's/^set(LOOM_FUZZ_TARGETS \(.*\))$/\1/p' tests/fuzz/CMakeLists.txt)
status=0
for t in $targets; do
  scratch="$out/corpus-$t"
  mkdir -p "$scratch"
  dict=()
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  echo "fuzz: $t for ${secs}s"
  if ! "$build/tests/fuzz/fuzz_$t" "${dict[@]}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$out/$t-" "$scratch" "tests/fuzz/corpus/$t" >"$out/$t.log" 2>&1; then
    echo "fuzz: $t FAILED (log: $out/$t.log)" >&2
    tail -40 "$out/$t.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units" "$out/$t.log" | sed "s/^/fuzz: $t: /" || true
  fi
done
exit $status
