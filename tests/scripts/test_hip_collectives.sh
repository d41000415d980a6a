#!/usr/bin/env bash
# The collective matrix on hip ranks, through the real dlopen paths, over
# the stand-in HIP runtime (test-tools/stand-in-hip-rocm5 and -rocm6, one
# run per ABI branch: HETCCL_HIP_LIBRARY) and the stand-in RCCL
# (test-tools/stand-in-rccl/librccl.so.1: HETCCL_RCCL_LIBRARY). Stand-in
# device memory is host memory, streams are threads running their queue in
# order, stream waits spin on host memory, kernels run as their host builds
# (tests/abi/stand_in_hip.c); the stand-in RCCL moves data between the
# processes of a hip domain through shared memory, in stream order
# (tests/abi/stand_in_ccl_shm.c), so hip domains of several ranks run. The driver is
# tests/gpu/test_gpu_collectives.c built as test-tools/hip_collectives
# (every collective, type and op, in-place and out-of-place, guards
# checked). Layouts, per ABI:
#   hip                   one hip domain alone (pass-through to RCCL)
#   hip,host              a hip domain and a host domain (through the
#                         link's device window: the host rank's CPU end,
#                         src/exec/hwin.h)
#   hip:d0,hip:d1,host    two hip domains and a host rank (the hip pair
#                         shares a shm device window: host-registered shm,
#                         stream waits and writes on it)
#   the same with HETCCL_SHM_WINDOW_BYTES=0 (staged through the progress
#                         engine and the link's host slots); hip,host too
#   hip:d0,hip:d0         one hip domain of two ranks (pass-through to RCCL)
#   hip:d0,hip:d0,host    a two-rank hip domain beside a host rank (RCCL's
#                         reduce-scatter / all-gather inside the domain)
#   hip:d0,hip:d0,hip:d1,host  two hip domains, one of two ranks, and a host
#                         rank (RCCL, the device window and the links together)
#   hip:d0,hip:d1,host with HETCCL_SHM_WINDOW_EPOCH=4K (window counters
#                         restarted with their handshake every 4 KiB, on the
#                         hip pair's window and on the hip-host windows)
#   hip,host and hip:d0,hip:d1,host staged (HETCCL_SHM_WINDOW_BYTES=0) with
#                         HETCCL_PROGRESS_EPOCH=1 (the progress engine's
#                         flag starts an epoch on its other word at every
#                         staged phase; exec/progress.h)
# Device-window transfers take the window kernel (HETCCL_WINDOW_KERNEL;
# auto: only phases whose window transfers all go to host ranks, so the
# default runs of hip,host use it and those with GPU pairs stream waits;
# the stand-in runs the kernel's host build, a thread per block);
# the runs with GPU pairs, the epoch runs and a run with a 1 MiB window
# (grown lanes, 8 chunks, several blocks per transfer) name it explicitly
# (HETCCL_WINDOW_KERNEL=1), and the memop path keeps a run of each window
# layout and of the epoch.
# Counts 0,1,7,1023; ROCm 6 also runs 65539 on the three- and four-domain
# layouts. The multi-rank layouts run on ROCm 6 (the ABI branch is the
# hip kind's, covered by the one-rank layouts on both).
# Layouts with a host rank also run the withheld-host job (tests/gpu/README.md:
# a hip rank's call returns before the host rank has even called).
# Usage: test_hip_collectives.sh <build-dir>. Exit status 1 on any failure.
set -u
build=${1:?usage: $0 <build-dir>}
build=$(cd "$build" && pwd)
bin=$build/test-tools/hip_collectives
rccl=$build/test-tools/stand-in-rccl/librccl.so.1
if [ ! -x "$bin" ] || [ ! -e "$rccl" ]; then
  echo "FAIL: $bin or $rccl not built"
  exit 1
fi
passed=0
failed=0
run() { # ABI WINDOW_BYTES COUNTS LAYOUT [VAR=VALUE...]
  local hip=$build/test-tools/stand-in-hip-rocm$1/libamdhip64.so out
  local desc="rocm$1 $4 counts $3${2:+ HETCCL_SHM_WINDOW_BYTES=$2}${5:+ ${*:5}}"
  if out=$(env HETCCL_HIP_LIBRARY="$hip" HETCCL_RCCL_LIBRARY="$rccl" ${2:+HETCCL_SHM_WINDOW_BYTES=$2} "${@:5}" \
      timeout 120 "$bin" --layout "$4" --counts "$3" --timeout 60 2>&1) &&
      grep -q ' passed, 0 failed$' <<<"$out"; then
    passed=$((passed + 1))
    echo "ok: $desc: $(tail -n 1 <<<"$out")"
  else
    failed=$((failed + 1))
    echo "FAIL: $desc"
    grep -v '^hetccl .* WARN' <<<"$out" | tail -n 40
  fi
}
for abi in 5 6; do
  run $abi "" 0,1,7,1023 hip
  run $abi "" 0,1,7,1023 hip,host
  run $abi "" 0,1,7,1023 hip:d0,hip:d1,host HETCCL_WINDOW_KERNEL=1
  run $abi 0 0,1,7,1023 hip,host
  run $abi 0 0,1,7,1023 hip:d0,hip:d1,host
done
run 6 "" 65539 hip:d0,hip:d1,host
run 6 "" 0,1,7,1023 hip:d0,hip:d0
run 6 "" 0,1,7,1023 hip:d0,hip:d0,host
run 6 "" 0,1,7,1023 hip:d0,hip:d0,hip:d1,host HETCCL_WINDOW_KERNEL=1
run 6 0 0,1,7,1023 hip:d0,hip:d0,hip:d1,host
run 6 "" 65539 hip:d0,hip:d0,hip:d1,host HETCCL_WINDOW_KERNEL=1
# The window counters restart every 4 KiB instead of 512 GiB (exec/window.c:
# the handshake that keeps them from wrapping, which HIP's unsigned waits,
# modelled by the stand-in, would not survive).
# The progress engine's flag restarts at every staged phase instead of
# after 2^31 values (exec/progress.h, "Epochs"), under the stand-in's
# unsigned waits.
run 6 0 0,1,7,1023,65539 hip,host HETCCL_PROGRESS_EPOCH=1
run 6 0 0,1,7,1023,65539 hip:d0,hip:d1,host HETCCL_PROGRESS_EPOCH=1
run 6 "" 0,1,7,1023,65539 hip:d0,hip:d1,host HETCCL_SHM_WINDOW_EPOCH=4K HETCCL_WINDOW_KERNEL=1
run 6 "" 1023,65539 hip,host HETCCL_SHM_WINDOW_EPOCH=4K HETCCL_WINDOW_KERNEL=1
run 6 "" 1023,65539 hip:d0,hip:d1,host HETCCL_SHM_WINDOW_EPOCH=4K HETCCL_WINDOW_KERNEL=0
run 6 "" 1023,65539 hip,host HETCCL_SHM_WINDOW_EPOCH=4K HETCCL_WINDOW_KERNEL=0
# The window kernel through grown lanes (a 1 MiB window: the withheld-host
# job's 16 MiB go in 8 chunks, 4 blocks each), and the memop path on the
# window layouts.
run 6 1M 1023,65539 hip:d0,hip:d1,host HETCCL_WINDOW_KERNEL=1
run 6 "" 0,1,7,1023 hip:d0,hip:d1,host HETCCL_WINDOW_KERNEL=0
run 6 "" 0,1,7,1023 hip,host HETCCL_WINDOW_KERNEL=0
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
