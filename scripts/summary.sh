# Sourced by gpu-check.sh and torch-check.sh: a run's summary file and its
# failure count. Set `summary` (the file) first; say() prints a line and
# keeps it there, fail() counts a failure, elapsed() is the time since start.
: >"$summary"
failures=0
start=$(date +%s)

say() { echo "$*" | tee -a "$summary"; }
fail() { failures=$((failures + 1)); say "FAIL: $*"; }
elapsed() { echo "$(($(date +%s) - start)) s"; }
