#!/bin/bash
# The topology's NIC chosen for socket links: two "hosts" (network
# namespaces) joined by two veth pairs this test creates. One pair carries
# the default route (the bootstrap uses it: HETCCL_SOCKET_IFNAME is unset);
# the other, htopo-a <-> htopo-b, is the NIC that each host's topology file
# (tests/topo/veth_a.xml, veth_b.xml: one NUMA node, one NIC whose network
# interface is the veth) names. Every rank must open its socket links on
# that veth (it says so at HETCCL_DEBUG=INFO) and pass test_collectives'
# checks; with HETCCL_TOPO=0 the same run must not name it (the check
# could not tell otherwise).
#
# Usage: test_topo_veth.sh <build-dir>
# Skips (exit 0, "SKIP: ...") when not root or namespaces cannot be made.
set -u

BUILD=${1:?usage: test_topo_veth.sh <build-dir>}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BIN="$BUILD/bin/test_collectives"
if [ ! -x "$BIN" ]; then
  echo "FAIL: $BIN is missing (build the test_collectives target)"
  echo "0 passed, 1 failed"
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: not root: creating network namespaces needs CAP_SYS_ADMIN"
  exit 0
fi
if ! command -v ip >/dev/null 2>&1; then
  echo "SKIP: the ip command (iproute2) is missing"
  exit 0
fi
if ! "$BUILD/bin/hetccl-info" 2>/dev/null | grep -qE "reader +hwloc"; then
  echo "SKIP: this build has no hwloc (the topology is not read)"
  exit 0
fi

NS1="hetccl-topo$$-a"
NS2="hetccl-topo$$-b"
WORK=$(mktemp -d /tmp/hetccl-topo-veth.XXXXXX)
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  ip netns del "$NS1" 2>/dev/null
  ip netns del "$NS2" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM HUP

for ns in "$NS1" "$NS2"; do
  if ! err=$(ip netns add "$ns" 2>&1); then
    echo "SKIP: the kernel refused a network namespace (ip netns add: $err)"
    exit 0
  fi
done
if ! err=$(ip link add htopo-a netns "$NS1" type veth peer name htopo-b netns "$NS2" 2>&1) ||
  ! err=$(ip link add htopo-da netns "$NS1" type veth peer name htopo-db netns "$NS2" 2>&1); then
  echo "SKIP: the kernel refused a veth pair between namespaces (ip link add: $err)"
  exit 0
fi
fail_setup() {
  echo "FAIL: network setup: $*"
  echo "0 passed, 1 failed"
  exit 1
}
ip -n "$NS1" addr add 198.18.2.1/24 dev htopo-a || fail_setup "htopo-a"
ip -n "$NS2" addr add 198.18.2.2/24 dev htopo-b || fail_setup "htopo-b"
ip -n "$NS1" addr add 198.18.3.1/24 dev htopo-da || fail_setup "htopo-da"
ip -n "$NS2" addr add 198.18.3.2/24 dev htopo-db || fail_setup "htopo-db"
for ns in "$NS1" "$NS2"; do ip -n "$ns" link set lo up || fail_setup "lo in $ns"; done
for i in htopo-a htopo-da; do ip -n "$NS1" link set "$i" up || fail_setup "$i up"; done
for i in htopo-b htopo-db; do ip -n "$NS2" link set "$i" up || fail_setup "$i up"; done
ip -n "$NS1" route add default via 198.18.3.2 dev htopo-da || fail_setup "default route in $NS1"
ip -n "$NS2" route add default via 198.18.3.1 dev htopo-db || fail_setup "default route in $NS2"

PASSED=0
FAILED=0
fail() {
  echo "FAIL: $*"
  FAILED=$((FAILED + 1))
}

# $1 name, $2 HETCCL_TOPO, $3 transport: rank 0 in NS1, rank 1 in NS2.
run_pair() {
  local name=$1 topo=$2 transport=$3 dir="$WORK/$1"
  mkdir -p "$dir"
  PIDS=()
  ip netns exec "$NS1" env -u HETCCL_SOCKET_IFNAME HETCCL_TOPO=$topo HETCCL_TOPO_FILE="$SRC/tests/topo/veth_a.xml" \
    HETCCL_DEBUG=INFO timeout -s KILL 200 "$BIN" --rank 0 --nranks 2 --id-file "$dir/id" --transport "$transport" \
    --counts 1,65539 --types float32 --timeout 120 >"$dir/rank0.out" 2>"$dir/rank0.err" &
  PIDS+=($!)
  ip netns exec "$NS2" env -u HETCCL_SOCKET_IFNAME HETCCL_TOPO=$topo HETCCL_TOPO_FILE="$SRC/tests/topo/veth_b.xml" \
    HETCCL_DEBUG=INFO timeout -s KILL 200 "$BIN" --rank 1 --nranks 2 --id-file "$dir/id" --transport "$transport" \
    --counts 1,65539 --types float32 --timeout 120 >"$dir/rank1.out" 2>"$dir/rank1.err" &
  PIDS+=($!)
  local p
  for p in "${PIDS[@]}"; do wait "$p"; done
  PIDS=()
  local r
  for r in 0 1; do
    if ! grep -qE '^[0-9]+ passed, 0 failed$' "$dir/rank$r.out"; then
      fail "$name: rank $r did not pass; its stderr:"
      tail -n 15 "$dir/rank$r.err"
      continue
    fi
    local want=htopo-a
    [ $r = 1 ] && want=htopo-b
    if [ "$topo" = 1 ]; then
      if grep -q "on interface $want of NIC 0000:02:00.0" "$dir/rank$r.err"; then
        PASSED=$((PASSED + 1))
      else
        fail "$name: rank $r did not take its topology's NIC $want; its log:"
        grep -E "NIC|interface" "$dir/rank$r.err" | head -5
      fi
    elif grep -q "on interface $want" "$dir/rank$r.err"; then
      fail "$name: rank $r names $want with HETCCL_TOPO=0"
    else
      PASSED=$((PASSED + 1))
    fi
  done
  echo "$name: done"
}

run_pair socket-topo 1 socket
run_pair socket-off 0 socket
run_pair ofi-topo 1 ofi
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
