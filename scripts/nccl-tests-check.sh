#!/usr/bin/env bash
# Unmodified nccl-tests through HetCCL's NCCL face, the way a user runs it:
# built against the real NCCL, run with the face preloaded and NO
# HETCCL_NCCL_LIBRARY, so HetCCL must find the real NCCL by itself.
#   bash scripts/nccl-tests-check.sh SRC [BUILD]
# SRC: an nccl-tests source tree (not part of this repository; bring it).
# BUILD: HetCCL's build folder with lib/libnccl.so.2 (default build-gpu).
# Runs, -c 1 (results checked by nccl-tests itself):
#   1. every test binary on one rank (one domain: pass-through to NCCL);
#   2. with mpirun (when nccl-tests was built with MPI=1), 2 ranks on GPU 0
#      in two domains (HETCCL_DOMAIN per rank): the cross-domain path.
# Prints one line per run; exit 1 when any failed.
set -u
src=${1:?usage: nccl-tests-check.sh SRC [BUILD]}
build=$(cd "${2:-build-gpu}" && pwd)
face="$build/lib/libnccl.so.2"
[ -f "$face" ] || { echo "no $face"; exit 1; }
out=${OUT:-/tmp}/nccl-tests.log
: >"$out"
export NCCL_NVLS_ENABLE=0
unset HETCCL_NCCL_LIBRARY

mpi=0
if command -v mpicc >/dev/null 2>&1; then
  mpi_home=$(dirname "$(dirname "$(command -v mpicc)")")
  # Open MPI's headers may live under lib/<triplet>/openmpi.
  inc=$(mpicc --showme:incdirs 2>/dev/null | awk '{print $1}')
  [ -n "$inc" ] && mpi_home=$(dirname "$inc")
  if make -C "$src" -j16 MPI=1 MPI_HOME="$mpi_home" >>"$out" 2>&1; then mpi=1; fi
fi
if [ $mpi = 0 ]; then
  make -C "$src" clean >>"$out" 2>&1
  make -C "$src" -j16 >>"$out" 2>&1 || { echo "nccl-tests: build failed (see $out)"; tail -n 20 "$out"; exit 1; }
fi
bin="$src/build"
echo "nccl-tests built (MPI=$mpi); real NCCL it links: $(ldd "$bin/all_reduce_perf" | awk '/libnccl/ {print $3}')"

failures=0
tests="all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter hypercube"
run_one() {
  local name=$1 label=$2
  shift 2
  if "$@" >>"$out" 2>&1 && ! tail -n 30 "$out" | grep -Eq 'FAILED|Out of bounds values : [1-9]'; then
    echo "ok   $label $name"
  else
    echo "FAIL $label $name"
    failures=$((failures + 1))
  fi
}
for t in $tests; do
  [ -x "$bin/${t}_perf" ] || continue
  echo "== 1 rank: $t" >>"$out"
  run_one "$t" "1 rank, LD_PRELOAD face:" env LD_PRELOAD="$face" HETCCL_DEBUG=INFO "$bin/${t}_perf" -b 8 -e 16M -f 8 -c 1 -n 2 -w 1 -g 1
done
grep -m1 "NCCL [0-9.]* loaded from" "$out" | sed 's/^/  /'
if [ $mpi = 1 ] && command -v mpirun >/dev/null 2>&1; then
  wrap=$(mktemp)
  printf '#!/bin/sh\nexport HETCCL_DOMAIN=d${OMPI_COMM_WORLD_RANK:-0}\nexec "$@"\n' >"$wrap"
  chmod +x "$wrap"
  for t in $tests; do
    [ -x "$bin/${t}_perf" ] || continue
    echo "== 2 ranks, 2 domains: $t" >>"$out"
    run_one "$t" "2 ranks in 2 domains (mpirun):" mpirun --allow-run-as-root --oversubscribe -np 2 \
      -x LD_PRELOAD="$face" -x NCCL_NVLS_ENABLE=0 -x NCCL_TESTS_DEVICE=0 "$wrap" "$bin/${t}_perf" -b 8 -e 16M -f 8 -c 1 -n 2 -w 1 -g 1
  done
  rm -f "$wrap"
fi
echo "$failures failures (log: $out)"
[ $failures -eq 0 ]
