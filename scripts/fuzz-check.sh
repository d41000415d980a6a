#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer, and runs each for a bounded time from its
# seed corpus (tests/fuzz/corpus/<target>/, read-only: new inputs go to a
# scratch directory). Fails on any crash, leak or sanitizer report; the
# input that caused it is left in the build directory (crash-*).
#   scripts/fuzz-check.sh [build-dir] [seconds-per-target]
# Needs clang-19 with its runtime (libclang-rt-19-dev: install-deps.sh --warnings).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-fuzz}
SECONDS_EACH=${2:-20}
CC=${FUZZ_CC:-}
if [ -z "$CC" ]; then
  for c in clang-19 /usr/lib/llvm-19/bin/clang clang; do
    if command -v "$c" >/dev/null 2>&1; then CC=$c; break; fi
  done
fi
[ -n "$CC" ] || { echo "fuzz-check: no clang found (scripts/install-deps.sh --warnings)" >&2; exit 1; }
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1"
cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER="$CC" -DHETCCL_FUZZ=ON -DHETCCL_HIP_KERNELS=OFF -DBUILD_TESTING=OFF \
  -DCMAKE_BUILD_TYPE=None "-DCMAKE_C_FLAGS=$SAN -fsanitize=fuzzer-no-link" \
  "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined" >/dev/null
targets=$(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//')
if ! grep -q '^HETCCL_LIBFABRIC_INCLUDE:PATH=/' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  echo "fuzz-check: libfabric's headers are missing: fuzz_ofi_ctrl is not built (scripts/install-deps.sh)" >&2
  targets=$(echo "$targets" | grep -v '^fuzz_ofi_ctrl$')
fi
cmake --build "$BUILD" -j"$(nproc)" --target $targets >/dev/null
fail=0
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
printf '%-22s %12s %8s %s\n' target executions crashes corpus
for t in $targets; do
  seeds=tests/fuzz/corpus/${t#fuzz_}
  scratch="$BUILD/fuzz-corpus/${t#fuzz_}"
  mkdir -p "$scratch"
  log="$BUILD/$t.log"
  rc=0
  scratch_abs=$(realpath "$scratch")
  seeds_abs=$(realpath "$seeds")
  (cd "$BUILD" && "./bin/$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    "$scratch_abs" "$seeds_abs") >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  crashes=0
  if [ $rc -ne 0 ]; then
    crashes=1
    fail=1
  fi
  printf '%-22s %12s %8s %s\n' "$t" "${execs:-?}" "$crashes" "$(ls "$seeds" | wc -l) seeds"
  if [ $rc -ne 0 ]; then
    echo "fuzz-check: $t failed (exit $rc); its log: $log" >&2
    grep -E "ERROR|SUMMARY|runtime error|crash-|leak" "$log" | head -20 >&2 || true
  fi
done
exit $fail
