#!/usr/bin/env bash
# One wire: ranks on HetCCL's NCCL face (libnccl.so.2) and on its RCCL face
# (librccl.so.1) in one communicator. Host ranks (HETCCL_DEVICE=host),
# domains set with HETCCL_DOMAIN; the unique id passes through a file.
# Each rank is build/test-tools/two_faces_{nccl,rccl} (tests/abi/
# two_faces_rank.c built once per face): every collective both faces share,
# checked on every rank against closed-form references.
#  1. 2 ranks: rank 0 on the NCCL face (domain a), rank 1 on the RCCL face (b);
#  2. 4 ranks, faces alternating, domains a a b b (each domain mixes faces);
#  3. 3 ranks: NCCL, RCCL, RCCL, one domain each;
#  4. proof the checks can fail: case 1 with rank 1 sending wrong data
#     (TWO_FACES_CORRUPT=1) must fail on rank 0.
# Usage: test_two_faces.sh <build-dir>. Prints "N passed, M failed".
set -u
build=${1:?usage: $0 <build-dir>}
build=$(cd "$build" && pwd)
tools=$build/test-tools
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
check() { if [ "$1" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $2"; fi; }

for f in nccl rccl; do
  [ -x "$tools/two_faces_$f" ]; check $? "$tools/two_faces_$f is missing"
done
[ "$(readelf -d "$tools/two_faces_nccl" | grep -c 'NEEDED.*libnccl.so.2')" = 1 ] &&
  [ "$(readelf -d "$tools/two_faces_nccl" | grep -c 'NEEDED.*\(librccl\|libhetccl\)')" = 0 ]
check $? "two_faces_nccl must depend on libnccl.so.2 only"
[ "$(readelf -d "$tools/two_faces_rccl" | grep -c 'NEEDED.*librccl.so.1')" = 1 ] &&
  [ "$(readelf -d "$tools/two_faces_rccl" | grep -c 'NEEDED.*\(libnccl\|libhetccl\)')" = 0 ]
check $? "two_faces_rccl must depend on librccl.so.1 only"

# run <name> <expect:0 ok|1 fail> <corrupt-rank> <face:domain>...
run() {
  local name=$1 expect=$2 corrupt=$3
  shift 3
  local n=$# r=0 pids=() idfile=$tmp/$name.id spec
  for spec in "$@"; do
    local face=${spec%%:*} dom=${spec#*:} c=0
    [ "$r" = "$corrupt" ] && c=1
    HETCCL_DEVICE=host HETCCL_DOMAIN=$dom TWO_FACES_CORRUPT=$c timeout 120 \
      "$tools/two_faces_$face" "$r" "$n" "$idfile" >"$tmp/$name.$r.log" 2>&1 &
    pids+=($!)
    r=$((r + 1))
  done
  local bad=0 rc i
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"
    rc=$?
    [ "$rc" = 0 ] || bad=$((bad + 1))
    sed "s/^/  [$name rank $i] /" "$tmp/$name.$i.log" | grep -E 'passed|FAIL|rror' | head -5
  done
  if [ "$expect" = 0 ]; then
    [ "$bad" = 0 ]; check $? "$name: $bad of $n ranks failed"
  else
    [ "$bad" -gt 0 ] && grep -q "FAIL" "$tmp/$name.0.log"
    check $? "$name: corrupted data on rank $corrupt went unnoticed (the checks cannot fail?)"
  fi
}

run two 0 -1 nccl:a rccl:b
run four_mixed 0 -1 nccl:a rccl:a nccl:b rccl:b
run three 0 -1 nccl:a rccl:b rccl:c
run corrupt 1 1 nccl:a rccl:b
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
