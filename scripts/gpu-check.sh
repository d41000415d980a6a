#!/usr/bin/env bash
# The GPU check, run on an NVIDIA machine from the repository root:
#   1. builds what it needs into build-gpu (-DHETCCL_GPU_TESTS=ON, sm_90 only
#      by default so that nvcc stays quick);
#   2. hetccl-info;
#   3. the GPU test programs: test_cuda_device, test_nccl_vendor,
#      test_gpu_collectives (tests/gpu/README.md), then cuda,host again
#      without device windows (staged), then cuda:d0,cuda:d1,host with
#      HETCCL_WINDOW_KERNEL=0 (device windows by stream waits and copies
#      per chunk instead of the window kernel);
#   4. pass-through parity: hetccl-perf for allreduce, allgather,
#      reducescatter, broadcast and sendrecv on NGPUS forked ranks with device
#      buffers, HetCCL and then NCCL called directly (--lib nccl, the same
#      libnccl), 8 B to MAXBYTES, with the host time of one call; then a short
#      table: collective, size, busbw of each, their ratio, time, host time;
#   5. cross-domain: hetccl-pciebench (the PCIe limit) and AllReduce on two
#      ranks in two domains, with the ratio of each size to that limit;
#      then a cuda rank with a host rank: AllReduce and Send/Recv on a
#      cuda rank + a host rank (-G cuda,host), through the device window and
#      staged (HETCCL_SHM_WINDOW_BYTES=0), against two host ranks
#      (host+host) in the same run, at 8 B, 16 MiB and 256 MiB: time, busbw,
#      their ratio, and the cuda rank's host time per call, through the
#      window both with the window kernel and without (HETCCL_WINDOW_KERNEL=0,
#      "memop"; the two-GPU-rank AllReduce too) (issue 16's aims:
#      host time < 50 us, AllReduce busbw >= 0.8 of host+host from 16 MiB,
#      8 B < 12 us);
#   6. PyTorch: scripts/torch-check.sh (DDP against Gloo across two domains;
#      against native NCCL in pass-through when there is a GPU per rank; and
#      "two faces": a cuda rank on the NCCL face beside a hip rank on the
#      RCCL face over the stand-in below);
#   7. hip ranks on NVIDIA GPUs (docs/AMD.md): test_gpu_collectives on layouts
#      with hip ranks, the hip kind over the stand-in HIP runtime over the
#      CUDA driver (test-tools/stand-in-hip-cuda/libamdhip64.so, a test tool)
#      and NVIDIA's NCCL standing in for RCCL (HETCCL_RCCL_LIBRARY): hip,
#      hip,host, cuda:d0,hip:d1 (device window between a cuda and a hip
#      rank), cuda:d0,hip:d1,host (window, then staged), cuda:d0,hip:d1 with
#      the window counters restarting every 4 KiB; with 2+ GPUs also
#      hip:d0,hip:d0 and cuda:d0,cuda:d0,hip:d1,hip:d1. Appended to
#      test_gpu_collectives.log, one summary line per layout.
#
# usage: bash scripts/gpu-check.sh [ngpus]        (default: every GPU)
# Settings (environment): MAXBYTES (4G; 1G when time is short), SPLIT (256M:
# sizes above it run ITERS_LARGE/WARMUP_LARGE iterations), ITERS (20),
# WARMUP (5), ITERS_LARGE (10), WARMUP_LARGE (2), CHECK_MAX (256M: sizes up
# to this are checked element by element), CUDA_ARCHS (90), BUILD (build-gpu),
# EXTRA_CFLAGS (none), SKIP_WARNINGS (1: no -O2/-O3 warnings build), SKIP_BUILD (1: reuse BUILD),
# SKIP_TESTS (1: no test programs), SKIP_PARITY (1: no parity runs),
# SKIP_CROSS (1: no cross-domain runs), XMAX (1G: largest cross-domain size),
# SKIP_STAGED (1: no cross-domain run without device windows), SKIP_HOSTPEER
# (1: no cuda+host against host+host runs), XMIN (8) and
# XFACTOR (4): the cross-domain sizes,
# SKIP_TRACE (1: no timelines), SKIP_TORCH (1: no PyTorch runs), TORCH_STEPS (200), TWO_FACES (0: no
# two-faces DDP run), SKIP_HIP (1: no step 7), HIP_RCCL (the NCCL library
# standing in for RCCL; default HETCCL_NCCL_LIBRARY, else the system
# libnccl.so.2), HIP_IMAGES (marker: HetCCL hands the stand-in a marker
# image, for builds without the AMD code objects; builtin: the gfx942 code
# object built in; default builtin when hetccl-info lists gfx942 under hip
# kernels, else marker; the stand-in loads the CUDA kernels either way),
# COLLS (the collectives of the parity runs), HIP_PREBUILT (a folder of AMD
# code objects from scripts/hip-prebuild.sh; default .device-carry/hip-kernels
# when it exists: carry it to the device machine).
# Logs go to $OUT when it is set, else to $BUILD/logs (the device tool brings
# back at most 8 files of $OUT: gpucheck.out, printed by the caller, has the
# summary):
# build.log info.log test_cuda_device.log test_nccl_vendor.log
# test_gpu_collectives.log perf.log cross.log summary.txt, and torch-check's
# files (gloo/hetccl-* .log/.json, torch-summary.txt).
# Exit status: 0 when everything built, passed and checked right; 1 otherwise.
set -u

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo" || exit 1
BUILD=${BUILD:-build-gpu}
MAXBYTES=${MAXBYTES:-4G}
SPLIT=${SPLIT:-256M}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-5}
ITERS_LARGE=${ITERS_LARGE:-10}
WARMUP_LARGE=${WARMUP_LARGE:-2}
CHECK_MAX=${CHECK_MAX:-256M}
CUDA_ARCHS=${CUDA_ARCHS:-90}
EXTRA_CFLAGS=${EXTRA_CFLAGS:-}
COLLS=${COLLS:-allreduce allgather reducescatter broadcast sendrecv}
LOGS=${OUT:-$BUILD/logs}
mkdir -p "$LOGS"
summary="$LOGS/summary.txt"
# shellcheck source=scripts/summary.sh
. "$repo/scripts/summary.sh"

to_bytes() {
  local v=$1 n=${1%[KkMmGg]}
  case "$v" in
    *[Kk]) echo $((n << 10)) ;;
    *[Mm]) echo $((n << 20)) ;;
    *[Gg]) echo $((n << 30)) ;;
    *) echo "$v" ;;
  esac
}

export NCCL_NVLS_ENABLE=0
torch_nccl=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
if [ -z "${HETCCL_NCCL_LIBRARY:-}" ] && [ -f "$torch_nccl" ]; then export HETCCL_NCCL_LIBRARY=$torch_nccl; fi

say "# gpu-check $(date -u +%FT%TZ) on $(hostname)"
say "# NCCL_NVLS_ENABLE=0 HETCCL_NCCL_LIBRARY=${HETCCL_NCCL_LIBRARY:-(default search)}"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi -L 2>&1 | sed 's/^/# /' | tee -a "$summary"
fi

# ---- 1. Build ----
bin="$BUILD/bin"
targets="hetccl nccl_face rccl_face test_tool_stand_in_hip_cuda hetccl-perf hetccl-info hetccl-pciebench test_cuda_device test_nccl_vendor test_gpu_collectives"
# AMD code objects built elsewhere (scripts/hip-prebuild.sh), for a machine
# without clang-19: the stand-in HIP then finds gfx942 code in the library,
# as PyTorch's two-faces run needs.
hip_prebuilt=${HIP_PREBUILT:-}
if [ -z "$hip_prebuilt" ] && [ -f .device-carry/hip-kernels/source.sha256 ]; then hip_prebuilt=$repo/.device-carry/hip-kernels; fi
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  # shellcheck disable=SC2086
  {
    cmake -S . -B "$BUILD" -DHETCCL_WERROR=ON -DHETCCL_GPU_TESTS=ON -DHETCCL_CUDA_ARCHS="$CUDA_ARCHS" -DCMAKE_C_FLAGS="$EXTRA_CFLAGS" \
      -DHETCCL_HIP_PREBUILT_DIR="$hip_prebuilt" &&
      cmake --build "$BUILD" -j16 --target $targets
  } >"$LOGS/build.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    fail "build (exit $rc); the end of $LOGS/build.log:"
    tail -n 30 "$LOGS/build.log" | tee -a "$summary"
    say "$failures failures"
    exit 1
  fi
  say "build: ok ($(elapsed))"
fi
# This machine's gcc (13 on the lent H200s) is one CI lacks: the whole tree,
# warnings as errors, at -O2 and -O3.
if [ "${SKIP_WARNINGS:-0}" != 1 ]; then
  if bash scripts/check-warnings.sh "$BUILD-warnings" gcc:-O2 gcc:-O3 >>"$LOGS/build.log" 2>&1; then
    say "warnings: none under $(gcc -dumpfullversion 2>/dev/null || echo gcc) at -O2 and -O3 ($(elapsed))"
  else
    fail "warnings as errors under this machine's gcc; the end of $LOGS/build.log:"
    tail -n 20 "$LOGS/build.log" | tee -a "$summary"
  fi
fi
for t in hetccl-perf hetccl-info test_cuda_device test_nccl_vendor test_gpu_collectives; do
  [ -x "$bin/$t" ] || fail "$bin/$t was not built"
done

# ---- 2. What this node offers ----
timeout -k 5 60 "$bin/hetccl-info" >"$LOGS/info.log" 2>&1 || fail "hetccl-info (exit $?)"
# The cuda kind, NCCL, and the kernels built in (one line each).
awk '/^[A-Z]/ { section = $0 }
     section == "Device kinds" && $1 == "cuda" { sub(/^ +/, ""); print "# device kind: " $0 }
     section == "Vendor libraries" && $1 == "NCCL" { sub(/^ +/, ""); print "# vendor: " $0 }
     section == "Kernels" && $1 == "cuda" { sub(/^ +/, ""); print "# kernels: " $0 }' "$LOGS/info.log" |
  tee -a "$summary"

ngpus=${1:-}
if [ -z "$ngpus" ]; then
  ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  [ "$ngpus" -gt 0 ] 2>/dev/null ||
    ngpus=$(sed -n 's/^  cuda  *\([0-9][0-9]*\) device.*/\1/p' "$LOGS/info.log")
fi
if ! [ "${ngpus:-0}" -gt 0 ] 2>/dev/null; then
  fail "no GPU found (give the count as the first argument)"
  say "$failures failures"
  exit 1
fi
say "# ranks: $ngpus (one per GPU)"

# ---- 3. GPU test programs ----
# run_test <name> <timeout s> <args...>: its log, and its "N passed, M failed" line in the summary.
run_test() {
  local name=$1 limit=$2
  shift 2
  timeout -k 10 "$limit" "$bin/$name" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  local tally
  tally=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$LOGS/$name.log" | tail -n 1)
  if [ $rc -ne 0 ]; then
    fail "$name (exit $rc${tally:+, $tally}); first failures:"
    grep -m 10 'FAIL' "$LOGS/$name.log" | cut -c1-300 | tee -a "$summary"
  else
    say "$name: ${tally:-no tally line} ($(elapsed))"
  fi
}
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  run_test test_cuda_device 180
  run_test test_nccl_vendor 180 "$ngpus"
  run_test test_gpu_collectives 900 --ranks "$ngpus"
  grep -E '^(matrix|alltoall)' "$LOGS/test_gpu_collectives.log" | sed 's/^/#   /' | tee -a "$summary"
  # 1 GiB per rank across two domains (the size the NVIDIA issue asks for).
  mv "$LOGS/test_gpu_collectives.log" "$BUILD/test_gpu_collectives.matrix.log"
  run_test test_gpu_collectives 300 --layout cuda:d0,cuda:d1 --colls allreduce --types float32 --ops sum \
    --counts 268435456
  cat "$BUILD/test_gpu_collectives.matrix.log" "$LOGS/test_gpu_collectives.log" >"$BUILD/tgc.log" &&
    mv "$BUILD/tgc.log" "$LOGS/test_gpu_collectives.log"
  # A cuda rank and a host rank without a device window: the staged path
  # (progress engine), which a GPU rank takes to another host.
  mv "$LOGS/test_gpu_collectives.log" "$BUILD/test_gpu_collectives.matrix.log"
  HETCCL_SHM_WINDOW_BYTES=0 run_test test_gpu_collectives 300 --layout cuda,host
  cat "$BUILD/test_gpu_collectives.matrix.log" "$LOGS/test_gpu_collectives.log" >"$BUILD/tgc.log" &&
    mv "$BUILD/tgc.log" "$LOGS/test_gpu_collectives.log"
  # Device windows without the window kernel (stream waits, writes and
  # copies per chunk), the path a device kind without the kernel takes.
  mv "$LOGS/test_gpu_collectives.log" "$BUILD/test_gpu_collectives.matrix.log"
  HETCCL_WINDOW_KERNEL=0 run_test test_gpu_collectives 300 --layout cuda:d0,cuda:d1,host
  cat "$BUILD/test_gpu_collectives.matrix.log" "$LOGS/test_gpu_collectives.log" >"$BUILD/tgc.log" &&
    mv "$BUILD/tgc.log" "$LOGS/test_gpu_collectives.log"
fi

# ---- 7 (run here, beside the other test programs). hip ranks over the stand-in HIP over CUDA ----
if [ "${SKIP_TESTS:-0}" != 1 ] && [ "${SKIP_HIP:-0}" != 1 ]; then
  hip_rt=$repo/$BUILD/test-tools/stand-in-hip-cuda/libamdhip64.so
  case "$BUILD" in /*) hip_rt=$BUILD/test-tools/stand-in-hip-cuda/libamdhip64.so ;; esac
  hip_rccl=${HIP_RCCL:-${HETCCL_NCCL_LIBRARY:-$(ldconfig -p 2>/dev/null | awk '/libnccl.so.2 / { print $NF; exit }')}}
  hip_images=${HIP_IMAGES:-}
  if [ -z "$hip_images" ]; then
    if awk '/^[A-Z]/ { s = $0 } s == "Kernels" && $1 == "hip" && /gfx942/ { f = 1 } END { exit !f }' "$LOGS/info.log"; then
      hip_images=builtin
    else
      hip_images=marker
    fi
  fi
  say "# hip over CUDA: HETCCL_HIP_LIBRARY=$hip_rt HETCCL_RCCL_LIBRARY=$hip_rccl, kernel images: $hip_images"
  hip_log="$BUILD/hip_collectives.log"
  : >"$hip_log"
  # run_hip <VAR=VALUE or -> <layout> [args...]: one layout, appended to hip_log.
  run_hip() {
    local extra=$1 layout=$2
    shift 2
    local out="$BUILD/hip-last.log"
    local envs=("HETCCL_HIP_LIBRARY=$hip_rt" "HETCCL_RCCL_LIBRARY=$hip_rccl" "HETCCL_TEST_HIP_MARKER_IMAGE=0")
    [ "$hip_images" = marker ] && envs[2]=HETCCL_TEST_HIP_MARKER_IMAGE=1
    [ "$extra" != - ] && envs+=("$extra")
    echo "### ${envs[*]} test_gpu_collectives --layout $layout $*" >>"$hip_log"
    env "${envs[@]}" timeout -k 10 300 "$bin/test_gpu_collectives" --layout "$layout" "$@" >"$out" 2>&1
    local rc=$?
    cat "$out" >>"$hip_log"
    local tally
    tally=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
    if [ $rc -ne 0 ]; then
      fail "hip over CUDA: ${extra#-} $layout (exit $rc${tally:+, $tally}); first failures:"
      grep -m 10 'FAIL' "$out" | cut -c1-300 | tee -a "$summary"
    else
      say "hip over CUDA: ${extra#-} $layout: ${tally:-no tally line} ($(elapsed))"
    fi
  }
  if [ ! -f "$hip_rt" ] || [ -z "$hip_rccl" ]; then
    fail "hip over CUDA: $hip_rt not built or no NCCL to stand in for RCCL (set HIP_RCCL)"
  else
    run_hip - hip
    run_hip - hip,host
    run_hip - cuda:d0,hip:d1
    run_hip - cuda:d0,hip:d1,host
    run_hip HETCCL_SHM_WINDOW_BYTES=0 cuda:d0,hip:d1,host
    run_hip HETCCL_SHM_WINDOW_EPOCH=4K cuda:d0,hip:d1 --counts 1023,65539,1048579
    if [ "$ngpus" -ge 2 ]; then
      run_hip - hip:d0,hip:d0
      run_hip - cuda:d0,cuda:d0,hip:d1,hip:d1
    fi
  fi
  cat "$hip_log" >>"$LOGS/test_gpu_collectives.log"
fi

# ---- 4. Pass-through parity ----
if [ "${SKIP_PARITY:-0}" != 1 ]; then
perf_log="$LOGS/perf.log"
: >"$perf_log"
max_b=$(to_bytes "$MAXBYTES")
split_b=$(to_bytes "$SPLIT")
rows="$BUILD/parity-rows.txt"
: >"$rows"
# perf_pass <lib> <coll> <min> <max> <iters> <warmup>: appends the table to
# perf.log and "lib coll size time busbw host" rows to $rows.
perf_pass() {
  local lib=$1 coll=$2 lo=$3 hi=$4 iters=$5 warmup=$6 out="$BUILD/perf-last.txt"
  timeout -k 10 300 "$bin/hetccl-perf" "$coll" -N "$ngpus" -G cuda --lib "$lib" -b "$lo" -e "$hi" -f 2 \
    -n "$iters" -w "$warmup" --check-max "$CHECK_MAX" --host-time -T 280 >"$out" 2>&1
  local rc=$?
  { echo "### hetccl-perf $coll --lib $lib -b $lo -e $hi -n $iters -w $warmup: exit $rc"; cat "$out"; } >>"$perf_log"
  if [ $rc -ne 0 ]; then
    fail "hetccl-perf $coll --lib $lib -b $lo -e $hi: exit $rc"
    grep -v '^#' "$out" | grep -E 'hetccl-perf|FAIL|wrong' | head -n 5 | cut -c1-300 | tee -a "$summary"
  fi
  awk -v lib="$lib" -v coll="$coll" '$1 ~ /^[0-9]+$/ && NF == 15 { print lib, coll, $1, $6, $8, $14 }' "$out" >>"$rows"
}
for coll in $COLLS; do
  for lib in hetccl nccl; do
    if [ "$max_b" -le "$split_b" ]; then
      perf_pass "$lib" "$coll" 8 "$max_b" "$ITERS" "$WARMUP"
    else
      # Sizes from 8 B double: the first above SPLIT starts the second pass.
      next=8
      while [ "$next" -le "$split_b" ]; do next=$((next * 2)); done
      perf_pass "$lib" "$coll" 8 "$((next / 2))" "$ITERS" "$WARMUP"
      perf_pass "$lib" "$coll" "$next" "$max_b" "$ITERS_LARGE" "$WARMUP_LARGE"
    fi
  done
done
grep -m 1 '^#  library: NCCL' "$perf_log" | sed 's/^#  library: /# reference: /' | tee -a "$summary"
grep -m 1 '^#  library: HetCCL' "$perf_log" | sed 's/^#  library: /# measured: /' | tee -a "$summary"

# The short table: a few sizes per collective, out-of-place columns.
say ""
say "pass-through parity, $ngpus ranks, out-of-place (busbw GB/s, time and host time per call us)"
awk -v max="$max_b" -v collist="$COLLS" '
  { key = $2 " " $3; seen[key] = 1; order[key] = $3
    t[$1, key] = $4; bw[$1, key] = $5; host[$1, key] = $6 }
  END {
    printf "%-14s %11s %9s %9s %7s %10s %10s %7s %9s %9s\n", "collective", "size(B)", "hetccl", "nccl",
           "ratio", "t_hetccl", "t_nccl", "t_ratio", "host_het", "host_nccl"
    n = split(collist, colls, " ")
    m = split("8 1024 65536 1048576 16777216 268435456", sizes, " ")
    sizes[++m] = max
    for (i = 1; i <= n; i++)
      for (j = 1; j <= m; j++) {
        if (j < m && sizes[j] + 0 >= max + 0) continue
        # the row of the largest size not above the one wanted (sizes are rounded to the ranks)
        best = ""
        for (k in seen) { split(k, p, " "); if (p[1] == colls[i] && p[2] + 0 <= sizes[j] + 0 && (best == "" || p[2] + 0 > bp + 0)) { best = k; bp = p[2] } }
        if (best == "" || !((("hetccl", best) in bw) && (("nccl", best) in bw))) continue
        if (printed[best]++) continue
        h = bw["hetccl", best]; c = bw["nccl", best]
        ratio = (c + 0 > 0.005) ? sprintf("%.3f", h / c) : "-"
        tr = (t["nccl", best] + 0 > 0) ? sprintf("%.3f", t["hetccl", best] / t["nccl", best]) : "-"
        printf "%-14s %11s %9s %9s %7s %10s %10s %7s %9s %9s\n", colls[i], order[best], h, c, ratio,
               t["hetccl", best], t["nccl", best], tr, host["hetccl", best], host["nccl", best]
      }
  }' "$rows" | tee -a "$summary"
fi

# ---- 5. Cross-domain: GPU ranks in two domains ----
# Two ranks forced into two domains (one GPU each when there are two, both on
# GPU 0 otherwise), AllReduce from 8 B to XMAX, against the PCIe copy
# bandwidth of the same run (hetccl-pciebench: pinned d2h, h2d, both at once).
# Each rank stages its message device-to-host and reads the peer's
# host-to-device, so with one GPU per rank the limit is the smaller of d2h
# and h2d, taken both at once ("both"); two ranks on one GPU share its link,
# halving that.
if [ "${SKIP_CROSS:-0}" != 1 ]; then
  cross_log="$LOGS/cross.log"
  xmax=$(to_bytes "${XMAX:-1G}")
  {
    echo "### hetccl-pciebench -e $xmax"
    timeout -k 10 120 "$bin/hetccl-pciebench" -b 1M -e "$xmax" -n 10
    echo "### hetccl-perf allreduce -N 2 -G cuda --domains 1,1 -b 8 -e $xmax --host-time"
    timeout -k 10 300 "$bin/hetccl-perf" allreduce -N 2 -G cuda --domains 1,1 -b "${XMIN:-8}" -e "$xmax" -f "${XFACTOR:-4}" -n "$ITERS_LARGE" \
      -w "$WARMUP_LARGE" --check-max "$CHECK_MAX" --host-time -T 280
    # The same through the windows without the window kernel (memop path).
    echo "### memop: HETCCL_WINDOW_KERNEL=0 hetccl-perf allreduce -N 2 -G cuda --domains 1,1"
    HETCCL_WINDOW_KERNEL=0 timeout -k 10 300 "$bin/hetccl-perf" allreduce -N 2 -G cuda --domains 1,1 -b "${XMIN:-8}" \
      -e "$xmax" -f "${XFACTOR:-4}" -n "$ITERS_LARGE" -w "$WARMUP_LARGE" --check-max 1M --host-time -T 280
    if [ "${SKIP_STAGED:-0}" != 1 ]; then
      # The same without device windows: staged through the progress engine.
      echo "### staged: HETCCL_SHM_WINDOW_BYTES=0 hetccl-perf allreduce -N 2 -G cuda --domains 1,1"
      HETCCL_SHM_WINDOW_BYTES=0 timeout -k 10 300 "$bin/hetccl-perf" allreduce -N 2 -G cuda --domains 1,1 -b "${XMIN:-8}" \
        -e "$xmax" -f "${XFACTOR:-4}" -n "$ITERS_LARGE" -w "$WARMUP_LARGE" --check-max 1M --host-time -T 280
    fi
  } >"$cross_log" 2>&1 || fail "cross-domain benchmark (see cross.log)"
  share=$([ "$ngpus" -ge 2 ] && echo 1 || echo 2)
  say ""
  say "cross-domain AllReduce, 2 ranks in 2 domains on $((ngpus >= 2 ? 2 : 1)) GPU(s) (busbw GB/s; limit = PCIe both-directions / $share)"
  awk -v share="$share" '
    /^### hetccl-pciebench/ { mode = "pcie"; next }
    /^### hetccl-perf/ { mode = "perf"; next }
    /^### staged/ { mode = "staged"; next }
    /^### memop/ { mode = "memop"; next }
    mode == "staged" && $1 ~ /^[0-9]+$/ && NF == 15 { staged[$1] = $8; next }
    mode == "memop" && $1 ~ /^[0-9]+$/ && NF == 15 { memop[$1] = $8; memop_host[$1] = $14; next }
    mode == "pcie" && $1 ~ /^[0-9]+$/ { both[$1] = $4; last = $4 }
    mode == "perf" && $1 ~ /^[0-9]+$/ && NF == 15 {
      lim = ($1 in both) ? both[$1] / share : last / share
      row[++n] = sprintf("%12s busbw %8s  time %10s us  host %8s us  limit %7.2f  ratio %s", $1, $8, $6, $14, lim,
                         (lim > 0 && $1 + 0 >= 1048576) ? sprintf("%.3f", $8 / lim) : "-")
      size[n] = $1
    }
    END {
      for (i = 1; i <= n; i++)
        print row[i] ((size[i] in memop) ? sprintf("  memop busbw %8s host %8s us", memop[size[i]], memop_host[size[i]]) : "") \
          ((size[i] in staged) ? sprintf("  staged busbw %8s", staged[size[i]]) : "")
    }' "$cross_log" | tee -a "$summary"
fi

# ---- 5b. The staged path to a host rank: cuda+host against host+host ----
# Forked ranks (no launcher, so no core binding: the cuda rank's progress
# engine is not squeezed onto its main thread's core), one cuda rank on GPU 0
# and one host rank, two domains; the same sizes on two host ranks right
# after. Host time: the cuda rank's (hetccl-perf counts only GPU ranks when
# a job has some; a host rank's call is its whole operation).
if [ "${SKIP_CROSS:-0}" != 1 ] && [ "${SKIP_HOSTPEER:-0}" != 1 ]; then
  hp_log="$LOGS/cross.log"
  hp_rows="$BUILD/hostpeer-rows.txt"
  : >"$hp_rows"
  # variants: cuda+host through the device window (the default on one
  # host), the same staged through the progress engine (the path to another
  # host), two host ranks.
  for coll in allreduce sendrecv; do
    for variant in window memop staged host; do
      layout=cuda,host win= kern=
      [ "$variant" = staged ] && win=0
      [ "$variant" = memop ] && kern=0
      [ "$variant" = host ] && layout=host,host
      for sizes in "8 8 2" "16M 256M 16"; do
        read -r lo hi factor <<<"$sizes"
        echo "### hostpeer $variant: ${win:+HETCCL_SHM_WINDOW_BYTES=$win }${kern:+HETCCL_WINDOW_KERNEL=$kern }hetccl-perf $coll -N 2 --domains 1,1 -G $layout -b $lo -e $hi -f $factor --host-time" >>"$hp_log"
        env ${win:+HETCCL_SHM_WINDOW_BYTES=$win} ${kern:+HETCCL_WINDOW_KERNEL=$kern} timeout -k 10 300 "$bin/hetccl-perf" "$coll" -N 2 --domains 1,1 \
          -G "$layout" -b "$lo" -e "$hi" -f "$factor" -n "$ITERS_LARGE" -w "$WARMUP_LARGE" --check-max 16M \
          --host-time -T 280 >"$BUILD/hostpeer-last.txt" 2>&1 ||
          fail "hetccl-perf $coll $variant -G $layout -b $lo -e $hi (see cross.log)"
        cat "$BUILD/hostpeer-last.txt" >>"$hp_log"
        awk -v coll="$coll" -v v="$variant" '$1 ~ /^[0-9]+$/ && NF == 15 { print coll, v, $1, $6, $8, $14 }' \
          "$BUILD/hostpeer-last.txt" >>"$hp_rows"
      done
    done
  done
  say ""
  say "cuda rank + host rank against two host ranks, out-of-place (time us, busbw GB/s; host = the cuda rank's"
  say "host time per call, us; window: through the device window (window kernel), memop: the same with"
  say "HETCCL_WINDOW_KERNEL=0, staged: HETCCL_SHM_WINDOW_BYTES=0; ratio: busbw / host+host)"
  awk '
    { key = $1 " " $3; t[$2, key] = $4; bw[$2, key] = $5; host[$2, key] = $6; if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
    function ratio(a, b) { return (b + 0 > 0.005) ? sprintf("%.3f", a / b) : "-" }
    END {
      printf "%-10s %10s | %9s %7s %8s %6s | %9s %7s %8s %6s | %9s %7s %8s %6s | %9s %7s\n", "collective", "size(B)",
             "t_window", "bw", "host_us", "ratio", "t_memop", "bw", "host_us", "ratio", "t_staged", "bw", "host_us", "ratio",
             "t_host+h", "bw"
      for (i = 1; i <= n; i++) {
        k = order[i]; split(k, p, " ")
        h = bw["host", k]
        printf "%-10s %10s | %9s %7s %8s %6s | %9s %7s %8s %6s | %9s %7s %8s %6s | %9s %7s\n", p[1], p[2],
               t["window", k], bw["window", k], host["window", k], ratio(bw["window", k], h),
               t["memop", k], bw["memop", k], host["memop", k], ratio(bw["memop", k], h),
               t["staged", k], bw["staged", k], host["staged", k], ratio(bw["staged", k], h), t["host", k], h
      }
    }' "$hp_rows" | tee -a "$summary"
fi

# ---- 5c. Timelines (docs/TRACE.md): one 16 MiB AllReduce traced on cuda+host and on cuda:d0+cuda:d1 ----
# The per-rank files, merged and checked by scripts/trace-merge, come back
# as one archive ($LOGS/traces.tgz; the device tool returns few files).
if [ "${SKIP_TRACE:-0}" != 1 ]; then
  tdir=$BUILD/traces
  rm -rf "$tdir" && mkdir -p "$tdir"
  for layout in cuda,host cuda; do
    name=${layout/,/-}
    if HETCCL_TRACE="$tdir/$name-%r.json" timeout -k 10 120 "$BUILD/bin/hetccl-perf" allreduce -N 2 --domains 1,1 \
        -G "$layout" -b 16M -e 16M -n 3 -w 1 >"$tdir/$name.perf.txt" 2>&1 &&
      python3 scripts/trace-merge -o "$tdir/$name-merged.json" "$tdir/$name"-[0-9]*.json \
        >"$tdir/$name.summary.txt" 2>&1; then
      say "timeline $layout: $(grep -c . "$tdir/$name.summary.txt") summary lines ($(elapsed))"
    else
      fail "timeline $layout (see traces.tgz: $name.perf.txt, $name.summary.txt)"
    fi
  done
  tar -czf "$LOGS/traces.tgz" -C "$tdir" .
fi

# ---- 6. PyTorch: DDP and FSDP through the NCCL face ----
# scripts/torch-check.sh (its summary lands in torch-summary.txt under $LOGS).
if [ "${SKIP_TORCH:-0}" != 1 ]; then
  if OUT="$LOGS" STEPS="${TORCH_STEPS:-200}" timeout -k 10 400 bash scripts/torch-check.sh "$BUILD" \
    >"$BUILD/torch-check.out" 2>&1; then
    say ""
    sed -n '/^run /,$p' "$LOGS/torch-summary.txt" | tee -a "$summary"
  else
    fail "scripts/torch-check.sh (see torch-summary.txt)"
    tail -n 15 "$BUILD/torch-check.out" | tee -a "$summary"
  fi
fi

say ""
say "total $(elapsed); logs in $LOGS"
if [ $failures -ne 0 ]; then
  say "$failures failures"
  exit 1
fi
say "all passed"
exit 0
