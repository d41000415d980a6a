#!/usr/bin/env bash
# hetccl-perf and hetccl-info, run as a user would: every collective with 2
# and 3 forked ranks (one domain, and two domains), all types and ops, odd
# sizes, non-zero roots; each table must have every row, #wrong 0 in every
# checked column, and exit status 0. Also: the check really catches a wrong
# element (HETCCL_PERF_CORRUPT), bad flags exit 2, and hetccl-info prints
# every section.
#
# usage: bash tests/scripts/test_perf_tool.sh <build-dir>
set -u
build=${1:?usage: test_perf_tool.sh <build-dir>}
perf="$build/bin/hetccl-perf"
info="$build/bin/hetccl-info"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

for bin in "$perf" "$info"; do
  if [ ! -x "$bin" ]; then
    echo "FAIL: $bin not built"
    echo "0 passed, 1 failed"
    exit 1
  fi
done

# Runs hetccl-perf with a bound on its time; output in $tmp/out, status in $rc.
run_perf() {
  timeout -k 5 180 "$perf" "$@" -T 150 >"$tmp/out" 2>"$tmp/err"
  rc=$?
}

# The table in $tmp/out: exactly $1 data rows of 13 columns, #wrong 0 in both
# checked columns (N/A only where allowed: $2 = 1 for the in-place column of
# sendrecv and alltoall, which have none),
# and nccl-tests' summary lines.
check_table() {
  local rows=$1 inplace_na=$2
  awk -v rows="$rows" -v na="$inplace_na" '
    /^#/ { if ($0 ~ /^# Out of bounds values : 0 OK/) oob = 1
           if ($0 ~ /^# Avg bus bandwidth    : [0-9]/) avg = 1
           next }
    NF == 0 { next }
    { n++
      if (NF != 13) { print "row with " NF " columns: " $0; bad = 1; next }
      if ($9 != "0") { print "out-of-place #wrong: " $0; bad = 1 }
      if (!($13 == "0" || (na && $13 == "N/A"))) { print "in-place #wrong: " $0; bad = 1 }
      if ($6 !~ /^[0-9.]+$/ || $8 !~ /^[0-9.]+$/) { print "bad time/busbw: " $0; bad = 1 } }
    END {
      if (n != rows) { print "rows: " n ", expected " rows; bad = 1 }
      if (!oob) { print "no \"# Out of bounds values : 0 OK\" line"; bad = 1 }
      if (!avg) { print "no \"# Avg bus bandwidth\" line"; bad = 1 }
      exit bad }' "$tmp/out"
}

# expect_table <rows> <name> <hetccl-perf args...>
expect_table() {
  local rows=$1 name=$2
  shift 2
  run_perf "$@"
  local na=0
  case "$1" in sendrecv|alltoall) na=1 ;; esac
  if [ $rc -ne 0 ]; then
    bad "$name: exit status $rc"
    tail -n 5 "$tmp/err" "$tmp/out"
  elif ! check_table "$rows" "$na" >"$tmp/why"; then
    bad "$name: table"
    cat "$tmp/why"
  else
    ok
  fi
}

colls="allreduce allgather reducescatter broadcast reduce alltoall gather scatter sendrecv"

# Every collective, 8 B .. 64 KiB (14 sizes), in one and in two domains.
for coll in $colls; do
  expect_table 14 "$coll -N 2" "$coll" -N 2 -b 8 -e 64K -n 2 -w 1
  expect_table 14 "$coll -N 3" "$coll" -N 3 -b 8 -e 64K -n 2 -w 1
  expect_table 14 "$coll -N 3 --domains 1,2" "$coll" -N 3 --domains 1,2 -b 8 -e 64K -n 2 -w 1
done

# Every type and op: 4 sizes x 12 types x 5 ops.
expect_table 240 "allreduce all types and ops" allreduce -N 3 -d all -o all -b 8 -e 1K -f 4 -n 1 -w 0
expect_table 240 "reducescatter all types and ops, 2 domains" reducescatter -N 3 --domains 2,1 -d all -o all \
  -b 8 -e 1K -f 4 -n 1 -w 0
expect_table 240 "reduce root 2 all types and ops" reduce -N 3 -r 2 -d all -o all -b 8 -e 1K -f 4 -n 1 -w 0

# Rooted collectives at a non-zero root; data movement of every type.
for coll in broadcast gather scatter; do
  expect_table 48 "$coll root 1 all types" "$coll" -N 3 -r 1 -d all -b 8 -e 1K -f 4 -n 1 -w 0
done

# Sizes that do not divide by the ranks or the type (100, 400, 700, 1000 bytes).
for coll in allgather reducescatter alltoall gather scatter allreduce; do
  expect_table 4 "$coll odd sizes" "$coll" -N 3 -d half -b 100 -e 1000 -i 300 -n 1 -w 0
done

# Without -c the #wrong columns say N/A and nothing fails.
run_perf allreduce -N 2 -b 1K -e 4K -n 1 -w 0 -c 0
if [ $rc -eq 0 ] && [ "$(grep -v '^#' "$tmp/out" | awk '$9 == "N/A" && $13 == "N/A"' | wc -l)" -eq 3 ]; then ok
else bad "-c 0: status $rc"; cat "$tmp/out"; fi

# The check catches a wrong element: exit 1, #wrong > 0, FAILED.
for coll in allreduce allgather broadcast; do
  HETCCL_PERF_CORRUPT=1 run_perf "$coll" -N 2 -b 64 -e 64 -n 1 -w 0
  if [ $rc -eq 1 ] && grep -q '^# Out of bounds values : [1-9][0-9]* FAILED' "$tmp/out" &&
     grep -v '^#' "$tmp/out" | awk '$9 == "1" && $13 == "1" { found = 1 } END { exit !found }'; then ok
  else bad "$coll with a corrupted result: status $rc"; cat "$tmp/out"; fi
done

# Bad flags: exit 2 before any rank starts.
for args in "nosuchcoll" "allreduce -N 3 --domains 1,1" "allreduce -d nosuchtype" "allreduce -o nosuchop" \
            "allreduce -b 1M -e 1K" "broadcast -N 2 -r 5"; do
  # shellcheck disable=SC2086
  timeout -k 5 60 "$perf" $args >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ $rc -eq 2 ]; then ok; else bad "'$args': status $rc, expected 2"; fi
done

# --host-time adds two columns (host ranks: the whole call, so above 0);
# --host-ref two more, whose values are N/A without GPU ranks.
host_cols() { # columns, whether the enq columns hold numbers
  awk -v cols="$1" -v enq="$2" '
    /^#/ { next } NF == 0 { next }
    { n++
      if (NF != cols) { print "row with " NF " columns: " $0; bad = 1; next }
      if (!($14 > 0 && $15 > 0)) { print "host time not above 0: " $0; bad = 1 }
      if (cols == 17 && enq && !($16 > 0 && $17 > 0)) { print "enq not above 0: " $0; bad = 1 }
      if (cols == 17 && !enq && !($16 == "N/A" && $17 == "N/A")) { print "enq without GPU ranks: " $0; bad = 1 } }
    END { if (n != 3) { print "rows: " n; bad = 1 } exit bad }' "$tmp/out"
}
run_perf allreduce -N 2 --domains 1,1 -b 8 -e 8K -f 32 -n 2 -w 1 --host-time
if [ $rc -eq 0 ] && host_cols 15 0 >"$tmp/why"; then ok; else bad "--host-time: status $rc"; cat "$tmp/why"; fi
run_perf allreduce -N 2 --domains 1,1 -b 8 -e 8K -f 32 -n 2 -w 1 --host-ref
if [ $rc -eq 0 ] && host_cols 17 0 >"$tmp/why"; then ok; else bad "--host-ref, host ranks: status $rc"; cat "$tmp/why"; fi
# A hip rank over the stand-in HIP runtime (a test tool, as in
# test_hip_collectives.sh): the enq columns hold the memset's time.
sperf=$build/test-tools/perf_stand_in_hip
shipr=$build/test-tools/stand-in-hip-rocm6/libamdhip64.so
srccl=$build/test-tools/stand-in-rccl/librccl.so.1
if [ -x "$sperf" ] && [ -e "$shipr" ] && [ -e "$srccl" ]; then
  HETCCL_HIP_LIBRARY=$shipr HETCCL_RCCL_LIBRARY=$srccl timeout -k 5 180 "$sperf" allreduce -N 2 --domains 1,1 \
    -G hip,host -b 8 -e 8K -f 32 -n 2 -w 1 --host-ref -T 150 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ $rc -eq 0 ] && host_cols 17 1 >"$tmp/why" && grep -q '^#  enq: ' "$tmp/out"; then ok
  else bad "--host-ref, hip rank: status $rc"; cat "$tmp/why" "$tmp/err"; fi
else
  bad "perf_stand_in_hip or the stand-ins not built"
fi

# hetccl-info: runs, and prints each section with the host kind available.
timeout -k 5 60 "$info" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -ne 0 ]; then
  bad "hetccl-info: exit status $rc"
  cat "$tmp/err"
else
  ok
  for section in "HetCCL" "Device kinds" "Vendor libraries" "Transports" "Kernels" "Settings"; do
    if grep -q "^$section\$" "$tmp/out"; then ok; else bad "hetccl-info: no '$section' section"; fi
  done
  if grep -Eq '^  host +available' "$tmp/out"; then ok; else bad "hetccl-info: host kind not available"; fi
  if grep -Eq '^  speaks NCCL +2\.30\.7' "$tmp/out"; then ok; else bad "hetccl-info: NCCL version"; fi
  if grep -Eq '^  (shm|socket) ' "$tmp/out"; then ok; else bad "hetccl-info: no transport listed"; fi
  if HETCCL_TIMEOUT_MS=1234 timeout -k 5 60 "$info" | grep -Eq '^  HETCCL_TIMEOUT_MS +1234 +\(set[,)]'; then ok
  else bad "hetccl-info: HETCCL_TIMEOUT_MS=1234 not shown as set"; fi
  if HETCCL_SOCKET_NSTREAMS=99 HETCCL_TRANSPORT=bogus timeout -k 5 60 "$info" 2>/dev/null >"$tmp/refused" &&
      grep -q 'REFUSED: HETCCL_SOCKET_NSTREAMS=99 is not accepted: .* an integer from 1 to 16' "$tmp/refused" &&
      grep -q 'REFUSED: HETCCL_TRANSPORT=bogus is not a transport: accepted shm, socket' "$tmp/refused"; then ok
  else bad "hetccl-info: refused settings not shown"; cat "$tmp/refused"; fi
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
