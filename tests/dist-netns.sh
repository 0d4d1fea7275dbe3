#!/usr/bin/env bash
# tests/dist-netns.sh MPIRUN TEST_DIST — a two-host data-parallel run on one
# machine: two network namespaces joined by a veth pair stand for two hosts
# (10.199.N.1 and .2); mpirun runs in the first with --host naming both, and
# starts the second host's rank through a launch agent that enters the
# second namespace (in place of ssh). The ranks talk over TCP only (no
# shared memory), and test-dist runs its equivalence checks (weights equal
# across the hosts after every step, equal to one process of twice the
# batch). Skips (77) where namespaces cannot be made (not root, no
# CAP_NET_ADMIN, no `ip`).
set -uo pipefail
mpirun=${1:?usage: dist-netns.sh MPIRUN TEST_DIST}
prog=$(readlink -f "${2:?usage: dist-netns.sh MPIRUN TEST_DIST}")
skip() { echo "SKIP: $1"; exit 77; }
command -v ip > /dev/null || skip "no ip command (iproute2)"
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root"
id=$$
ns1=loomdp1_$id ns2=loomdp2_$id v1=ldpa$id v2=ldpb$id
net=10.199.$((id % 200 + 20))
work=$(mktemp -d)
cleanup() {
    ip netns del "$ns1" 2> /dev/null
    ip netns del "$ns2" 2> /dev/null
    rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$ns1" 2> "$work/err" || skip "cannot create a network namespace: $(cat "$work/err")"
ip netns add "$ns2" 2> "$work/err" || skip "cannot create a second network namespace: $(cat "$work/err")"
ip link add "$v1" type veth peer name "$v2" 2> "$work/err" || skip "cannot create a veth pair: $(cat "$work/err")"
ip link set "$v1" netns "$ns1" && ip link set "$v2" netns "$ns2" &&
    ip -n "$ns1" addr add "$net.1/24" dev "$v1" && ip -n "$ns2" addr add "$net.2/24" dev "$v2" &&
    ip -n "$ns1" link set "$v1" up && ip -n "$ns2" link set "$v2" up &&
    ip -n "$ns1" link set lo up && ip -n "$ns2" link set lo up || { echo "FAIL: setting up the veth pair"; exit 1; }
# the launch agent: mpirun calls it as `agent HOST COMMAND...` (as it would ssh)
cat > "$work/agent" << AGENT
#!/bin/sh
host=\$1
shift
case \$host in
$net.2) echo "\$*" > "$work/launched-on-2"; exec ip netns exec $ns2 /bin/sh -c "\$*" ;;
*) exec ip netns exec $ns1 /bin/sh -c "\$*" ;;
esac
AGENT
chmod +x "$work/agent"
echo "hosts: $net.1 (namespace $ns1, mpirun) and $net.2 (namespace $ns2), TCP over the veth pair"
ip netns exec "$ns1" timeout 300 "$mpirun" --host "$net.1:1,$net.2:1" -np 2 \
    --mca plm_rsh_agent "$work/agent" --mca btl tcp,self --mca btl_tcp_if_include "$net.0/24" \
    --mca oob_tcp_if_include "$net.0/24" -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM \
    "$prog" -b cpu
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: the two-host run exited $rc"; exit 1; }
[ -s "$work/launched-on-2" ] || { echo "FAIL: mpirun did not start a rank through the second host's agent"; exit 1; }
echo "dist-netns: passed (the second host's daemon: $(cut -c1-60 "$work/launched-on-2")...)"
