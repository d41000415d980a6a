#!/bin/bash
# The collective matrix of test_collectives on the built-in engine's small
# algorithms for large domains (recursive doubling, Bruck, binomial trees):
# HETCCL_ENGINE_DIRECT_MAX_RANKS=1 puts every domain of 2 or more ranks
# above the cutover. 3, 5 and 8 ranks (one domain) and 16, at counts 0, 1,
# 7, 1023 and just below and above HETCCL_SMALL_BYTES (64 KiB) for 4-byte
# elements; the large count of the plain matrix runs the rings, which the
# cutover does not change.
# Usage: test_collectives_trees.sh <build-dir> [extra test_collectives options]
set -u
BUILD=${1:?usage: test_collectives_trees.sh <build-dir>}
shift
BIN="$BUILD/bin/test_collectives"
. "$(dirname "$0")/lib/preflight.sh"
need_built "" "$BIN"
export HETCCL_ENGINE_DIRECT_MAX_RANKS=1
"$BIN" --ranks 3,5,8 --counts 0,1,7,1023,16383,16385 "$@" || exit 1
exec "$BIN" --ranks 16 --counts 0,1,7,1023,16383 "$@"
