#!/usr/bin/env bash
# Draws the GPU plots of BENCHMARKS.md from the numbers recorded there (the
# data files beside this script). Needs python3 and gnuplot (Debian:
# gnuplot-nox, installed by scripts/install-deps.sh).
# usage: bash docs/img/data/draw.sh [OUT-DIR]   (default: docs/img)
set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-$root/docs/img}
plot="python3 $root/scripts/plot-bench"
d=$here
$plot -o "$out/bench-gpu-passthrough-nccl.png" \
  --title "Pass-through against NCCL alone, one rank on one H200, 2026-12-01" \
  "AllReduce, HetCCL=$d/passthrough-allreduce-hetccl.txt" "AllReduce, NCCL=$d/passthrough-allreduce-nccl.txt" \
  "Send/Recv, HetCCL=$d/passthrough-sendrecv-hetccl.txt" "Send/Recv, NCCL=$d/passthrough-sendrecv-nccl.txt"
$plot -o "$out/bench-gpu-cuda-host.png" \
  --title "cuda rank + host rank against two host ranks, one H200, 6ee78ea, means of 3 runs" \
  "AllReduce cuda+host, window kernel=$d/cuda-host-allreduce-kernel.txt" \
  "AllReduce cuda+host, stream waits=$d/cuda-host-allreduce-streamwaits.txt" \
  "AllReduce host+host=$d/host-host-allreduce.txt" \
  "Send/Recv cuda+host, window kernel=$d/cuda-host-sendrecv-kernel.txt" \
  "Send/Recv host+host=$d/host-host-sendrecv.txt"
$plot -o "$out/bench-gpu-crossdomain-pcie.png" \
  --title "AllReduce across two cuda domains on one H200 against the PCIe limit, de5bd87" \
  "HetCCL cuda:d0 + cuda:d1=$d/crossdomain-pcie-hetccl.txt" "PCIe limit (pciebench both ways / 2)=$d/crossdomain-pcie-limit.txt"
$plot -o "$out/bench-gpu-ddp-gloo.png" --ylabel "tokens/s" \
  --title "PyTorch DDP, 2 ranks on one H200: HetCCL against Gloo in the same run" --bars "$d/ddp-gloo.tsv"
