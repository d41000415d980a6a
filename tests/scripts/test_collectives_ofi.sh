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
. "$(dirname "$0")/lib/preflight.sh"
. "$(dirname "$0")/lib/matrix.sh"
need_built "" "$BIN" "$INFO"
need_ofi "$INFO"
export HETCCL_OFI_PROVIDER=tcp
run() { matrix_run "$BIN" --transport ofi "$@"; }
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
matrix_tally "$out" $rc
if [ "$stopped" -eq 1 ]; then
  echo "rank process $kid was stopped for 1 s mid-run"
else
  echo "FAIL: the job ended before a rank could be stopped"
  failed=$((failed + 1))
  status=1
fi
matrix_finish
