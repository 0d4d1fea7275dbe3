#!/usr/bin/env bash
# tests/cli-augment.sh — `loom train --augment-on device|host|auto`: a bad
# value is a usage error naming it; --help lists the option; the same short
# training run gives the same checkpoint bytes with the augmentation on the
# host and on the device (the batches are bit for bit the same), on the cpu
# backend and on vulkan / opencl when present (reproducible mode), with the
# default pipeline, with crops, a flip and a ColorJitter with contrast
# (on the device after the upload), and with those and a final nearest
# RandomAffine (the guide's steps; on the device too). Usage:
# tests/cli-augment.sh LOOM
set -uo pipefail
loom=$(readlink -f "${1:?usage: tests/cli-augment.sh LOOM}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }

"$loom" train --augment-on gpu > "$work/bad.log" 2>&1
rc=$?
check "a bad value exits 2" "[ $rc -eq 2 ]"
check "a bad value is named" "grep -q \"bad value 'gpu' for --augment-on (device, host or auto)\" '$work/bad.log'"
"$loom" train --help > "$work/help.log" 2>&1
check "--help lists --augment-on" "grep -q -- '--augment-on device|host' '$work/help.log'"

common=(train --model cnn --max-eval 64 --seed 3 --quiet)
jitter='RandomCrop(28, padding=2); RandomHorizontalFlip(); ColorJitter(0.3, 0.3)'
affine="$jitter; RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1))"
for b in cpu vulkan opencl; do
    args=(--backend "$b" --max-steps 20)
    [ "$b" = cpu ] || args=(--backend "$b" --reproducible --max-steps 4)
    for t in default jitter affine; do
        tf=()
        [ "$t" = jitter ] && tf=(--transform "$jitter")
        [ "$t" = affine ] && tf=(--transform "$affine")
        for m in host device; do
            out="$work/$b-$t-$m"
            if ! "$loom" "${common[@]}" "${args[@]}" "${tf[@]}" --augment-on "$m" --save "$out.st" > "$out.log" 2>&1; then
                if [ "$b" != cpu ] && grep -qi "not available\|cannot run\|no device\|not built" "$out.log"; then
                    echo "skip: $b not here"; continue 3
                fi
                echo "FAIL: $b $t --augment-on $m:"; tail -3 "$out.log"; fail=1; continue 2
            fi
        done
        check "$b, $t pipeline: host and device checkpoints are the same bytes" \
            "cmp -s '$work/$b-$t-host.st' '$work/$b-$t-device.st'"
    done
done
exit $fail
