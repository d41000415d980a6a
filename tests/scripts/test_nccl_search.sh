#!/usr/bin/env bash
# HetCCL's NCCL search under LD_PRELOAD of its own face (issue 12): a
# program linked with -lnccl (test-tools/nccl_search_probe) and hetccl-info
# run with LD_PRELOAD=build/lib/libnccl.so.2, so dlopen("libnccl.so.2")
# answers with the face; HetCCL must still find the real NCCL:
#  - a stand-in NCCL (TEST TOOL test-tools/stand-in-nccl/libnccl.so.2,
#    version 2.19.3) copied into a temporary directory on LD_LIBRARY_PATH,
#    after build/lib (the face, to be skipped), is the NCCL HetCCL loads
#    (HETCCL_DEBUG=INFO: "NCCL 2.19.3 loaded from <it>"), while the
#    program's own nccl* calls reach the face (23007);
#  - hetccl-info names the stand-in and says the soname is HetCCL's face;
#  - without that directory: the NCCL the linker cache lists
#    (`ldconfig -p`) when there is one, else "not found" with the reason;
#    never the face or the stand-in;
#  - HETCCL_NCCL_LIBRARY set means that file only.
# Usage: test_nccl_search.sh <build-dir>. Prints "N passed, M failed".
set -u
build=${1:?usage: $0 <build-dir>}
build=$(cd "$build" && pwd)
face=$build/lib/libnccl.so.2
probe=$build/test-tools/nccl_search_probe
stand_in=$build/test-tools/stand-in-nccl/libnccl.so.2
info=$build/bin/hetccl-info
# shellcheck source=lib/tally.sh
. "$(dirname "$0")/lib/tally.sh"
has() { grep -qF -- "$2" <<<"$1"; } # has <text> <fixed string>
field() { sed -n "s/^$2 //p" <<<"$1"; } # field <probe output> <name>

for f in "$face" "$probe" "$stand_in" "$info"; do
  [ -e "$f" ]; check $? "$f is not built"
done
[ "$failed" = 0 ] || finish

mkdir "$tmp/nccl"
cp "$stand_in" "$tmp/nccl/libnccl.so.2"
found=$tmp/nccl/libnccl.so.2
run() { env -u HETCCL_NCCL_LIBRARY LD_PRELOAD="$face" HETCCL_DEBUG=INFO timeout 60 "$@" 2>&1; }

# 1. The stand-in on LD_LIBRARY_PATH, behind the face's own folder.
out=$(LD_LIBRARY_PATH=$build/lib:$tmp/nccl run "$probe")
check $? "probe failed: $out"
[ "$(field "$out" "program ncclGetVersion")" = 23007 ]
check $? "the program's ncclGetVersion is not the face's 23007 (preload not in effect?): $out"
[ "$(field "$out" "hetccl nccl path")" = "$found" ]
check $? "HetCCL did not load the stand-in NCCL from LD_LIBRARY_PATH: $out"
[ "$(field "$out" "hetccl nccl version")" = 21903 ]; check $? "stand-in's version 21903 not reported: $out"
has "$out" "NCCL 2.19.3 loaded from $found"; check $? "no INFO line 'NCCL 2.19.3 loaded from $found': $out"
has "$out" "libnccl.so.2 resolves to HetCCL's own face"; check $? "no INFO line saying the soname is the face: $out"

out=$(LD_LIBRARY_PATH=$build/lib:$tmp/nccl run "$info")
check $? "hetccl-info failed: $out"
line=$(grep -E '^  NCCL +libnccl\.so\.2 ' <<<"$out")
has "$line" "2.19.3 ($found)"; check $? "hetccl-info does not name the stand-in: '$line'"
has "$out" "libnccl.so.2 is HetCCL's own face, not the vendor library ($face)"
check $? "hetccl-info does not say the soname is HetCCL's face: $out"

# 2. Without that directory: the cache's NCCL, or not found; never the face.
case $(uname -m) in
  x86_64) abi='libc6,x86-64' ;;
  aarch64) abi='libc6,AArch64' ;;
  *) abi='' ;;
esac
# ldconfig -p: "libnccl.so.2 (libc6,x86-64[, OS ABI: ...]) => /path"; hwcap builds are not the default.
cached=$(ldconfig -p 2>/dev/null | grep -v hwcap |
  awk -v abi="$abi" '$1 == "libnccl.so.2" && (abi == "" || index($2, "(" abi ")") == 1 || index($2, "(" abi ",") == 1) {print $NF; exit}')
[ -n "$cached" ] && [ ! -r "$cached" ] && cached=""
out=$(env -u LD_LIBRARY_PATH HETCCL_DEBUG=INFO LD_PRELOAD="$face" timeout 60 "$probe" 2>&1)
check $? "probe without the stand-in failed: $out"
path=$(field "$out" "hetccl nccl path")
why=$(field "$out" "hetccl nccl error")
[ "$path" != "$face" ] && [ "$path" != "$found" ] && ! has "$path" "$build/"
check $? "without the stand-in HetCCL took '$path'"
if [ -n "$cached" ]; then
  echo "note: the linker cache lists $cached"
  [ "$(readlink -f "$path")" = "$(readlink -f "$cached")" ]
  check $? "HetCCL did not take the cache's NCCL $cached: $out"
else
  echo "note: no libnccl.so.2 in the linker cache"
  [ "$path" = "(none)" ]; check $? "expected no NCCL here, got '$path'"
  has "$why" "libnccl.so.2 resolves to HetCCL's own face ($face)"; check $? "reason does not name the face: $why"
  has "$why" "no usable libnccl.so.2 found in LD_LIBRARY_PATH"; check $? "reason does not say where it looked: $why"
  out=$(env -u LD_LIBRARY_PATH LD_PRELOAD="$face" timeout 60 "$info" 2>&1)
  has "$out" "not found (libnccl.so.2 resolves to HetCCL's own face"
  check $? "hetccl-info does not say not found past the face: $(grep NCCL <<<"$out")"
fi

# 3. HETCCL_NCCL_LIBRARY: that file only, the stand-in on the path or not.
out=$(LD_LIBRARY_PATH=$tmp/nccl HETCCL_NCCL_LIBRARY=$tmp/none/libnccl.so.2 LD_PRELOAD="$face" timeout 60 "$probe" 2>&1)
[ "$(field "$out" "hetccl nccl path")" = "(none)" ] && has "$out" "$tmp/none/libnccl.so.2" && ! has "$out" "$found"
check $? "HETCCL_NCCL_LIBRARY naming a missing file did not mean only that file: $out"
mkdir "$tmp/forced"
cp "$stand_in" "$tmp/forced/libnccl.so.2"
out=$(LD_LIBRARY_PATH=$tmp/nccl HETCCL_NCCL_LIBRARY=$tmp/forced/libnccl.so.2 LD_PRELOAD="$face" timeout 60 "$probe" 2>&1)
[ "$(field "$out" "hetccl nccl path")" = "$tmp/forced/libnccl.so.2" ]
check $? "HETCCL_NCCL_LIBRARY's file not taken: $out"
out=$(HETCCL_NCCL_LIBRARY=$face LD_PRELOAD="$face" timeout 60 "$probe" 2>&1)
[ "$(field "$out" "hetccl nccl path")" = "(none)" ] && has "$out" "$face is HetCCL itself"
check $? "HETCCL_NCCL_LIBRARY naming the face was not refused: $out"
finish
