#!/usr/bin/env bash
# scripts/plot-bench and scripts/trace-plot on a real hetccl-perf run (2 host
# ranks in two domains, 1 KiB to 64 KiB, with HETCCL_TRACE set): plot-bench
# --data must give every row of the table with the values awk reads from it
# (size, out-of-place time and busbw; in-place with --inplace), the PNGs must
# be PNG files, and both scripts must refuse what they cannot draw (a file
# without rows, a call that is not in the trace). Needs python3 and gnuplot
# (scripts/install-deps.sh installs gnuplot-nox).
#
# usage: bash tests/scripts/test_plots.sh <build-dir>
set -u
build=${1:?usage: test_plots.sh <build-dir>}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$src/tests/scripts/lib/tally.sh"
perf="$build/bin/hetccl-perf"
[ -x "$perf" ]; check $? "hetccl-perf is built"
command -v gnuplot >/dev/null; check $? "gnuplot is installed (bash scripts/install-deps.sh)"

HETCCL_TRACE="$tmp/t-%r.json" timeout -k 5 120 "$perf" allreduce -N 2 --domains 1,1 -b 1K -e 64K -f 4 -n 2 -w 1 \
  -T 100 >"$tmp/perf.txt" 2>"$tmp/err"
check $? "hetccl-perf ran ($(tail -2 "$tmp/err"))"

# plot-bench --data against awk's reading of the same table.
awk '$1 !~ /^#/ && NF >= 9 { printf "s\t%d\t%g\t%g\n", $1, $6, $8 }' "$tmp/perf.txt" >"$tmp/want"
python3 "$src/scripts/plot-bench" --data "s=$tmp/perf.txt" >"$tmp/got"
check $? "plot-bench --data"
[ "$(wc -l <"$tmp/want")" = 4 ] && cmp -s "$tmp/want" "$tmp/got"
check $? "plot-bench reads every row, out-of-place columns ($(wc -l <"$tmp/got") rows)"
awk '$1 !~ /^#/ && NF >= 9 { printf "s\t%d\t%g\t%g\n", $1, $10, $12 }' "$tmp/perf.txt" >"$tmp/want"
python3 "$src/scripts/plot-bench" --data --inplace "s=$tmp/perf.txt" >"$tmp/got"
cmp -s "$tmp/want" "$tmp/got"
check $? "plot-bench --inplace reads the in-place columns"

png() { [ -s "$1" ] && [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; }
python3 "$src/scripts/plot-bench" -o "$tmp/b.png" "a=$tmp/perf.txt" "b=$tmp/perf.txt" >/dev/null
check $? "plot-bench draws"
png "$tmp/b.png"; check $? "plot-bench wrote a PNG"
echo "# nothing here" >"$tmp/empty.txt"
python3 "$src/scripts/plot-bench" -o "$tmp/e.png" "e=$tmp/empty.txt" 2>/dev/null
[ $? = 1 ] && [ ! -e "$tmp/e.png" ]; check $? "plot-bench refuses a file without rows"

# Hand-written data files (size time busbw, '-' for a value not recorded, a
# comment after a row) and the bar chart, as docs/img/data/draw.sh uses them.
printf '# a recorded table\n1024 2.5 -  # one run\n4096 - 3.25\n' >"$tmp/d.txt"
printf '%s\n' "s	1024	2.5	-" "s	4096	-	3.25" >"$tmp/want"
python3 "$src/scripts/plot-bench" --data "s=$tmp/d.txt" >"$tmp/got"
cmp -s "$tmp/want" "$tmp/got"; check $? "plot-bench reads a data file with '-' and comments ($(tr '\n' ' ' <"$tmp/got"))"
python3 "$src/scripts/plot-bench" -o "$tmp/d.png" "s=$tmp/d.txt" >/dev/null
check $? "plot-bench draws a data file"
png "$tmp/d.png"; check $? "plot-bench wrote its PNG"
printf '# c\nrun\tref\tours\nA\t10\t20\nB\t11\t-\n' >"$tmp/bars.tsv"
printf '%s\n' "A	ref	10" "A	ours	20" "B	ref	11" "B	ours	-" >"$tmp/want"
python3 "$src/scripts/plot-bench" --data --bars "$tmp/bars.tsv" >"$tmp/got"
cmp -s "$tmp/want" "$tmp/got"; check $? "plot-bench --bars reads every cell"
python3 "$src/scripts/plot-bench" -o "$tmp/bars.png" --ylabel v --bars "$tmp/bars.tsv" >/dev/null
check $? "plot-bench --bars draws"
png "$tmp/bars.png"; check $? "plot-bench --bars wrote a PNG"
printf 'run\tref\nA\t10\t20\n' >"$tmp/badbars.tsv"
python3 "$src/scripts/plot-bench" -o "$tmp/bb.png" --bars "$tmp/badbars.tsv" 2>/dev/null
[ $? = 1 ] && [ ! -e "$tmp/bb.png" ]; check $? "plot-bench --bars refuses a row wider than its header"
bash "$src/docs/img/data/draw.sh" "$tmp" >/dev/null
check $? "docs/img/data/draw.sh draws the documents' GPU plots"
for f in passthrough-nccl cuda-host crossdomain-pcie ddp-gloo; do
  png "$tmp/bench-gpu-$f.png"; check $? "bench-gpu-$f.png is a PNG"
done

python3 "$src/scripts/trace-merge" --quiet -o "$tmp/merged.json" "$tmp"/t-*.json >/dev/null
check $? "trace-merge checks the run's timelines"
python3 "$src/scripts/trace-plot" "$tmp/merged.json" "$tmp/t.png" --call 3 >/dev/null
check $? "trace-plot draws call 3"
png "$tmp/t.png"; check $? "trace-plot wrote a PNG"
python3 "$src/scripts/trace-plot" "$tmp/merged.json" "$tmp/n.png" --call 100000 2>/dev/null
[ $? = 1 ]; check $? "trace-plot refuses a call that is not in the trace"
finish
