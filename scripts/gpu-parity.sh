#!/usr/bin/env bash
# Pass-through parity on one GPU: HetCCL (a one-domain communicator: every
# call passes through to NCCL) against NCCL, one CUDA rank.
#   1. tools/bench/passthrough_ab.c: both in one process, interleaved
#      (AB_ROUNDS rounds of AB_ITERS calls each way, order swapped each
#      round), 8 B-32 KiB, every collective and Send/Recv: time and host
#      time per call, medians (the figure that counts: separate processes
#      drift by a microsecond or more between runs on a shared machine);
#      AB_LARGE=1 adds 1, 16 and 256 MiB (the bandwidth aim) to it;
#   2. hetccl-perf against hetccl-perf --lib nccl, separate processes, REPS
#      repetitions in turn, small sizes (8 B-64 KiB, ITERS iterations) and,
#      in the first, 1 MiB-256 MiB for bandwidth (REPS=0 skips this part).
# Output: $OUT (or build-gpu/parity) ab.txt, rows.txt (lib rep coll size
# time host_us), perf.txt; the tables on stdout.
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
if gcc -O2 -std=c11 -Iinclude -I/usr/local/cuda/include tools/bench/passthrough_ab.c -L"$BUILD/lib" -lhetccl \
  -L/usr/local/cuda/lib64 -lcudart -ldl -Wl,-rpath,"$repo/$BUILD/lib" -o "$BUILD/passthrough_ab" >>"$LOGS/build.txt" 2>&1; then
  timeout -k 5 300 "$BUILD/passthrough_ab" "${AB_ITERS:-1000}" "${AB_ROUNDS:-7}" | tee "$LOGS/ab.txt"
  echo "passthrough_ab: done ($(el))"
else
  echo "passthrough_ab: build failed"; tail -n 5 "$LOGS/build.txt"
fi
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
