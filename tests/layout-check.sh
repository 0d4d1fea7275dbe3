#!/usr/bin/env bash
# tests/layout-check.sh — the house rules that keep the tree easy to read, checked
# on the sources as they are (run from ctest with the source root as $1):
#
#  1. floors: a file under core/ includes nothing from loader/, backends/, train/
#     or tools/, and calls no function that one of those defines (core names no
#     backend, no loader, no trainer);
#  2. sizes: no source file over 800 lines, no function over 150 lines
#     (generated files and test data excepted: tests/data, *_fixtures.h,
#     dtype_vectors.h, tests/fuzz corpora);
#  3. one contract per op: the parameter slots and kind codes of an op are
#     defined once, in core/params.h; no backend declares its own copy.
#
# Run by ctest (test layout-check). Each failure prints the file, the line and
# the rule; the exit code is the number of failures (capped at 125), 0 when
# the tree keeps every rule.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || { echo "layout-check: no source tree at '$root'" >&2; exit 1; }
fail=0
bad() { echo "layout-check: $*"; fail=$((fail + 1)); }

# The sources: C, CUDA, OpenCL C, GLSL and their headers, outside build trees
# and generated or fixture files.
mapfile -t SRC < <(find core backends loader train tools include shaders tests bench examples \
    -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cl' \
    -o -name '*.comp' -o -name '*.glsl' \) 2>/dev/null |
    grep -v -E '^tests/(data|fuzz/corpus)/|_fixtures\.h$|^tests/dtype_vectors\.h$' | sort)
[ "${#SRC[@]}" -gt 50 ] || { echo "layout-check: found only ${#SRC[@]} source files under $root"; exit 1; }

# ---- 1. floors ----
for f in core/*.c core/*.h core/ops/*.c core/*.def; do
    [ -e "$f" ] || continue
    while IFS=: read -r line text; do
        bad "$f:$line: core includes from a floor above it: $text"
    done < <(grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*(loader|backends|train|tools|cpu|cuda|vulkan|opencl)[/_.]' "$f")
done
# Functions defined above core (by their definition lines: `type name(` at
# column 0 followed by a body) must not be called from core.
above=$(find loader backends train tools -type f \( -name '*.c' -o -name '*.cu' -o -name '*.h' -o -name '*.cuh' \) 2>/dev/null |
    xargs -r grep -h -o -E '^[A-Za-z_][A-Za-z0-9_ \*]*[ \*](loom_[A-Za-z0-9_]+)\(' |
    sed -E 's/.*[ *](loom_[A-Za-z0-9_]+)\($/\1/' | sort -u)
if [ -n "$above" ]; then
    pat=$(printf '%s\n' "$above" | paste -sd'|')
    for f in core/*.c core/ops/*.c core/*.h; do
        [ -e "$f" ] || continue
        while IFS=: read -r line text; do
            name=$(printf '%s' "$text" | grep -o -E "\\b($pat)\\b" | head -1)
            bad "$f:$line: core calls '$name', defined above core"
        done < <(grep -n -E "\\b($pat)[[:space:]]*\\(" "$f")
    done
fi

# ---- 2. sizes ----
for f in "${SRC[@]}"; do
    n=$(wc -l < "$f")
    [ "$n" -le 800 ] || bad "$f: $n lines (at most 800: split it along its seams)"
done
# A function starts at a line at column 0 that begins with a name and holds
# a `(` (its signature, perhaps over several lines) and opens its body with a
# `{` at the end of that line or a later one; it ends at the next `}` at
# column 0. Prototypes (ending in `;`) and initialisers (`=`) are not bodies.
for f in "${SRC[@]}"; do
    awk -v file="$f" '
        function name_of(s,    w, n) { sub(/\(.*/, "", s); n = split(s, w, /[ *]+/); return w[n] }
        state == 2 { if ($0 ~ /^\}/) {
                         if (NR - start + 1 > 150)
                             printf "layout-check: %s:%d: function %s is %d lines (at most 150: split it by phase)\n", file, start, name, NR - start + 1
                         state = 0 }
                     next }
        state == 1 { if ($0 ~ /;[[:space:]]*$/ || $0 ~ /^[[:space:]]*$/) state = 0
                     else if ($0 ~ /\{[[:space:]]*$/) state = 2
                     next }
        /^[A-Za-z_]/ && /\(/ && !/=/ && !/^(typedef|struct|enum|union)[[:space:]]/ && !/;[[:space:]]*$/ {
            start = NR; name = name_of($0); state = ($0 ~ /\{[[:space:]]*$/) ? 2 : 1
        }
    ' "$f"
done > /tmp/layout-check-fn.$$
while IFS= read -r l; do echo "$l"; fail=$((fail + 1)); done < /tmp/layout-check-fn.$$
rm -f /tmp/layout-check-fn.$$

# ---- 3. one contract per op ----
# Slot indices and kind codes live in core/params.h (LOOM_P_* and LOOM_K_*);
# a backend, shader or kernel file that declares its own slot enum (BN_*, LN_*
# and the like) or its own kind codes has made a second copy.
while IFS=: read -r f line text; do
    bad "$f:$line: a private copy of an op's parameter slots or kind codes (use core/params.h): $text"
done < <(grep -n -r -E '^[[:space:]]*(enum[[:space:]]*\{[^}]*\b(BN|LN|ACT|POOL|CONV|CE|DROP|SLOT)_[A-Z0-9_]+[[:space:]]*=|#[[:space:]]*define[[:space:]]+(BN|LN|ACT|POOL|CONV|CE|DROP|SLOT)_[A-Z0-9_]+[[:space:]]+[0-9]+)' \
    backends shaders core/ops 2>/dev/null)

if [ "$fail" -eq 0 ]; then
    echo "layout-check: ${#SRC[@]} files keep the floors, the sizes and one contract per op"
    exit 0
fi
echo "layout-check: $fail failure(s)"
[ "$fail" -gt 125 ] && fail=125
exit "$fail"
