#!/usr/bin/env bash
# make demo: builds quietly (the log is kept), shows what this node offers
# (hetccl-info), then runs 4-rank float AllReduce from 1 KiB to 64 MiB twice
# in one go, the four ranks in one domain and then in two, and prints both
# side by side with a legend.
#   bash scripts/demo.sh [BUILD]        (default: build)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
log="$build/demo-build.log"
mkdir -p "$build"

echo "== Building into $build (log: $log)"
if ! { cmake -S . -B "$build" ${CMAKE_FLAGS:-} && cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)"; } >"$log" 2>&1; then
  echo "The build failed; the end of $log:"
  tail -n 30 "$log"
  exit 1
fi

echo
echo "== What this node offers (build/bin/hetccl-info)"
"$build/bin/hetccl-info" || exit 1

perf() { "$build/bin/hetccl-perf" allreduce -N 4 -b 1K -e 64M -f 4 -n 10 -w 2 "$@"; }
one=$(mktemp) two=$(mktemp)
trap 'rm -f "$one" "$two"' EXIT
echo
echo "== AllReduce, 4 ranks in one domain (HetCCL's built-in engine inside the domain)"
perf | tee "$one" || exit 1
echo
echo "== AllReduce, 4 ranks in two domains of 2 (--domains 2,2: the cross-domain path between them)"
perf --domains 2,2 | tee "$two" || exit 1

# Rows of the tables: size, count, type, op, root, then time/algbw/busbw/#wrong out of place.
echo
echo "== Side by side, out of place (same run)"
printf '%12s %14s %14s %10s\n' "size (B)" "1 domain" "2 domains" "2 / 1"
printf '%12s %14s %14s %10s\n' "" "busbw (GB/s)" "busbw (GB/s)" ""
join <(awk '$1 ~ /^[0-9]+$/ {print $1, $8}' "$one" | sort -k1,1) \
     <(awk '$1 ~ /^[0-9]+$/ {print $1, $8}' "$two" | sort -k1,1) | sort -n |
  awk '{ r = ($2 > 0) ? sprintf("%.2f", $3 / $2) : "-"; printf "%12d %14.2f %14.2f %10s\n", $1, $2, $3, r }'

cat <<'EOF'

How to read these tables
- time: microseconds per AllReduce, averaged over the iterations after the
  warm-up; algbw = size / time; busbw = algbw * 2(n-1)/n, the bytes each
  rank's links must carry for an AllReduce, the same convention as
  nccl-tests, so busbw can be compared with a link's or memory's bandwidth
  whatever the rank count.
- #wrong: elements that differ from the expected sum (every run is checked);
  anything but 0 is a bug.
- "2 / 1" compares the two runs made just now on this machine: the
  cross-domain path (the one that joins NVIDIA and AMD GPUs in a real job)
  against the single-domain engine. Ratios from one run are what count;
  absolute numbers move with the machine's load.
- All four ranks are processes on this machine sharing its cores and memory
  bandwidth, so the numbers measure HetCCL's overheads on host memory, not a
  network: small sizes are dominated by per-call latency, large ones by
  memory copies. BENCHMARKS.md has GPU and multi-host measurements.
EOF
