# Sourced by script tests: what a test needs before it starts. A missing
# build output, or libfabric where the test exists to run ofi, FAILs (the
# build is not what the test checks); a missing privilege or system feature
# SKIPs (exit 0, "SKIP: ..."). Both print the closing tally line that
# ctest's log readers look for.
#   preflight_fail MESSAGE        FAIL now: "FAIL: MESSAGE", "0 passed, 1 failed", exit 1
#   preflight_skip MESSAGE        SKIP now: "SKIP: MESSAGE", exit 0
#   need_built HINT FILE...       FAIL unless every FILE is executable (HINT: what to build, or "")
#   need_hwloc BUILD              SKIP unless BUILD's hetccl-info reads the topology with hwloc
#   ofi_library INFO              prints hetccl-info's libfabric line ("libfabric 1.x ..." when usable)
#   ofi_usable TEXT               true when TEXT (from ofi_library) names libfabric 1.x
#   need_ofi INFO                 FAIL unless the ofi transport can run here

preflight_fail() {
  echo "FAIL: $*"
  echo "0 passed, 1 failed"
  exit 1
}

preflight_skip() {
  echo "SKIP: $*"
  exit 0
}

need_built() {
  local hint=$1 f names=""
  shift
  for f in "$@"; do names="${names:+$names or }$f"; done
  for f in "$@"; do
    [ -x "$f" ] || preflight_fail "$names is missing${hint:+ ($hint)}"
  done
}

need_hwloc() {
  "$1/bin/hetccl-info" 2>/dev/null | grep -qE "reader +hwloc" ||
    preflight_skip "this build has no hwloc (the topology is not read)"
}

ofi_library() { "$1" 2>/dev/null | grep -A1 '^libfabric' | tail -1 | sed 's/^ *library *//'; }
ofi_usable() { echo "$1" | grep -q '^libfabric 1\.'; }

need_ofi() {
  local lib
  lib=$(ofi_library "$1")
  ofi_usable "$lib" && return 0
  echo "FAIL: the ofi transport cannot run here: ${lib:-hetccl-info names no libfabric}"
  echo "  (scripts/install-deps.sh installs libfabric-dev and libfabric1; rebuild after it)"
  echo "0 passed, 1 failed"
  exit 1
}
