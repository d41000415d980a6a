#!/usr/bin/env bash
# HetCCL's RCCL face (build/lib/librccl.so.1) against RCCL's ABI:
#  - file librccl.so.2.30.4, soname librccl.so.1, librccl.so beside it;
#  - it exports exactly the NCCL face's names plus RCCL's own (the list
#    tests/abi/functions/rccl-2.30.4-extra.txt: ncclAlltoAllv, ncclAllToAll,
#    ncclAllToAllv, ncclAllReduceWithBias, the msccl{Load,Run,Unload}Algo
#    no-ops, and their p-prefixed forms), ncclX weak and pncclX strong; the
#    NCCL face does not export RCCL's names;
#  - every name of RCCL 2.30's lists (NCCL 2.30.7's nccl.h and device-API
#    lists, which RCCL 2.30 has too, and RCCL's own) is exported, and every
#    function declared in HetCCL's include/rccl/rccl.h;
#  - rccl.h compiles as C99 (pedantic), C11 and C++11, and gives RCCL
#    2.30.4's values: version code 23004, NCCL's 96-byte ncclConfig_t, the
#    same enums as HetCCL's nccl.h;
#  - a program compiled against rccl.h and linked with -lrccl runs on a
#    host rank (ncclGetVersion = 23004, a one-rank ncclAllToAll) and
#    depends on librccl.so.1, not libnccl.so.2;
#  - installed (cmake --install into a temporary prefix): lib/hetccl/
#    librccl.so.1, include/hetccl/rccl.h, hetccl-rccl.pc, and a program
#    built with `pkg-config --cflags --libs hetccl-rccl` runs.
# Usage: test_rccl_exports.sh <build-dir>. Prints "N passed, M failed".
set -u
build=${1:?usage: $0 <build-dir>}
build=$(cd "$build" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
lib=$build/lib/librccl.so.1
nccl_face=$build/lib/libnccl.so.2
ours=$src/include/rccl/rccl.h
# shellcheck source=lib/tally.sh
. "$(dirname "$0")/lib/tally.sh"
declared() {
  gcc -fpreprocessed -dD -E -P -x c "$1" 2>/dev/null | grep -v '^[[:space:]]*#' |
    grep -oE '\bp?(nccl|msccl)[A-Za-z0-9_]*[[:space:]]*\(' | sed 's/[[:space:](]//g' | sort -u
}

[ -f "$lib" ]; check $? "$lib does not exist"
[ -f "$lib" ] || finish
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = librccl.so.1 ]; check $? "soname is '$soname', want librccl.so.1"
[ -e "$build/lib/librccl.so" ]; check $? "librccl.so (for -lrccl) is missing beside librccl.so.1"
[ "$(basename "$(readlink -f "$lib")")" = librccl.so.2.30.4 ]; check $? "the file is $(readlink -f "$lib"), want librccl.so.2.30.4"

nm -D --defined-only "$lib" | awk '{print $2, $3}' | sort -k2 >"$tmp/exports"
nm -D --defined-only "$nccl_face" | awk '{print $2, $3}' | sort -k2 >"$tmp/nccl_exports"
lists=$src/tests/abi/functions
grep -v '^#' "$lists/rccl-2.30.4-extra.txt" | sed '/^$/d' | while read -r f; do echo "W $f"; echo "T p$f"; done >"$tmp/extra"
sort -k2 "$tmp/nccl_exports" "$tmp/extra" >"$tmp/want"
diff "$tmp/want" "$tmp/exports" >"$tmp/exports.diff"
check $? "exports differ from the NCCL face's plus RCCL's own (< wanted, > exported): $(head -20 "$tmp/exports.diff")"
missing=$(grep -hv '^#' "$lists/nccl-2.30.7.txt" "$lists/nccl-2.30.7-device-host.txt" "$lists/rccl-2.30.4-extra.txt" |
  sed '/^$/d' | while read -r f; do
    [ "$(awk -v f="$f" '$2 == f {print $1}' "$tmp/exports")" = W ] || echo "$f"
    [ "$(awk -v f="p$f" '$2 == f {print $1}' "$tmp/exports")" = T ] || echo "p$f"
  done | tr '\n' ' ')
[ -z "$missing" ]; check $? "RCCL 2.30's listed names not exported (nccl weak, pnccl strong): $missing"
n=$(wc -l <"$tmp/exports")
[ "$n" -ge 100 ]; check $? "only $n exports"
others=$(awk '$2 !~ /^p?(nccl|msccl)/ {print $2}' "$tmp/exports" | tr '\n' ' ')
[ -z "$others" ]; check $? "exports other than nccl*/pnccl*/msccl*/pmsccl*: $others"
leaked=$(awk '$2 ~ /AllToAll|AlltoAllv|WithBias|msccl/ {print $2}' "$tmp/nccl_exports" | tr '\n' ' ')
[ -z "$leaked" ]; check $? "the NCCL face exports RCCL's names: $leaked"

declared "$ours" >"$tmp/declared"
nd=$(wc -l <"$tmp/declared")
[ "$nd" -ge 70 ]; check $? "only $nd functions found in $ours (parsing failed?)"
missing=$(while read -r f; do awk -v f="$f" '$2 == f {found=1} END {exit !found}' "$tmp/exports" || echo "$f"; done <"$tmp/declared" | tr '\n' ' ')
[ -z "$missing" ]; check $? "declared in rccl.h but not exported: $missing"
unpaired=$(grep -vE '^p(nccl|msccl)' "$tmp/declared" | while read -r f; do grep -qx "p$f" "$tmp/declared" || echo "$f"; done)
[ -z "$unpaired" ]; check $? "rccl.h declares without a pnccl twin: $unpaired"
# RCCL 2.30 has NCCL 2.30's functions: rccl.h declares every one nccl.h does.
gcc -fpreprocessed -dD -E -P -x c "$src/include/nccl/nccl.h" 2>/dev/null | grep -v '^[[:space:]]*#' |
  grep -oE '\bp?nccl[A-Za-z0-9_]*[[:space:]]*\(' | sed 's/[[:space:](]//g' | sort -u >"$tmp/nccl_declared"
absent=$(comm -23 "$tmp/nccl_declared" "$tmp/declared" | tr '\n' ' ')
[ -z "$absent" ]; check $? "nccl.h declares functions rccl.h does not: $absent"

cat >"$tmp/use.c" <<'EOS'
#include <rccl.h>
int main(void) {
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  ncclSimInfo_t s = NCCL_SIM_INFO_INITIALIZER;
  hipStream_t st = 0;
  (void)st;
  return (int)(c.size != sizeof c) + (int)(s.size != sizeof s);
}
EOS
for std in c99 c11; do
  gcc -std=$std -Wall -Wextra -Werror -pedantic -I"$src/include/rccl" -c "$tmp/use.c" -o "$tmp/use.o" 2>"$tmp/cc.log"
  check $? "rccl.h does not compile as $std: $(head -5 "$tmp/cc.log")"
done
if command -v g++ >/dev/null 2>&1; then
  g++ -std=c++11 -Wall -Wextra -Werror -I"$src/include/rccl" -x c++ -c "$tmp/use.c" -o "$tmp/usepp.o" 2>"$tmp/cxx.log"
  check $? "rccl.h does not compile as C++11: $(head -5 "$tmp/cxx.log")"
fi

# With HIP's own header, before or after (hipStream_t is HIP's type).
hip_h=${HIP_INCLUDE:-/usr/include}/hip/hip_runtime_api.h
if [ -f "$hip_h" ]; then
  for order in "hip/hip_runtime_api.h rccl.h" "rccl.h hip/hip_runtime_api.h"; do
    { for h in $order; do echo "#include <$h>"; done
      echo "int main(void) { hipStream_t s = 0; ncclComm_t c = NULL; return (int)ncclAllToAll(NULL, NULL, 0, ncclInt32, c, s); }"; } >"$tmp/hip.c"
    gcc -std=c11 -Wall -Werror -D__HIP_PLATFORM_AMD__ -I"$(dirname "$(dirname "$hip_h")")" -I"$src/include/rccl" \
      -c "$tmp/hip.c" -o "$tmp/hip.o" 2>"$tmp/cc.log"
    check $? "rccl.h does not compile with HIP's header ($order): $(head -5 "$tmp/cc.log")"
  done
else
  echo "note: $hip_h absent; rccl.h not compiled together with HIP's header"
fi

# RCCL's values and layout (C11 static assertions), and the enums equal to nccl.h's.
cat >"$tmp/abi.c" <<'EOS'
#include <stddef.h>
#include <rccl.h>
#define SA(c) _Static_assert(c, #c)
SA(NCCL_VERSION_CODE == 23004); SA(NCCL_VERSION(2, 30, 4) == 23004);
SA(sizeof(ncclConfig_t) == 96); SA(offsetof(ncclConfig_t, magic) == 8); SA(offsetof(ncclConfig_t, version) == 12);
SA(offsetof(ncclConfig_t, blocking) == 16); SA(offsetof(ncclConfig_t, netName) == 32);
SA(offsetof(ncclConfig_t, splitShare) == 40); SA(offsetof(ncclConfig_t, graphStreamOrdering) == 92);
SA(sizeof(ncclUniqueId) == 128);
SA(ncclInProgress == 7); SA(ncclTimeout == 8); SA(ncclNumResults == 9); SA(ncclAvg == 4); SA(ncclNumOps == 5);
SA(ncclBfloat16 == 9); SA(ncclFloat8e4m3 == 10 && ncclFp8E4M3 == 10); SA(ncclFloat8e5m2 == 11 && ncclFp8E5M2 == 11);
SA(ncclNumTypes == 12); SA(ncclScalarHostImmediate == 1); SA(sizeof(ncclRedOp_t) == 4);
int main(void) { return 0; }
EOS
gcc -std=c11 -Wall -Werror -I"$src/include/rccl" -c "$tmp/abi.c" -o "$tmp/abi.o" 2>"$tmp/cc.log"
check $? "rccl.h's values or layout are not RCCL's: $(grep -m3 error "$tmp/cc.log")"
# Every enumerator both headers define has the same value.
names="ncclSuccess ncclUnhandledCudaError ncclSystemError ncclInternalError ncclInvalidArgument ncclInvalidUsage
ncclRemoteError ncclInProgress ncclNumResults ncclInt8 ncclChar ncclUint8 ncclInt32 ncclInt ncclUint32 ncclInt64
ncclUint64 ncclFloat16 ncclHalf ncclFloat32 ncclFloat ncclFloat64 ncclDouble ncclBfloat16 ncclFloat8e4m3
ncclFloat8e5m2 ncclNumTypes ncclSum ncclProd ncclMax ncclMin ncclAvg ncclNumOps ncclMaxRedOp ncclScalarDevice
ncclScalarHostImmediate NCCL_CONFIG_UNDEF_INT NCCL_SPLIT_NOCOLOR NCCL_UNIQUE_ID_BYTES"
for h in nccl rccl; do
  { echo "#include <stdio.h>"; echo "#include <$h.h>"; echo "int main(void) {"
    for v in $names; do echo "printf(\"$v %lld\\n\", (long long)$v);"; done
    echo "return 0; }"; } >"$tmp/vals_$h.c"
  gcc -std=c11 -DHETCCL_NCCL_NO_CUDA_RUNTIME -I"$src/include/$h" "$tmp/vals_$h.c" -o "$tmp/vals_$h" 2>"$tmp/cc.log" &&
    "$tmp/vals_$h" >"$tmp/vals_$h.txt"
  check $? "value probe with $h.h failed: $(head -3 "$tmp/cc.log")"
done
diff "$tmp/vals_nccl.txt" "$tmp/vals_rccl.txt" >"$tmp/vals.diff"
check $? "rccl.h's values differ from nccl.h's: $(head -10 "$tmp/vals.diff")"

cat >"$tmp/run.c" <<'EOS'
#include <stdio.h>
#include <rccl.h>
int main(void) {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess || v != 23004) { printf("ncclGetVersion: %d\n", v); return 1; }
  ncclComm_t c;
  if (ncclCommInitAll(&c, 1, NULL) != ncclSuccess) { printf("init: %s\n", ncclGetLastError(NULL)); return 1; }
  int in[3] = {1, 2, 3}, out[3] = {0};
  if (ncclAllToAll(in, out, 3, ncclInt32, c, NULL) != ncclSuccess || out[2] != 3) { printf("alltoall\n"); return 1; }
  return ncclCommDestroy(c) == ncclSuccess ? 0 : 1;
}
EOS
gcc -std=c11 -I"$src/include/rccl" "$tmp/run.c" -L"$build/lib" -Wl,-rpath,"$build/lib" -lrccl -o "$tmp/run" 2>"$tmp/cc.log"
check $? "a program does not link with -lrccl: $(head -5 "$tmp/cc.log")"
if [ -x "$tmp/run" ]; then
  out=$(HETCCL_DEVICE=host timeout 60 "$tmp/run" 2>&1)
  check $? "a program linked with -lrccl failed on a host rank: $out"
  [ "$(readelf -d "$tmp/run" | grep -c 'NEEDED.*librccl.so.1')" = 1 ]; check $? "the program does not depend on librccl.so.1"
  [ "$(readelf -d "$tmp/run" | grep -c 'NEEDED.*libnccl')" = 0 ]; check $? "the program depends on libnccl"
fi

# Installed like the NCCL face.
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1
check $? "cmake --install failed: $(tail -5 "$tmp/install.log")"
inst_lib=$(find "$prefix" -path '*/hetccl/librccl.so.1' | head -1)
[ -n "$inst_lib" ]; check $? "librccl.so.1 is not installed under <libdir>/hetccl"
[ -f "$prefix/include/hetccl/rccl.h" ]; check $? "rccl.h is not installed as include/hetccl/rccl.h"
pcfile=$(find "$prefix" -name hetccl-rccl.pc | head -1)
[ -n "$pcfile" ]; check $? "hetccl-rccl.pc is not installed"
if [ -n "$pcfile" ] && command -v pkg-config >/dev/null 2>&1; then
  pcdir=$(dirname "$pcfile")
  flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs hetccl-rccl)
  ilib=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=libdir hetccl-rccl)
  # shellcheck disable=SC2086
  gcc -std=c11 "$tmp/run.c" $flags -o "$tmp/run_installed" 2>"$tmp/cc.log"
  check $? "a program does not build with pkg-config hetccl-rccl ($flags): $(head -5 "$tmp/cc.log")"
  out=$(HETCCL_DEVICE=host LD_LIBRARY_PATH=$ilib timeout 60 "$tmp/run_installed" 2>&1)
  check $? "the installed face failed on a host rank: $out"
fi
finish
