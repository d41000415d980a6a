#!/usr/bin/env bash
# A short GPU run for one question (issue 16's host-time aim): where does a
# GPU rank's call spend its host time at large sizes, and what do the window
# kernel's block count and its auto threshold change. One GPU.
#   1. build hetccl, hetccl-perf, hetccl-pciebench
#   2. timelines (HETCCL_TRACE) of 8 MiB and 256 MiB AllReduce and
#      Send/Recv, cuda rank + host rank with the kernel and with stream waits,
#      and cuda:d0 + cuda:d1 with stream waits: traces.tar.gz
#   3. the kernel against stream waits from 8 KiB to 1 MiB (the auto
#      threshold), cuda rank + host rank
#   4. HETCCL_WINDOW_KERNEL_BLOCKS 4, 8, 16 from 8 MiB to 256 MiB
#   5. the references of the aims in the same run: host + host AllReduce
#      (busbw ratio), hetccl-pciebench (PCIe limit), cuda:d0 + cuda:d1 to 1 GiB
#   6. host time against a bare enqueue (--host-ref: a 1-byte memset right
#      after the same drain) on every layout, and NCCL alone on one rank
#   7. the memop path with 4 chunks (a 256 MiB window, lanes off) against
#      lanes of 8 chunks: host time and bandwidth
#   8. (AB=1) the kernel against stream waits from 16 MiB, cuda rank + host
#      rank, three times in turn, beside host + host: the bandwidth that
#      HETCCL_WINDOW_KERNEL=auto's choice for large transfers rests on
#   9. (TESTS=1) test_gpu_collectives on cuda,host and cuda:d0,cuda:d1,host;
#      with TESTS_EPOCH=4K instead, window counters restart every 4 KiB, on
#      cuda,host and on cuda:d0,cuda:d1,host with the kernel and stream waits
#  10. (MPS=1) cuda:d0 + cuda:d1 under the CUDA MPS daemon (started here and
#      stopped after; the two processes' kernels then run at once instead of
#      time-slicing): the window kernel against stream waits, blocks 4, 8, 16
# SKIP_TRACE=1 SKIP_THRESHOLD=1 SKIP_BLOCKS=1 SKIP_REFS=1 SKIP_HOSTREF=1
# SKIP_CHUNKS=1 leave sections out.
# Every hetccl-perf run names HETCCL_WINDOW_KERNEL. Output: $OUT (or
# build-gpu/hosttime): perf.txt (everything), rows.txt (one line per size),
# traces.tar.gz; the summary on stdout.
set -u
# shellcheck source=scripts/gpu-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_setup hosttime
targets=(hetccl hetccl-perf hetccl-pciebench)
[ -n "${TESTS:-}${TESTS_EPOCH:-}" ] && targets+=(test_gpu_collectives)
if ! { cmake -S . -B "$BUILD" -DHETCCL_WERROR=ON -DHETCCL_GPU_TESTS=ON -DHETCCL_CUDA_ARCHS=90 &&
  cmake --build "$BUILD" -j16 --target "${targets[@]}"; } >"$LOGS/build.txt" 2>&1; then
  tail -n 30 "$LOGS/build.txt"
  exit 1
fi
echo "build: ok ($(el))"
bin=$BUILD/bin
fails=0
: >"$LOGS/rows.txt"
perf() { # name VAR=VALUE... -- args...
  local name=$1 envs=()
  shift
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  echo "### ${envs[*]} hetccl-perf $*" >>"$LOGS/perf.txt"
  env "${envs[@]}" timeout -k 5 150 "$bin/hetccl-perf" "$@" --host-time -T 140 >"$LOGS/last.txt" 2>&1 ||
    { fails=$((fails + 1)); echo "hetccl-perf $name ${envs[*]} failed:"; tail -n 5 "$LOGS/last.txt"; }
  cat "$LOGS/last.txt" >>"$LOGS/perf.txt"
  awk -v n="$name ${envs[*]}" '$1 ~ /^[0-9]+$/ && NF >= 10 { print n, $0 }' "$LOGS/last.txt" >>"$LOGS/rows.txt"
}
# 2. timelines
if [ -z "${SKIP_TRACE:-}" ]; then
tr=$BUILD/traces
rm -rf "$tr"
mkdir -p "$tr"
for k in 1 0; do
  perf trace-ch-ar HETCCL_WINDOW_KERNEL=$k HETCCL_TRACE="$tr/ch-ar-k$k" -- allreduce -N 2 --domains 1,1 -G cuda,host \
    -b 8M -e 256M -f 32 -n 4 -w 2
  perf trace-ch-sr HETCCL_WINDOW_KERNEL=$k HETCCL_TRACE="$tr/ch-sr-k$k" -- sendrecv -N 2 --domains 1,1 -G cuda,host \
    -b 8M -e 256M -f 32 -n 4 -w 2
done
perf trace-cc-ar HETCCL_WINDOW_KERNEL=0 HETCCL_TRACE="$tr/cc-ar-k0" -- allreduce -N 2 --domains 1,1 -G cuda \
  -b 8M -e 256M -f 32 -n 4 -w 2
tar -C "$BUILD" -czf "$LOGS/traces.tar.gz" traces
echo "timelines: done ($(el))"
fi
# 3. the auto threshold
[ -z "${SKIP_THRESHOLD:-}" ] && for k in 1 0; do
  perf threshold HETCCL_WINDOW_KERNEL=$k -- allreduce -N 2 --domains 1,1 -G cuda,host -b 8K -e 1M -f 2 -n 100 -w 20
done
echo "threshold: done ($(el))"
# 4. blocks
if [ -z "${SKIP_BLOCKS:-}" ]; then
for b in 4 8 16; do
  perf blocks HETCCL_WINDOW_KERNEL=1 HETCCL_WINDOW_KERNEL_BLOCKS=$b -- allreduce -N 2 --domains 1,1 -G cuda,host \
    -b 8M -e 256M -f 32 -n 10 -w 3
done
perf blocks HETCCL_WINDOW_KERNEL=0 -- allreduce -N 2 --domains 1,1 -G cuda,host -b 8M -e 256M -f 32 -n 10 -w 3
echo "blocks: done ($(el))"
fi
# 5. references
if [ -z "${SKIP_REFS:-}" ]; then
perf host-host HETCCL_WINDOW_KERNEL=0 -- allreduce -N 2 --domains 1,1 -b 16M -e 256M -f 4 -n 10 -w 3
perf cuda-host HETCCL_WINDOW_KERNEL=0 -- allreduce -N 2 --domains 1,1 -G cuda,host -b 16M -e 256M -f 4 -n 10 -w 3
perf cuda-cuda HETCCL_WINDOW_KERNEL=0 -- allreduce -N 2 --domains 1,1 -G cuda -b 256M -e 1G -f 4 -n 5 -w 2
echo "### hetccl-pciebench -b 256M -e 256M -n 10" >>"$LOGS/perf.txt"
timeout 60 "$bin/hetccl-pciebench" -b 256M -e 256M -n 10 >>"$LOGS/perf.txt" 2>&1
fi
# 6. host time against a bare enqueue after the same drain
if [ -z "${SKIP_HOSTREF:-}" ]; then
sizes=(-b 8 -e 256M -f 32)
for k in auto 1 0; do
  perf hostref-ch-ar HETCCL_WINDOW_KERNEL=$k -- allreduce -N 2 --domains 1,1 -G cuda,host "${sizes[@]}" -n 8 -w 2 --host-ref
done
perf hostref-ch-sr HETCCL_WINDOW_KERNEL=0 -- sendrecv -N 2 --domains 1,1 -G cuda,host "${sizes[@]}" -n 8 -w 2 --host-ref
perf hostref-cc-ar HETCCL_WINDOW_KERNEL=0 -- allreduce -N 2 --domains 1,1 -G cuda "${sizes[@]}" -n 8 -w 2 --host-ref
perf hostref-nccl HETCCL_WINDOW_KERNEL=0 -- allreduce -N 1 --lib nccl "${sizes[@]}" -n 8 -w 2 --host-ref
echo "hostref: done ($(el))"
fi
# 7. the memop path in 4 chunks (a window of 256 MiB holds the transfer; lanes off)
if [ -z "${SKIP_CHUNKS:-}" ]; then
for w in 64M 256M; do
  perf chunks-cc-ar HETCCL_WINDOW_KERNEL=0 HETCCL_SHM_WINDOW_BYTES=$w -- allreduce -N 2 --domains 1,1 -G cuda \
    -b 64M -e 256M -f 4 -n 8 -w 2 --host-ref
  perf chunks-ch-ar HETCCL_WINDOW_KERNEL=0 HETCCL_SHM_WINDOW_BYTES=$w -- allreduce -N 2 --domains 1,1 -G cuda,host \
    -b 64M -e 256M -f 4 -n 8 -w 2 --host-ref
done
echo "### hetccl-pciebench -b 256M -e 256M -n 10" >>"$LOGS/perf.txt"
timeout 60 "$bin/hetccl-pciebench" -b 256M -e 256M -n 10 >>"$LOGS/perf.txt" 2>&1
echo "chunks: done ($(el))"
fi
# 8. the kernel against stream waits, large transfers to a host rank, in turn
if [ -n "${AB:-}" ]; then
for rep in 1 2 3; do
  for k in 1 0; do
    perf ab-ch-ar-$rep HETCCL_WINDOW_KERNEL=$k -- allreduce -N 2 --domains 1,1 -G cuda,host -b 16M -e 256M -f 4 -n 10 -w 3
    perf ab-ch-sr-$rep HETCCL_WINDOW_KERNEL=$k -- sendrecv -N 2 --domains 1,1 -G cuda,host -b 16M -e 256M -f 4 -n 10 -w 3
  done
  perf ab-hh-ar-$rep HETCCL_WINDOW_KERNEL=0 -- allreduce -N 2 --domains 1,1 -b 16M -e 256M -f 4 -n 10 -w 3
  perf ab-hh-sr-$rep HETCCL_WINDOW_KERNEL=0 -- sendrecv -N 2 --domains 1,1 -b 16M -e 256M -f 4 -n 10 -w 3
done
echo "ab: done ($(el))"
fi
# 9. correctness
if [ -n "${TESTS:-}" ]; then
  for layout in cuda,host cuda:d0,cuda:d1,host; do
    gpu_test NCCL_NVLS_ENABLE=0 -- "$layout" 0,1,7,1023,65539,1048579
  done
fi
if [ -n "${TESTS_EPOCH:-}" ]; then
  gpu_test HETCCL_SHM_WINDOW_EPOCH="$TESTS_EPOCH" -- cuda,host 0,1,7,1023,65539
  for k in 1 0; do
    gpu_test HETCCL_SHM_WINDOW_EPOCH="$TESTS_EPOCH" HETCCL_WINDOW_KERNEL=$k -- cuda:d0,cuda:d1,host 0,1,7,1023,65539
  done
fi
# 10. two GPU processes under MPS
if [ -n "${MPS:-}" ]; then
export CUDA_MPS_PIPE_DIRECTORY=/tmp/hetccl-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/hetccl-mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
if nvidia-cuda-mps-control -d; then
  sleep 2
  echo "### MPS on: $(ls "$CUDA_MPS_PIPE_DIRECTORY" | tr '\n' ' ')" >>"$LOGS/perf.txt"
  for k in 1 0; do
    perf mps-cc-ar HETCCL_WINDOW_KERNEL=$k -- allreduce -N 2 --domains 1,1 -G cuda -b 8 -e 256M -f 32 -n 10 -w 3 --host-ref
    perf mps-cc-ar1g HETCCL_WINDOW_KERNEL=$k -- allreduce -N 2 --domains 1,1 -G cuda -b 1G -e 1G -n 5 -w 2 --host-ref
    perf mps-cc-sr HETCCL_WINDOW_KERNEL=$k -- sendrecv -N 2 --domains 1,1 -G cuda -b 8 -e 256M -f 32 -n 10 -w 3 --host-ref
  done
  for b in 8 16; do
    perf mps-cc-blocks HETCCL_WINDOW_KERNEL=1 HETCCL_WINDOW_KERNEL_BLOCKS=$b -- allreduce -N 2 --domains 1,1 -G cuda \
      -b 8M -e 256M -f 32 -n 10 -w 3
  done
  echo "### hetccl-pciebench -b 256M -e 256M -n 10 (MPS on)" >>"$LOGS/perf.txt"
  timeout 60 "$bin/hetccl-pciebench" -b 256M -e 256M -n 10 >>"$LOGS/perf.txt" 2>&1
  echo quit | nvidia-cuda-mps-control
  sleep 1
  cat "$CUDA_MPS_LOG_DIRECTORY"/control.log >>"$LOGS/mps.txt" 2>/dev/null
else
  echo "MPS: nvidia-cuda-mps-control -d failed"
  fails=$((fails + 1))
fi
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
echo "### hetccl-pciebench -b 256M -e 256M -n 10 (MPS off)" >>"$LOGS/perf.txt"
timeout 60 "$bin/hetccl-pciebench" -b 256M -e 256M -n 10 >>"$LOGS/perf.txt" 2>&1
echo "mps: done ($(el))"
fi
echo "perf: done ($(el)); rows: name env size count type redop root time algbw busbw #wrong ... host_us"
cat "$LOGS/rows.txt"
[ -f "$LOGS/perf.txt" ] && grep -A3 "pciebench" "$LOGS/perf.txt" | grep -v '^--'
echo "$fails failures"
[ $fails -eq 0 ]
