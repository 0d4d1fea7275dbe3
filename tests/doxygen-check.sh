#!/usr/bin/env bash
# tests/doxygen-check.sh SRC BUILD — the API reference builds from include/loom/
# (Doxyfile) and every public function, struct and field is documented:
# any doxygen warning (an undocumented declaration, a malformed comment) fails.
#
# Skipped (77) without doxygen.
set -euo pipefail
src=$(readlink -f "${1:?usage: tests/doxygen-check.sh SRC BUILD}")
build=$(readlink -f "${2:?usage: tests/doxygen-check.sh SRC BUILD}")
command -v doxygen > /dev/null || { echo "doxygen: skipped: doxygen is not installed (apt-get install doxygen)"; exit 77; }
out=$build/doxygen
mkdir -p "$out"
cd "$src"
{ cat Doxyfile; echo "OUTPUT_DIRECTORY = $out"; echo "WARN_AS_ERROR = NO"; echo "WARN_LOGFILE = $out/warnings.log"; } |
    doxygen - > "$out/doxygen.log" 2>&1 || { cat "$out/doxygen.log"; echo "doxygen: FAIL: doxygen failed"; exit 1; }
[ -f "$out/html/index.html" ] || { echo "doxygen: FAIL: no $out/html/index.html"; exit 1; }
if [ -s "$out/warnings.log" ]; then
    n=$(grep -c -E '(warning|error):' "$out/warnings.log" || true)
    head -60 "$out/warnings.log"
    echo "doxygen: FAIL: $n warnings (above; all in $out/warnings.log): document every public declaration" \
         "in include/loom/ (one comment per field)"
    exit 1
fi
echo "doxygen: no warnings; HTML in $out/html"
