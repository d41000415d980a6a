#!/usr/bin/env bash
# A short GPU run for one question, when the session's device time is
# scarce (gpu-check.sh is the whole check): the window kernel
# (HETCCL_WINDOW_KERNEL) against the memop path on one GPU.
#   1. build (the AMD code objects from .device-carry/hip-kernels when carried)
#   2. correctness with the kernel: test_gpu_collectives on cuda,host and
#      cuda:d0,cuda:d1,host (counts 0..1048579), and a hip rank over the
#      stand-in HIP over CUDA beside a cuda rank and a host rank
#   3. hetccl-perf, kernel (1) then memop path (0), same run: AllReduce and
#      Send/Recv on cuda + host rank (one process on the GPU), AllReduce on
#      cuda:d0 + cuda:d1 (two processes time-slicing the GPU), host time on;
#      hetccl-pciebench for the PCIe limit
# Output: $OUT (or build-gpu/focus) *.txt; the summary on stdout.
set -u
# shellcheck source=scripts/gpu-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_setup focus
prebuilt=
[ -f .device-carry/hip-kernels/source.sha256 ] && prebuilt=$repo/.device-carry/hip-kernels
if ! { cmake -S . -B "$BUILD" -DHETCCL_WERROR=ON -DHETCCL_GPU_TESTS=ON -DHETCCL_CUDA_ARCHS=90 \
  -DHETCCL_HIP_PREBUILT_DIR="$prebuilt" && cmake --build "$BUILD" -j16 --target hetccl hetccl-perf hetccl-pciebench \
  test_gpu_collectives test_tool_stand_in_hip_cuda; } >"$LOGS/build.txt" 2>&1; then
  tail -n 30 "$LOGS/build.txt"
  exit 1
fi
echo "build: ok ($(el))"
bin=$BUILD/bin
fails=0
GPU_TEST_TIMEOUT=100
counts=0,1,7,1023,65539,1048579
gpu_test HETCCL_WINDOW_KERNEL=1 -- cuda,host $counts
gpu_test HETCCL_WINDOW_KERNEL=1 -- cuda:d0,cuda:d1,host $counts
hip_rt=$repo/$BUILD/test-tools/stand-in-hip-cuda/libamdhip64.so
gpu_test HETCCL_WINDOW_KERNEL=1 HETCCL_HIP_LIBRARY="$hip_rt" HETCCL_RCCL_LIBRARY="${HETCCL_NCCL_LIBRARY:-libnccl.so.2}" \
  HETCCL_TEST_HIP_MARKER_IMAGE=$([ -n "$prebuilt" ] && echo 0 || echo 1) -- cuda:d0,hip:d1,host 0,1,1023,65539
perf() { # name kernel args...
  local name=$1 k=$2
  shift 2
  echo "### HETCCL_WINDOW_KERNEL=$k hetccl-perf $*" >>"$LOGS/perf.txt"
  HETCCL_WINDOW_KERNEL=$k timeout -k 5 120 "$bin/hetccl-perf" "$@" --host-time -T 110 >"$LOGS/last.txt" 2>&1 ||
    { fails=$((fails + 1)); echo "hetccl-perf $name kernel=$k failed:"; tail -n 5 "$LOGS/last.txt"; }
  cat "$LOGS/last.txt" >>"$LOGS/perf.txt"
  awk -v n="$name" -v k="$k" '$1 ~ /^[0-9]+$/ && NF >= 10 { print n, "kernel=" k, $0 }' "$LOGS/last.txt" >>"$LOGS/rows.txt"
}
: >"$LOGS/rows.txt"
for k in 1 0; do
  perf cuda+host-allreduce $k allreduce -N 2 --domains 1,1 -G cuda,host -b 8 -e 256M -f 32 -n 20 -w 5
  perf cuda+host-sendrecv $k sendrecv -N 2 --domains 1,1 -G cuda,host -b 8 -e 8 -n 200 -w 20
  perf cuda-cuda-allreduce $k allreduce -N 2 --domains 1,1 -G cuda -b 8 -e 256M -f 32 -n 10 -w 3
done
echo "### hetccl-pciebench -b 256M -e 256M -n 10" >>"$LOGS/perf.txt"
timeout 60 "$bin/hetccl-pciebench" -b 256M -e 256M -n 10 >>"$LOGS/perf.txt" 2>&1
echo "perf: done ($(el)); rows: name kernel size count type redop root time algbw busbw #wrong ... host_us"
cat "$LOGS/rows.txt"
grep -A3 "pciebench" "$LOGS/perf.txt" | tail -n 3
echo "$fails failures"
[ $fails -eq 0 ]
