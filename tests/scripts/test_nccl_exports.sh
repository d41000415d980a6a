#!/usr/bin/env bash
# HetCCL's NCCL face (build/lib/libnccl.so.2) against NCCL's ABI:
#  - file, soname libnccl.so.2, libnccl.so beside it;
#  - every function declared in NCCL's nccl.h (/usr/local/cuda/include/nccl.h
#    when present, else HetCCL's include/nccl/nccl.h) and in HetCCL's own
#    header is exported, ncclX weak and pnccl X strong as in NCCL; nothing
#    but nccl*/pnccl* is exported;
#  - when a real libnccl.so.2 is installed, every nccl*/pnccl* function it
#    exports is exported by the face too;
#  - HetCCL's nccl.h compiles without CUDA (C99 and C++ when g++ exists) and
#    gives the same values, sizes, offsets and initializers as NVIDIA's
#    header (when that header and cuda_runtime.h are present);
#  - a program compiled against it and linked with -lnccl runs on host
#    ranks: ncclGetVersion = 22809, and a one-rank AllReduce.
# Usage: test_nccl_exports.sh <build-dir>. Prints "N passed, M failed".
set -u
build=${1:?usage: $0 <build-dir>}
build=$(cd "$build" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
lib=$build/lib/libnccl.so.2
ours=$src/include/nccl/nccl.h
cuda_inc=${CUDA_HOME:-/usr/local/cuda}/include
system_h=$cuda_inc/nccl.h
# shellcheck source=lib/tally.sh
. "$(dirname "$0")/lib/tally.sh"

# Functions a header declares: comments stripped (without expanding
# includes), then every nccl*/pnccl* name followed by "(" outside #define lines.
declared() {
  gcc -fpreprocessed -dD -E -P -x c "$1" 2>/dev/null | grep -v '^[[:space:]]*#' |
    grep -oE '\bp?nccl[A-Za-z0-9_]*[[:space:]]*\(' | sed 's/[[:space:](]//g' | sort -u
}

[ -f "$lib" ]; check $? "$lib does not exist"
[ -f "$lib" ] || finish
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libnccl.so.2 ]; check $? "soname is '$soname', want libnccl.so.2"
[ -e "$build/lib/libnccl.so" ]; check $? "libnccl.so (for -lnccl) is missing beside libnccl.so.2"

nm -D --defined-only "$lib" | awk '{print $2, $3}' >"$tmp/exports"
[ -s "$tmp/exports" ]; check $? "nm found no exports in $lib"

headers=("$ours")
if [ -f "$system_h" ]; then headers=("$system_h" "$ours"); else echo "note: $system_h absent; checking HetCCL's header only"; fi
for h in "${headers[@]}"; do
  declared "$h" >"$tmp/declared"
  n=$(wc -l <"$tmp/declared")
  [ "$n" -ge 80 ]; check $? "only $n functions found in $h (parsing failed?)"
  missing=0
  while read -r f; do
    kind=$(awk -v f="$f" '$2 == f {print $1}' "$tmp/exports")
    if [ -z "$kind" ]; then
      echo "FAIL: $f (declared in $h) is not exported"
      missing=$((missing + 1))
      continue
    fi
    case $f in
      pnccl*) [ "$kind" = T ] || { echo "FAIL: $f is '$kind', want a strong symbol (T)"; missing=$((missing + 1)); } ;;
      *) [ "$kind" = W ] || { echo "FAIL: $f is '$kind', want a weak alias (W) as NCCL has"; missing=$((missing + 1)); } ;;
    esac
  done <"$tmp/declared"
  check $((missing != 0)) "$missing of $n functions of $h missing or of the wrong binding"
  # Each nccl name has its pnccl twin.
  unpaired=$(grep -v '^pnccl' "$tmp/declared" | while read -r f; do grep -qx "p$f" "$tmp/declared" || echo "$f"; done)
  [ -z "$unpaired" ]; check $? "$h declares without a pnccl twin: $unpaired"
done

others=$(awk '$2 !~ /^p?nccl/ {print $2}' "$tmp/exports" | tr '\n' ' ')
[ -z "$others" ]; check $? "exports other than nccl*/pnccl*: $others"

# Everything the real NCCL exports under those names (its device-API host
# functions included), so a program linked against it loads on the face.
real=""
for cand in "${CUDA_HOME:-/usr/local/cuda}/lib64/libnccl.so.2" "${CUDA_HOME:-/usr/local/cuda}/lib/libnccl.so.2" \
  $(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF}'); do
  if [ -f "$cand" ] && [ "$(readlink -f "$cand")" != "$(readlink -f "$lib")" ]; then real=$cand; break; fi
done
if [ -n "$real" ]; then
  nm -D --defined-only "$real" | awk '$2 ~ /^[TW]$/ && $3 ~ /^p?nccl/ && $3 !~ /Internal$/ {print $3}' | sort -u >"$tmp/real"
  absent=$(comm -23 "$tmp/real" <(awk '{print $2}' "$tmp/exports" | sort -u) | tr '\n' ' ')
  [ -z "$absent" ]; check $? "exported by $real but not by the face: $absent"
else
  echo "note: no real libnccl.so.2 installed; skipping the comparison with its exports"
fi

# The header without CUDA, in C and C++.
cat >"$tmp/use.c" <<'EOF'
#include <nccl.h>
int main(void) {
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  ncclSimInfo_t s = NCCL_SIM_INFO_INITIALIZER;
  cudaStream_t st = 0;
  (void)st;
  return (int)(c.size != sizeof c) + (int)(s.size != sizeof s);
}
EOF
gcc -std=c99 -Wall -Wextra -Werror -pedantic -DHETCCL_NCCL_NO_CUDA_RUNTIME -I"$src/include/nccl" -c "$tmp/use.c" \
  -o "$tmp/use.o" 2>"$tmp/cc.log"
check $? "nccl.h does not compile as C99 without CUDA: $(head -5 "$tmp/cc.log")"
if command -v g++ >/dev/null 2>&1; then
  g++ -std=c++11 -Wall -Wextra -Werror -DHETCCL_NCCL_NO_CUDA_RUNTIME -I"$src/include/nccl" -x c++ -c "$tmp/use.c" \
    -o "$tmp/usepp.o" 2>"$tmp/cxx.log"
  check $? "nccl.h does not compile as C++11 without CUDA: $(head -5 "$tmp/cxx.log")"
fi

# Values, sizes, offsets and initializers, printed under either header.
cat >"$tmp/abi.c" <<'EOF'
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <nccl.h>
#define V(x) printf("%s %lld\n", #x, (long long)(x))
#define OFF(t, f) printf("offsetof(%s,%s) %zu\n", #t, #f, offsetof(t, f))
int main(void) {
  V(NCCL_MAJOR); V(NCCL_MINOR); V(NCCL_PATCH); V(NCCL_VERSION_CODE); V(NCCL_VERSION(2, 28, 9)); V(NCCL_VERSION(2, 8, 4));
  V(ncclSuccess); V(ncclUnhandledCudaError); V(ncclSystemError); V(ncclInternalError); V(ncclInvalidArgument);
  V(ncclInvalidUsage); V(ncclRemoteError); V(ncclInProgress); V(ncclNumResults);
  V(ncclInt8); V(ncclChar); V(ncclUint8); V(ncclInt32); V(ncclInt); V(ncclUint32); V(ncclInt64); V(ncclUint64);
  V(ncclFloat16); V(ncclHalf); V(ncclFloat32); V(ncclFloat); V(ncclFloat64); V(ncclDouble); V(ncclBfloat16);
  V(ncclFloat8e4m3); V(ncclFloat8e5m2); V(ncclNumTypes);
  V(ncclSum); V(ncclProd); V(ncclMax); V(ncclMin); V(ncclAvg); V(ncclNumOps); V(ncclMaxRedOp);
  V(ncclScalarDevice); V(ncclScalarHostImmediate);
  V(NCCL_UNIQUE_ID_BYTES); V(NCCL_CONFIG_UNDEF_INT); V(NCCL_SPLIT_NOCOLOR); V(NCCL_WIN_DEFAULT);
  V(NCCL_WIN_COLL_SYMMETRIC); V(NCCL_WIN_REQUIRED_ALIGNMENT); V(NCCL_CTA_POLICY_DEFAULT); V(NCCL_CTA_POLICY_EFFICIENCY);
  V(NCCL_CTA_POLICY_ZERO); V(NCCL_SHRINK_DEFAULT); V(NCCL_SHRINK_ABORT); V(NCCL_REVOKE_DEFAULT);
  printf("NCCL_UNDEF_FLOAT %g\n", (double)NCCL_UNDEF_FLOAT);
  V(sizeof(ncclResult_t)); V(sizeof(ncclDataType_t)); V(sizeof(ncclRedOp_t)); V(sizeof(ncclScalarResidence_t));
  V(sizeof(ncclUniqueId)); V(sizeof(ncclComm_t)); V(sizeof(ncclWindow_t)); V(sizeof(cudaStream_t));
  V(sizeof(ncclConfig_t)); V(sizeof(ncclSimInfo_t));
  OFF(ncclConfig_t, size); OFF(ncclConfig_t, magic); OFF(ncclConfig_t, version); OFF(ncclConfig_t, blocking);
  OFF(ncclConfig_t, cgaClusterSize); OFF(ncclConfig_t, minCTAs); OFF(ncclConfig_t, maxCTAs); OFF(ncclConfig_t, netName);
  OFF(ncclConfig_t, splitShare); OFF(ncclConfig_t, trafficClass); OFF(ncclConfig_t, commName);
  OFF(ncclConfig_t, collnetEnable); OFF(ncclConfig_t, CTAPolicy); OFF(ncclConfig_t, shrinkShare);
  OFF(ncclConfig_t, nvlsCTAs); OFF(ncclConfig_t, nChannelsPerNetPeer); OFF(ncclConfig_t, nvlinkCentricSched);
  OFF(ncclSimInfo_t, size); OFF(ncclSimInfo_t, magic); OFF(ncclSimInfo_t, version); OFF(ncclSimInfo_t, estimatedTime);
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  ncclSimInfo_t s = NCCL_SIM_INFO_INITIALIZER;
  unsigned char raw[sizeof c + sizeof s];
  memset(raw, 0, sizeof raw);
  memcpy(raw, &c, sizeof c);
  memcpy(raw + sizeof c, &s, sizeof s);
  printf("initializers");
  for (size_t i = 0; i < sizeof raw; i++) printf(" %02x", raw[i]);
  printf("\n");
  return 0;
}
EOF
gcc -std=c11 -Wall -DHETCCL_NCCL_NO_CUDA_RUNTIME -I"$src/include/nccl" "$tmp/abi.c" -o "$tmp/abi_ours" 2>"$tmp/cc.log"
check $? "ABI probe does not compile with HetCCL's nccl.h: $(head -5 "$tmp/cc.log")"
if [ -f "$system_h" ] && [ -f "$cuda_inc/cuda_runtime.h" ]; then
  # Padding bytes of the initializers are zero in both (memset before the copy).
  gcc -std=c11 -Wall -I"$cuda_inc" "$tmp/abi.c" -o "$tmp/abi_nvidia" 2>"$tmp/cc.log"
  check $? "ABI probe does not compile with $system_h: $(head -5 "$tmp/cc.log")"
  "$tmp/abi_ours" >"$tmp/ours.txt" && "$tmp/abi_nvidia" >"$tmp/nvidia.txt"
  diff "$tmp/nvidia.txt" "$tmp/ours.txt" >"$tmp/abi.diff"
  check $? "values/layouts differ from NVIDIA's nccl.h (< NVIDIA, > HetCCL): $(head -20 "$tmp/abi.diff")"
  # Compiled with CUDA's runtime header found, ours takes CUDA's cudaStream_t.
  gcc -std=c11 -Wall -Werror -I"$cuda_inc" -I"$src/include/nccl" -c "$tmp/use.c" -o "$tmp/use_cuda.o" 2>"$tmp/cc.log"
  check $? "nccl.h does not compile together with cuda_runtime.h: $(head -5 "$tmp/cc.log")"
else
  echo "note: NVIDIA's nccl.h or cuda_runtime.h absent; values checked against HetCCL's header only"
fi

# A program linked with -lnccl from the build tree, on a host rank.
cat >"$tmp/run.c" <<'EOF'
#include <stdio.h>
#include <nccl.h>
int main(void) {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess || v != 22809) { printf("ncclGetVersion: %d\n", v); return 1; }
  ncclComm_t c;
  if (ncclCommInitAll(&c, 1, NULL) != ncclSuccess) { printf("init: %s\n", ncclGetLastError(NULL)); return 1; }
  int in[5] = {1, 2, 3, 4, 5}, out[5] = {0};
  if (ncclAllReduce(in, out, 5, ncclInt32, ncclSum, c, NULL) != ncclSuccess || out[4] != 5) { printf("allreduce\n"); return 1; }
  return ncclCommDestroy(c) == ncclSuccess ? 0 : 1;
}
EOF
gcc -std=c11 -DHETCCL_NCCL_NO_CUDA_RUNTIME -I"$src/include/nccl" "$tmp/run.c" -L"$build/lib" -Wl,-rpath,"$build/lib" \
  -lnccl -o "$tmp/run" 2>"$tmp/cc.log"
check $? "a program does not link with -lnccl: $(head -5 "$tmp/cc.log")"
if [ -x "$tmp/run" ]; then
  out=$(HETCCL_DEVICE=host timeout 60 "$tmp/run" 2>&1)
  check $? "a program linked with -lnccl failed on a host rank: $out"
  needed=$(readelf -d "$tmp/run" | grep -c 'NEEDED.*libnccl.so.2')
  [ "$needed" = 1 ]; check $? "the program does not depend on libnccl.so.2"
fi
finish
