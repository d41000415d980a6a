#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds two consumers there,
# one with pkg-config and one with CMake's find_package(hetccl), each of which
# must link and run (hetcclGetVersion and a 1-rank AllReduce).
set -u
BUILD=${1:?usage: test_install.sh <build-dir>}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
check() { if "$@" >"$tmp/last.log" 2>&1; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $*"; cat "$tmp/last.log"; fi; }

cat >"$tmp/consumer.c" <<'C'
#include <hetccl.h>
#include <stdio.h>
int main(void) {
  int v = 0;
  if (hetcclGetVersion(&v) != hetcclSuccess || v != HETCCL_VERSION_CODE) return 1;
  hetcclComm_t comm;
  int dev = 0;
  if (hetcclCommInitAll(&comm, 1, &dev) != hetcclSuccess) return 2;
  float x[3] = {1, 2, 3}, y[3] = {0};
  if (hetcclAllReduce(x, y, 3, hetcclFloat, hetcclSum, comm, NULL) != hetcclSuccess) return 3;
  if (y[0] != 1 || y[1] != 2 || y[2] != 3) return 4;
  hetcclCommDestroy(comm);
  printf("ok %d\n", v);
  return 0;
}
C
cat >"$tmp/CMakeLists.txt" <<'C'
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(hetccl REQUIRED)
add_executable(consumer consumer.c)
target_link_libraries(consumer PRIVATE hetccl::hetccl)
C
export HETCCL_DEVICE=host
check cmake --install "$BUILD" --prefix "$tmp/prefix"
check test -f "$tmp/prefix/include/hetccl.h"
check test -f "$tmp/prefix/include/hetccl/nccl.h"
pc="$tmp/prefix/lib/pkgconfig"
[ -d "$pc" ] || pc=$(dirname "$(find "$tmp/prefix" -name hetccl.pc | head -1)")
check sh -c "cc -o '$tmp/pc_consumer' '$tmp/consumer.c' \$(PKG_CONFIG_PATH='$pc' pkg-config --cflags --libs hetccl)"
libdir=$(PKG_CONFIG_PATH=$pc pkg-config --variable=libdir hetccl)
check env LD_LIBRARY_PATH="$libdir" "$tmp/pc_consumer"
check cmake -S "$tmp" -B "$tmp/b" -DCMAKE_PREFIX_PATH="$tmp/prefix"
check cmake --build "$tmp/b"
check env LD_LIBRARY_PATH="$libdir" "$tmp/b/consumer"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
