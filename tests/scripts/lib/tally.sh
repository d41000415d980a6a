# Sourced by script tests: a temporary folder removed on exit, and the
# pass/fail tally every test ends with ("N passed, M failed").
#   check <status: 0 ok, else failed> <message>
#   finish            prints the tally and exits non-zero on any failure
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
check() {
  if [ "$1" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $2"; fi
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" = 0 ]
  exit $?
}
