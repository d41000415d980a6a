#!/usr/bin/env bash
# What one communicator costs each rank against N, this tree against an
# older one, in one run: tools/bench/comm_scale.c (forked host ranks in two
# domains of N/2; init, one AllReduce and one AllGather timed; open files,
# sockets, threads, resident memory and links per rank) built against both
# libraries, the two run alternately for each transport, ROUNDS times.
#
#   bash scripts/bench-comm-scale.sh <build-dir> <before: git revision or source dir>
#
# Settings (environment): NS (default 8,16,32,64,128), BYTES per rank
# (4096), ROUNDS (2), TRANSPORTS (shm,socket), WORK (a temporary folder).
# The before library is built from its own tree (only the hetccl target);
# with a revision, the tree comes from `git archive`, so this repository's
# .git must be there; elsewhere pass a source folder.
set -u
BUILD=${1:?usage: bench-comm-scale.sh <build-dir> <before-rev-or-dir>}
BEFORE=${2:?usage: bench-comm-scale.sh <build-dir> <before-rev-or-dir>}
NS=${NS:-8,16,32,64,128}
BYTES=${BYTES:-4096}
ROUNDS=${ROUNDS:-2}
TRANSPORTS=${TRANSPORTS:-shm,socket}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
WORK=${WORK:-$(mktemp -d /tmp/hetccl-comm-scale.XXXXXX)}
mkdir -p "$WORK" || exit 1
JOBS=$(nproc 2>/dev/null || echo 2)

if [ -d "$BEFORE" ]; then
  before_src=$(cd "$BEFORE" && pwd)
  before_name=$(basename "$before_src")
else
  before_src=$WORK/before-src
  before_name=$BEFORE
  mkdir -p "$before_src"
  git -C "$ROOT" archive "$BEFORE" | tar -x -C "$before_src" || { echo "git archive $BEFORE failed"; exit 1; }
fi

cmake -S "$before_src" -B "$WORK/before-build" -DCMAKE_BUILD_TYPE=Release >"$WORK/before-cmake.log" 2>&1 &&
  cmake --build "$WORK/before-build" -j"$JOBS" --target hetccl >"$WORK/before-build.log" 2>&1 ||
  { echo "building the before library failed: $WORK/before-build.log"; tail -n 20 "$WORK/before-build.log"; exit 1; }

build_bench() { # $1 name, $2 include dir, $3 lib dir
  cc -O2 -I"$2" "$ROOT/tools/bench/comm_scale.c" -L"$3" -lhetccl -Wl,-rpath,"$3" -o "$WORK/comm_scale_$1" ||
    { echo "compiling comm_scale against $1 failed"; exit 1; }
}
build_bench before "$before_src/include" "$WORK/before-build/lib"
build_bench after "$ROOT/include" "$BUILD/lib"

echo "# comm_scale: N = $NS, $BYTES bytes per rank, rounds $ROUNDS; before = $before_name, after = $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo this tree)"
echo "# $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ)"
ulimit -n "$(ulimit -Hn)" 2>/dev/null
for t in ${TRANSPORTS//,/ }; do
  for round in $(seq 1 "$ROUNDS"); do
    for which in before after; do
      echo "## transport $t, round $round, $which"
      HETCCL_TRANSPORT=$t timeout -k 5 600 "$WORK/comm_scale_$which" "$NS" "$BYTES"
    done
  done
done
