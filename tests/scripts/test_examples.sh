#!/usr/bin/env bash
# Builds examples/ the way examples/README.md tells a user to: install into a
# temporary prefix, compile with pkg-config (hetccl and hetccl-nccl) and a
# run path, run each on an even and an uneven number of ranks. Also checks
# the README's warning: without the run path the program cannot start.
set -u
BUILD=${1:?usage: test_examples.sh <build-dir>}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; [ -f "$tmp/last.log" ] && tail -n 20 "$tmp/last.log"; }
run() { "$@" >"$tmp/last.log" 2>&1; }

if run cmake --install "$BUILD" --prefix "$tmp/prefix"; then ok; else bad "install"; fi
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
for ex in hetccl:allreduce_hetccl nccl:allreduce_nccl; do
  name=${ex#*:}
  pkg=hetccl
  [ "${ex%%:*}" = nccl ] && pkg=hetccl-nccl
  libdir=$(pkg-config --variable=libdir "$pkg")
  # shellcheck disable=SC2046
  if run cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror "$src/examples/$name.c" $(pkg-config --cflags --libs "$pkg") \
      -Wl,-rpath,"$libdir" -o "$tmp/$name"; then ok; else bad "$name: build with pkg-config $pkg"; continue; fi
  for n in 4 3; do
    if run timeout -k 5 120 "$tmp/$name" "$n" && [ "$(tail -n 1 "$tmp/last.log")" = ok ] &&
        [ "$(grep -c ' 0 wrong$' "$tmp/last.log")" = "$n" ]; then ok; else bad "$name on $n ranks"; fi
  done
done
# The README's warning: without the run path the loader does not look in the prefix.
# shellcheck disable=SC2046
run cc -std=c11 -D_GNU_SOURCE "$src/examples/allreduce_hetccl.c" $(pkg-config --cflags --libs hetccl) -o "$tmp/norpath"
if ! run env -u LD_LIBRARY_PATH "$tmp/norpath" 2 && grep -q "libhetccl.so.0: cannot open shared object file" "$tmp/last.log"
then ok; else bad "allreduce_hetccl without a run path started, or failed otherwise (examples/README.md says it cannot)"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
