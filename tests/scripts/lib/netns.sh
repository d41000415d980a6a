# Sourced by the script tests whose "hosts" are network namespaces
# (test_two_hosts, test_topo_veth, test_stripe_veth, test_64_ranks):
# whether they can run, the namespaces and veth pairs they make, and one
# cleanup on exit. Sources preflight.sh.
#   netns_need [COMMAND...]   SKIP unless root, with ip (iproute2) and the
#                             COMMANDs named (unshare: util-linux)
#   netns_begin NAME          WORK: a new /tmp/hetccl-NAME.XXXXXX; PIDS=();
#                             the exit and signal traps
#   netns_add NS...           new namespaces (SKIP when the kernel refuses)
#   netns_veth IF1 NS1 IF2 NS2
#                             a veth pair, IF1 in NS1 and IF2 in NS2 (SKIP
#                             when the kernel refuses)
#   netns_addr NS ADDR DEV    an address on DEV (FAIL when refused)
#   netns_up NS DEV...        DEVs up (FAIL when refused)
#   netns_fail_setup MESSAGE  FAIL: the network could not be set up
# On exit the ranks the test started (PIDS) and every process left in its
# namespaces (ranks under `timeout` run in process groups of their own)
# are killed and reaped, the namespaces deleted and WORK removed, or kept
# and its path printed when NETNS_KEEP is set.

. "$(dirname "${BASH_SOURCE[0]}")/preflight.sh"

NETNS_MADE=()

netns_need() {
  [ "$(id -u)" = 0 ] || preflight_skip "not root: creating network namespaces needs CAP_SYS_ADMIN"
  local c
  for c in ip "$@"; do
    command -v "$c" >/dev/null 2>&1 && continue
    if [ $# -eq 0 ]; then
      preflight_skip "the ip command (iproute2) is missing"
    else
      preflight_skip "the ip (iproute2) or $* (util-linux) command is missing"
    fi
  done
}

netns_cleanup() {
  local p ns
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for ns in "${NETNS_MADE[@]}"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  for ns in "${NETNS_MADE[@]}"; do ip netns del "$ns" 2>/dev/null; done
  if [ -n "${NETNS_KEEP:-}" ]; then
    echo "kept $WORK"
  else
    rm -rf "$WORK"
  fi
}

netns_begin() {
  WORK=$(mktemp -d "/tmp/hetccl-$1.XXXXXX")
  PIDS=()
  trap netns_cleanup EXIT
  trap 'echo "interrupted"; exit 130' INT TERM HUP
}

netns_add() {
  local ns err
  for ns in "$@"; do
    err=$(ip netns add "$ns" 2>&1) || preflight_skip "the kernel refused a network namespace (ip netns add: $err)"
    NETNS_MADE+=("$ns")
  done
}

netns_veth() {
  local err
  err=$(ip link add "$1" netns "$2" type veth peer name "$3" netns "$4" 2>&1) ||
    preflight_skip "the kernel refused a veth pair between namespaces (ip link add: $err)"
}

netns_fail_setup() { preflight_fail "network setup: $*"; }

netns_addr() { ip -n "$1" addr add "$2" dev "$3" || netns_fail_setup "address $2 on $3 in $1"; }

netns_up() {
  local ns=$1 dev
  shift
  for dev in "$@"; do ip -n "$ns" link set "$dev" up || netns_fail_setup "$dev up in $ns"; done
}
