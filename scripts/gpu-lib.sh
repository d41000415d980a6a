# Sourced by the short GPU-run scripts (gpu-focus.sh, gpu-hosttime.sh):
# what each of them set up and ran alike.
#   gpu_setup SUBDIR   cd to the repository; BUILD (build-gpu), LOGS ($OUT or
#                      $BUILD/SUBDIR), NCCL_NVLS_ENABLE=0, the PyTorch NCCL
#                      as HETCCL_NCCL_LIBRARY when present; starts el's clock
#   el                 seconds since gpu_setup, for progress lines
#   gpu_test [VAR=VALUE...] -- LAYOUT COUNTS
#                      test_gpu_collectives (limit: GPU_TEST_TIMEOUT s, 150);
#                      output to $LOGS/tests.txt, one summary line, and a
#                      failure counted in `fails` (set by the caller)
gpu_setup() {
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  cd "$repo" || exit 1
  BUILD=${BUILD:-build-gpu}
  LOGS=${OUT:-$BUILD/$1}
  mkdir -p "$LOGS"
  export NCCL_NVLS_ENABLE=0
  local torch_nccl=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
  [ -z "${HETCCL_NCCL_LIBRARY:-}" ] && [ -f "$torch_nccl" ] && export HETCCL_NCCL_LIBRARY=$torch_nccl
  gpu_t0=$(date +%s)
}

el() { echo "$(($(date +%s) - gpu_t0)) s"; }

gpu_test() {
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local out rc
  out=$(env "${envs[@]}" timeout -k 5 "${GPU_TEST_TIMEOUT:-150}" "$BUILD/bin/test_gpu_collectives" --layout "$1" \
    --counts "$2" 2>&1)
  rc=$?
  echo "$out" >>"$LOGS/tests.txt"
  echo "test_gpu_collectives ${envs[*]} --layout $1: $(grep -E '^[0-9]+ passed' <<<"$out" | tail -n 1) (exit $rc, $(el))"
  [ $rc -eq 0 ] || { fails=$((fails + 1)); grep -m 5 FAIL <<<"$out" | cut -c1-240; }
}
