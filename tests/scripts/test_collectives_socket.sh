#!/bin/bash
# The whole collective matrix of test_collectives with every link between
# ranks forced onto the socket transport (HETCCL_TRANSPORT=socket), so the
# TCP path is checked as thoroughly as shared memory.
# Usage: test_collectives_socket.sh <build-dir> [extra test_collectives options]
set -u
BUILD=${1:?usage: test_collectives_socket.sh <build-dir>}
shift
BIN="$BUILD/bin/test_collectives"
. "$(dirname "$0")/lib/preflight.sh"
need_built "" "$BIN"
# Every pair over TCP on one host. The 2^20+3 count runs up to 5 ranks; at 8
# ranks on 2 cores it alone takes minutes, and 8 ranks are covered on sockets
# at the smaller counts here and by the shm matrix at the large one.
"$BIN" --transport socket --ranks 2,3,5 "$@" || exit 1
exec "$BIN" --transport socket --ranks 8 --counts 0,1,7,1023,65539 "$@"
