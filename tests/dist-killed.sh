#!/usr/bin/env bash
# tests/dist-killed.sh MPIRUN LOOM — a rank that dies or stalls mid-epoch must
# not leave the others waiting forever:
#  1. killed (SIGKILL) mid-epoch: the job ends non-zero within the time limit,
#     with a message naming the dead rank (mpirun's);
#  2. stalled (SIGSTOP) mid-epoch: the other rank's collective times out
#     (--dist-timeout 5), it prints loom's error and ends the job (MPI_Abort):
#     non-zero within the limit.
# Needs Fashion-MNIST (/usr/share/datasets/fashion-mnist); skips without it.
set -uo pipefail
mpirun=${1:?usage: dist-killed.sh MPIRUN LOOM}
loom=${2:?usage: dist-killed.sh MPIRUN LOOM}
if [ ! -d /usr/share/datasets/fashion-mnist ]; then echo "SKIP: Fashion-MNIST absent"; exit 77; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
# a run far longer than the test: the mlp for many epochs, one thread per rank
args=(train --model mlp --backend cpu --threads 1 --workers 0 --epochs 1000 --batch 32 --quiet --dist-timeout 5)

run_case() { # name signal pattern
    local name=$1 sig=$2 pattern=$3
    "$mpirun" -np 2 --oversubscribe "$loom" "${args[@]}" > "$work/$name.log" 2>&1 &
    local job=$!
    # the ranks are mpirun's children; wait until both run and train
    local ranks="" i
    for i in $(seq 1 100); do
        ranks=$(pgrep -P "$job" | tr '\n' ' ')
        [ "$(echo $ranks | wc -w)" -ge 2 ] && break
        sleep 0.1
    done
    sleep 3
    local victim
    victim=$(echo $ranks | awk '{print $NF}')
    if [ -z "$victim" ]; then echo "FAIL $name: no rank process found"; kill "$job" 2>/dev/null; return 1; fi
    local t0=$SECONDS
    kill -"$sig" "$victim"
    local rc=0 waited=0
    while kill -0 "$job" 2>/dev/null && [ $waited -lt 60 ]; do sleep 0.5; waited=$((SECONDS - t0)); done
    if kill -0 "$job" 2>/dev/null; then
        echo "FAIL $name: the job still runs 60 s after rank $victim got SIG$sig"
        kill -CONT "$victim" 2>/dev/null; kill -KILL "$victim" 2>/dev/null; kill "$job" 2>/dev/null; wait "$job"
        return 1
    fi
    wait "$job"; rc=$?
    kill -KILL "$victim" 2>/dev/null
    echo "$name: SIG$sig to one rank: the job ended with $rc after $((SECONDS - t0)) s"
    sed 's/^/  | /' "$work/$name.log" | head -12
    if [ "$rc" -eq 0 ]; then echo "FAIL $name: exit code 0"; return 1; fi
    if ! grep -Eq "$pattern" "$work/$name.log"; then echo "FAIL $name: no message matching '$pattern'"; return 1; fi
    return 0
}

run_case killed KILL "rank|signal|exited" || fail=1
run_case stalled STOP "did not complete in 5 s: another rank died or stalls" || fail=1
if [ $fail -eq 0 ]; then echo "dist-killed: passed"; fi
exit $fail
