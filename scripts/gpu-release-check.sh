#!/usr/bin/env bash
# The short H200 check of a release: pass-through against NCCL interleaved
# (scripts/gpu-parity.sh, REPS=0), then the whole build, hetccl-validate
# --quick on cuda and cuda,host, nccl-tests -c 1 through the NCCL face
# (NCCL_TESTS_SRC, default .device-carry/nccl-tests) and PyTorch through
# the face on one rank (scripts/torch-check.sh, NPROC=1). Logs under $OUT.
# PART=1: parity, build and validate only; PART=2: nccl-tests and PyTorch
# only (on the build PART=1 left); unset: everything.
set -u
# shellcheck source=scripts/gpu-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_setup release
PART=${PART:-}
if [ "$PART" != 2 ]; then
REPS=0 bash scripts/gpu-parity.sh >"$LOGS/parity.txt" 2>&1
grep -v '^#' "$LOGS/ab.txt" 2>/dev/null || tail -n 20 "$LOGS/parity.txt"
cmake --build "$BUILD" -j16 >"$LOGS/build-all.txt" 2>&1 || { echo "build failed"; tail -n 20 "$LOGS/build-all.txt"; }
echo "build: done ($(el))"
for layout in "-G cuda" "-N 2 --domains 1,1 -G cuda,host"; do
  # shellcheck disable=SC2086
  timeout -k 5 240 "$BUILD/bin/hetccl-validate" --quick $layout --json "$LOGS/validate.json" >"$LOGS/validate.txt" 2>&1
  echo "hetccl-validate --quick $layout: exit $? ($(el))"
  grep -E "PASS|FAIL|ratio" "$LOGS/validate.txt" | tail -n 12
done
fi
[ "$PART" = 1 ] && exit 0
src=${NCCL_TESTS_SRC:-.device-carry/nccl-tests}
[ -d "$src" ] && { OUT=$LOGS timeout -k 5 240 bash scripts/nccl-tests-check.sh "$src" "$BUILD" 2>&1 | tail -n 14; echo "nccl-tests: ($(el))"; }
OUT=$LOGS/torch NPROC=1 TWO_FACES=0 STEPS=${TORCH_STEPS:-60} timeout -k 10 300 bash scripts/torch-check.sh "$BUILD" 2>&1 | tail -n 14
echo "done ($(el))"
