#!/usr/bin/env bash
# One torchrun worker of the "two faces" DDP run (scripts/torch-check.sh,
# run hetccl-2faces), for NVIDIA machines: started as
#   torchrun --no-python ... tests/gpu/two_faces_worker.sh PYTHON SCRIPT ARGS...
# Even local ranks: HetCCL's NCCL face (libnccl.so.2) preloaded, a cuda rank.
# Odd local ranks: HetCCL's RCCL face (librccl.so.1) preloaded (PyTorch's
# nccl* calls bind to it by name), HETCCL_DEVICE=hip over the stand-in HIP
# runtime over the CUDA driver (a test tool), with NVIDIA's NCCL standing in
# for RCCL (HETCCL_RCCL_LIBRARY). The two kinds are two domains; the run
# proves the faces agree on the wire and the hip kind's path (device ops,
# windows, RCCL instance) carries PyTorch's real CUDA buffers and streams.
# It proves nothing about AMD hardware or the real HIP runtime.
# Environment: TWO_FACES_NCCL_FACE, TWO_FACES_RCCL_FACE (the faces' files),
# TWO_FACES_HIP (the stand-in libamdhip64.so), TWO_FACES_RCCL (the NCCL
# library that stands in for RCCL), TWO_FACES_MARKER (1: HetCCL hands the
# stand-in a marker image, for builds without AMD code objects; default 0).
set -u
: "${LOCAL_RANK:?run under torchrun}" "${TWO_FACES_NCCL_FACE:?}" "${TWO_FACES_RCCL_FACE:?}" "${TWO_FACES_HIP:?}" \
  "${TWO_FACES_RCCL:?}"
if [ $((LOCAL_RANK % 2)) -eq 0 ]; then
  export HETCCL_DEVICE=cuda
  face=$TWO_FACES_NCCL_FACE
else
  export HETCCL_DEVICE=hip HETCCL_HIP_LIBRARY=$TWO_FACES_HIP HETCCL_RCCL_LIBRARY=$TWO_FACES_RCCL
  export HETCCL_TEST_HIP_MARKER_IMAGE=${TWO_FACES_MARKER:-0}
  face=$TWO_FACES_RCCL_FACE
fi
export LD_PRELOAD=$face${LD_PRELOAD:+:$LD_PRELOAD}
exec "$@"
