/*
 * The vendor libraries HetCCL searches for (lib_search.h): what each adds
 * to the common rule. Directories are tried in the order listed, after
 * LD_LIBRARY_PATH and the linker cache, before the system directories.
 */
#include "ccl/lib_search.h"

/* CUDA toolkits put NCCL in lib64 (older ones), lib (CUDA 13) or their
 * per-target folder; the NVIDIA HPC SDK keeps it under comm_libs. */
static const char *const g_nccl_dirs[] = {
    "/usr/local/cuda/lib64",
    "/usr/local/cuda/lib",
    "/usr/local/cuda/targets/*/lib",
    "/opt/nvidia/hpc_sdk/Linux_*/*/comm_libs/nccl/lib",
    "/opt/nvidia/hpc_sdk/Linux_*/*/comm_libs/*/nccl/lib",
    NULL,
};

const struct hetccl_lib_search hetccl_lib_nccl = {
    .name = "NCCL",
    .soname = "libnccl.so.2",
    .override_var = "HETCCL_NCCL_LIBRARY",
    .dirs = g_nccl_dirs,
    .site_dir = "nvidia/nccl/lib", /* the nvidia-nccl wheel PyTorch depends on */
};

/* ROCm installs RCCL under /opt/rocm (a link to the newest) or a
 * versioned /opt/rocm-X.Y.Z. */
static const char *const g_rccl_dirs[] = {
    "/opt/rocm/lib",
    "/opt/rocm-*/lib",
    NULL,
};

const struct hetccl_lib_search hetccl_lib_rccl = {
    .name = "RCCL",
    .soname = "librccl.so.1",
    .override_var = "HETCCL_RCCL_LIBRARY",
    .dirs = g_rccl_dirs,
    .site_dir = "torch/lib", /* PyTorch's ROCm wheels carry their own RCCL there */
};
