#!/usr/bin/env bash
# Every pass-through aim on one GPU in one run (about 7 minutes on one H100
# with 16 CPUs), from the repository root:
#   1. the interleaved A/B, 8 B-32 KiB and 1-256 MiB (scripts/gpu-parity.sh,
#      AB_ROUNDS=9 AB_LARGE=1 REPS=0): per call and bandwidth;
#   2. tools/bench/face_loop.c built three ways (NCCL alone, HetCCL's API,
#      HetCCL's NCCL face), two processes each: the host path of one call;
#   3. nccl-tests through the face (scripts/nccl-tests-timing.sh): all nine
#      binaries, 3 rounds of 200 iterations, then sendrecv and all_reduce,
#      3 rounds of 10,000;
#   4. PyTorch through the face on one rank (scripts/torch-check.sh,
#      PARITY_ROUNDS=4: the order balanced).
#   bash scripts/gpu-passthrough-aims.sh [NCCL_TESTS_SRC]
# NCCL_TESTS_SRC: an nccl-tests tree (default .device-carry/nccl-tests;
# step 3 is skipped without one). Output in $OUT (default
# build-gpu/aims): ab.txt, face_loop.txt, timing-200.txt, timing-200.raw,
# timing-10k.raw, torch-summary.txt; the tables on stdout.
set -u
# shellcheck source=scripts/gpu-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_setup aims
src=${1:-.device-carry/nccl-tests}
out=$LOGS
work=$(mktemp -d /tmp/hetccl-aims.XXXXXX)
trap 'rm -rf "$work"' EXIT
if ! { cmake -S . -B "$BUILD" -DHETCCL_WERROR=ON -DHETCCL_CUDA_ARCHS=90 -DHETCCL_HIP_KERNELS=OFF &&
  cmake --build "$BUILD" -j16 --target hetccl hetccl-perf nccl_face; } >"$work/build.txt" 2>&1; then
  tail -n 30 "$work/build.txt"
  exit 1
fi
echo "build: ok ($(el))"

OUT=$work/ab AB_ROUNDS=9 AB_LARGE=1 REPS=0 timeout -k 5 200 bash scripts/gpu-parity.sh >"$work/ab.log" 2>&1
cp "$work/ab/ab.txt" "$out/ab.txt" 2>/dev/null && grep -v '^#' "$out/ab.txt"
echo "A/B: done ($(el))"

system_nccl=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 / { print $NF; exit }')
nccl=${system_nccl:-${HETCCL_NCCL_LIBRARY:-}}
lib=$repo/$BUILD/lib
if [ -n "$nccl" ] &&
  gcc -O2 -std=c11 -Iinclude/nccl tools/bench/face_loop.c -o "$work/native" "$nccl" &&
  gcc -O2 -std=c11 -Iinclude/nccl tools/bench/face_loop.c -o "$work/face" -L"$lib" -l:libnccl.so.2 -Wl,-rpath,"$lib" &&
  gcc -O2 -std=c11 -DUSE_HETCCL -Iinclude tools/bench/face_loop.c -o "$work/hetccl" -L"$lib" -lhetccl -Wl,-rpath,"$lib"; then
  for round in 1 2; do
    for how in native hetccl face; do
      echo "$how $round: $(HETCCL_NCCL_LIBRARY=$nccl timeout 60 "$work/$how" 2>&1 | tail -n 3 | paste -sd ' ')"
    done
  done | tee "$out/face_loop.txt"
else
  echo "face_loop: not built (no NCCL found, or a compile failed)"
fi
echo "face_loop: done ($(el))"

if [ -d "$src" ]; then
  OUT=$work/t200 timeout -k 5 240 bash scripts/nccl-tests-timing.sh "$src" "$BUILD" | tail -n 10
  cp "$work/t200/nccl-tests-timing.txt" "$out/timing-200.txt" 2>/dev/null
  cp "$work/t200/nccl-tests-timing.raw" "$out/timing-200.raw" 2>/dev/null
  OUT=$work/t10k ROUNDS=3 ITERS=10000 TESTS="sendrecv all_reduce" timeout -k 5 120 \
    bash scripts/nccl-tests-timing.sh "$src" "$BUILD" | tail -n 2
  cp "$work/t10k/nccl-tests-timing.raw" "$out/timing-10k.raw" 2>/dev/null
  echo "nccl-tests: done ($(el))"
else
  echo "nccl-tests: skipped (no $src)"
fi

OUT=$work/torch NPROC=1 TWO_FACES=0 STEPS=200 PARITY_ROUNDS=4 timeout -k 10 240 bash scripts/torch-check.sh "$BUILD" 2>&1 |
  grep -E 'vs nccl-native|FAIL|passed|failures'
cp "$work/torch/torch-summary.txt" "$out/torch-summary.txt" 2>/dev/null
echo "PyTorch: done ($(el))"
