#!/usr/bin/env bash
# tests/doxygen-check.sh SRC BUILD — the API reference builds from include/loom/
# (Doxyfile) and every public function, struct and field is documented.
#
# Skipped (77) without doxygen. Known gaps: the headers still have KNOWN
# undocumented struct fields and similar warnings (issue 22); while the count is
# at most that, the test is skipped with the count; more fails (new public API
# without its comment); none passes. Lower KNOWN as the headers are completed.
set -euo pipefail
KNOWN=155
src=$(readlink -f "${1:?usage: tests/doxygen-check.sh SRC BUILD}")
build=$(readlink -f "${2:?usage: tests/doxygen-check.sh SRC BUILD}")
command -v doxygen > /dev/null || { echo "doxygen: skipped: doxygen is not installed (apt-get install doxygen)"; exit 77; }
out=$build/doxygen
mkdir -p "$out"
cd "$src"
{ cat Doxyfile; echo "OUTPUT_DIRECTORY = $out"; echo "WARN_AS_ERROR = NO"; echo "WARN_LOGFILE = $out/warnings.log"; } |
    doxygen - > "$out/doxygen.log" 2>&1 || { cat "$out/doxygen.log"; echo "doxygen: FAIL: doxygen failed"; exit 1; }
n=$(grep -c -E '(warning|error):' "$out/warnings.log" || true)
[ -f "$out/html/index.html" ] || { echo "doxygen: FAIL: no $out/html/index.html"; exit 1; }
if [ "$n" -gt "$KNOWN" ]; then
    grep -E '(warning|error):' "$out/warnings.log" | head -40
    echo "doxygen: FAIL: $n warnings, more than the $KNOWN known: document the new public API (above)"
    exit 1
fi
if [ "$n" -gt 0 ]; then
    echo "doxygen: $n warnings left: see issue 22 ($out/warnings.log); HTML in $out/html"
    exit 77
fi
echo "doxygen: no warnings; HTML in $out/html"
