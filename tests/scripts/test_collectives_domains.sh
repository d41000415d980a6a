#!/bin/bash
# The collective matrix of test_collectives with ranks split into several
# domains (HETCCL_DOMAIN=d<rank % K>), so every collective runs the
# cross-domain algorithms: K=2 over the whole matrix (uneven domains for 3
# and 5 ranks), K=3 over 3, 5 and 8 ranks with counts up to 65539 (the 2^20+3
# case is covered by K=2; with it K=3 alone takes another 3.5 minutes on 2 cores).
# Usage: test_collectives_domains.sh <build-dir> [extra test_collectives options]
set -u
BUILD=${1:?usage: test_collectives_domains.sh <build-dir>}
shift
BIN="$BUILD/bin/test_collectives"
. "$(dirname "$0")/lib/preflight.sh"
. "$(dirname "$0")/lib/matrix.sh"
need_built "" "$BIN"
run() { matrix_run "$BIN" "$@"; }
# The layouts of the cross-domain issue, consecutive blocks, over shm links:
# the full matrix where the pieces are most irregular, smaller counts elsewhere
# to keep the suite's time in check (the large count adds ~3x per layout).
run --layout 2,2 "$@"
run --layout 1,2,1 "$@"
run --layout 3,1 --counts 0,1,7,1023,65539 "$@"
run --layout 1,1,1,1,1 --counts 0,1,7,1023,65539 "$@"
run --layout 4,4 --counts 0,1,7,1023,65539 "$@"
# The 8-GPU issue's uneven layout and four one-rank domains, host ranks
# standing in for the GPUs (4 and 8 GPU machines are rarely lent).
run --layout 6,2 --counts 0,1,7,1023 "$@"
run --layout 1,1,1,1 --counts 0,1,7,1023 "$@"
# Interleaved domains (rank % K): domain members that are not contiguous.
run --domains 3 --ranks 5 --counts 0,1,7,1023 "$@"
# Broadcast, Reduce and AllReduce past HETCCL_SMALL_BYTES (their sharded
# paths) on interleaved, uneven domains; with the threshold at 0 every count
# takes them, also counts smaller than a domain (empty shards).
run --domains 3 --ranks 5 --colls broadcast,reduce,allreduce --counts 65539 "$@"
HETCCL_SMALL_BYTES=0 run --domains 4 --ranks 7 --colls broadcast,reduce,allreduce --counts 1,7,1023 "$@"
# The same layouts with every link over TCP sockets.
run --layout 2,2 --transport socket --counts 0,1,7,1023,65539 "$@"
run --layout 1,2,1 --transport socket --counts 0,1,7,1023,65539 "$@"
run --layout 4,4 --transport socket --counts 0,1,7,1023 "$@"
matrix_finish
