#!/usr/bin/env bash
# Builds the whole tree (library, tools, tests) with warnings as errors under
# several compilers and optimisation levels, so a warning that only one of
# them finds (gcc's -Wmaybe-uninitialized changes with -O level and version)
# fails here rather than on a user's machine.
#   scripts/check-warnings.sh [ROOT] [CONFIG...]
# ROOT: where the build folders go (default build-warnings). A CONFIG is
# COMPILER:FLAGS, for example gcc:-O3 or clang:-O2; the default set is what
# CI checks besides its own build (gcc at the default -O2): gcc -O3, clang -O3.
# A compiler that is not installed is reported and skipped, never silently.
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:-build-warnings}
shift || true
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(gcc:-O3 clang:-O3)
mkdir -p "$root"
jobs=$(nproc 2>/dev/null || echo 2)

failed=0
for cfg in "${configs[@]}"; do
  cc=${cfg%%:*}
  flags=${cfg#*:}
  if ! command -v "$cc" >/dev/null 2>&1; then
    echo "check-warnings: $cc is not installed; skipped $cfg"
    continue
  fi
  dir="$root/$(echo "$cc$flags" | tr -c 'A-Za-z0-9\n' '_')"
  echo "check-warnings: $cc $flags"
  # CMAKE_BUILD_TYPE=None: only the flags given here, so the level is the one named.
  # The AMD code objects are left out: they are device code of clang's own,
  # the same at every host level, and the main build makes them once (this
  # also keeps the build without them, what a machine without clang-19 gets,
  # free of warnings).
  # The clang build also leaves out the CUDA kernels: the build a machine
  # without nvcc gets (gcc keeps them when nvcc is here),
  # and the optional dependencies (libfabric's headers, hwloc), as on a GPU
  # machine without libfabric-dev or libhwloc-dev: code behind their #ifs
  # must be clean too.
  cuda_kernels=ON
  optional=()
  if [ "$cc" = clang ]; then
    cuda_kernels=OFF
    optional=(-DHETCCL_LIBFABRIC_INCLUDE=HETCCL_LIBFABRIC_INCLUDE-NOTFOUND -DHETCCL_WITH_HWLOC=OFF)
  fi
  if ! CC=$cc cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=None -DCMAKE_C_FLAGS="$flags" -DHETCCL_WERROR=ON -DHETCCL_HIP_KERNELS=OFF \
      -DHETCCL_CUDA_KERNELS=$cuda_kernels "${optional[@]}" \
      >"$dir.log" 2>&1 || ! cmake --build "$dir" -j"$jobs" >>"$dir.log" 2>&1; then
    grep -E 'error|warning' "$dir.log" | head -20 || tail -20 "$dir.log"
    echo "check-warnings: FAILED under $cc $flags (full log: $dir.log)"
    failed=1
  fi
done
exit $failed
