#!/usr/bin/env bash
# The collective matrix on cuda ranks beside hip and host ranks, without a
# GPU: cuda ranks over the stand-in CUDA driver (test-tools/stand-in-cuda/
# libcuda.so.1: HETCCL_CUDA_LIBRARY; tests/abi/stand_in_cuda.c), hip ranks
# over the stand-in HIP runtime (ROCm 6 ABI: HETCCL_HIP_LIBRARY), the
# stand-in RCCL for hip domains and the same shared-memory engine under
# another name (test-tools/stand-in-quirky/libquirkynccl.so.7:
# HETCCL_NCCL_LIBRARY) for a cuda domain of two ranks. Both stand-ins share
# one engine (tests/abi/stand_in_gpu_engine.c): host memory, streams as
# threads running their queue in order, stream waits spinning on host memory
# (CUDA's GEQ with wrap-around, HIP's unsigned), kernels run as their host
# builds (the CUDA module is the embedded fatbin, or in a build without nvcc
# a marker image handed over with hetccl_cuda_set_test_image). This proves
# HetCCL's control flow across cuda and hip domains (device windows between
# a cuda and a hip rank, staging through the progress engine, the vendor
# instances), nothing about NVIDIA or AMD hardware. The driver is
# tests/gpu/test_gpu_collectives.c built as test-tools/hip_collectives.
# Layouts:
#   cuda,host                a cuda domain and a host domain
#   cuda:d0,hip:d1           a cuda rank and a hip rank (the shm device
#                            window between them: each side's stream waits
#                            and writes on host-registered shm)
#   cuda:d0,hip:d1,host      the same beside a host rank; again with
#                            HETCCL_SHM_WINDOW_BYTES=0 (staged)
#   cuda:d0,cuda:d0,hip:d1   a two-rank cuda domain (the stand-in NCCL)
#                            beside a hip rank
#   cuda:d0,hip:d1 with HETCCL_SHM_WINDOW_EPOCH=4K (window counters
#                            restarted every 4 KiB), with the window kernel
#                            and with the memop path (HETCCL_WINDOW_KERNEL=0:
#                            the restart handshakes make the cuda side batch
#                            its waits and writes, through
#                            cuStreamBatchMemOp, over a thousand times)
# Device windows: HETCCL_WINDOW_KERNEL auto takes the window kernel only
# for phases whose window transfers all go to host ranks (the stand-ins
# run its host build, a thread per block), stream waits, writes and copies
# per chunk otherwise; cuda:d0,hip:d1 runs both ways, named (=1, =0).
#   cuda,host once more with the driver's cuGetProcAddress_v2 refusing, so
#                            the kind resolves every entry point with dlsym
# Usage: test_cuda_hip_collectives.sh <build-dir>. Exit status 1 on any failure.
set -u
build=${1:?usage: $0 <build-dir>}
build=$(cd "$build" && pwd)
bin=$build/test-tools/hip_collectives
cuda=$build/test-tools/stand-in-cuda/libcuda.so.1
hip=$build/test-tools/stand-in-hip-rocm6/libamdhip64.so
rccl=$build/test-tools/stand-in-rccl/librccl.so.1
nccl=$build/test-tools/stand-in-quirky/libquirkynccl.so.7
for f in "$bin" "$cuda" "$hip" "$rccl" "$nccl"; do
  if [ ! -e "$f" ]; then
    echo "FAIL: $f not built"
    exit 1
  fi
done
passed=0
failed=0
run() { # WINDOW_BYTES COUNTS COLLS LAYOUT [VAR=VALUE...]
  local out desc="$4 counts $2${3:+ colls $3}${1:+ HETCCL_SHM_WINDOW_BYTES=$1}${5:+ ${*:5}}"
  if out=$(env HETCCL_CUDA_LIBRARY="$cuda" HETCCL_HIP_LIBRARY="$hip" HETCCL_RCCL_LIBRARY="$rccl" \
      HETCCL_NCCL_LIBRARY="$nccl" ${1:+HETCCL_SHM_WINDOW_BYTES=$1} "${@:5}" \
      timeout 120 "$bin" --layout "$4" --counts "$2" ${3:+--colls "$3"} --timeout 60 2>&1) &&
      grep -q ' passed, 0 failed$' <<<"$out"; then
    passed=$((passed + 1))
    echo "ok: $desc: $(tail -n 1 <<<"$out")"
  else
    failed=$((failed + 1))
    echo "FAIL: $desc"
    grep -v '^hetccl .* WARN' <<<"$out" | tail -n 40
  fi
}
run "" 0,1,7,1023 "" cuda,host
run "" 0,1,7,1023 "" cuda:d0,hip:d1 HETCCL_WINDOW_KERNEL=1
run "" 0,1,7,1023 "" cuda:d0,hip:d1 HETCCL_WINDOW_KERNEL=0
run "" 1,1023,65539 "" cuda:d0,hip:d1,host
run 0 1,1023 "" cuda:d0,hip:d1,host
run "" 1,1023 "" cuda:d0,cuda:d0,hip:d1
run "" 1023,65539 "" cuda:d0,hip:d1 HETCCL_SHM_WINDOW_EPOCH=4K HETCCL_WINDOW_KERNEL=1
run "" 1023,65539 "" cuda:d0,hip:d1 HETCCL_SHM_WINDOW_EPOCH=4K HETCCL_WINDOW_KERNEL=0
run "" 7 allreduce cuda,host STAND_IN_CUDA_NO_GET_PROC=1
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
