#!/usr/bin/env bash
# HetCCL's CPU instructions per pass-through call (no GPU needed):
# tools/bench/passthrough_icount.c under valgrind's callgrind at 1000 and
# 2000 calls, over the stand-in CUDA driver and the recording NCCL of the
# build's test tools; per call the difference / 1000 of
#   self: instructions inside libhetccl.so itself;
#   incl: the inclusive cost of the public entry points called (the libc,
#         lock and thread-local calls they make counted) less that of the
#         recording NCCL's calls.
#   bash scripts/passthrough-icount.sh [BUILD]      (default: build)
set -u
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null || {
  echo "valgrind (callgrind) is needed"
  exit 1
}
out=$(mktemp -d /tmp/hetccl-icount.XXXXXX)
trap 'rm -rf "$out"' EXIT
gcc -O2 -std=c11 -I"$repo/include" "$repo/tools/bench/passthrough_icount.c" -L"$build/lib" -lhetccl \
  -Wl,-rpath,"$build/lib" -o "$out/icount" || exit 1
export HETCCL_DEVICE=cuda STAND_IN_CUDA_DEVICES=2
export HETCCL_CUDA_LIBRARY=$build/test-tools/stand-in-cuda/libcuda.so.1
export HETCCL_NCCL_LIBRARY=$build/test-tools/recording-nccl/libnccl.so.2
unset HETCCL_DOMAIN
for f in "$HETCCL_CUDA_LIBRARY" "$HETCCL_NCCL_LIBRARY"; do
  [ -f "$f" ] || { echo "missing $f (build the test tree)"; exit 1; }
done
declare -A self incl
for kind in s a g; do
  for n in 1000 2000; do
    valgrind --tool=callgrind --callgrind-out-file="$out/cg.$kind.$n" "$out/icount" $n $kind >/dev/null 2>&1 ||
      { echo "callgrind run $kind $n failed"; exit 1; }
    self[$n]=$(callgrind_annotate --threshold=100 "$out/cg.$kind.$n" 2>/dev/null |
      awk '/libhetccl\.so/ {gsub(",", "", $1); s += $1} END {print s + 0}')
    incl[$n]=$(callgrind_annotate --inclusive=yes --threshold=100 "$out/cg.$kind.$n" 2>/dev/null | awk '
      /:hetccl(GroupStart|GroupEnd|Send|Recv|AllReduce|AllGather) \[.*libhetccl/ {gsub(",", "", $1); s += $1}
      /recording_nccl.c:nccl[A-Z][A-Za-z]* \[/ {gsub(",", "", $1); s -= $1}
      END {print s + 0}')
  done
  case $kind in s) what="GroupStart; Send; Recv; GroupEnd" ;; a) what="AllReduce" ;; g) what="AllGather" ;; esac
  printf '%-34s self %5d  incl %5d instructions per call\n' "$what" \
    $(((${self[2000]} - ${self[1000]}) / 1000)) $(((${incl[2000]} - ${incl[1000]}) / 1000))
done
