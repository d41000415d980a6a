#!/usr/bin/env bash
# nccl-tests' own timing through HetCCL's NCCL face against the same binary
# without it, one GPU (-g 1, one rank: pass-through to NCCL), 8 B to 64 KiB:
# for each binary, ROUNDS rounds (default 3), each running the binary
# without the face and then with it preloaded (-n ITERS, default 200, after
# 20 warm-up iterations, -c 0). Per size, the median over the rounds of each
# side's time per call, out-of-place and in-place, and the difference.
#   bash scripts/nccl-tests-timing.sh SRC [BUILD]
# SRC: an nccl-tests source tree (built here when its binaries are missing);
# BUILD: HetCCL's build folder with lib/libnccl.so.2 (default build-gpu).
# TESTS: the binaries to run (default: all nine, e.g. "sendrecv scatter").
# PIN: none (default), one, two or a CPU list: every process of both sides
# runs under `taskset -c` on that set (scripts/gpu-cpus.sh: one or two
# cores of the GPU's NUMA-local CPUs), which takes out most of the drift
# from one process to the next (scripts/nccl-tests-drift.sh measures it).
# Output: one table per binary on stdout, and $OUT/nccl-tests-timing.txt.
set -u
src=${1:?usage: nccl-tests-timing.sh SRC [BUILD]}
build=$(cd "${2:-build-gpu}" && pwd)
face="$build/lib/libnccl.so.2"
rounds=${ROUNDS:-3}
iters=${ITERS:-200}
[ -f "$face" ] || { echo "no $face"; exit 1; }
# shellcheck source=scripts/gpu-cpus.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-cpus.sh"
pin=$(gpu_pin_set "${PIN:-none}")
echo "processes pinned to: ${pin:-nothing}"
export NCCL_NVLS_ENABLE=0
unset HETCCL_NCCL_LIBRARY
out=${OUT:-/tmp}
raw=$out/nccl-tests-timing.raw
: >"$raw"
if [ ! -x "$src/build/all_reduce_perf" ]; then
  make -C "$src" -j16 >"$out/nccl-tests-build.log" 2>&1 || { tail -n 20 "$out/nccl-tests-build.log"; exit 1; }
fi
tests=${TESTS:-"all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter"}
for t in $tests; do
  bin="$src/build/${t}_perf"
  [ -x "$bin" ] || continue
  for r in $(seq 1 "$rounds"); do
    for side in native face; do
      pre=
      [ $side = face ] && pre=$face
      # nccl-tests rows: size count type redop root time algbw busbw #wrong time algbw busbw #wrong
      env ${pre:+LD_PRELOAD=$pre} ${pin:+taskset -c "$pin"} "$bin" -b 8 -e 65536 -f 2 -n "$iters" -w 20 -c 0 -g 1 2>&1 |
        awk -v t="$t" -v s="$side" -v r="$r" '$1 ~ /^[0-9]+$/ && NF >= 10 {print t, s, r, $1, $6, $10}' >>"$raw"
    done
  done
done
python3 - "$raw" <<'EOF' | tee "$out/nccl-tests-timing.txt"
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    t, side, r, size, oop, ip = line.split()
    try:
        rows.setdefault((t, int(size)), {}).setdefault(side, []).append((float(oop), float(ip)))
    except ValueError:
        pass
worst = {}
for t in sorted({k[0] for k in rows}):
    print(f"## {t}_perf: median of the rounds, us per call")
    print(f"{'bytes':>8} {'native':>8} {'face':>8} {'added':>7} | {'native ip':>9} {'face ip':>8} {'added':>7}")
    for (tt, size) in sorted(k for k in rows if k[0] == t):
        d = rows[(tt, size)]
        if 'native' not in d or 'face' not in d:
            continue
        n_o = st.median(x[0] for x in d['native']); f_o = st.median(x[0] for x in d['face'])
        n_i = st.median(x[1] for x in d['native']); f_i = st.median(x[1] for x in d['face'])
        print(f"{size:>8} {n_o:>8.2f} {f_o:>8.2f} {f_o - n_o:>+7.2f} | {n_i:>9.2f} {f_i:>8.2f} {f_i - n_i:>+7.2f}")
        worst.setdefault(t, []).extend([f_o - n_o, f_i - n_i])
print("## added per call, median over sizes (max)")
for t, v in worst.items():
    print(f"{t:>16}: {st.median(v):+.2f} us (max {max(v):+.2f})")
EOF
