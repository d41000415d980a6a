#!/usr/bin/env bash
# Builds the AMD code objects of src/device/kernels/reduce.cu here (clang-19,
# as the normal build does) into a folder another machine's build can embed
# with -DHETCCL_HIP_PREBUILT_DIR=<folder>: a machine without clang-19, such as
# the lent H200, whose stand-in HIP runs need the library to hold gfx942 code.
# The folder holds hetccl_kernels_<arch>.co and source.sha256 (the SHA-256 of
# the reduce.cu they came from; CMake refuses a folder built from another).
#
# Usage: scripts/hip-prebuild.sh [out-dir] [archs]
#   out-dir  default .device-carry/hip-kernels (carried to the device machine)
#   archs    ;-separated, default all of HETCCL_HIP_ARCHS
set -eu
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
out=${1:-.device-carry/hip-kernels}
archs=${2:-}
build=build-hip-prebuild
mkdir -p "$build"
log=$build/prebuild.log
args=(-DHETCCL_HIP_KERNELS=ON -DHETCCL_HIP_PREBUILT_DIR=)
[ -n "$archs" ] && args+=("-DHETCCL_HIP_ARCHS=$archs")
cmake -S . -B "$build" "${args[@]}" >"$log" 2>&1 || { tail -n 20 "$log"; exit 1; }
if ! grep -q "HetCCL: AMD kernels for" "$log"; then
  grep "HetCCL:" "$log"
  echo "hip-prebuild: this machine builds no AMD kernels (clang-19 missing? scripts/install-deps.sh installs it)" >&2
  exit 1
fi
cmake --build "$build" --target hetccl_kernels_hip -j2 >>"$log" 2>&1 || { tail -n 20 "$log"; exit 1; }
rm -rf "$out"
mkdir -p "$out"
cp "$build"/kernels/hip/hetccl_kernels_*.co "$out"/
sha256sum src/device/kernels/reduce.cu | cut -d' ' -f1 >"$out/source.sha256"
echo "hip-prebuild: $(ls "$out" | grep -c '\.co$') code objects in $out ($(cd "$out" && ls *.co | sed 's/hetccl_kernels_//; s/\.co//' | tr '\n' ' '))"
