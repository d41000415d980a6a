#!/usr/bin/env bash
# hetccl-perf with forked ranks (-N) on a machine that cannot hold them, and
# with ranks that die:
#  - a job that does not fit (shm segments or buffers beyond the machine) is
#    refused with exit 2 before any rank starts, and the message gives the
#    numbers: links x bytes per segment, buffers, room, the largest -N / -e;
#  - a rank killed while links are set up (test hook
#    HETCCL_PERF_TEST_KILL_RANK=<rank>:setup) is reported with its signal,
#    and the parent removes the segments the job left in /dev/shm, and no
#    other name (a decoy of another "job" stays);
#  - a rank killed mid-run (HETCCL_PERF_TEST_KILL_RANK=<rank>) is reported,
#    and nothing of the job is left;
#  - SIGTERM to the parent stops the ranks, cleans up, and the parent dies of
#    SIGTERM; a rank that exits with an error is reported with its status.
# Other tests may use /dev/shm at the same time: only this run's names (found
# through the job's prefix) are looked at.
#
# usage: bash tests/scripts/test_perf_capacity.sh <build-dir>
set -u
build=${1:?usage: test_perf_capacity.sh <build-dir>}
perf="$build/bin/hetccl-perf"
tmp=$(mktemp -d)
decoy=""
cleanup() {
  rm -rf "$tmp"
  [ -n "$decoy" ] && rm -f "$decoy"
}
trap cleanup EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

if [ ! -x "$perf" ]; then
  echo "FAIL: $perf not built"
  echo "0 passed, 1 failed"
  exit 1
fi

# The numbers after a label in the refusal message ($tmp/err).
field() { sed -n "s/^  $1 *\([0-9][0-9]*\) bytes.*/\1/p" "$tmp/err" | head -n 1; }

# /dev/shm names that start with $1 (a job's prefix, e.g. hetccl-0123...-).
job_names() { ls /dev/shm 2>/dev/null | grep "^$1" || true; }

# --- 1. Refusals -----------------------------------------------------------

# refuse <name> <hetccl-perf args...>: exit 2 within seconds, a table never
# printed, the library never started (HETCCL_DEBUG=INFO would log the
# bootstrap of any rank), and at most one process forked (the child that
# reads the library's settings), when strace can tell.
refuse() {
  local name=$1
  shift
  local t0=$SECONDS
  HETCCL_DEBUG=INFO timeout -k 5 60 "$perf" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ $rc -ne 2 ]; then bad "$name: exit status $rc, expected 2"; cat "$tmp/err"; return 1; fi
  if [ $((SECONDS - t0)) -gt 10 ]; then bad "$name: took $((SECONDS - t0)) s to refuse"; fi
  if ! grep -q "do not fit this machine; nothing was started" "$tmp/err"; then
    bad "$name: no refusal message"; cat "$tmp/err"; return 1
  fi
  if grep -q '^hetccl [0-9]* INFO' "$tmp/err" || [ -s "$tmp/out" ]; then
    bad "$name: something ran"; cat "$tmp/out" "$tmp/err"; return 1
  fi
  if strace -f -qq -e trace=clone,clone3,fork,vfork -o "$tmp/strace" true 2>/dev/null; then
    strace -f -qq -e trace=clone,clone3,fork,vfork -o "$tmp/strace" "$perf" "$@" >/dev/null 2>&1
    local procs
    procs=$(grep -E '(clone|clone3|fork|vfork)\(' "$tmp/strace" | grep -vc CLONE_THREAD)
    if [ "$procs" -gt 1 ]; then bad "$name: $procs processes were started"; return 1; fi
  fi
  return 0
}

# Ranks far beyond any machine: 1 GiB slots x 64 per direction make every
# link's segment 128 GiB (+ 5 pages), and 100 ranks have 4950 links.
slot=$((1 << 30)) nslots=64 n=100 e=8192
ctrl=$(( ((128 + nslots * 64) + 4095) / 4096 * 4096 ))  # ring counters and slot meta, in pages
seg=$(( 4096 + 2 * (ctrl + nslots * slot) ))             # header page, two rings
links=$(( n * (n - 1) / 2 ))
rank_buf=$(( 2 * (e + 64) ))
if HETCCL_SHM_SLOT_BYTES=$slot HETCCL_SHM_NSLOTS=$nslots refuse "-N $n with 128 GiB links" allreduce -N $n -e $e; then
  shm=$(field "shm segments:") bufs=$(field "benchmark buffers:")
  shm_free=$(sed -n 's/^  \/dev\/shm: *needs [0-9]* bytes, has \([0-9]*\) bytes.*/\1/p' "$tmp/err")
  mem=$(sed -n 's/^  memory: *needs [0-9]* bytes .*, has \([0-9]*\) bytes.*/\1/p' "$tmp/err")
  fit_n=$(sed -n 's/^  largest rank count that fits at -e [0-9]*: -N \([0-9]*\)$/\1/p' "$tmp/err")
  if [ "$shm" = $((links * seg)) ] && grep -q ": $links links x $seg bytes ($nslots slots x $slot bytes each way)" "$tmp/err"; then ok
  else bad "-N $n: shm segments $shm, expected $links x $seg = $((links * seg))"; cat "$tmp/err"; fi
  if [ "$bufs" = $((n * rank_buf)) ] && grep -q ": $n ranks x $rank_buf bytes" "$tmp/err"; then ok
  else bad "-N $n: buffers $bufs, expected $n x $rank_buf"; cat "$tmp/err"; fi
  if [ -n "$shm_free" ] && [ -n "$mem" ] && [ -n "$fit_n" ] && [ "$fit_n" -lt $n ]; then
    # The largest -N fits the room the message states, one more does not.
    need() { echo $(( $1 * ($1 - 1) / 2 * seg )); }
    fits() { local s; s=$(need "$1"); [ "$s" -le "$shm_free" ] && [ $((s + $1 * rank_buf)) -le "$mem" ]; }
    if fits "$fit_n" && ! fits $((fit_n + 1)); then ok
    else bad "-N $n: largest -N $fit_n does not match the room stated ($shm_free in /dev/shm, $mem memory)"; fi
  else
    bad "-N $n: no /dev/shm, memory or largest -N line"; cat "$tmp/err"
  fi
fi

# Buffers beyond any machine: 2 ranks x 2 x ~1 PiB.
e=$((1000000 << 30))
if refuse "-e 1000000G" allreduce -N 2 -e 1000000G; then
  bufs=$(field "benchmark buffers:")
  fit_e=$(sed -n 's/^  largest size that fits at -N 2: -e \([0-9]*\) .*/\1/p' "$tmp/err")
  if [ "$bufs" = $((2 * 2 * (e + 64))) ] && [ -n "$fit_e" ] && [ "$fit_e" -lt "$e" ]; then ok
  else bad "-e 1000000G: buffers $bufs, expected $((4 * (e + 64))); largest -e '$fit_e'"; cat "$tmp/err"; fi
fi

# --- 2. A rank killed while links are set up ----------------------------

# Another job's segment, which the parent must not touch.
decoy=/dev/shm/hetccl-$(printf '%08x%08x' $RANDOM$RANDOM $RANDOM$RANDOM | cut -c1-16)-0-1
: >"$decoy"
HETCCL_PERF_TEST_KILL_RANK=3:setup timeout -k 5 120 "$perf" allreduce -N 4 -b 8 -e 64K -n 2 -w 1 -T 60 \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
prefix=$(sed -n 's|.*test hook HETCCL_PERF_TEST_KILL_RANK: .*(job.s shm names: /dev/shm/\(hetccl-[0-9a-f]*-\)\*)$|\1|p' "$tmp/err" | head -n 1)
if [ $rc -eq 4 ] && grep -q '^hetccl-perf: rank 3 (pid [0-9]*) died of signal 9 (SIGKILL' "$tmp/err"; then ok
else bad "kill at setup: status $rc (expected 4) or no report of rank 3's SIGKILL"; cat "$tmp/err"; fi
if [ -z "$prefix" ]; then
  bad "kill at setup: the hook did not name the job's prefix"; cat "$tmp/err"
else
  # Ranks 0-2 made segments for rank 3 that nobody will open: the parent
  # must have removed them, and said so.
  left=$(job_names "$prefix")
  if [ -z "$left" ]; then ok; else bad "kill at setup: left in /dev/shm: $left"; fi
  if grep -q "^hetccl-perf: removed [1-9][0-9]* shm segments ([0-9]* bytes) that the ranks left in /dev/shm/$prefix\*" \
    "$tmp/err"; then ok
  else bad "kill at setup: the parent did not report removing the job's segments"; cat "$tmp/err"; fi
fi
if [ -e "$decoy" ]; then ok; else bad "kill at setup: another job's name ($decoy) was removed"; fi
rm -f "$decoy"
decoy=""

# --- 3. A rank killed mid-run -------------------------------------------

HETCCL_PERF_TEST_KILL_RANK=1 timeout -k 5 120 "$perf" allreduce -N 3 -b 8 -e 64K -n 2 -w 1 -T 60 \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
prefix=$(sed -n 's|.*test hook HETCCL_PERF_TEST_KILL_RANK: .*(job.s shm names: /dev/shm/\(hetccl-[0-9a-f]*-\)\*)$|\1|p' "$tmp/err" | head -n 1)
rows=$(grep -cv '^#' "$tmp/out")
if [ $rc -eq 4 ] && [ "$rows" -eq 1 ] && grep -q '^hetccl-perf: rank 1 (pid [0-9]*) died of signal 9 (SIGKILL' "$tmp/err"
then ok
else bad "kill mid-run: status $rc (expected 4), $rows rows (expected 1), or no report"; cat "$tmp/err"; fi
if [ -n "$prefix" ] && [ -z "$(job_names "$prefix")" ]; then ok
else bad "kill mid-run: prefix '$prefix', left: $(job_names "${prefix:-none}")"; fi

# --- 4. SIGTERM to the parent; a rank that fails -------------------------

# A run long enough to be stopped; its prefix comes from the library's log.
HETCCL_DEBUG=INFO "$perf" allreduce -N 3 -b 4M -e 4M -n 100000 -w 0 -c 0 -T 100 >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 200); do grep -q '^#  Rank' "$tmp/out" && break; sleep 0.1; done
kill -TERM $pid
wait $pid
rc=$?
prefix=$(sed -n 's|.*linked to rank [0-9]* via /\(hetccl-[0-9a-f]*-\)[0-9]*-[0-9]* .*|\1|p' "$tmp/err" | head -n 1)
if [ $rc -eq 143 ] && grep -q '^hetccl-perf: SIGTERM; killing the ranks' "$tmp/err"; then ok
else bad "SIGTERM: status $rc (expected 143)"; tail -n 5 "$tmp/err"; fi
alive=""
for p in $(sed -n 's/^hetccl \([0-9]*\) INFO.*/\1/p' "$tmp/err" | sort -u); do
  kill -0 "$p" 2>/dev/null && alive="$alive $p"
done
if [ -n "$prefix" ] && [ -z "$(job_names "$prefix")" ] && [ -z "$alive" ]; then ok
else bad "SIGTERM: prefix '$prefix'; names left: $(job_names "${prefix:-none}"); ranks alive:$alive"; fi

# A rank that exits with an error is reported with its status: hip is a
# device kind HETCCL_DEVICE accepts (the unique id is made), but no HIP
# runtime is usable here, so each rank's init fails.
HETCCL_DEVICE=hip timeout -k 5 60 "$perf" allreduce -N 2 -b 8 -e 8 -n 1 -w 0 >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 3 ] && grep -q '^hetccl-perf: rank [01] (pid [0-9]*) exited with status 3 (a HetCCL or NCCL call failed)' \
  "$tmp/err"; then ok
else bad "failing rank: status $rc (expected 3) or no report"; cat "$tmp/err"; fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
