#!/usr/bin/env bash
# The cost of call signatures (HETCCL_CHECK_CALLS=1 against 0), host ranks:
# AllReduce of floats (--coll: another collective; a rooted one also pays
# for its root agreement, which runs only with the checks on), out-of-place time per call from hetccl-perf, for a
# small size (latency) and a large one (bandwidth), in one domain (built-in
# engine) and in two domains (--domains 1,1: the cross-domain plan over a
# link). The two settings alternate, `reps` times each, in one run, so load
# that drifts hits both alike; prints every run and the median per case.
#
# usage: bash scripts/bench-callsig.sh [--build DIR] [--reps 5] [--np 2] [--transport shm]
#        [--small 8] [--large 64M] [--coll allreduce]
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$repo/build"
reps=5
np=2
transport=shm
small=8
large=64M
coll=allreduce
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --np) np="$2"; shift 2 ;;
    --transport) transport="$2"; shift 2 ;;
    --small) small="$2"; shift 2 ;;
    --large) large="$2"; shift 2 ;;
    --coll) coll="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench-callsig.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
perf="$build/bin/hetccl-perf"
[ -x "$perf" ] || { echo "bench-callsig.sh: $perf not found" >&2; exit 2; }

half=$((np / 2))
declare -A runs
# One hetccl-perf run; prints the out-of-place time (us) of its one size.
one() {
  local check=$1 size=$2 iters=$3 warm=$4; shift 4
  HETCCL_CHECK_CALLS=$check HETCCL_TRANSPORT=$transport \
    "$perf" "$coll" -N "$np" -b "$size" -e "$size" -n "$iters" -w "$warm" -c 0 "$@" |
    awk '!/^#/ && NF >= 6 { print $6; exit }'
}

for rep in $(seq 1 "$reps"); do
  for check in 1 0; do
    for dom in 1 2; do
      extra=()
      [ "$dom" = 2 ] && extra=(--domains "$half,$((np - half))")
      t=$(one "$check" "$small" 2000 200 "${extra[@]}")
      runs[small,$dom,$check]+="$t "
      t2=$(one "$check" "$large" 5 2 "${extra[@]}")
      runs[large,$dom,$check]+="$t2 "
      echo "rep $rep check=$check domains=$dom: $small B ${t} us, $large ${t2} us"
    done
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo
lowest() { tr ' ' '\n' | grep -v '^$' | sort -g | head -1; }
echo "| case | CHECK_CALLS=1 median (us) | CHECK_CALLS=0 median (us) | ratio 1/0 | lowest 1 | lowest 0 | runs (1) | runs (0) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"
for size in small large; do
  for dom in 1 2; do
    on=$(echo "${runs[$size,$dom,1]}" | median)
    off=$(echo "${runs[$size,$dom,0]}" | median)
    label=$([ "$size" = small ] && echo "$small B" || echo "$large")
    lo_on=$(echo "${runs[$size,$dom,1]}" | lowest)
    lo_off=$(echo "${runs[$size,$dom,0]}" | lowest)
    echo "| $label, $dom domain(s) | $on | $off | $(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.3f", a / b }') | $lo_on | $lo_off | ${runs[$size,$dom,1]}| ${runs[$size,$dom,0]}|"
  done
done
