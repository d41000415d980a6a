#!/usr/bin/env bash
# Installs, from Debian packages, whatever the build and tests need and this
# machine lacks. Run as root (or with sudo available). Idempotent: installs
# nothing when everything is present.
#   --bench     also the benchmark references (Open MPI)
#   --warnings  also clang, for scripts/check-warnings.sh, and clang-19's
#               libFuzzer/sanitizer runtime, for scripts/fuzz-check.sh
#   --plots     (accepted for clarity: gnuplot is in the default set already)
set -euo pipefail

need=()
have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

have_cmd cmake || need+=(cmake)
have_cmd gcc || need+=(gcc)
have_cmd make || need+=(make)
have_cmd pkg-config || need+=(pkg-config)
have_cmd ip || need+=(iproute2)
have_pkg libc6-dev || need+=(libc6-dev)
# The plots (scripts/plot-bench, scripts/trace-plot; tests/scripts/test_plots.sh
# draws with them, so it is in the default set): gnuplot without X (~10 MB).
have_cmd gnuplot || need+=(gnuplot-nox)
# The timeline's checker and the plot scripts (test_trace, test_plots): standard library only.
have_cmd python3 || need+=(python3)
# libfabric (the ofi transport): headers to build it, the runtime for its
# tests over tcp;ofi_rxm. The library opens libfabric.so.1 with dlopen.
have_pkg libfabric-dev || need+=(libfabric-dev)
have_pkg libfabric1 || need+=(libfabric1)
# hwloc (src/topo: each rank's nearest NIC, NUMA-local staging and progress).
have_pkg libhwloc-dev || need+=(libhwloc-dev)
have_pkg libamdhip64-5 || need+=(libamdhip64-5) # HIP 5.2 runtime (~80 MB with deps): test_hip_stub checks the hip kind resolves from it
# The AMD kernels (cmake/kernels_hip.cmake): clang-19 compiles them as
# header-free HIP and its driver links each code object with lld-19.
[ -x /usr/lib/llvm-19/bin/clang++ ] || need+=(clang-19)
[ -x /usr/lib/llvm-19/bin/ld.lld ] || need+=(lld-19)
# gfx950 takes clang-22 (Debian's bookworm-security): installed when apt
# offers it, else the AMD kernels are built without gfx950.
optional=()
[ -x /usr/lib/llvm-22/bin/clang++ ] || optional+=(clang-22)
[ -x /usr/lib/llvm-22/bin/ld.lld ] || optional+=(lld-22)
for arg in "$@"; do
  case "$arg" in
    --bench)
      have_cmd mpicc || need+=(libopenmpi-dev)
      have_cmd mpirun || need+=(openmpi-bin)
      ;;
    --warnings)
      have_cmd clang || need+=(clang)
      # libFuzzer and the sanitizer runtimes of clang-19 (scripts/fuzz-check.sh)
      have_pkg libclang-rt-19-dev || need+=(libclang-rt-19-dev)
      ;;
    --plots) ;;
    *) echo "install-deps.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

if [ ${#need[@]} -eq 0 ] && [ ${#optional[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  have_cmd sudo || { echo "install-deps.sh: need root to install ${need[*]} ${optional[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps.sh: installing ${need[*]}"
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
if [ ${#optional[@]} -gt 0 ]; then
  if apt-cache policy "${optional[@]}" | grep -q 'Candidate: (none)' || ! apt-cache show "${optional[@]}" >/dev/null 2>&1; then
    echo "install-deps.sh: ${optional[*]} not offered by apt here; the AMD kernels will lack gfx950"
  else
    echo "install-deps.sh: installing ${optional[*]} (AMD kernels for gfx950)"
    $SUDO apt-get install -y -qq --no-install-recommends "${optional[@]}"
  fi
fi
