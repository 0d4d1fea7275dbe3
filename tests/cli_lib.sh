# tests/cli_lib.sh — sourced by the command-line tests (cli.sh, cli-hardening.sh):
# the pass/fail counters, a temp dir removed on exit, and expect().
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect CODE PATTERN -- ARGS...: exit code CODE and PATTERN in stdout+stderr
expect() {
  local code=$1 pat=$2
  shift 3
  local out rc
  out=$("$LOOM" "$@" 2>&1)
  rc=$?
  if [ "$rc" -eq "$code" ] && grep -qE -- "$pat" <<<"$out"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: loom $* -> exit $rc (want $code), output lacks /$pat/:"
    head -8 <<<"$out" | sed 's/^/    /'
  fi
}
