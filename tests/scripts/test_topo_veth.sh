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
. "$(dirname "$0")/lib/netns.sh"
need_built "build the test_collectives target" "$BIN"
netns_need
need_hwloc "$BUILD"

NS1="hetccl-topo$$-a"
NS2="hetccl-topo$$-b"
netns_begin topo-veth
netns_add "$NS1" "$NS2"
netns_veth htopo-a "$NS1" htopo-b "$NS2"
netns_veth htopo-da "$NS1" htopo-db "$NS2"
netns_addr "$NS1" 198.18.2.1/24 htopo-a
netns_addr "$NS2" 198.18.2.2/24 htopo-b
netns_addr "$NS1" 198.18.3.1/24 htopo-da
netns_addr "$NS2" 198.18.3.2/24 htopo-db
netns_up "$NS1" lo htopo-a htopo-da
netns_up "$NS2" lo htopo-b htopo-db
ip -n "$NS1" route add default via 198.18.3.2 dev htopo-da || netns_fail_setup "default route in $NS1"
ip -n "$NS2" route add default via 198.18.3.1 dev htopo-db || netns_fail_setup "default route in $NS2"

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
