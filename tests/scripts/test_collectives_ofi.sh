#!/bin/bash
# Cross-domain collectives with every link on the ofi transport (libfabric,
# provider tcp;ofi_rxm, HETCCL_TRANSPORT=ofi) on one host: two and three
# domains, four element sizes, counts up to 2^20+3, and one job during which a rank is stopped
# (SIGSTOP) for a second, so its peers' writes wait for a receiver that does
# not poll. Every rank checks its results against the harness's references.
# Needs libfabric (scripts/install-deps.sh installs libfabric-dev): without
# it this test FAILS, it does not skip.
# Usage: test_collectives_ofi.sh <build-dir> [extra test_collectives options]
set -u
BUILD=${1:?usage: test_collectives_ofi.sh <build-dir>}
shift
BIN="$BUILD/bin/test_collectives"
INFO="$BUILD/bin/hetccl-info"
if [ ! -x "$BIN" ] || [ ! -x "$INFO" ]; then
  echo "FAIL: $BIN or $INFO is missing"
  echo "0 passed, 1 failed"
  exit 1
fi
lib=$("$INFO" | grep -A1 '^libfabric' | tail -1)
if ! echo "$lib" | grep -q 'libfabric 1\.'; then
  echo "FAIL: the ofi transport cannot run here:$lib"
  echo "  (scripts/install-deps.sh installs libfabric-dev and libfabric1; rebuild after it)"
  echo "0 passed, 1 failed"
  exit 1
fi
export HETCCL_OFI_PROVIDER=tcp
passed=0
failed=0
status=0
tally() { # $1: output of a job, $2: its exit status
  local line
  line=$(echo "$1" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
  if [ -z "$line" ]; then
    failed=$((failed + 1))
    status=1
    return
  fi
  passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
  failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
  [ "$2" -eq 0 ] || status=1
}
run() {
  local out
  out=$("$BIN" --transport ofi "$@")
  local rc=$?
  echo "$out"
  tally "$out" $rc
}
# The transport moves bytes: four types (1, 2, 4, 8 bytes) carry every
# collective and op; the whole type matrix runs over shm and socket.
run --layout 2,2 --counts 0,1,7,1023,65539 --types int8,bfloat16,float32,float64 "$@"
run --layout 1,1,1 --counts 1,1048579 --types float32 "$@"

# A rank stopped for a second mid-run: the job's forked ranks are the
# children of the test_collectives process started here (one job, so its
# only children are its ranks).
out_file=$(mktemp /tmp/hetccl-ofi-stop.XXXXXX)
"$BIN" --transport ofi --layout 1,2 --counts 65539,1048579 --types float32,int32 \
  --colls allreduce,allgather,broadcast,reducescatter "$@" >"$out_file" &
job=$!
sleep 1
kid=$(ps -o pid= --ppid "$job" | tail -1 | tr -d ' ')
stopped=0
if [ -n "$kid" ] && kill -STOP "$kid" 2>/dev/null; then
  stopped=1
  sleep 1
  kill -CONT "$kid"
fi
wait "$job"
rc=$?
out=$(cat "$out_file")
rm -f "$out_file"
echo "$out"
tally "$out" $rc
if [ "$stopped" -eq 1 ]; then
  echo "rank process $kid was stopped for 1 s mid-run"
else
  echo "FAIL: the job ended before a rank could be stopped"
  failed=$((failed + 1))
  status=1
fi
echo "$passed passed, $failed failed"
[ $status -eq 0 ] && [ $failed -eq 0 ]
