#!/usr/bin/env bash
# The cross-domain plans on one GPU, and what a communicator costs per rank
# against N on the machine's CPUs:
#   1. build hetccl, test_gpu_collectives and the stand-in HIP over CUDA;
#   2. test_gpu_collectives on cuda,host (two domains) and cuda:d0,cuda:d1,host
#      (three: the k-domain paths), counts 0..1048579, then the same with
#      HETCCL_SMALL_BYTES=0 (the sharded Broadcast, Reduce and k-domain
#      AllReduce at every count), and cuda:d0,hip:d1,host over the stand-in;
#   3. scripts/bench-comm-scale.sh against BEFORE (a source folder, default
#      .device-carry/before-src) when it is there.
# Output: $OUT (or build-gpu/plans) *.txt; the summary on stdout.
set -u
# shellcheck source=scripts/gpu-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_setup plans
if ! { cmake -S . -B "$BUILD" -DHETCCL_WERROR=ON -DHETCCL_GPU_TESTS=ON -DHETCCL_CUDA_ARCHS=90 &&
  cmake --build "$BUILD" -j16 --target hetccl test_gpu_collectives test_tool_stand_in_hip_cuda; } >"$LOGS/build.txt" 2>&1; then
  tail -n 30 "$LOGS/build.txt"
  exit 1
fi
echo "build: ok ($(el))"
fails=0
GPU_TEST_TIMEOUT=${GPU_TEST_TIMEOUT:-120}
counts=0,1,7,1023,65539,1048579
gpu_test -- cuda,host $counts
gpu_test -- cuda:d0,cuda:d1,host $counts
gpu_test HETCCL_SMALL_BYTES=0 -- cuda,host 1,7,1023,65539
gpu_test HETCCL_SMALL_BYTES=0 -- cuda:d0,cuda:d1,host 1,7,1023,65539
hip_rt=$repo/$BUILD/test-tools/stand-in-hip-cuda/libamdhip64.so
gpu_test HETCCL_HIP_LIBRARY="$hip_rt" HETCCL_RCCL_LIBRARY="${HETCCL_NCCL_LIBRARY:-libnccl.so.2}" \
  HETCCL_TEST_HIP_MARKER_IMAGE=1 -- cuda:d0,hip:d1,host 0,1,1023,65539
echo "$fails failures ($(el))"
before=${BEFORE:-.device-carry/before-src}
if [ -d "$before" ]; then
  NS=${NS:-8,16,32,64,128} ROUNDS=${ROUNDS:-2} WORK=/tmp/hetccl-comm-scale timeout -k 5 ${SCALE_TIMEOUT:-360} \
    bash scripts/bench-comm-scale.sh "$BUILD" "$before" 2>&1 | tee "$LOGS/comm_scale.txt"
  echo "comm_scale: done ($(el))"
fi
[ $fails -eq 0 ]
