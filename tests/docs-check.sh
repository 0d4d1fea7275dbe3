#!/usr/bin/env bash
# tests/docs-check.sh — keeps README.md and docs/ from drifting away from the code.
#
#   docs-check.sh SRC_DIR LOOM_BIN LIBLOOM_SO [CC [CFLAGS]]
#
# Every fenced block of README.md, docs/*.md and docs/internals/*.md whose info
# string is
#   ```c            is compiled against SRC_DIR/include and linked with LIBLOOM_SO
#                   (a whole program: it must have main);
#   ```c fragment   is compiled (-fsyntax-only) inside a function body, after the
#                   public headers and its own #include lines;
#   ```sh           is run with bash -e, LOOM_BIN on PATH as `loom`, in a temp
#                   directory that the blocks of one file share, in file order;
#   ```sh skip-ci   is not run (make demo, installs, runs of several minutes);
#   ```python       is run, with the file's earlier python blocks before it, by
#                   $LOOM_DOCS_PYTHON in the file's run directory (after the sh
#                   blocks before it), when that variable names a Python that
#                   imports torch and safetensors; otherwise counted as skipped.
# Other blocks (text, cmake) are left alone. A failure names the file
# and the line of the block's opening fence. LOOM_DOCS_FILTER=PATTERN checks
# only the files whose path contains PATTERN.
set -u -o pipefail

src=$(cd "${1:?usage: docs-check.sh SRC_DIR LOOM_BIN LIBLOOM_SO [CC]}" && pwd)
loom_bin=$(readlink -f "${2:?loom binary}")
lib=$(readlink -f "${3:?libloom shared library}")
cc=${4:-${CC:-cc}}
read -r -a cflags <<< "${5:-}"   # e.g. -fsanitize=address,undefined for a sanitizer build

work=$(mktemp -d "${TMPDIR:-/tmp}/loom-docs.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
ln -s "$loom_bin" "$work/bin/loom"

failures=0
blocks=0
fail() {  # file line what [log]
    echo "FAIL $1:$2: $3" >&2
    if [ -n "${4:-}" ] && [ -s "$4" ]; then tail -n 30 "$4" | sed 's/^/    /' >&2; fi
    failures=$((failures + 1))
}

# Split FILE into numbered blocks: $dir/NNN.{kind,line,body}.
extract() {  # file dir
    awk -v dir="$2" '
        BEGIN { n = 0; inb = 0 }
        /^```/ {
            if (!inb) {
                info = substr($0, 4); gsub(/^[ \t]+|[ \t]+$/, "", info)
                inb = 1; n++
                f = sprintf("%s/%03d", dir, n)
                print info > (f ".kind"); close(f ".kind")
                print NR > (f ".line"); close(f ".line")
                printf "" > (f ".body")
                next
            }
            if ($0 ~ /^```[ \t]*$/) { inb = 0; close(f ".body"); next }
        }
        inb { print >> (f ".body") }
        END { if (inb) { print "unclosed fence" > "/dev/stderr"; exit 1 } }
    ' "$1"
}

check_c() {  # file line body fragment?
    local out="$work/c" log="$work/c.log"
    mkdir -p "$out"
    if [ "$4" = fragment ]; then
        {
            echo '#include <stdio.h>'
            echo '#include <stdlib.h>'
            echo '#include <string.h>'
            echo '#include "loom/loom.h"'
            echo '#include "loom/train.h"'
            grep '^#include' "$3"
            echo 'void docs_fragment(void);'
            echo 'void docs_fragment(void) {'
            echo "#line $(($2 + 1)) \"$1\""
            grep -v '^#include' "$3"
            echo '}'
        } > "$out/frag.c"
        "$cc" "${cflags[@]}" -std=c11 -Wall -Werror -Wno-unused-variable -Wno-unused-but-set-variable \
            -Wno-uninitialized -Wno-maybe-uninitialized -Wno-unused-label \
            -I "$src/include" -fsyntax-only "$out/frag.c" > "$log" 2>&1 ||
            fail "$1" "$2" "C fragment does not compile" "$log"
    else
        { echo "#line $(($2 + 1)) \"$1\""; cat "$3"; } > "$out/prog.c"
        "$cc" "${cflags[@]}" -std=c11 -Wall -Wextra -Werror -I "$src/include" "$out/prog.c" -o "$out/prog" \
            "$lib" -Wl,-rpath,"$(dirname "$lib")" -lm > "$log" 2>&1 ||
            fail "$1" "$2" "C program does not compile or link" "$log"
    fi
}

check_sh() {  # file line body rundir
    local log="$work/sh.log"
    (cd "$4" && PATH="$work/bin:$PATH" LOOM_SRC="$src" timeout 600 bash -e -o pipefail "$3") > "$log" 2>&1 ||
        fail "$1" "$2" "sh block failed (exit $?)" "$log"
}

check_py() {  # file line body rundir pyfile
    local log="$work/py.log"
    cat "$3" >> "$5"
    (cd "$4" && timeout 600 "$LOOM_DOCS_PYTHON" "$5") > "$log" 2>&1 ||
        fail "$1" "$2" "python block failed (exit $?)" "$log"
}

py_ok=0
if [ -n "${LOOM_DOCS_PYTHON:-}" ]; then
    if "$LOOM_DOCS_PYTHON" -c 'import torch, safetensors' > /dev/null 2>&1; then
        py_ok=1
    else
        echo "docs-check: LOOM_DOCS_PYTHON=$LOOM_DOCS_PYTHON cannot import torch and safetensors" >&2
        failures=$((failures + 1))
    fi
fi
py_skipped=0

cd "$src" || exit 1
files=$(ls README.md docs/*.md docs/internals/*.md 2>/dev/null)
for f in $files; do
    case "$f" in *"${LOOM_DOCS_FILTER:-}"*) ;; *) continue ;; esac
    d="$work/blocks/$f"
    mkdir -p "$d" "$work/run/$f"
    extract "$f" "$d" || { fail "$f" 0 "unclosed code fence"; continue; }
    for k in "$d"/*.kind; do
        [ -e "$k" ] || continue
        b=${k%.kind}
        kind=$(cat "$k")
        line=$(cat "$b.line")
        case "$kind" in
            c) blocks=$((blocks + 1)); check_c "$f" "$line" "$b.body" program ;;
            "c fragment") blocks=$((blocks + 1)); check_c "$f" "$line" "$b.body" fragment ;;
            sh) blocks=$((blocks + 1)); echo "run $f:$line"; check_sh "$f" "$line" "$b.body" "$work/run/$f" ;;
            "sh skip-ci") ;;
            python)
                if [ "$py_ok" = 1 ]; then
                    blocks=$((blocks + 1)); echo "run $f:$line (python)"
                    check_py "$f" "$line" "$b.body" "$work/run/$f" "$d/all.py"
                else
                    py_skipped=$((py_skipped + 1))
                fi ;;
            c\ * | sh\ *) fail "$f" "$line" "unknown block marker '$kind' (c, c fragment, sh, sh skip-ci)" ;;
        esac
    done
done
[ "$py_skipped" -eq 0 ] ||
    echo "docs-check: $py_skipped python blocks skipped (set LOOM_DOCS_PYTHON to a Python with torch and safetensors)"
echo "docs-check: $blocks blocks checked, $failures failed"
[ "$failures" -eq 0 ]
