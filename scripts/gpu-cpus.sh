# shellcheck shell=bash
# Sourced by the nccl-tests timing scripts: CPU sets for pinning a
# one-GPU benchmark process with taskset.
#   gpu_local_cpus        the first GPU's NUMA-local CPU list (sysfs
#                         local_cpulist of its PCI function; all CPUs when
#                         unknown), expanded one per line
#   gpu_pin_set MODE      none: nothing; one: one core of that list (not
#                         the first, which takes most interrupts); two: two
#                         cores that are not SMT siblings of each other
expand_cpu_list() { # "0-3,8" -> 0 1 2 3 8, one per line
  tr ',' '\n' <<<"$1" | while IFS=- read -r a b; do
    [ -n "$a" ] && seq "$a" "${b:-$a}"
  done
}

gpu_local_cpus() {
  local bus list
  bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null | head -n 1 | tr 'A-Z' 'a-z')
  bus=${bus#0000}
  list=$(cat "/sys/bus/pci/devices/${bus}/local_cpulist" 2>/dev/null)
  [ -n "$list" ] || list=$(cat /sys/devices/system/cpu/online)
  expand_cpu_list "$list"
}

gpu_pin_set() {
  local cpus first second sib
  mapfile -t cpus < <(gpu_local_cpus)
  case $1 in
  none) echo "" ;;
  one) echo "${cpus[1]:-${cpus[0]}}" ;;
  two)
    first=${cpus[1]:-${cpus[0]}}
    sib=$(expand_cpu_list "$(cat "/sys/devices/system/cpu/cpu$first/topology/thread_siblings_list" 2>/dev/null)")
    for c in "${cpus[@]:2}"; do
      grep -qx "$c" <<<"$sib" || { second=$c; break; }
    done
    echo "$first${second:+,$second}"
    ;;
  *) echo "$1" ;;
  esac
}
