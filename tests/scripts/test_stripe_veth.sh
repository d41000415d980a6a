#!/bin/bash
# Socket links striped over two NICs: two "hosts" (network namespaces)
# joined by three veth pairs this test creates. One pair carries the default
# route (the bootstrap's); the two others, hstripe0 and hstripe1 (the same
# names in both namespaces, different subnets), are the two NICs that
# tests/topo/veth_stripe.xml puts behind one PCIe switch, so each (host)
# rank is given both and its socket transport listens on both. Ranks run
# test_collectives' one-rank mode with messages large enough to stripe
# and check their results; the tx_bytes counters of hstripe0 and hstripe1
# in each namespace, read before and after, must each have grown by at
# least a third of what the two carried together (striping spreads pieces
# evenly), and the two together by at least the largest message. With
# HETCCL_SOCKET_STRIPE_MIN_BYTES=0 (striping off), and with rank 1 given
# only hstripe0 (HETCCL_NET_DEVICES) while rank 0 has both, the same run
# must not stripe and must leave hstripe1 nearly idle: the counters do
# tell the cases apart.
#
# With "ofi" as the second argument (test_stripe_veth_ofi.sh) the same runs
# go over the ofi transport (HETCCL_TRANSPORT=ofi, provider tcp), whose
# ranks open an endpoint on each NIC's domain (ofi_stripe.c), and
# HETCCL_OFI_STRIPE_MIN_BYTES turns striping off.
#
# Usage: test_stripe_veth.sh <build-dir> [socket|ofi]
# Skips (exit 0, "SKIP: ...") when not root, without hwloc, or when
# namespaces cannot be made.
set -u

BUILD=${1:?usage: test_stripe_veth.sh <build-dir> [socket|ofi]}
TRANSPORT=${2:-socket}
case $TRANSPORT in
socket) MINVAR=HETCCL_SOCKET_STRIPE_MIN_BYTES EXTRA=() ;;
ofi) MINVAR=HETCCL_OFI_STRIPE_MIN_BYTES EXTRA=(HETCCL_OFI_PROVIDER=tcp) ;;
*)
  echo "FAIL: unknown transport $TRANSPORT (socket or ofi)"
  exit 1
  ;;
esac
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BIN="$BUILD/bin/test_collectives"
TOPO="$SRC/tests/topo/veth_stripe.xml"
COUNT=4194307 # float32: 16 MiB + 12 bytes, striped
. "$(dirname "$0")/lib/netns.sh"
need_built "build the test_collectives target" "$BIN"
netns_need
need_hwloc "$BUILD"
if [ "$TRANSPORT" = ofi ] && ! HETCCL_OFI_PROVIDER=tcp "$BUILD/bin/hetccl-info" 2>/dev/null | grep -qE "chosen +tcp"; then
  echo "FAIL: the ofi transport (provider tcp) cannot run here:"
  HETCCL_OFI_PROVIDER=tcp "$BUILD/bin/hetccl-info" 2>&1 | grep -E "ofi" | head -5
  echo "0 passed, 1 failed"
  exit 1
fi

NS=("hetccl-stripe$$-a" "hetccl-stripe$$-b")
netns_begin stripe-veth
netns_add "${NS[@]}"
for i in hstripe0 hstripe1 hstripe-d; do netns_veth "$i" "${NS[0]}" "$i" "${NS[1]}"; done
# hstripe0: 198.18.4.0/24, hstripe1: 198.18.5.0/24, default route: 198.18.6.0/24.
for h in 0 1; do
  ns=${NS[$h]}
  netns_addr "$ns" "198.18.4.$((h + 1))/24" hstripe0
  netns_addr "$ns" "198.18.5.$((h + 1))/24" hstripe1
  netns_addr "$ns" "198.18.6.$((h + 1))/24" hstripe-d
  netns_up "$ns" lo hstripe0 hstripe1 hstripe-d
  ip -n "$ns" route add default via "198.18.6.$((2 - h))" dev hstripe-d || netns_fail_setup "default route in $ns"
done

PASSED=0
FAILED=0
fail() {
  echo "FAIL: $*"
  FAILED=$((FAILED + 1))
}
# $1 a rank's log, $2 yes or no: whether it must hold the pattern $3; else
# fail with the message $5 and show the log's lines matching $4 (if any).
log_has() {
  local has=no
  grep -q -- "$3" "$1" && has=yes
  [ "$has" = "$2" ] && return 0
  fail "$5"
  [ -n "$4" ] && grep -E "$4" "$1" | head -6
  return 1
}
tx() { ip netns exec "${NS[$1]}" cat "/sys/class/net/$2/statistics/tx_bytes"; }

# $1 name, $2 $MINVAR ("" for the default), $3
# "striped" or "one", $4 HETCCL_NET_DEVICES of rank 1 ("": every NIC):
# rank 0 in the first namespace, rank 1 in the second.
run_pair() {
  local name=$1 min=$2 want=$3 devs1=${4:-} dir="$WORK/$1" h r
  mkdir -p "$dir"
  local before=()
  for h in 0 1; do before+=("$(tx $h hstripe0)" "$(tx $h hstripe1)"); done
  PIDS=()
  for r in 0 1; do
    local devs=""
    [ $r = 1 ] && devs=$devs1
    ip netns exec "${NS[$r]}" env -u HETCCL_SOCKET_IFNAME -u HETCCL_NET_DEVICES HETCCL_TOPO=1 HETCCL_TOPO_FILE="$TOPO" \
      ${min:+$MINVAR=$min} ${devs:+HETCCL_NET_DEVICES=$devs} "${EXTRA[@]}" HETCCL_DEBUG=INFO \
      timeout -s KILL 300 "$BIN" --rank $r \
      --nranks 2 --id-file "$dir/id" --transport "$TRANSPORT" --counts 1,65539,$COUNT --types float32 --ops sum \
      --colls allreduce,allgather,broadcast,sendrecv --timeout 240 >"$dir/rank$r.out" 2>"$dir/rank$r.err" &
    PIDS+=($!)
  done
  local p
  for p in "${PIDS[@]}"; do wait "$p"; done
  PIDS=()
  for r in 0 1; do
    if ! grep -qE '^[0-9]+ passed, 0 failed$' "$dir/rank$r.out"; then
      fail "$name: rank $r did not pass; its output and stderr:"
      grep -E "FAIL|passed" "$dir/rank$r.out" | head -5
      tail -n 15 "$dir/rank$r.err"
      continue
    fi
    local err="$dir/rank$r.err"
    if [ $r = 1 ] && [ -n "$devs1" ]; then
      log_has "$err" no "sockets also on interface hstripe1" "" \
        "$name: rank $r listened on hstripe1 with HETCCL_NET_DEVICES=$devs1" || continue
    else
      log_has "$err" yes "sockets also on interface hstripe1" "NIC|interface" \
        "$name: rank $r did not listen on hstripe1 too; its log:" || continue
    fi
    if [ "$want" = striped ]; then
      log_has "$err" yes "$TRANSPORT: rank $r linked to rank $((1 - r)) over 2 NICs.* striped" "NIC|interface|linked" \
        "$name: rank $r did not stripe its link; its log:" || continue
    else
      log_has "$err" no "over 2 NICs" "" "$name: rank $r striped ($MINVAR=$min, rank 1's NICs ${devs1:-all})" || continue
    fi
    PASSED=$((PASSED + 1))
  done
  for h in 0 1; do
    local d0=$(($(tx $h hstripe0) - before[2 * h])) d1=$(($(tx $h hstripe1) - before[2 * h + 1]))
    local sum=$((d0 + d1))
    echo "$name: ${NS[$h]}: tx_bytes grew by $d0 on hstripe0, $d1 on hstripe1"
    if [ "$want" = striped ]; then
      if [ "$sum" -lt $((COUNT * 4)) ] || [ $((d0 * 3)) -lt "$sum" ] || [ $((d1 * 3)) -lt "$sum" ]; then
        fail "$name: host $h: each of hstripe0 ($d0) and hstripe1 ($d1) must carry a third of their sum, and" \
          "the sum at least $((COUNT * 4)) bytes"
      else
        PASSED=$((PASSED + 1))
      fi
    elif [ "$d0" -lt $((COUNT * 4)) ] || [ $((d1 * 100)) -gt "$d0" ]; then
      fail "$name: host $h: hstripe0 ($d0) must carry at least $((COUNT * 4)) bytes and hstripe1 ($d1) under 1% of it"
    else
      PASSED=$((PASSED + 1))
    fi
  done
  echo "$name: done"
}

run_pair striped "" striped
run_pair stripe-off 0 one
# One end with one NIC (HETCCL_NET_DEVICES keeps hstripe0), the other with
# two: the link takes the fewer, one, on both ends alike.
run_pair one-nic-peer "" one =hstripe0
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
