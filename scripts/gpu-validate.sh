#!/usr/bin/env bash
# hetccl-validate on one GPU machine (an H200): what a user runs first, in
# the three layouts one GPU can hold.
#   1. build hetccl-validate with the CUDA kernels (and the AMD code
#      objects from .device-carry/hip-kernels when carried), and the
#      stand-in HIP runtime over the CUDA driver
#   2. hetccl-validate (the full matrix, its sweep) on
#        cuda             one cuda rank (pass-through to NCCL; the sweep
#                         beside NCCL alone)
#        cuda,host        a cuda rank and a host rank (the device window;
#                         the sweep beside the GPU's pinned copy bandwidth)
#        cuda:d0,hip:d1   a cuda rank and a hip rank over the stand-in HIP
#                         over CUDA (tests/abi/stand_in_hip_cuda.c; RCCL is
#                         NCCL under the stand-in; the marker image when no
#                         AMD code objects were carried)
# QUICK=1 runs each with --quick (a subset, under a minute each).
# Output: $OUT (or build-gpu/validate) <layout>.txt and <layout>.json; the
# tables on stdout. Exit status: the number of layouts that failed.
set -u
# shellcheck source=scripts/gpu-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_setup validate
prebuilt=
[ -f .device-carry/hip-kernels/source.sha256 ] && prebuilt=$repo/.device-carry/hip-kernels
if ! { cmake -S . -B "$BUILD" -DHETCCL_WERROR=ON -DHETCCL_GPU_TESTS=ON -DHETCCL_CUDA_ARCHS=90 \
  -DHETCCL_HIP_PREBUILT_DIR="$prebuilt" && cmake --build "$BUILD" -j16 --target hetccl hetccl-validate \
  test_tool_stand_in_hip_cuda; } >"$LOGS/build.txt" 2>&1; then
  tail -n 30 "$LOGS/build.txt"
  exit 1
fi
echo "build: ok ($(el))"
bin=$BUILD/bin/hetccl-validate
hip_rt=$repo/$BUILD/test-tools/stand-in-hip-cuda/libamdhip64.so
fails=0
validate() { # name [VAR=VALUE...] -- args...
  local name=$1 vars=()
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  [ "${QUICK:-0}" = 1 ] && set -- --quick "$@"
  echo "### ${vars[*]} hetccl-validate $* --json $LOGS/$name.json"
  env "${vars[@]}" timeout -k 5 560 "$bin" "$@" -T 550 --json "$LOGS/$name.json" >"$LOGS/$name.txt" 2>&1
  local rc=$?
  # The tables without hetccl-info's settings list (it is in the .txt).
  sed -n '/^# Layout/,$p' "$LOGS/$name.txt"
  grep -E 'hetccl-validate: rank|TIMEOUT|failed' "$LOGS/$name.txt" | head -n 20
  echo "$name: exit $rc ($(el))"
  [ $rc -eq 0 ] || fails=$((fails + 1))
}
validate cuda -- -N 1 -G cuda
validate cuda,host -- -G cuda,host --domains 1,1
validate cuda:d0,hip:d1 HETCCL_HIP_LIBRARY="$hip_rt" HETCCL_RCCL_LIBRARY="${HETCCL_NCCL_LIBRARY:-libnccl.so.2}" \
  HETCCL_TEST_HIP_MARKER_IMAGE=$([ -n "$prebuilt" ] && echo 0 || echo 1) -- -G cuda,hip --domains 1,1
sed -n '/^# Facts/,/^# Layout/p' "$LOGS/cuda.txt" | sed -n '1,40p'
echo "$fails layouts failed"
exit $fails
