# AMD device kernels: src/device/kernels/reduce.cu compiled by clang as HIP,
# device code only and header-free (-nogpuinc -nogpulib: compiler builtins,
# no HIP headers, no ROCm device libraries), into one ELF code object per
# architecture, each embedded into libhetccl with .incbin and listed in a
# generated table that src/device/kernels/hip_images.c searches by the
# device's architecture name (hetccl_kernels_hip_image).
#
# Without a working clang the table is absent: hip_images.c then reports no
# architectures, and the library builds the same otherwise.
#
# Included from cmake/kernels.cmake. Settings:
#   HETCCL_HIP_KERNELS  ON: build the AMD code objects when clang works
#   HETCCL_HIP_CLANG    the clang++ (Debian's clang-19: /usr/lib/llvm-19/bin)
#   HETCCL_HIP_CLANG_EXTRA  a newer clang++ (Debian's clang-22 from
#                       bookworm-security, when installed) that builds the
#                       architectures HETCCL_HIP_CLANG refuses (gfx950)
#   HETCCL_HIP_ARCHS    processors to build for; those neither compiler
#                       builds are skipped with a message
#   HETCCL_HIP_PREBUILT_DIR  a folder of code objects built from this same
#                       source on another machine (scripts/hip-prebuild.sh):
#                       hetccl_kernels_<arch>.co and source.sha256; used in
#                       place of compiling, for a machine without clang-19
#                       (the H200 runs). Refused when source.sha256 is not
#                       the SHA-256 of src/device/kernels/reduce.cu.

option(HETCCL_HIP_KERNELS "Build the AMD kernels when clang (HIP, header-free) is found" ON)
set(HETCCL_HIP_ARCHS "gfx908;gfx90a;gfx942;gfx950;gfx1030;gfx1100;gfx1101;gfx1200;gfx1201"
    CACHE STRING "AMD architectures of the HIP kernels")

set(HETCCL_HIP_KERNELS_BUILT OFF)
set(_hh_src ${CMAKE_SOURCE_DIR}/src/device/kernels/reduce.cu)
set(_hh_dir ${CMAKE_BINARY_DIR}/kernels/hip)
# Header-free HIP, device code only, one raw ELF per architecture.
# -ffp-contract=off: never fuse a multiply-add (the host rounds the product);
# correctly rounded fp32 division, as the host's.
set(_hh_flags -x hip --cuda-device-only -nogpuinc -nogpulib --no-gpu-bundle-output
    -O3 -mcode-object-version=5 -ffp-contract=off -fhip-fp32-correctly-rounded-divide-sqrt
    -fno-gpu-rdc -Wall -Wextra -Werror)

set(HETCCL_HIP_PREBUILT_DIR "" CACHE PATH "AMD code objects built elsewhere from this source (see above)")
if(HETCCL_HIP_PREBUILT_DIR)
  file(SHA256 ${_hh_src} _hh_sum)
  set(_hh_sum_file ${HETCCL_HIP_PREBUILT_DIR}/source.sha256)
  if(NOT EXISTS ${_hh_sum_file})
    message(FATAL_ERROR "HETCCL_HIP_PREBUILT_DIR=${HETCCL_HIP_PREBUILT_DIR} has no source.sha256")
  endif()
  file(READ ${_hh_sum_file} _hh_their_sum)
  string(STRIP "${_hh_their_sum}" _hh_their_sum)
  if(NOT _hh_their_sum STREQUAL _hh_sum)
    message(FATAL_ERROR "HETCCL_HIP_PREBUILT_DIR: its code objects were built from another reduce.cu "
      "(${_hh_their_sum}, this one is ${_hh_sum}); rebuild them with scripts/hip-prebuild.sh")
  endif()
endif()

if(HETCCL_HIP_KERNELS AND NOT HETCCL_HIP_PREBUILT_DIR)
  find_program(HETCCL_HIP_CLANG NAMES clang++-19 clang++
    PATHS /usr/lib/llvm-19/bin NO_DEFAULT_PATH)
  if(NOT HETCCL_HIP_CLANG)
    find_program(HETCCL_HIP_CLANG NAMES clang++-19)
  endif()
  find_program(HETCCL_HIP_CLANG_EXTRA NAMES clang++-22 clang++
    PATHS /usr/lib/llvm-22/bin NO_DEFAULT_PATH)
endif()

if(NOT HETCCL_HIP_KERNELS)
  message(STATUS "HetCCL: AMD kernels disabled (HETCCL_HIP_KERNELS=OFF)")
elseif(NOT HETCCL_HIP_CLANG AND NOT HETCCL_HIP_PREBUILT_DIR)
  message(STATUS "HetCCL: clang-19 not found; the AMD kernels are not built (scripts/install-deps.sh installs it)")
else()
  # Keep the architectures a compiler builds: compile and link a one-line
  # kernel for each, with HETCCL_HIP_CLANG, else HETCCL_HIP_CLANG_EXTRA;
  # once per compilers and list.
  set(_hh_key "${HETCCL_HIP_CLANG}|${HETCCL_HIP_CLANG_EXTRA}|${HETCCL_HIP_ARCHS}")
  if(HETCCL_HIP_PREBUILT_DIR)
    # The architectures are those whose code object the folder holds.
    set(_hh_ok)
    foreach(_a ${HETCCL_HIP_ARCHS})
      if(EXISTS ${HETCCL_HIP_PREBUILT_DIR}/hetccl_kernels_${_a}.co)
        list(APPEND _hh_ok ${_a})
      endif()
    endforeach()
    set(HETCCL_HIP_ARCHS_OK "${_hh_ok}" CACHE INTERNAL "AMD architectures built")
    set(HETCCL_HIP_PROBED_KEY "prebuilt" CACHE INTERNAL "compilers and list the probe ran for")
    message(STATUS "HetCCL: AMD kernels prebuilt in ${HETCCL_HIP_PREBUILT_DIR}, from this reduce.cu")
    file(MAKE_DIRECTORY ${_hh_dir})
    # A changed reduce.cu re-runs the check above.
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_hh_src})
  elseif(NOT "${_hh_key}" STREQUAL "${HETCCL_HIP_PROBED_KEY}")
    file(MAKE_DIRECTORY ${_hh_dir})
    set(_hh_probe ${_hh_dir}/probe.hip)
    file(WRITE ${_hh_probe} "extern \"C\" __attribute__((global)) void hetccl_probe(int *p) { *p = 1; }\n")
    set(_hh_ok)
    set(_hh_with)
    foreach(_a ${HETCCL_HIP_ARCHS})
      set(_why "")
      foreach(_cc ${HETCCL_HIP_CLANG} ${HETCCL_HIP_CLANG_EXTRA})
        execute_process(COMMAND ${_cc} ${_hh_flags} --offload-arch=${_a} -c ${_hh_probe} -o ${_hh_dir}/probe-${_a}.co
          RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_VARIABLE _err)
        file(REMOVE ${_hh_dir}/probe-${_a}.co)
        if(_rc EQUAL 0)
          list(APPEND _hh_ok ${_a})
          list(APPEND _hh_with ${_cc})
          if(NOT _cc STREQUAL HETCCL_HIP_CLANG)
            message(STATUS "HetCCL: ${_a} built by ${_cc} (${HETCCL_HIP_CLANG} cannot)")
          endif()
          break()
        endif()
        string(REGEX REPLACE "\n.*" "" _err "${_err}")
        string(APPEND _why " ${_cc}: ${_err}")
      endforeach()
      if(NOT _a IN_LIST _hh_ok)
        message(STATUS "HetCCL: no compiler builds ${_a}; skipped (${_why})")
      endif()
    endforeach()
    set(HETCCL_HIP_ARCHS_OK "${_hh_ok}" CACHE INTERNAL "AMD architectures built")
    set(HETCCL_HIP_ARCHS_WITH "${_hh_with}" CACHE INTERNAL "the compiler of each of HETCCL_HIP_ARCHS_OK")
    set(HETCCL_HIP_PROBED_KEY "${_hh_key}" CACHE INTERNAL "compilers and list the probe ran for")
  endif()

  if(NOT HETCCL_HIP_ARCHS_OK)
    message(STATUS "HetCCL: ${HETCCL_HIP_CLANG} builds none of HETCCL_HIP_ARCHS (${HETCCL_HIP_ARCHS}); AMD kernels not built")
  else()
    string(REPLACE ";" " " _hh_arch_text "${HETCCL_HIP_ARCHS_OK}")
    message(STATUS "HetCCL: AMD kernels for ${_hh_arch_text}")
    set(_hh_objects)
    set(_hh_asm "")
    set(_hh_decl "")
    set(_hh_rows "")
    foreach(_a ${HETCCL_HIP_ARCHS_OK})
      if(HETCCL_HIP_PREBUILT_DIR)
        set(_co ${_hh_dir}/hetccl_kernels_${_a}.co)
        add_custom_command(OUTPUT ${_co}
          COMMAND ${CMAKE_COMMAND} -E copy ${HETCCL_HIP_PREBUILT_DIR}/hetccl_kernels_${_a}.co ${_co}
          DEPENDS ${HETCCL_HIP_PREBUILT_DIR}/hetccl_kernels_${_a}.co
          COMMENT "AMD kernels for ${_a}: prebuilt"
          VERBATIM)
      else()
        list(FIND HETCCL_HIP_ARCHS_OK ${_a} _i)
        list(GET HETCCL_HIP_ARCHS_WITH ${_i} _cc)
        set(_co ${_hh_dir}/hetccl_kernels_${_a}.co)
        add_custom_command(OUTPUT ${_co}
          COMMAND ${_cc} ${_hh_flags} --offload-arch=${_a} -c ${_hh_src} -o ${_co}
          DEPENDS ${_hh_src}
          COMMENT "clang: AMD kernels for ${_a}"
          VERBATIM)
      endif()
      list(APPEND _hh_objects ${_co})
      set(_s hetccl_kernels_hip_${_a})
      string(APPEND _hh_asm
        "        \".balign 256\\n\"\n"
        "        \".globl ${_s}\\n.hidden ${_s}\\n.type ${_s}, @object\\n${_s}:\\n\"\n"
        "        \".incbin \\\"${_co}\\\"\\n\"\n"
        "        \".globl ${_s}_end\\n.hidden ${_s}_end\\n${_s}_end:\\n\"\n")
      string(APPEND _hh_decl "extern const unsigned char ${_s}[] HIDDEN, ${_s}_end[] HIDDEN;\n")
      string(APPEND _hh_rows "    {\"${_a}\", ${_s}, ${_s}_end},\n")
    endforeach()
    list(LENGTH HETCCL_HIP_ARCHS_OK _hh_count)
    add_custom_target(hetccl_kernels_hip DEPENDS ${_hh_objects})

    # Code objects go in with the assembler's .incbin, as the CUDA fatbin
    # does; the table names each one's bounds. Hidden: internal to the library.
    set(_hh_embed ${CMAKE_BINARY_DIR}/kernels/hetccl_kernels_hip.c)
    file(CONFIGURE OUTPUT ${_hh_embed} CONTENT [=[
/* Generated by cmake/kernels_hip.cmake: the AMD kernels, embedded. Do not edit. */
#include "device/kernels/hip_images.h"

#define HIDDEN __attribute__((visibility("hidden")))

__asm__(".pushsection .rodata.hetccl_kernels_hip, \"a\", @progbits\n"
@_hh_asm@        ".byte 0\n"
        ".popsection\n");

@_hh_decl@
const struct hetccl_hip_image hetccl_kernels_hip_table[] = {
@_hh_rows@};
const int hetccl_kernels_hip_count = @_hh_count@;
const char hetccl_kernels_hip_arch_list[] = "@_hh_arch_text@";
]=] @ONLY)
    set_source_files_properties(${_hh_embed} PROPERTIES OBJECT_DEPENDS "${_hh_objects}")
    target_sources(hetccl_objects PRIVATE ${_hh_embed})
    add_dependencies(hetccl_objects hetccl_kernels_hip)
    target_compile_definitions(hetccl_objects PRIVATE HETCCL_HAVE_HIP_KERNELS=1)
    set(HETCCL_HIP_KERNELS_BUILT ON)
    # For the tests: where the code objects are.
    set(HETCCL_HIP_KERNELS_DIR ${_hh_dir})
  endif()
endif()
