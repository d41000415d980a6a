#!/usr/bin/env bash
# HetCCL's NCCL face (build/lib/libnccl.so.2) against NCCL's ABI:
#  - file libnccl.so.2.30.7, soname libnccl.so.2, libnccl.so beside it;
#  - every function of the lists kept in tests/abi/functions (NCCL 2.30.7's
#    nccl.h and the host functions of its device API) is exported, ncclX
#    weak and pncclX strong as in NCCL;
#  - every function declared in NCCL's nccl.h (/usr/local/cuda/include/nccl.h
#    when present, of whatever version) and in HetCCL's own header is
#    exported the same way; nothing but nccl*/pnccl* is exported;
#  - a shared library with undefined references to every listed name (as a
#    PyTorch built against NCCL 2.30 has), linked against the face, loads
#    with dlopen(RTLD_NOW) with no real NCCL on the library path;
#  - when a real libnccl.so.2 is installed, every nccl*/pnccl* function it
#    exports is exported by the face too;
#  - HetCCL's nccl.h compiles without CUDA (C99 and C++ when g++ exists) and
#    gives the same values, sizes, offsets and initializers as NVIDIA's
#    header (when that header and cuda_runtime.h are present; one of
#    another version is compared on what the two versions share), and
#    NCCL 2.30.7's values for what 2.29 and 2.30 added;
#  - a program compiled against it and linked with -lnccl runs on host
#    ranks: ncclGetVersion = 23007, and a one-rank AllReduce.
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
[ "$(basename "$(readlink -f "$lib")")" = libnccl.so.2.30.7 ]; check $? "the file is $(readlink -f "$lib"), want libnccl.so.2.30.7"

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

# The lists kept in the repository (NCCL 2.30.7's nccl.h and device API).
lists=("$src/tests/abi/functions/nccl-2.30.7.txt" "$src/tests/abi/functions/nccl-2.30.7-device-host.txt")
grep -hv '^#' "${lists[@]}" | sed '/^$/d' | sort -u >"$tmp/listed"
nl=$(wc -l <"$tmp/listed")
[ "$nl" -ge 80 ]; check $? "only $nl names in ${lists[*]}"
bad_list=""
while read -r f; do
  [ "$(awk -v f="$f" '$2 == f {print $1}' "$tmp/exports")" = W ] || bad_list="$bad_list $f"
  [ "$(awk -v f="p$f" '$2 == f {print $1}' "$tmp/exports")" = T ] || bad_list="$bad_list p$f"
done <"$tmp/listed"
[ -z "$bad_list" ]; check $? "listed but not exported (nccl weak, pnccl strong):$bad_list"

# A library standing in for a PyTorch built against NCCL 2.30: an ordinary
# undefined reference to every listed name, linked against the face, loaded
# with RTLD_NOW next to no real NCCL.
{
  echo '#include <stddef.h>'
  sed 's/.*/void &(void); void p&(void);/' "$tmp/listed"
  echo 'void *const stand_in_refs[] = {'
  sed 's/.*/  (void *)\&&, (void *)\&p&,/' "$tmp/listed"
  echo '  NULL};'
  echo 'void stand_in_call_all(int never) {'
  echo '  if (never != 12345) return;'
  sed 's/.*/  &(); p&();/' "$tmp/listed"
  echo '}'
} >"$tmp/torch_stand_in.c"
gcc -shared -fPIC -w "$tmp/torch_stand_in.c" -L"$build/lib" -lnccl -o "$tmp/libtorch_stand_in.so" 2>"$tmp/cc.log"
check $? "the stand-in library does not link against the face: $(head -5 "$tmp/cc.log")"
cat >"$tmp/load.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  (void)argc;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
  return 0;
}
EOF
gcc "$tmp/load.c" -o "$tmp/load" -ldl 2>"$tmp/cc.log"
check $? "the loader does not compile: $(head -5 "$tmp/cc.log")"
if [ -x "$tmp/load" ] && [ -f "$tmp/libtorch_stand_in.so" ]; then
  # Only the build's lib/ (the face and libhetccl) on the path; no real NCCL is loaded.
  out=$(env -u LD_PRELOAD LD_LIBRARY_PATH="$build/lib" HETCCL_NCCL_LIBRARY=/nonexistent/libnccl.so.2 \
    timeout 60 "$tmp/load" "$tmp/libtorch_stand_in.so" 2>&1)
  check $? "a library referencing every listed name does not load with RTLD_NOW: $out"
fi

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
  if [ "$(grep '^NCCL_VERSION_CODE ' "$tmp/nvidia.txt")" != "$(grep '^NCCL_VERSION_CODE ' "$tmp/ours.txt")" ]; then
    # Another version: what a version changes (its number, ncclNumResults,
    # the config's size and initializer) is left out; the rest must agree.
    echo "note: $system_h has $(grep '^NCCL_VERSION_CODE ' "$tmp/nvidia.txt"); comparing what both versions share"
    changes='^(NCCL_MINOR|NCCL_PATCH|NCCL_VERSION_CODE|ncclNumResults|sizeof\(ncclConfig_t\)|initializers) '
    grep -Ev "$changes" "$tmp/nvidia.txt" >"$tmp/nvidia.cmp"
    grep -Ev "$changes" "$tmp/ours.txt" >"$tmp/ours.cmp"
  else
    cp "$tmp/nvidia.txt" "$tmp/nvidia.cmp" && cp "$tmp/ours.txt" "$tmp/ours.cmp"
  fi
  diff "$tmp/nvidia.cmp" "$tmp/ours.cmp" >"$tmp/abi.diff"
  check $? "values/layouts differ from NVIDIA's nccl.h (< NVIDIA, > HetCCL): $(head -20 "$tmp/abi.diff")"
  # Compiled with CUDA's runtime header found, ours takes CUDA's cudaStream_t.
  gcc -std=c11 -Wall -Werror -I"$cuda_inc" -I"$src/include/nccl" -c "$tmp/use.c" -o "$tmp/use_cuda.o" 2>"$tmp/cc.log"
  check $? "nccl.h does not compile together with cuda_runtime.h: $(head -5 "$tmp/cc.log")"
else
  echo "note: NVIDIA's nccl.h or cuda_runtime.h absent; values checked against HetCCL's header only"
fi

# What NCCL 2.29 and 2.30 added, against NCCL 2.30.7's header (v2.30.7-1):
# values, sizes and offsets (LP64).
cat >"$tmp/abi230.c" <<'EOF'
#include <stddef.h>
#include <nccl.h>
#define SA(x) _Static_assert(x, #x)
SA(NCCL_VERSION_CODE == 23007); SA(NCCL_MAJOR == 2 && NCCL_MINOR == 30 && NCCL_PATCH == 7);
SA(ncclTimeout == 8); SA(ncclNumResults == 9); SA(NCCL_API_MAGIC == 0xcafebeef);
SA(NCCL_WIN_STRICT_ORDERING == 0x02); SA(NCCL_SUSPEND_MEM == 0x01);
SA(ncclStatGpuMemSuspend == 0); SA(ncclStatGpuMemSuspended == 1); SA(ncclStatGpuMemPersist == 2);
SA(ncclStatGpuMemTotal == 3); SA(sizeof(ncclCommMemStat_t) == 4);
SA(sizeof(ncclConfig_t) == 96); SA(offsetof(ncclConfig_t, nvlinkCentricSched) == 76);
SA(offsetof(ncclConfig_t, graphUsageMode) == 80); SA(offsetof(ncclConfig_t, numRmaCtx) == 84);
SA(offsetof(ncclConfig_t, maxP2pPeers) == 88); SA(offsetof(ncclConfig_t, graphStreamOrdering) == 92);
SA(sizeof(ncclWaitSignalDesc_t) == 16); SA(offsetof(ncclWaitSignalDesc_t, ctx) == 12);
SA(sizeof(ncclParamHandle_t) == sizeof(void *));
static ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
int main(void) { return !(c.size == 96 && c.version == 23007 && c.graphStreamOrdering == NCCL_CONFIG_UNDEF_INT); }
EOF
gcc -std=c11 -Wall -Werror -DHETCCL_NCCL_NO_CUDA_RUNTIME -I"$src/include/nccl" "$tmp/abi230.c" -o "$tmp/abi230" \
  2>"$tmp/cc.log" && "$tmp/abi230"
check $? "NCCL 2.30.7's values, sizes or initializer differ: $(head -5 "$tmp/cc.log")"

# A program linked with -lnccl from the build tree, on a host rank.
cat >"$tmp/run.c" <<'EOF'
#include <stdio.h>
#include <nccl.h>
int main(void) {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess || v != 23007) { printf("ncclGetVersion: %d\n", v); return 1; }
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
