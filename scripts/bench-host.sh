#!/usr/bin/env bash
# Host benchmark: HetCCL AllReduce (hetccl-perf) against Open MPI's
# MPI_Allreduce (tools/bench/mpi_allreduce.c) on this machine's CPUs, floats,
# 1 KiB .. 256 MiB, for 2 and 4 ranks; prints both tables and a combined one
# with the ratios hetccl/mpi of bus bandwidth and of time per size.
#
# usage: bash scripts/bench-host.sh [--build DIR] [--np "2 4"] [--min 1K] [--max 256M]
#   --build DIR  a CMake build dir holding bin/hetccl-perf (default: build)
# Needs mpicc and mpirun (Debian: openmpi-bin libopenmpi-dev); installs nothing.
# Exit status: 0; 1 when either benchmark failed or reported wrong values;
# 2 on bad arguments or missing tools.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$repo/build"
nps="2 4"
min=1K
max=256M
# Sizes up to $split run the default iterations; larger sizes fewer, so a
# sweep to 256 MiB on a small machine stays within minutes.
split=4M
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --np) nps="$2"; shift 2 ;;
    --min) min="$2"; shift 2 ;;
    --max) max="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench-host.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  echo "bench-host.sh: mpicc/mpirun not found. Install Open MPI with:" >&2
  echo "  bash scripts/install-deps.sh --bench" >&2
  exit 2
fi
perf="$build/bin/hetccl-perf"
if [ ! -x "$perf" ]; then
  echo "bench-host.sh: $perf not found; build it first:" >&2
  echo "  cmake -S $repo -B $build && cmake --build $build --target hetccl-perf" >&2
  exit 2
fi

to_bytes() {
  local v=$1 n=${1%[KkMmGg]}
  case "$v" in
    *[Kk]) echo $((n << 10)) ;;
    *[Mm]) echo $((n << 20)) ;;
    *[Gg]) echo $((n << 30)) ;;
    *) echo "$v" ;;
  esac
}
min_b=$(to_bytes "$min"); max_b=$(to_bytes "$max"); split_b=$(to_bytes "$split")

out="$build/bench-host"
mkdir -p "$out"
mpi_bin="$out/mpi_allreduce"
mpicc -O2 -o "$mpi_bin" "$repo/tools/bench/mpi_allreduce.c"

status=0
# Runs hetccl-perf over [lo, hi] in up to two passes (small sizes with the
# default iterations, large ones with fewer).
run_hetccl() {
  local np=$1 lo=$2 hi=$3
  if [ "$lo" -le "$split_b" ]; then
    local top=$(( hi < split_b ? hi : split_b ))
    "$perf" allreduce -N "$np" -d float -o sum -b "$lo" -e "$top" -n 20 -w 5 || return 1
  fi
  local big=$(( split_b * 2 ))
  [ "$lo" -gt "$big" ] && big=$lo
  if [ "$hi" -ge "$big" ]; then
    "$perf" allreduce -N "$np" -d float -o sum -b "$big" -e "$hi" -n 5 -w 2 || return 1
  fi
}

for np in $nps; do
  echo "### Open MPI, $np ranks"
  if ! mpirun --allow-run-as-root --oversubscribe -np "$np" "$mpi_bin" -b "$min_b" -e "$max_b" \
      | tee "$out/mpi-$np.txt"; then
    echo "bench-host.sh: mpi_allreduce with $np ranks failed" >&2
    status=1
  fi
  echo "### HetCCL, $np ranks"
  if ! run_hetccl "$np" "$min_b" "$max_b" | tee "$out/hetccl-$np.txt"; then
    echo "bench-host.sh: hetccl-perf with $np ranks failed" >&2
    status=1
  fi
done

echo
echo "### HetCCL / Open MPI, AllReduce float sum (HetCCL out-of-place columns)"
printf '%6s %12s %12s %10s %12s %10s %10s %10s\n' ranks size mpi_us mpi_busbw hetccl_us hetccl_busbw busbw_x time_x
for np in $nps; do
  # Rows are the lines not starting with '#': size count type redop root time algbw busbw #wrong ...
  awk -v np="$np" '
    FNR == NR { if ($1 !~ /^#/ && NF >= 9) { mt[$1] = $6; mb[$1] = $8 } next }
    $1 !~ /^#/ && NF >= 9 && ($1 in mt) {
      bx = (mb[$1] > 0) ? sprintf("%.2f", $8 / mb[$1]) : "n/a"
      tx = (mt[$1] > 0) ? sprintf("%.2f", $6 / mt[$1]) : "n/a"
      printf "%6d %12d %12s %10s %12s %10s %10s %10s\n", np, $1, mt[$1], mb[$1], $6, $8, bx, tx
    }' "$out/mpi-$np.txt" "$out/hetccl-$np.txt"
done
echo "# busbw_x = hetccl busbw / mpi busbw (higher is better for HetCCL);"
echo "# time_x  = hetccl time / mpi time (lower is better for HetCCL)."
exit $status
