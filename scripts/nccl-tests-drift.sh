#!/usr/bin/env bash
# How far one nccl-tests binary's time per call moves from one process to
# the next, unpinned and pinned, with and without HetCCL's NCCL face: for
# each pinning mode (MODES, default "none one two": scripts/gpu-cpus.sh),
# RUNS processes each way (default 6, native and face alternating), each
# `BIN_perf -b 64 -e 4096 -f 64 -n ITERS -w 50 -c 0 -g 1` (ITERS 2000).
# Per mode and side: the median, smallest and largest time per call over the
# processes, out-of-place and in-place, and the face's added median.
#   bash scripts/nccl-tests-drift.sh SRC [BUILD]       (BIN default sendrecv)
# Output on stdout and in $OUT/nccl-tests-drift.txt (rows in .raw).
set -u
src=${1:?usage: nccl-tests-drift.sh SRC [BUILD]}
build=$(cd "${2:-build-gpu}" && pwd)
# shellcheck source=scripts/gpu-cpus.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-cpus.sh"
face="$build/lib/libnccl.so.2"
bin="$src/build/${BIN:-sendrecv}_perf"
[ -f "$face" ] && [ -x "$bin" ] || { echo "need $face and $bin"; exit 1; }
export NCCL_NVLS_ENABLE=0
unset HETCCL_NCCL_LIBRARY
out=${OUT:-/tmp}
raw=$out/nccl-tests-drift.raw
: >"$raw"
echo "GPU-local CPUs: $(gpu_local_cpus | paste -sd, -)"
for mode in ${MODES:-none one two}; do
  set_=$(gpu_pin_set "$mode")
  echo "mode $mode: ${set_:-unpinned}"
  for r in $(seq 1 "${RUNS:-6}"); do
    for side in native face; do
      pre=
      [ $side = face ] && pre=$face
      env ${pre:+LD_PRELOAD=$pre} ${set_:+taskset -c "$set_"} "$bin" -b 64 -e 4096 -f 64 -n "${ITERS:-2000}" -w 50 \
        -c 0 -g 1 2>&1 | awk -v m="$mode" -v s="$side" -v r="$r" '$1 ~ /^[0-9]+$/ && NF >= 10 {print m, s, r, $1, $6, $10}' >>"$raw"
    done
  done
done
python3 - "$raw" <<'EOF' | tee "$out/nccl-tests-drift.txt"
import sys, statistics as st, collections as co
d = co.defaultdict(list)
for line in open(sys.argv[1]):
    m, s, r, size, o, i = line.split()
    d[(m, int(size), s)].append((float(o), float(i)))
print(f"{'mode':>5} {'bytes':>6} {'side':>6} | {'oop med':>7} {'min':>6} {'max':>6} | {'ip med':>6} {'min':>6} {'max':>6}")
for (m, size, s) in sorted(d, key=lambda k: (k[0], k[1], k[2] != 'native')):
    o = [x[0] for x in d[(m, size, s)]]; i = [x[1] for x in d[(m, size, s)]]
    print(f"{m:>5} {size:>6} {s:>6} | {st.median(o):7.2f} {min(o):6.2f} {max(o):6.2f} | {st.median(i):6.2f} {min(i):6.2f} {max(i):6.2f}")
    if s == 'face' and (m, size, 'native') in d:
        n = d[(m, size, 'native')]
        print(f"{'':>5} {'':>6} {'added':>6} | {st.median(o) - st.median(x[0] for x in n):+7.2f} {'':>13} | "
              f"{st.median(i) - st.median(x[1] for x in n):+6.2f}")
EOF
