# Sourced by the matrix scripts that run test_collectives several times
# and add up its closing lines ("N passed, M failed") into one.
#   matrix_tally OUTPUT STATUS    adds one run's closing line; a run that
#                                 printed none (crashed, killed) counts one failure
#   matrix_run COMMAND...         runs COMMAND, prints its output, tallies it
#   matrix_finish                 prints the total; non-zero on any failure
#                                 or non-zero exit
passed=0
failed=0
status=0

matrix_tally() {
  local line
  line=$(echo "$1" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
  if [ -z "$line" ]; then
    failed=$((failed + 1))
    status=1
    return
  fi
  passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
  failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
  [ "$2" -eq 0 ] || status=1
}

matrix_run() {
  local out rc
  out=$("$@")
  rc=$?
  echo "$out"
  matrix_tally "$out" $rc
}

matrix_finish() {
  echo "$passed passed, $failed failed"
  [ $status -eq 0 ] && [ $failed -eq 0 ]
}
