#!/usr/bin/env bash
# The scale model (tools/model, hetccl-model): (1) its bounds (`--check`)
# hold for two equal domains at N = 8 ... 1024, 768+256 and four unequal
# domains at every collective, 1-, 2-, 4- and 8-byte types and three sizes,
# and for N = 2048 ... 16384 at 4-byte types and 1 GiB (the misses today's
# plans are known for are printed, not failed: tools/model/bounds.c);
# (2) its sampled maxima (the per-peer collectives above --sample-above)
# equal a run of every rank; (3) its per-rank numbers equal what the live
# engine does: each collective on forked host ranks (4 in {2,2}, 6 in {4,2},
# 6 in {2,2,2}) traced with HETCCL_TRACE, compared rank by rank (links
# touched across domains, bytes sent and received over them, vendor phases,
# link phases) by tests/scripts/lib/model_trace.py.
# Usage: test_scale_model.sh <build-dir>. Exit status 1 on any failure.
set -u
build=${1:?usage: $0 <build-dir>}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
model=$build/bin/hetccl-model
perf=$build/bin/hetccl-perf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
for b in "$model" "$perf"; do
  [ -x "$b" ] || { echo "FAIL: $b not built"; exit 1; }
done

# (1) The bounds. Above 1024 ranks one type and size: AllReduce's and
# ReduceScatter's plans walk every shard piece on every rank today (O(N^2)
# for all ranks), so the whole matrix there takes minutes.
small="--domains 4,4 --domains 8,8 --domains 16,16 --domains 32,32 --domains 64,64 --domains 128,128"
small="$small --domains 256,256 --domains 512,512 --domains 768,256 --domains 448,320,160,96"
large="--domains 1024,1024 --domains 2048,2048 --domains 4096,4096 --domains 8192,8192 --esz 4 --sizes 1G"
for sweep in "$small" "$large"; do
  if "$model" --check $sweep > "$tmp/check.txt" 2>&1; then
    echo "ok: bounds ($(tail -n 2 "$tmp/check.txt" | tr '\n' ' '))"
  else
    echo "FAIL: bounds"; grep -E "VIOLATED|model:" "$tmp/check.txt" | head -n 40; tail -n 2 "$tmp/check.txt"
    failed=1
  fi
done

# (2) Sampling is exact: the same maxima from a sample and from every rank.
strip() { grep -v '^#' | awk '{ $6 = ""; $8 = ""; print }'; }  # all but the ranks run and the mean
for layout in 1024,1024 768,256 448,320,160,96; do
  "$model" --domains $layout --colls alltoall,gather,scatter --sample-above 0 > "$tmp/sampled.txt"
  "$model" --domains $layout --colls alltoall,gather,scatter > "$tmp/all.txt"
  if ! grep -q '[0-9]\* ' "$tmp/sampled.txt"; then
    echo "FAIL: sampling $layout: --sample-above 0 ran every rank"; failed=1
  elif diff <(strip < "$tmp/sampled.txt") <(strip < "$tmp/all.txt") > "$tmp/diff.txt"; then
    echo "ok: sampling $layout: the sample's maxima equal every rank's"
  else
    echo "FAIL: sampling $layout"; head -n 20 "$tmp/diff.txt"; failed=1
  fi
done

# (3) The model against traced runs of the live engine.
small=96 large=3145728  # 96 * 32768: both divide into per-rank pieces for N = 4 and 6
for layout in 2,2 4,2 2,2,2; do
  n=$(echo "$layout" | tr ',' '\n' | awk '{ s += $1 } END { print s }')
  for coll in allreduce allgather reducescatter broadcast reduce alltoall gather scatter sendrecv; do
    case $coll in
      allreduce) label=AllReduce ;; allgather) label=AllGather ;; reducescatter) label=ReduceScatter ;;
      broadcast) label=Broadcast ;; reduce) label=Reduce ;; alltoall) label=AlltoAll ;;
      gather) label=Gather ;; scatter) label=Scatter ;; sendrecv) label=SendRecv ;;
    esac
    dir=$tmp/$coll-${layout//,/_}
    mkdir -p "$dir"
    if ! HETCCL_TRACE="$dir/t-%r.json" timeout 120 "$perf" $coll -N $n --domains $layout -b $small -e $large -f 32768 \
        -n 1 -w 0 -c 0 -r 1 -d float > "$dir/perf.txt" 2>&1; then
      echo "FAIL: $layout $label: hetccl-perf"; tail -n 20 "$dir/perf.txt"; failed=1; continue
    fi
    "$model" --domains $layout --colls $coll --esz 4 --sizes $small,$large --per-rank > "$dir/model.txt" || {
      echo "FAIL: $layout $label: hetccl-model"; failed=1; continue; }
    python3 "$here/lib/model_trace.py" $layout $label $small,$large "$dir/model.txt" "$dir"/t-*.json || failed=1
  done
done
exit $failed
