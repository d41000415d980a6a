#!/bin/bash
# Two "hosts" made of two network namespaces joined by a veth pair that this
# test creates (198.18.0.1/24 and 198.18.0.2/24, the benchmarking range), with
# ranks in both: the bootstrap root in the first, HETCCL_SOCKET_IFNAME set to
# the veth. Ranks in different network namespaces count as different hosts,
# so the library must carry traffic between them over sockets. The second
# namespace also gets its own /dev/shm (as a real second host has), so shared
# memory wrongly used across the two fails instead of silently working.
#
# Ranks are tests/integration/test_collectives in its one-rank mode; every
# rank checks its results against the harness's references.
#
# Usage: test_two_hosts.sh <build-dir>
# Skips (exit 0, "SKIP: ...") only when network namespaces cannot be made.
set -u

BUILD=${1:?usage: test_two_hosts.sh <build-dir>}
. "$(dirname "$0")/lib/netns.sh"
BIN="$BUILD/bin/test_collectives"
need_built "build the test_collectives target" "$BIN"
netns_need unshare

NS1="hetccl-t$$-a"
NS2="hetccl-t$$-b"
IF1=hetccl-va
IF2=hetccl-vb
ADDR1=198.18.0.1
ADDR2=198.18.0.2
netns_begin two-hosts
netns_add "$NS1" "$NS2"
netns_veth "$IF1" "$NS1" "$IF2" "$NS2"
netns_addr "$NS1" "$ADDR1/24" "$IF1"
netns_addr "$NS2" "$ADDR2/24" "$IF2"
netns_up "$NS1" lo "$IF1"
netns_up "$NS2" lo "$IF2"

elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

PASSED=0
FAILED=0
T_START=$(date +%s.%N)

# Runs one job: $1 name, $2 ranks in NS1, $3 ranks in NS2, then options for
# test_collectives. Ranks 0..$2-1 live in NS1, the rest in NS2 (one shell with
# a private /dev/shm starts them all, so they share it among themselves).
run_job() {
  local name=$1 n1=$2 n2=$3
  shift 3
  local n=$((n1 + n2)) dir="$WORK/$name" r
  mkdir -p "$dir"
  local t0
  t0=$(date +%s.%N)
  PIDS=()
  for ((r = 0; r < n1; r++)); do
    ip netns exec "$NS1" env HETCCL_SOCKET_IFNAME="$IF1" RANK=$r WORLD_SIZE=$n HETCCL_DOMAIN="d$((r % DOMAINS))" \
      timeout -s KILL 560 "$BIN" --rank $r --nranks $n --id-file "$dir/id" "$@" >"$dir/rank$r.out" 2>"$dir/rank$r.err" &
    PIDS+=($!)
  done
  # The second host: its own mount namespace and /dev/shm.
  local script='mount -t tmpfs -o size=4g hetccl-shm /dev/shm || exit 97
pids=""
for r in $(seq '"$n1"' '"$((n - 1))"'); do
  HETCCL_SOCKET_IFNAME='"$IF2"' RANK=$r WORLD_SIZE='"$n"' HETCCL_DOMAIN=d$((r % '"$DOMAINS"')) timeout -s KILL 560 "$0" --rank $r --nranks '"$n"' --id-file "$1" "${@:2}" >"$(dirname "$1")/rank$r.out" 2>"$(dirname "$1")/rank$r.err" &
  pids="$pids $!"
done
rc=0
for p in $pids; do wait $p || rc=1; done
exit $rc'
  ip netns exec "$NS2" unshare -m --propagation private bash -c "$script" "$BIN" "$dir/id" "$@" &
  PIDS+=($!)
  local rc=0 p
  for p in "${PIDS[@]}"; do wait "$p" || rc=1; done
  PIDS=()
  local jp=0 jf=0 line
  for ((r = 0; r < n; r++)); do
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$dir/rank$r.out" | tail -1)
    if [ -z "$line" ]; then
      echo "FAIL: $name: rank $r printed no result (crashed, hung or was killed); its stderr:"
      tail -n 20 "$dir/rank$r.err"
      jf=$((jf + 1))
      continue
    fi
    jp=$((jp + $(echo "$line" | cut -d' ' -f1)))
    jf=$((jf + $(echo "$line" | cut -d' ' -f3)))
    if ! echo "$line" | grep -q ' 0 failed$'; then
      echo "FAIL: $name: rank $r: $line; first failures:"
      grep -m 10 FAIL "$dir/rank$r.err"
    fi
  done
  if [ $rc -ne 0 ] && [ $jf -eq 0 ]; then
    echo "FAIL: $name: a rank exited non-zero with no failed case"
    jf=1
  fi
  PASSED=$((PASSED + jp))
  FAILED=$((FAILED + jf))
  printf '%s (%d+%d ranks): %d passed, %d failed, %s s\n' "$name" "$n1" "$n2" "$jp" "$jf" \
    "$(elapsed "$t0")"
}

# 2 + 2 ranks, one domain: every collective, type and op across the link.
DOMAINS=1
run_job ranks2x2 2 2 --counts 0,1,7,1023,65539 --timeout 500
# 2 + 2 ranks, 2^20 + 3 elements: large messages across the link
# (TWO_HOSTS_QUICK=1 leaves it out: test_two_hosts_ofi.sh).
if [ -z "${TWO_HOSTS_QUICK:-}" ]; then
  run_job ranks2x2-large 2 2 --counts 1048579 --types float32,bfloat16,int64,fp8e5m2 --timeout 500
fi
# 1 + 2 ranks in two domains (rank parity), the id through the launcher's
# environment with the root on the first host.
DOMAINS=2
PORT=$((20000 + $$ % 20000))
export MASTER_ADDR=$ADDR1 MASTER_PORT=$PORT HETCCL_BOOTSTRAP_SECRET="two-hosts-$$"
run_job ranks1x2-env 1 2 --env-id --counts 1,1023,65539 --types float32,bfloat16,int8,fp8e4m3 --timeout 300
unset MASTER_ADDR MASTER_PORT HETCCL_BOOTSTRAP_SECRET

printf 'test_two_hosts: %s s\n' "$(elapsed "$T_START")"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
