#!/usr/bin/env bash
# The PyTorch check, run on an NVIDIA machine from the repository root:
#
#   bash scripts/torch-check.sh [build_dir]            (default build-gpu)
#
# It trains the small transformer of tests/gpu/ddp_train.py with DDP under
# torchrun (--standalone --nproc-per-node=$NPROC, every run under `timeout`)
# several ways and compares the results:
#   a. gloo        backend gloo: the reference for the cross-domain run (gloo
#                  all-reduces the CUDA gradients through host memory);
#   b. hetccl-2dom backend nccl with HetCCL's NCCL face preloaded
#                  (LD_PRELOAD=$BUILD/lib/libnccl.so.2) and every rank in its
#                  own HetCCL domain (ddp_train.py --domain-per-rank sets
#                  HETCCL_DOMAIN=d<LOCAL_RANK> per worker, since torchrun gives
#                  all workers one environment), plus 3 FSDP steps (--fsdp-step);
#   d. hetccl-2faces (when $BUILD/lib/librccl.so.1, HetCCL's RCCL face, and
#                  $BUILD/test-tools/stand-in-hip-cuda/libamdhip64.so are
#                  built; TWO_FACES=0 skips it): backend nccl, even ranks with
#                  the NCCL face preloaded as cuda ranks, odd ranks with the
#                  RCCL face preloaded as hip ranks over the stand-in HIP
#                  runtime over the CUDA driver, NCCL standing in for RCCL
#                  (tests/gpu/two_faces_worker.sh under torchrun --no-python);
#                  compared with gloo as b is. It proves the faces agree on
#                  the wire and the hip kind carries PyTorch's buffers and
#                  streams; nothing about AMD hardware (docs/AMD.md);
#   c. only with at least NPROC GPUs (one per rank; NCCL refuses two ranks on
#      one GPU):
#      nccl-native backend nccl on PyTorch's own NCCL (nothing preloaded);
#      hetccl-1dom backend nccl with the face preloaded, all ranks in one
#                  domain: HetCCL passes every call through to that NCCL.
# Comparisons (a small inline Python, json only):
#   b vs a: rank 0's loss per step; PASS when every step has
#           |b - a| <= 1e-3 * max(1, |a|) (the float sums are ordered
#           differently); the largest relative difference is reported, and
#           the tokens/s ratio b/a (aim >= 5, reported, not a failure);
#   c:      every loss (rank 0's and the ranks' average) bitwise equal between
#           hetccl-1dom and nccl-native, and the tokens/s ratio (aim >= 0.99,
#           reported, not a failure).
#   Also checked: each run's collective checks (collectives_ok), finite
#   losses, and that the preloaded runs really ran on HetCCL's face (and the
#   native one did not). FSDP's losses (or its error) are reported only.
# Exit status: 0 when every run finished and every check passed; 1 when any
# run failed (exit status, timeout, no JSON), a collective check failed, the
# tolerance was exceeded or the pass-through was not bitwise equal; 2 when
# the face is not built.
#
# Before running it, build the face (the CMake target nccl_face, which
# builds libhetccl too):
#   cmake -S . -B build-gpu -DHETCCL_GPU_TESTS=ON -DHETCCL_CUDA_ARCHS=90
#   cmake --build build-gpu -j16 --target nccl_face
#
# Settings (environment): STEPS (200; the first 10 are warm-up, not timed),
# PARITY_ROUNDS (1: further pairs of nccl-native and hetccl-1dom, the
# order swapped each round, nccl-native.rN / hetccl-1dom.rN; the ratio
# reported is then that of the geometric means of all face and all native
# runs, which an even count balances against the order),
# NPROC (2: ranks per run), OUT (logs; default $BUILD/torch-logs), TIMEOUT
# (300: seconds per run), PYTHON and TORCHRUN (default: PyTorch's venv in
# /opt/torch/.venv, else python3 and torchrun on PATH).
# The script exports NCCL_NVLS_ENABLE=0 and, when it exists and
# HETCCL_NCCL_LIBRARY is unset, HETCCL_NCCL_LIBRARY=PyTorch's own NCCL (the
# machine's system NCCL is older and would otherwise win).
# Files in $OUT: <run>.log (the run's stdout and stderr), <run>.json (rank 0's
# result, see tests/gpu/ddp_train.py) for gloo, hetccl-2dom, nccl-native,
# hetccl-1dom; torch-summary.txt (what is printed).
set -u

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo" || exit 1
BUILD=${1:-build-gpu}
STEPS=${STEPS:-200}
NPROC=${NPROC:-2}
TIMEOUT=${TIMEOUT:-300}
OUT=${OUT:-$BUILD/torch-logs}
VENV=/opt/torch/.venv
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$VENV/bin/python" ]; then PYTHON=$VENV/bin/python; else PYTHON=python3; fi
fi
if [ -z "${TORCHRUN:-}" ]; then
  if [ -x "$VENV/bin/torchrun" ]; then TORCHRUN=$VENV/bin/torchrun; else TORCHRUN=torchrun; fi
fi
script=tests/gpu/ddp_train.py

if [ ! -f "$BUILD/lib/libnccl.so.2" ]; then
  echo "torch-check: $BUILD/lib/libnccl.so.2 (HetCCL's NCCL face) is missing; build it with" >&2
  echo "  cmake -S . -B $BUILD -DHETCCL_GPU_TESTS=ON -DHETCCL_CUDA_ARCHS=90" >&2
  echo "  cmake --build $BUILD -j16 --target nccl_face" >&2
  exit 2
fi
face=$(cd "$BUILD/lib" && pwd)/libnccl.so.2
if ! command -v "$TORCHRUN" >/dev/null 2>&1; then
  echo "torch-check: no torchrun ($TORCHRUN); set TORCHRUN" >&2
  exit 1
fi

mkdir -p "$OUT"
summary="$OUT/torch-summary.txt"
# shellcheck source=scripts/summary.sh
. "$repo/scripts/summary.sh"

export NCCL_NVLS_ENABLE=0
torch_nccl=$VENV/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
if [ -z "${HETCCL_NCCL_LIBRARY:-}" ] && [ -f "$torch_nccl" ]; then export HETCCL_NCCL_LIBRARY=$torch_nccl; fi

ngpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
fi
say "# torch-check $(date -u +%FT%TZ) on $(hostname): $ngpus GPU(s), $NPROC ranks, $STEPS steps"
say "# face $face"
say "# NCCL_NVLS_ENABLE=0 HETCCL_NCCL_LIBRARY=${HETCCL_NCCL_LIBRARY:-(default search)}"
if [ "$ngpus" -lt 1 ]; then
  fail "no GPU found (nvidia-smi -L)"
  say "$failures failures"
  exit 1
fi

# run <name> <preload 0|1> <ddp_train.py args...>: $OUT/<name>.log and .json.
run() {
  local name=$1 preload=$2
  shift 2
  local json="$OUT/$name.json" log="$OUT/$name.log"
  rm -f "$json"
  local pre=()
  if [ "$preload" = 1 ]; then pre=(env "LD_PRELOAD=$face${LD_PRELOAD:+:$LD_PRELOAD}"); fi
  echo "+ ${pre[*]+${pre[*]} }$TORCHRUN --standalone --nproc-per-node=$NPROC $script --steps $STEPS --out $json $*" >"$log"
  timeout -k 15 "$TIMEOUT" ${pre[@]+"${pre[@]}"} "$TORCHRUN" --standalone --nproc-per-node="$NPROC" \
    "$script" --steps "$STEPS" --out "$json" "$@" >>"$log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ]; then
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      fail "$name: timed out after $TIMEOUT s; the end of $log:"
    else
      fail "$name: exit $rc; the end of $log:"
    fi
    grep -v '^\s*$' "$log" | tail -n 15 | cut -c1-300 | sed 's/^/    /' | tee -a "$summary"
  fi
  if [ ! -f "$json" ]; then
    fail "$name: no result ($json)"
  else
    say "$name: result written, exit $rc ($(elapsed))"
  fi
}

run gloo 0 --backend gloo
run hetccl-2dom 1 --backend nccl --domain-per-rank --fsdp-step
rccl_face=$BUILD/lib/librccl.so.1
hip_over_cuda=$BUILD/test-tools/stand-in-hip-cuda/libamdhip64.so
two_faces=0
if [ "${TWO_FACES:-1}" != 0 ] && [ -f "$rccl_face" ] && [ -f "$hip_over_cuda" ]; then
  two_faces=1
  # NCCL standing in for RCCL: the library the NCCL instance takes.
  rccl_stand_in=${HETCCL_NCCL_LIBRARY:-$(ldconfig -p 2>/dev/null | awk '/libnccl.so.2 / { print $NF; exit }')}
  # Without the gfx942 code object built in (no AMD compiler on the GPU
  # machine), HetCCL hands the stand-in a marker image (gpu-check's HIP_IMAGES).
  marker=1
  if [ "${HIP_IMAGES:-}" = builtin ] || { [ -z "${HIP_IMAGES:-}" ] && "$BUILD/bin/hetccl-info" 2>/dev/null |
    awk '/^[A-Z]/ { s = $0 } s == "Kernels" && $1 == "hip" && /gfx942/ { f = 1 } END { exit !f }'; }; then
    marker=0
  fi
  json="$OUT/hetccl-2faces.json" log="$OUT/hetccl-2faces.log"
  rm -f "$json"
  echo "+ TWO_FACES_RCCL=$rccl_stand_in $TORCHRUN --standalone --nproc-per-node=$NPROC --no-python" \
    "tests/gpu/two_faces_worker.sh $PYTHON $script --steps $STEPS --out $json --backend nccl" >"$log"
  TWO_FACES_NCCL_FACE=$face TWO_FACES_RCCL_FACE=$(cd "$BUILD/lib" && pwd)/librccl.so.1 \
    TWO_FACES_HIP=$(cd "$(dirname "$hip_over_cuda")" && pwd)/libamdhip64.so TWO_FACES_RCCL=$rccl_stand_in \
    TWO_FACES_MARKER=$marker \
    timeout -k 15 "$TIMEOUT" "$TORCHRUN" --standalone --nproc-per-node="$NPROC" --no-python \
    tests/gpu/two_faces_worker.sh "$PYTHON" "$script" --steps "$STEPS" --out "$json" --backend nccl >>"$log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || { fail "hetccl-2faces: exit $rc; the end of $log:"; grep -v '^\s*$' "$log" | tail -n 15 | cut -c1-300 | sed 's/^/    /' | tee -a "$summary"; }
  if [ -f "$json" ]; then say "hetccl-2faces: result written, exit $rc ($(elapsed))"; else fail "hetccl-2faces: no result ($json)"; fi
else
  say "# hetccl-2faces skipped: TWO_FACES=0, or $rccl_face or $hip_over_cuda not built"
fi
if [ "$ngpus" -ge "$NPROC" ]; then
  run nccl-native 0 --backend nccl
  run hetccl-1dom 1 --backend nccl
  # Further rounds for the tokens/s ratio alone, the order swapped every
  # round: one pair of processes moves by several percent on a shared
  # machine.
  for r in $(seq 2 "${PARITY_ROUNDS:-1}"); do
    if [ $((r % 2)) = 0 ]; then
      run "hetccl-1dom.r$r" 1 --backend nccl
      run "nccl-native.r$r" 0 --backend nccl
    else
      run "nccl-native.r$r" 0 --backend nccl
      run "hetccl-1dom.r$r" 1 --backend nccl
    fi
  done
  passthrough=1
else
  say "# pass-through runs skipped: $ngpus GPU(s) for $NPROC ranks"
  passthrough=0
fi

# The comparisons: prints the table and the verdicts; exits with the number
# of failures (a crash of the script itself counts as at least one).
"$PYTHON" - "$OUT" "$passthrough" "$two_faces" <<'EOF' 2>&1 | tee -a "$summary"
import json, math, os, sys

out, passthrough, two_faces = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def load(name):
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except ValueError as e:
        fail("%s: unreadable JSON: %s" % (name, e))
        return None


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


names = (["gloo", "hetccl-2dom"] + (["hetccl-2faces"] if two_faces else []) +
         (["nccl-native", "hetccl-1dom"] if passthrough else []))
runs = {n: load(n) for n in names}
print("")
print("%-12s %-7s %5s %-7s %6s %9s %9s %12s %8s %6s %5s" % (
    "run", "backend", "ranks", "domains", "steps", "loss[0]", "loss[-1]", "tokens/s", "seconds", "colls", "face"))
for name in names:
    r = runs[name]
    if r is None:
        print("%-12s (no result)" % name)
        continue
    losses = r.get("losses") or []
    print("%-12s %-7s %5s %-7s %6s %9s %9s %12s %8s %6s %5s" % (
        name, r.get("backend"), r.get("world_size"), "1/rank" if r.get("hetccl_domain") else "-",
        r.get("steps"), fmt(losses[0] if losses else None, ".4f"), fmt(losses[-1] if losses else None, ".4f"),
        fmt(r.get("tokens_per_s"), ".0f"), fmt(r.get("seconds"), ".3f"),
        "ok" if r.get("collectives_ok") else "FAIL", {True: "yes", False: "no", None: "-"}[r.get("hetccl_face")]))
print("")

for name in names:
    r = runs[name]
    if r is None:
        continue
    if not r.get("collectives_ok"):
        fail("%s: collective checks failed: %s" % (name, "; ".join(r.get("collective_errors") or ["?"])[:2000]))
    vals = (r.get("losses") or []) + (r.get("avg_losses") or [])
    if len(r.get("losses") or []) != r.get("steps") or not all(
            isinstance(v, float) and math.isfinite(v) for v in vals):
        fail("%s: losses missing or not finite" % name)
    want_face = name.startswith("hetccl")
    if r.get("backend") == "nccl" and r.get("hetccl_face") is not want_face:
        fail("%s: HetCCL's face %s, expected %s (LD_PRELOAD not effective or leaking in?)"
             % (name, {True: "in use", False: "not in use", None: "unknown"}[r.get("hetccl_face")],
                "in use" if want_face else "not in use"))
    if r.get("nccl_version"):
        print("%s: NCCL version %s, torch %s, %s" % (name, r["nccl_version"], r.get("torch_version"), r.get("gpu")))


def ratio(num, den):
    a, b = num.get("tokens_per_s"), den.get("tokens_per_s")
    return a / b if a and b else None


# b, d vs a: HetCCL across domains against gloo.
def against_gloo(name):
    a, b = runs["gloo"], runs.get(name)
    if a is None or b is None:
        return

    la, lb = a.get("losses") or [], b.get("losses") or []
    if len(la) != len(lb) or not la:
        fail(name + " vs gloo: %d and %d losses" % (len(lb), len(la)))
    else:
        rel = [abs(y - x) / max(1.0, abs(x)) for x, y in zip(la, lb)]
        worst = max(range(len(rel)), key=lambda i: rel[i])
        bad = [i for i, v in enumerate(rel) if not v <= 1e-3]
        ga, gb = a.get("avg_losses") or [], b.get("avg_losses") or []
        avg_rel = max((abs(y - x) / max(1.0, abs(x)) for x, y in zip(ga, gb)), default=float("nan"))
        exact = sum(1 for x, y in zip(la, lb) if x == y)
        print(name + " vs gloo: rank 0's loss, max relative difference %.3g (step %d: %.7g vs %.7g), "
              "%d of %d steps equal; averaged loss: max relative difference %.3g"
              % (rel[worst], worst, lb[worst], la[worst], exact, len(la), avg_rel))
        if bad:
            fail(name + " vs gloo: %d steps beyond 1e-3 * max(1, |loss|), first at step %d" % (len(bad), bad[0]))
        else:
            print(name + " vs gloo: PASS (every step within 1e-3 * max(1, |loss|))")
    q = ratio(b, a)
    print(name + " vs gloo: tokens/s ratio %s (aim >= 5: %s)"
          % (fmt(q, ".2f"), "-" if q is None else ("met" if q >= 5 else "not met")))


a, b = runs["gloo"], runs["hetccl-2dom"]
against_gloo("hetccl-2dom")
if two_faces:
    against_gloo("hetccl-2faces")
if b is not None:
    if "fsdp_losses" in b:
        fl = b["fsdp_losses"]
        first = (b.get("losses") or [None])[0]
        print("hetccl-2dom FSDP: %d steps, losses %s; step 0 vs DDP step 0: %s"
              % (len(fl), ", ".join("%.6f" % v for v in fl),
                 "-" if first is None or not fl else ("equal" if fl[0] == first else "differ by %.3g" % (fl[0] - first))))
    elif "fsdp_error" in b:
        print("hetccl-2dom FSDP: error (reported, not a failure): %s" % str(b["fsdp_error"])[:2000])

# c: pass-through against native NCCL, bitwise.
if passthrough:
    n, h = runs["nccl-native"], runs["hetccl-1dom"]
    if n is not None and h is not None:
        for key in ("losses", "avg_losses"):
            ln, lh = n.get(key) or [], h.get(key) or []
            if len(ln) != len(lh) or not ln:
                fail("hetccl-1dom vs nccl-native: %s: %d and %d values" % (key, len(lh), len(ln)))
                continue
            diff = [i for i, (x, y) in enumerate(zip(ln, lh)) if float(x).hex() != float(y).hex()]
            if diff:
                i = diff[0]
                fail("hetccl-1dom vs nccl-native: %s differ at %d of %d steps, first at step %d: %r vs %r"
                     % (key, len(diff), len(ln), i, lh[i], ln[i]))
            else:
                print("hetccl-1dom vs nccl-native: %s bitwise equal at all %d steps: PASS" % (key, len(ln)))
        # Every round's ratio (round 1 is the pair above). With several
        # rounds the ratio reported is that of the geometric means of all
        # face runs and all native runs: the order swaps every round, so
        # with an even number of rounds a place in the order that runs
        # slower (seen: the second of a pair) weighs on both sides alike.
        pairs, r = [(n, h)], 2
        while os.path.exists(os.path.join(out, "nccl-native.r%d.json" % r)):
            pairs.append((load("nccl-native.r%d" % r), load("hetccl-1dom.r%d" % r)))
            r += 1
        qs = [ratio(hr, nr) if nr and hr else None for nr, hr in pairs]
        both = [(nr["tokens_per_s"], hr["tokens_per_s"]) for nr, hr in pairs
                if nr and hr and nr.get("tokens_per_s") and hr.get("tokens_per_s")]
        q = qs[0]
        if len(pairs) > 1:
            print("hetccl-1dom vs nccl-native: tokens/s ratio per round: %s" % ", ".join(fmt(v, ".4f") for v in qs))
            q = math.exp(sum(math.log(b) - math.log(a) for a, b in both) / len(both)) if both else None
        print("hetccl-1dom vs nccl-native: tokens/s ratio %s%s (aim >= 0.99: %s)"
              % (fmt(q, ".4f"), " (geometric means over %d rounds%s)" % (
                  len(both), "" if len(both) % 2 == 0 else ", odd: the order does not balance") if len(pairs) > 1 else "",
                 "-" if q is None else ("met" if q >= 0.99 else "not met")))

sys.exit(min(len(failures), 100))  # the number of failures
EOF
rc=${PIPESTATUS[0]}
failures=$((failures + rc))

say ""
say "total $(elapsed); logs in $OUT"
if [ $failures -ne 0 ]; then
  say "$failures failures"
  exit 1
fi
say "all passed"
exit 0
