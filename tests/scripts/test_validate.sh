#!/usr/bin/env bash
# hetccl-validate (tools/validate): --quick on host ranks in one, two and
# three domains passes, and its JSON parses and lists every case of every
# section; with HETCCL_TEST_VALIDATE_CORRUPT one result element of one case
# is flipped after the call, and the run must fail, name exactly that case
# (table and JSON) and exit 1; with HETCCL_TEST_VALIDATE_HANG the last rank
# never makes one case's call, and the watchdog must end the run (exit 4)
# and name the case. Then --quick over the stand-ins (test-tools/
# validate_stand_in_hip, the stand-in HIP runtime, RCCL and CUDA driver, as
# tests/scripts/test_hip_collectives.sh and test_cuda_hip_collectives.sh):
# a hip rank and a host rank, and a cuda rank beside a hip rank.
# Usage: test_validate.sh <build-dir>. Exit status 1 on any failure.
set -u
build=${1:?usage: $0 <build-dir>}
build=$(cd "$build" && pwd)
bin=$build/bin/hetccl-validate
standin=$build/test-tools/validate_stand_in_hip
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $1"; }
bad() { failed=$((failed + 1)); echo "FAIL: $1"; [ -n "${2:-}" ] && tail -n 30 "$2"; }
if [ ! -x "$bin" ]; then
  echo "FAIL: $bin not built"
  exit 1
fi

# The JSON: parses, every case has its parameters and a result, the counts
# add up to the summary, each section has what the layout asks for.
# check_json FILE EXPECT(PASS|FAIL) DOMAIN_PAIRS SWEEP(0|1) [FAILED_ID]
check_json() {
  python3 - "$@" <<'PY'
import json, sys
path, expect, pairs, sweep = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
want_failed = sys.argv[5] if len(sys.argv) > 5 else None
d = json.load(open(path))
cases = d["cases"]
keys = {"id", "comm", "nranks", "collective", "datatype", "op", "count", "inplace", "root", "result", "wrong", "error"}
for c in cases:
    missing = keys - set(c)
    assert not missing, f"case {c.get('id')} lacks {missing}"
assert [c["id"] for c in cases] == list(range(1, len(cases) + 1)), "case ids are not 1..n in order"
assert d["summary"]["cases"] == len(cases), "summary and case list disagree"
assert d["result"] == expect, f"result {d['result']}, expected {expect}"
comms = sorted({c["comm"] for c in cases})
assert "world" in comms and len(comms) == 1 + pairs, f"communicators {comms}, expected world and {pairs} pairs"
for comm in comms:
    mine = [c for c in cases if c["comm"] == comm]
    colls = {c["collective"] for c in mine}
    need = {"allreduce", "broadcast", "reduce", "allgather", "reducescatter", "alltoall", "gather", "scatter", "sendrecv"}
    assert colls == need, f"{comm}: collectives {sorted(colls)}"
    assert {c["inplace"] for c in mine if c["collective"] == "allreduce"} == {True, False}, f"{comm}: in-place missing"
    counts = {c["count"] for c in mine}
    assert {0, 1} <= counts and any(n % 2 for n in counts if n > 1) and max(counts) >= 65536, f"{comm}: counts {counts}"
if expect == "PASS":
    assert all(c["result"] == "PASS" for c in cases)
    if sweep:
        assert d["sweep"] and all(b["result"] == "PASS" for b in d["sweep"]), "sweep rows"
        assert {b["collective"] for b in d["sweep"]} == {"allreduce", "allgather", "reducescatter", "sendrecv"}
        assert all(b["reference"] and b["reference_gbs"] for b in d["sweep"]), "a sweep row without its reference"
    else:
        assert not d["sweep"]
else:
    bad = [c for c in cases if c["result"] != "PASS"]
    assert len(bad) == 1 and str(bad[0]["id"]) == want_failed, f"failed cases {[(c['id'], c['result']) for c in bad]}"
print(f"{len(cases)} cases, {len(d['sweep'])} sweep rows")
PY
}

# run_pass NAME PAIRS SWEEP ARGS...: passes, its JSON is whole.
run_pass() {
  local name=$1 pairs=$2 sweep=$3 out=$tmp/$1.out start=$SECONDS
  shift 3
  if timeout 120 "$@" --quick --case-timeout 30 --json "$tmp/$name.json" >"$out" 2>&1 &&
      grep -q '^hetccl-validate: PASS' "$out" && check_json "$tmp/$name.json" PASS "$pairs" "$sweep" >>"$out" 2>&1; then
    ok "$name: $(tail -n 1 "$out") ($((SECONDS - start)) s)"
  else
    bad "$name" "$out"
  fi
}

run_pass host-1domain 0 1 "$bin" -N 4
run_pass host-2domains 1 1 env HETCCL_TEST_VALIDATE_TCP=1 "$bin" --domains 2,2
# The raw TCP column (over the loopback under the hook) is in every row.
if python3 -c "import json,sys; assert all(b['tcp_gbs'] for b in json.load(open(sys.argv[1]))['sweep'])" \
    "$tmp/host-2domains.json" 2>/dev/null; then
  ok "host-2domains: the TCP reference in every sweep row"
else
  bad "host-2domains: a sweep row without the TCP reference"
fi
run_pass host-3domains 3 0 "$bin" --domains 1,1,2 --no-sweep

# The corrupting hook: the 5th case with a non-zero count is case 7
# (allreduce int32 sum: counts 0 1 7 65539, out-of-place then in-place).
out=$tmp/corrupt.out
HETCCL_TEST_VALIDATE_CORRUPT=5 timeout 120 "$bin" --quick -N 2 --no-sweep --json "$tmp/corrupt.json" >"$out" 2>&1
rc=$?
id=$(python3 -c "import json,sys; print([c['id'] for c in json.load(open(sys.argv[1]))['cases'] if c['result']=='FAIL'][0])" \
  "$tmp/corrupt.json" 2>/dev/null)
if [ "$rc" = 1 ] && [ -n "$id" ] && grep -q "^  FAIL: case $id allreduce int32 sum count 65539 out-of-place: 1 wrong elements" "$out" &&
    grep -q '^hetccl-validate: FAIL' "$out" && check_json "$tmp/corrupt.json" FAIL 0 0 "$id" >>"$out" 2>&1; then
  ok "corrupted element: exit 1, case $id named"
  [ "$id" = 7 ] || bad "the corrupted case is $id, not 7"
else
  bad "corrupted element (exit $rc, case '$id')" "$out"
fi

# The hang hook: the watchdog ends the run and names the case.
out=$tmp/hang.out
HETCCL_TEST_VALIDATE_HANG=20 timeout 60 "$bin" --quick -N 2 --no-sweep --case-timeout 2 --json "$tmp/hang.json" >"$out" 2>&1
rc=$?
if [ "$rc" = 4 ] && grep -q 'rank 0: TIMEOUT: case 20 (world, 2 ranks) allreduce' "$out" &&
    python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['cases']; assert c[-1]['id']==20 and c[-1]['result']=='TIMEOUT'" \
      "$tmp/hang.json" >>"$out" 2>&1; then
  ok "hung case: exit 4, case 20 named"
else
  bad "hung case (exit $rc)" "$out"
fi

# Over the stand-ins.
if [ -x "$standin" ]; then
  t=$build/test-tools
  sienv=(HETCCL_HIP_LIBRARY="$t/stand-in-hip-rocm6/libamdhip64.so" HETCCL_RCCL_LIBRARY="$t/stand-in-rccl/librccl.so.1"
         HETCCL_CUDA_LIBRARY="$t/stand-in-cuda/libcuda.so.1" HETCCL_NCCL_LIBRARY="$t/stand-in-quirky/libquirkynccl.so.7")
  run_pass stand-in-hip,host 1 1 env "${sienv[@]}" "$standin" -G hip,host --domains 1,1
  run_pass stand-in-cuda,hip 1 1 env "${sienv[@]}" "$standin" -G cuda,hip --domains 1,1
else
  bad "$standin not built"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
