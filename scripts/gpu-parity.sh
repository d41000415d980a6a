#!/usr/bin/env bash
# Pass-through parity on one GPU (issue: one domain is NCCL): HetCCL against
# NCCL in the same binary (hetccl-perf --lib nccl), one CUDA rank, every
# collective, small sizes (8 B-64 KiB, ITERS iterations after a warm-up) and
# large ones (1 MiB-256 MiB), REPS repetitions with the two libraries in turn.
# Output: $OUT (or build-gpu/parity) rows.txt (lib rep coll size time host_us),
# perf.txt (everything); the medians per collective on stdout.
set -u
# shellcheck source=scripts/gpu-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_setup parity
REPS=${REPS:-3}
ITERS=${ITERS:-1000}
COLLS=${COLLS:-"allreduce broadcast allgather reducescatter reduce sendrecv alltoall"}
if ! { cmake -S . -B "$BUILD" -DHETCCL_WERROR=ON -DHETCCL_CUDA_ARCHS=90 -DHETCCL_HIP_KERNELS=OFF &&
  cmake --build "$BUILD" -j16 --target hetccl hetccl-perf; } >"$LOGS/build.txt" 2>&1; then
  tail -n 30 "$LOGS/build.txt"
  exit 1
fi
echo "build: ok ($(el))"
bin=$BUILD/bin
: >"$LOGS/rows.txt"
perf() { # lib rep coll args...
  local lib=$1 rep=$2 coll=$3
  shift 3
  local extra=()
  [ "$lib" = nccl ] && extra=(--lib nccl)
  echo "### $lib rep $rep hetccl-perf $coll $* ${extra[*]}" >>"$LOGS/perf.txt"
  timeout -k 5 120 "$bin/hetccl-perf" "$coll" -N 1 -G cuda "${extra[@]}" "$@" --host-time -c 0 >"$LOGS/last.txt" 2>&1 ||
    { echo "hetccl-perf $lib $coll failed:"; tail -n 5 "$LOGS/last.txt"; }
  cat "$LOGS/last.txt" >>"$LOGS/perf.txt"
  # size count type redop root time algbw busbw #wrong (out-of-place) ... host_us: first time and host columns
  awk -v l="$lib" -v r="$rep" -v c="$coll" '$1 ~ /^[0-9]+$/ && NF >= 10 { print l, r, c, $1, $6, $(NF-1) }' "$LOGS/last.txt" >>"$LOGS/rows.txt"
}
for rep in $(seq 1 "$REPS"); do
  for coll in $COLLS; do
    for lib in hetccl nccl; do
      perf $lib "$rep" "$coll" -b 8 -e 64K -f 2 -n "$ITERS" -w 100
      [ "$rep" = 1 ] && perf $lib "$rep" "$coll" -b 1M -e 256M -f 16 -n 20 -w 5
    done
  done
done
echo "perf: done ($(el))"
head -n 40 "$LOGS/perf.txt"
python3 - "$LOGS/rows.txt" <<'PY'
import sys, statistics as st, collections as co
rows = [l.split() for l in open(sys.argv[1])]
t = co.defaultdict(list); h = co.defaultdict(list)
for lib, rep, coll, size, time, host in rows:
    t[(coll, int(size), lib)].append(float(time)); h[(coll, int(size), lib)].append(float(host))
print("coll size hetccl_us nccl_us added_us host_hetccl host_nccl host_added (medians of reps)")
for coll in dict.fromkeys(r[2] for r in rows):
    sizes = sorted({s for (c, s, l) in t if c == coll})
    small = []
    for s in sizes:
        a, b = st.median(t[(coll, s, "hetccl")]), st.median(t[(coll, s, "nccl")])
        ha, hb = st.median(h[(coll, s, "hetccl")]), st.median(h[(coll, s, "nccl")])
        if s <= 65536: small.append((a - b, ha - hb))
        print(coll, s, "%.2f %.2f %+.2f %.2f %.2f %+.2f" % (a, b, a - b, ha, hb, ha - hb))
    if small:
        print("SUMMARY", coll, "8B-64KiB mean added time %+.2f us, host %+.2f us" % (st.mean(x for x, _ in small), st.mean(y for _, y in small)))
PY
