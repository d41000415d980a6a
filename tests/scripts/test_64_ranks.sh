#!/bin/bash
# 64 host ranks in 2 domains on 4 "hosts": four network namespaces this test
# makes, each joined by a veth pair to a bridge in a fifth (addresses
# 198.18.0.1-4/24, the benchmarking range), so every namespace reaches every
# other; 16 ranks in each, each namespace with its own /dev/shm (as a real
# host has), so shared memory wrongly used across "hosts" fails instead of
# silently working. Ranks are tests/integration/test_collectives in its
# one-rank mode; each checks every result against the harness's references.
#
# Jobs (64 ranks each; the rank r runs in namespace r / 16):
#   socket         domains by parity (32 + 32, both on all four hosts), links
#                  as the library picks them: shm inside a namespace, socket
#                  between namespaces (each link's transport is checked)
#   socket-uneven  16 + 48 (domain d0: r % 4 == 0), every link socket,
#                  HETCCL_SMALL_BYTES=0 (the built-in engine's rings and
#                  chains at every size)
#   ofi            domains by parity, every link ofi over tcp;ofi_rxm; SKIPs
#                  with a message when the build has no libfabric
# Each runs every collective (--in-turn: one collective after another) over
# float32, counts 0, 1, 7 and 1023 with sum and max (ofi: 0, 1 and 1023 with
# sum: its manual progress needs each receiver scheduled, so 64 ranks on 2
# cores run it 2-3 times slower than socket). A hang fails instead of
# blocking: HETCCL_TIMEOUT_MS, the harness's alarm, a KILL timeout per rank.
#
# Links counted: at HETCCL_DEBUG=INFO the library logs each link it makes
# ("rank R -> P: link over T"), and test_collectives (--in-turn) logs
# "collective X begins" before each collective, so the links each rank
# opened, and during which collective, are known. The collectives run in
# two parts:
#   1. AllReduce, Broadcast, Reduce, AllGather, ReduceScatter. Links are made
#      on first use and kept, so what a rank holds after them is the union of
#      the peers its calls touched. Per rank r, links to other domains are at
#      most
#        3P + Tx(r) + (k - 1) + (r leads its domain ? R : 0)
#      and links inside its domain at most
#        E + Td(r)
#      where
#      P = (k - 1)(2 ceil(n_max / n_min) + 1), the scale model's bound on the
#          peers of one call (tools/model/bounds.c; 3 for 32 + 32, 7 for
#          16 + 48): the shard-piece partners of AllReduce, AllGather and
#          ReduceScatter, once for each of the three, whose pieces differ
#          (AllReduce's shards of the count; AllGather's and
#          ReduceScatter's shards of the other domains' blocks,
#          plan/foreign.h). These plans exchange pieces across domains only
#          (plan/README.md), so inside a domain only the engine and the
#          agreement's tree make links;
#      Tx(r), Td(r) = r's peers in the root agreement's tree, (r - 1) / 2,
#          2r + 1 and 2r + 2 (plan/agree.c), of other domains and of its own;
#      k - 1 = the leaders (lowest ranks) of the other domains, which a root
#          sends to (Broadcast) or receives from (Reduce): plan/rooted.c;
#      R = the Broadcast and Reduce calls with data: a leader talks to each
#          call's root, and the harness rotates the roots, so a leader's
#          links grow with the number of distinct roots, bounded here by the
#          number of such calls, not by N;
#      E = the built-in engine's peers inside the domain: 2 (ring and chain
#          neighbours) with HETCCL_SMALL_BYTES=0; by default its small
#          algorithms send to every domain peer in a domain of at most
#          HETCCL_ENGINE_DIRECT_MAX_RANKS (8) ranks, E = domain size - 1, and
#          in a larger one use O(log n)-peer algorithms
#          (src/ccl/builtin/README.md): with L = ceil(log2 domain size) their
#          domain ranks are r +- 2^k (Bruck, the binomial trees whatever the
#          root), r ^ 2^k and r +- p (recursive doubling and halving, p the
#          largest power of two in the domain), so E = 3L + 2, the one term
#          that grows with N, as log N.
#      Every term but the default E depends on the domains' shape and this
#      test's calls only, not on N.
#   2. SendRecv, Gather, Scatter, AlltoAll, AlltoAllv: AlltoAll reaches every
#      peer, so after it every rank holds exactly N - 1 links, each made once
#      and on the transport the job expects.
#
# Usage: test_64_ranks.sh <build-dir>
# Skips (exit 0, "SKIP: ...") when not root or namespaces cannot be made.
# TEST_64_JOBS="socket ofi" runs only the jobs named; TEST_64_LINK_SLACK=<n>
# (default 0) is added to every bound of part 1, so a negative value shows
# the bounds failing; TEST_64_KEEP=1 keeps the ranks' logs (the path is
# printed).
set -u

BUILD=${1:?usage: test_64_ranks.sh <build-dir>}
BIN="$BUILD/bin/test_collectives"
INFO="$BUILD/bin/hetccl-info"
. "$(dirname "$0")/lib/netns.sh"
need_built "build the test_collectives and hetccl-info targets" "$BIN" "$INFO"
netns_need unshare

NNS=4           # namespaces ("hosts")
PER=16          # ranks in each
N=$((NNS * PER))
SLACK=${TEST_64_LINK_SLACK:-0}
TAG="h64-$$"
HUB="hetccl-$TAG-hub"
IF=hetccl-n     # the same name in every namespace: one HETCCL_SOCKET_IFNAME
NETNS_KEEP=${TEST_64_KEEP:-}
ns_name() { echo "hetccl-$TAG-$1"; }

netns_begin 64-ranks
netns_add "$HUB"
err=$(ip -n "$HUB" link add br0 type bridge stp_state 0 forward_delay 0 2>&1) ||
  preflight_skip "the kernel refused a bridge (ip link add: $err)"
netns_up "$HUB" br0
for ((i = 0; i < NNS; i++)); do
  ns=$(ns_name $i)
  netns_add "$ns"
  netns_veth "$IF" "$ns" "port$i" "$HUB"
  ip -n "$HUB" link set "port$i" master br0 || netns_fail_setup "port$i on the bridge"
  netns_up "$HUB" "port$i"
  netns_addr "$ns" "198.18.0.$((i + 1))/24" "$IF"
  netns_up "$ns" lo "$IF"
done
# Ranks start once every bridge port forwards (no spanning tree: at once).
for ((i = 0; i < NNS; i++)); do
  for ((w = 0; w < 50; w++)); do
    ip -n "$HUB" -d link show "port$i" | grep -q 'state forwarding' && break
    sleep 0.1
  done
  [ $w -lt 50 ] || netns_fail_setup "bridge port port$i does not forward"
done

# The ofi job needs libfabric at build and run time (hetccl-info says).
OFI_LIB=$(ofi_library "$INFO")
HAVE_OFI=0
ofi_usable "$OFI_LIB" && HAVE_OFI=1

elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# What every job runs (see the header for the two parts).
PART1=allreduce,broadcast,reduce,allgather,reducescatter
PART2=sendrecv,gather,scatter,alltoall,alltoallv
TYPES=float32
NTYPES=$(echo "$TYPES" | tr ',' '\n' | wc -l)
# test_collectives' own alarm fires 30 s after it, the KILL 10 s later: room
# for the ofi job on a loaded machine (123 s at load average 110 on 2
# cores), while a wait without progress fails after HETCCL_TIMEOUT_MS.
RANK_TIMEOUT=240

PASSED=0
FAILED=0

# $1 job name, $2 domain rule (parity | quarter), $3 HETCCL_TRANSPORT ("" to
# let the library choose), $4 HETCCL_SMALL_BYTES ("" for the default), $5
# the reduction ops, $6 the counts.
run_job() {
  local name=$1 rule=$2 transport=$3 small=$4 ops=$5 counts=$6 dir="$WORK/$1" i r
  # R: Broadcast and Reduce calls with data. Per type and non-zero count: 2
  # Broadcasts and 2 Reduces per op (in place and out of place); per float
  # type 2 Reduces more over the rounding data (test_collectives.c).
  local nops nz
  nops=$(echo "$ops" | tr ',' '\n' | wc -l)
  nz=$(echo "$counts" | tr ',' '\n' | grep -vc '^0$')
  local rooted=$((NTYPES * nz * (2 + 2 * nops) + 2 * NTYPES))
  mkdir -p "$dir"
  local -a dom
  for ((r = 0; r < N; r++)); do
    case $rule in
      parity) dom[r]=$((r % 2)) ;;
      quarter) dom[r]=$((r % 4 == 0 ? 0 : 1)) ;;
    esac
  done
  local t0
  t0=$(date +%s.%N)
  # One shell per namespace, with a private /dev/shm, starts its 16 ranks.
  local script='mount -t tmpfs -o size=2g hetccl-shm /dev/shm || exit 97
dir=$1 first=$2 doms=($3)
shift 3
pids=""
for ((r = first; r < first + '"$PER"'; r++)); do
  HETCCL_DOMAIN=d${doms[r]} timeout -s KILL '"$((RANK_TIMEOUT + 40))"' '"$BIN"' --rank $r --nranks '"$N"' \
    --id-file "$dir/id" "$@" >"$dir/rank$r.out" 2>"$dir/rank$r.err" &
  pids="$pids $!"
done
rc=0
for p in $pids; do wait $p || rc=1; done
exit $rc'
  # The job's settings, none inherited (a transport or provider from the
  # caller's environment would change what the job checks).
  local -a envs=(-u HETCCL_TRANSPORT -u HETCCL_OFI_PROVIDER -u HETCCL_SMALL_BYTES -u HETCCL_DOMAIN
    -u HETCCL_ENGINE_DIRECT_MAX_RANKS HETCCL_DEBUG=INFO HETCCL_SOCKET_IFNAME="$IF" HETCCL_TIMEOUT_MS=60000)
  [ -n "$transport" ] && envs+=(HETCCL_TRANSPORT="$transport")
  # Only for ofi: the provider named makes ofi the default between hosts.
  [ "$transport" = ofi ] && envs+=(HETCCL_OFI_PROVIDER=tcp)
  [ -n "$small" ] && envs+=(HETCCL_SMALL_BYTES="$small")
  PIDS=()
  for ((i = 0; i < NNS; i++)); do
    ip netns exec "$(ns_name $i)" env "${envs[@]}" unshare -m --propagation private bash -c "$script" bash \
      "$dir" $((i * PER)) "${dom[*]}" --in-turn "$PART1,$PART2" --counts "$counts" --types "$TYPES" --ops "$ops" \
      --timeout "$RANK_TIMEOUT" &
    PIDS+=($!)
  done
  local rc=0 p
  for p in "${PIDS[@]}"; do wait "$p" || rc=1; done
  PIDS=()
  local secs
  secs=$(elapsed "$t0")

  # Results: every rank's closing line. Up to 8 failing ranks say why,
  # those with no result first (the likely cause: a hang or a crash shows
  # up in its peers as timeouts), each with where it was (its last log
  # lines, the library's included: which collective, which links).
  local jp=0 jf=0 line told=0
  local -a silent=() failing=()
  for ((r = 0; r < N; r++)); do
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$dir/rank$r.out" | tail -1)
    if [ -z "$line" ]; then
      jf=$((jf + 1))
      silent+=($r)
      continue
    fi
    jp=$((jp + ${line%% *}))
    line=${line#* passed, }
    jf=$((jf + ${line%% *}))
    [ "${line%% *}" != 0 ] && failing+=($r)
  done
  for r in "${silent[@]}"; do
    [ $((told++)) -lt 8 ] || continue
    echo "FAIL: $name: rank $r printed no result (crashed, hung or was killed); the end of its stderr:"
    grep -v ' INFO ' "$dir/rank$r.err" | tail -n 10
    grep -E 'begins$| INFO ' "$dir/rank$r.err" | tail -n 3
  done
  for r in "${failing[@]}"; do
    [ $((told++)) -lt 8 ] || continue
    echo "FAIL: $name: rank $r: its first failures:"
    grep -m 5 FAIL "$dir/rank$r.err"
  done
  [ $told -gt 8 ] && echo "FAIL: $name: $((told - 8)) more ranks failed (${#silent[@]} in all printed no result)"
  if [ $rc -ne 0 ] && [ $jf -eq 0 ]; then
    echo "FAIL: $name: a rank exited non-zero with no failed case"
    jf=1
  fi

  # Links: per rank, from its log (see the header).
  local k=2 nd0=0 nd1=0 lead0=-1 lead1=-1
  for ((r = 0; r < N; r++)); do
    if [ "${dom[r]}" = 0 ]; then
      nd0=$((nd0 + 1))
      [ $lead0 -lt 0 ] && lead0=$r
    else
      nd1=$((nd1 + 1))
      [ $lead1 -lt 0 ] && lead1=$r
    fi
  done
  local lo=$((nd0 < nd1 ? nd0 : nd1)) hi=$((nd0 < nd1 ? nd1 : nd0))
  local P=$(((k - 1) * (2 * ((hi + lo - 1) / lo) + 1)))
  local summary
  summary=$(awk -v N="$N" -v PER="$PER" -v P="$P" -v K="$k" -v R="$rooted" -v SLACK="$SLACK" -v L0="$lead0" \
    -v L1="$lead1" -v ND0="$nd0" -v ND1="$nd1" -v SMALL="$small" -v FORCED="$transport" -v PART2="$PART2" \
    -v DOMS="${dom[*]}" -v NAME="$name" '
    BEGIN { split(DOMS, d, " "); for (r = 0; r < N; r++) dom[r] = d[r + 1]; split(PART2, p2, ",");
            for (i in p2) part2[p2[i]] = 1 }
    FNR == 1 { if (me != "") finish(); me = FILENAME; sub(/.*rank/, "", me); sub(/\.err$/, "", me); me += 0;
               in2 = 0; nx1 = nd1 = 0; nlinks = 0; split("", seen); bad = ""; nwhy = 0 }
    /^collective [a-z]+ begins$/ { if ($2 in part2) in2 = 1; next }
    / links open \([0-9]+ file descriptors\)$/ { f = $(NF - 2); sub(/^\(/, "", f); if (f + 0 > fds) fds = f + 0 }
    / rank [0-9]+ -> [0-9]+: link over [a-z]+$/ {
      for (i = 1; i < NF; i++) if ($i == "->") { p = $(i + 1); sub(/:$/, "", p); p += 0 }
      t = $NF; nlinks++
      if (p in seen && nwhy++ < 3) bad = bad sprintf(" link to %d made twice;", p)
      seen[p] = 1
      want = FORCED != "" ? FORCED : (int(p / PER) == int(me / PER) ? "shm" : "socket")
      if (t != want && nwhy++ < 3) bad = bad sprintf(" link to %d over %s, want %s;", p, t, want)
      if (!in2) { if (dom[p] != dom[me]) nx1++; else nd1++ }
    }
    function tree_peers(r, cross,   c, n) {
      n = 0
      if (r > 0 && (dom[int((r - 1) / 2)] != dom[r]) == cross) n++
      for (c = 2 * r + 1; c <= 2 * r + 2; c++) if (c < N && (dom[c] != dom[r]) == cross) n++
      return n
    }
    function finish(   bx, bd) {
      bx = 3 * P + tree_peers(me, 1) + (K - 1) + ((me == L0 || me == L1) ? R : 0) + SLACK
      nd = dom[me] == 0 ? ND0 : ND1
      for (L = 0; 2 ^ L < nd; L++) {}
      bd = (SMALL == "0" ? 2 : nd <= 8 ? nd - 1 : 3 * L + 2) + tree_peers(me, 0) + SLACK
      if (nx1 > bx) bad = bad sprintf(" part 1: %d links to other domains, bound %d;", nx1, bx)
      if (nd1 > bd) bad = bad sprintf(" part 1: %d links inside its domain, bound %d;", nd1, bd)
      if (nlinks != N - 1) bad = bad sprintf(" %d links after part 2, want %d;", nlinks, N - 1)
      if (bad != "" && nbad++ < 10) printf "FAIL: %s: rank %d:%s\n", NAME, me, bad
      lead = me == L0 || me == L1
      if (nx1 > mx[lead]) mx[lead] = nx1
      if (bx > bxm[lead]) bxm[lead] = bx
      if (nd1 > md) md = nd1
      if (bd > bdm) bdm = bd
      if (ranks == 0 || bx - nx1 < margin) margin = bx - nx1
      if (bd - nd1 < margin) margin = bd - nd1
      if (nlinks > mt) mt = nlinks
      ranks++
    }
    END { if (me != "") finish();
          if (ranks != N) { printf "FAIL: %s: %d ranks logged anything, want %d\n", NAME, ranks, N; nbad++ }
          if (nbad > 10) printf "FAIL: %s: %d more ranks over their link bounds\n", NAME, nbad - 10
          printf "links after part 1, most on a rank (largest bound): to other domains %d (%d) on a non-leader, %d (%d) on a leader; inside a domain %d (%d); smallest margin %d. After part 2: at most %d links (want %d on each rank) in %d file descriptors\n", mx[0], bxm[0], mx[1], bxm[1], md, bdm, margin, mt, N - 1, fds
          exit nbad > 0 }' "$dir"/rank*.err)
  local lrc=$?
  echo "$summary"
  if [ $lrc -ne 0 ]; then
    jf=$((jf + 1))
  else
    jp=$((jp + 1))
  fi
  PASSED=$((PASSED + jp))
  FAILED=$((FAILED + jf))
  printf '%s (%d ranks, domains %d + %d, transport %s): %d passed, %d failed, %s s\n' "$name" "$N" "$nd0" "$nd1" \
    "${transport:-shm+socket}" "$jp" "$jf" "$secs"
}

T_START=$(date +%s.%N)
JOBS=${TEST_64_JOBS:-socket socket-uneven ofi}
for job in $JOBS; do
  case $job in
    socket) run_job socket parity "" "" sum,max 0,1,7,1023 ;;
    socket-uneven) run_job socket-uneven quarter socket 0 sum,max 0,1,7,1023 ;;
    ofi)
      if [ $HAVE_OFI = 1 ]; then
        run_job ofi parity ofi "" sum 0,1,1023
      else
        echo "SKIP: ofi: the ofi transport cannot run here: ${OFI_LIB:-hetccl-info names no libfabric}"
        echo "  (scripts/install-deps.sh installs libfabric-dev and libfabric1; rebuild after it)"
      fi
      ;;
    *)
      echo "FAIL: TEST_64_JOBS: no job named $job"
      FAILED=$((FAILED + 1))
      ;;
  esac
done
printf 'test_64_ranks: %s s\n' "$(elapsed "$T_START")"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
