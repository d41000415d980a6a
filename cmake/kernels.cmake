# Device kernels: src/device/kernels/reduce.cu compiled by nvcc into one
# fatbin and embedded into libhetccl (and hetccl_internal) through the
# hetccl_objects OBJECT library.
#
# The project does not enable CUDA as a CMake language: nvcc runs as a custom
# command when it is found, so a machine without CUDA configures and builds
# the same library, minus the kernels (hetccl_kernels_cuda_archs() then
# returns NULL and hetccl-info says so). Nothing links to libcuda or libnccl.
#
# Include from the top-level CMakeLists.txt after hetccl_objects is defined:
#   include(cmake/kernels.cmake)
# The AMD code objects of the same source come from cmake/kernels_hip.cmake,
# included at the end.
#
# Settings:
#   HETCCL_CUDA_KERNELS    ON: build the kernels when nvcc works (default)
#   HETCCL_NVCC            path of nvcc (found in CUDA_HOME, CUDA_PATH,
#                          /usr/local/cuda/bin or PATH)
#   HETCCL_CUDA_ARCHS      real architectures (SASS) to build, those this
#                          nvcc knows are kept
#   HETCCL_CUDA_PTX_ARCH   the virtual architecture embedded as PTX, which
#                          newer GPUs compile at load time

option(HETCCL_CUDA_KERNELS "Build the CUDA kernels when nvcc is found" ON)
set(HETCCL_CUDA_ARCHS "70;75;80;86;89;90;100" CACHE STRING "SM architectures of the CUDA kernels")
set(HETCCL_CUDA_PTX_ARCH "90" CACHE STRING "Virtual architecture of the CUDA kernels' embedded PTX")

set(HETCCL_CUDA_KERNELS_BUILT OFF)
set(_hk_src ${CMAKE_SOURCE_DIR}/src/device/kernels/reduce.cu)

if(HETCCL_CUDA_KERNELS)
  find_program(HETCCL_NVCC nvcc
    HINTS ENV CUDA_HOME ENV CUDA_PATH
    PATH_SUFFIXES bin
    PATHS /usr/local/cuda/bin)
endif()

if(NOT HETCCL_CUDA_KERNELS)
  message(STATUS "HetCCL: CUDA kernels disabled (HETCCL_CUDA_KERNELS=OFF)")
elseif(NOT HETCCL_NVCC)
  message(STATUS "HetCCL: nvcc not found; the CUDA kernels are not built (cuda ranks cannot reduce across domains)")
else()
  # Keep the architectures this nvcc can build (CUDA 13 dropped sm_70).
  execute_process(COMMAND ${HETCCL_NVCC} --list-gpu-code OUTPUT_VARIABLE _hk_codes RESULT_VARIABLE _hk_rc ERROR_QUIET)
  execute_process(COMMAND ${HETCCL_NVCC} --list-gpu-arch OUTPUT_VARIABLE _hk_virt ERROR_QUIET)
  string(REGEX MATCHALL "sm_[0-9]+[a-z]?" _hk_codes "${_hk_codes}")
  string(REGEX MATCHALL "compute_[0-9]+[a-z]?" _hk_virt "${_hk_virt}")
  set(_hk_gencode)
  set(_hk_names)
  set(_hk_dropped)
  foreach(_a ${HETCCL_CUDA_ARCHS})
    if("sm_${_a}" IN_LIST _hk_codes AND "compute_${_a}" IN_LIST _hk_virt)
      list(APPEND _hk_gencode "-gencode=arch=compute_${_a},code=sm_${_a}")
      list(APPEND _hk_names "sm_${_a}")
    else()
      list(APPEND _hk_dropped "sm_${_a}")
    endif()
  endforeach()
  if(HETCCL_CUDA_PTX_ARCH AND "compute_${HETCCL_CUDA_PTX_ARCH}" IN_LIST _hk_virt)
    list(APPEND _hk_gencode "-gencode=arch=compute_${HETCCL_CUDA_PTX_ARCH},code=compute_${HETCCL_CUDA_PTX_ARCH}")
    list(APPEND _hk_names "compute_${HETCCL_CUDA_PTX_ARCH}")
  endif()

  # A working nvcc (it needs a host compiler too): try a one-line kernel once.
  if(_hk_names AND NOT DEFINED HETCCL_NVCC_WORKS)
    set(_hk_probe ${CMAKE_BINARY_DIR}/kernels/probe.cu)
    file(WRITE ${_hk_probe} "extern \"C\" __global__ void hetccl_probe(int *p) { *p = 1; }\n")
    list(GET _hk_gencode 0 _hk_first)
    execute_process(COMMAND ${HETCCL_NVCC} -fatbin ${_hk_first} -o ${CMAKE_BINARY_DIR}/kernels/probe.fatbin ${_hk_probe}
      RESULT_VARIABLE _hk_probe_rc OUTPUT_QUIET ERROR_VARIABLE _hk_probe_err)
    if(_hk_probe_rc EQUAL 0)
      set(HETCCL_NVCC_WORKS ON CACHE INTERNAL "nvcc compiles a kernel")
    else()
      set(HETCCL_NVCC_WORKS OFF CACHE INTERNAL "nvcc compiles a kernel")
      message(STATUS "HetCCL: ${HETCCL_NVCC} cannot compile a kernel here: ${_hk_probe_err}")
    endif()
  endif()

  if(NOT _hk_rc EQUAL 0 OR NOT _hk_names)
    message(STATUS "HetCCL: ${HETCCL_NVCC} builds none of HETCCL_CUDA_ARCHS (${HETCCL_CUDA_ARCHS}); CUDA kernels not built")
  elseif(NOT HETCCL_NVCC_WORKS)
    message(STATUS "HetCCL: CUDA kernels not built (nvcc does not work here)")
  else()
    string(REPLACE ";" " " _hk_arch_text "${_hk_names}")
    if(_hk_dropped)
      string(REPLACE ";" " " _hk_dropped_text "${_hk_dropped}")
      message(STATUS "HetCCL: ${HETCCL_NVCC} cannot build ${_hk_dropped_text}; skipped")
    endif()
    message(STATUS "HetCCL: CUDA kernels for ${_hk_arch_text}")

    set(_hk_fatbin ${CMAKE_BINARY_DIR}/kernels/hetccl_kernels_cuda.fatbin)
    set(_hk_embed ${CMAKE_BINARY_DIR}/kernels/hetccl_kernels_cuda.c)
    # --fmad=false: the kernels round every product before adding, as the
    # host does (they use explicit _rn intrinsics too; this guards edits).
    add_custom_command(OUTPUT ${_hk_fatbin}
      COMMAND ${HETCCL_NVCC} -fatbin --fmad=false --threads 0 ${_hk_gencode} -o ${_hk_fatbin} ${_hk_src}
      DEPENDS ${_hk_src}
      COMMENT "nvcc: CUDA kernels for ${_hk_arch_text}"
      VERBATIM)
    add_custom_target(hetccl_kernels_cuda DEPENDS ${_hk_fatbin})

    # The fatbin goes in with the assembler's .incbin: a small C file however
    # large the fatbin, rebuilt when it changes. Hidden symbols: the kernels
    # are internal to the library.
    set(_hk_embed_text [=[
/* Generated by cmake/kernels.cmake: the CUDA kernels, embedded. Do not edit. */
__asm__(".pushsection .rodata.hetccl_kernels_cuda, \"a\", @progbits\n"
        ".balign 64\n"
        ".globl hetccl_kernels_cuda_fatbin\n"
        ".hidden hetccl_kernels_cuda_fatbin\n"
        ".type hetccl_kernels_cuda_fatbin, @object\n"
        "hetccl_kernels_cuda_fatbin:\n"
        ".incbin \"@_hk_fatbin@\"\n"
        ".globl hetccl_kernels_cuda_fatbin_end\n"
        ".hidden hetccl_kernels_cuda_fatbin_end\n"
        "hetccl_kernels_cuda_fatbin_end:\n"
        ".byte 0\n"
        ".popsection\n");

extern const char hetccl_kernels_cuda_arch_list[] __attribute__((visibility("hidden")));
const char hetccl_kernels_cuda_arch_list[] = "@_hk_arch_text@";
]=])
    file(CONFIGURE OUTPUT ${_hk_embed} CONTENT "${_hk_embed_text}" @ONLY)
    set_source_files_properties(${_hk_embed} PROPERTIES OBJECT_DEPENDS ${_hk_fatbin})
    target_sources(hetccl_objects PRIVATE ${_hk_embed})
    add_dependencies(hetccl_objects hetccl_kernels_cuda)
    target_compile_definitions(hetccl_objects PRIVATE HETCCL_HAVE_CUDA_KERNELS=1)
    set(HETCCL_CUDA_KERNELS_BUILT ON)
  endif()
endif()

# The AMD kernels (clang-19, header-free HIP): their own file.
include(${CMAKE_CURRENT_LIST_DIR}/kernels_hip.cmake)
