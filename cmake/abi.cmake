# HetCCL's faces: shared libraries that speak a vendor library's ABI over
# libhetccl.so (src/abi/README.md). One set of face sources; each face is
# one hetccl_add_face() call giving what differs between vendors (library
# name, soname version, file version, export map, install folder, the name
# in messages). lib/libnccl.so.2 (NCCL 2.30.7's API) and lib/librccl.so.1
# (RCCL 2.30.4's API: NCCL's names plus ncclAlltoAllv, ncclAllToAll,
# ncclAllToAllv, ncclAllReduceWithBias and the msccl* no-ops; NCCL's
# ncclConfig_t read by its size).
#
# Include from the top-level CMakeLists.txt after the hetccl target:
#   include(cmake/abi.cmake)
#
# Install layout (kept out of the default library path on purpose, so that
# installing HetCCL does not replace NVIDIA's NCCL for every program):
#   <libdir>/hetccl/libnccl.so.2   (RUNPATH $ORIGIN/.. finds libhetccl.so)
#   <libdir>/hetccl/librccl.so.1
#   <includedir>/hetccl/nccl.h, <includedir>/hetccl/rccl.h

file(GLOB HETCCL_ABI_FACE_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/abi/nccl_face*.c)

# src/abi sits under src/, whose glob feeds libhetccl's objects: the face's
# sources belong to the faces only.
get_target_property(_hetccl_abi_objs hetccl_objects SOURCES)
list(FILTER _hetccl_abi_objs EXCLUDE REGEX "/src/abi/")
set_property(TARGET hetccl_objects PROPERTY SOURCES ${_hetccl_abi_objs})
unset(_hetccl_abi_objs)

# hetccl_add_face(<target>
#   NAME <n>            library lib<n>.so.<SOVERSION>, lib<n>.so beside it
#   SOVERSION <s>       the vendor's soname version ("2": libnccl.so.2)
#   VERSION <x.y.z>     the vendor version spoken: file lib<n>.so.<x.y.z>,
#                       and <vendor>GetVersion's code x*10000+y*100+z
#   TITLE <text>        the vendor's name in the face's messages ("NCCL")
#   MAP <file>          the linker version script (what is exported)
#   INSTALL_DIR <dir>   where it is installed
#   [HEADER <file>]     the vendor header programs compile against,
#                       installed as <includedir>/hetccl/<its name>
#   [PKGCONFIG <file>]  a pkg-config template (<name>.pc.in), configured
#                       and installed as <libdir>/pkgconfig/<name>.pc)
#   [DEFINITIONS <d>...] more compile definitions for this face only
#                       (HETCCL_FACE_RCCL: RCCL's extra names and config
#                       layout, in src/abi/nccl_face_rccl.c and face_config)
# Compile definitions carry what the sources must not hard-code:
# HETCCL_FACE_VERSION_CODE and HETCCL_FACE_TITLE (src/abi/nccl_face.h).
function(hetccl_add_face target)
  cmake_parse_arguments(FACE "" "NAME;SOVERSION;VERSION;TITLE;MAP;INSTALL_DIR;HEADER;PKGCONFIG" "DEFINITIONS" ${ARGN})
  foreach(arg NAME SOVERSION VERSION TITLE MAP INSTALL_DIR)
    if(NOT DEFINED FACE_${arg})
      message(FATAL_ERROR "hetccl_add_face(${target}): ${arg} is required")
    endif()
  endforeach()
  if(NOT FACE_VERSION MATCHES "^([0-9]+)\\.([0-9]+)\\.([0-9]+)$")
    message(FATAL_ERROR "hetccl_add_face(${target}): VERSION ${FACE_VERSION} is not x.y.z")
  endif()
  # NCCL's code for 2.9 and later (RCCL uses the same rule): x*10000+y*100+z.
  math(EXPR code "${CMAKE_MATCH_1} * 10000 + ${CMAKE_MATCH_2} * 100 + ${CMAKE_MATCH_3}")

  add_library(${target} SHARED ${HETCCL_ABI_FACE_SOURCES})
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
  # The face never needs CUDA's headers: streams are opaque pointers to it.
  target_compile_definitions(${target} PRIVATE HETCCL_NCCL_NO_CUDA_RUNTIME
    HETCCL_FACE_VERSION_CODE=${code}
    HETCCL_FACE_TITLE="${FACE_TITLE}"
    ${FACE_DEFINITIONS})
  target_compile_options(${target} PRIVATE -fvisibility=hidden)
  target_link_libraries(${target} PRIVATE hetccl ${CMAKE_DL_LIBS})
  target_link_options(${target} PRIVATE -Wl,--version-script=${FACE_MAP} -Wl,--no-undefined)
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ${FACE_NAME}
    VERSION ${FACE_VERSION}
    SOVERSION ${FACE_SOVERSION}
    LINK_DEPENDS ${FACE_MAP}
    # $ORIGIN: the face finds libhetccl.so beside it wherever the build tree
    # is copied (GPU machines); installed, one level up.
    BUILD_RPATH "$ORIGIN"
    INSTALL_RPATH "$ORIGIN/..")
  install(TARGETS ${target} LIBRARY DESTINATION ${FACE_INSTALL_DIR})
  if(DEFINED FACE_HEADER)
    install(FILES ${FACE_HEADER} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hetccl)
  endif()
  if(DEFINED FACE_PKGCONFIG)
    get_filename_component(pc ${FACE_PKGCONFIG} NAME)
    string(REGEX REPLACE "\\.in$" "" pc ${pc})
    configure_file(${FACE_PKGCONFIG} ${CMAKE_BINARY_DIR}/${pc} @ONLY)
    install(FILES ${CMAKE_BINARY_DIR}/${pc} DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
  endif()
endfunction()

hetccl_add_face(nccl_face
  NAME nccl
  SOVERSION 2
  VERSION 2.30.7
  TITLE "NCCL"
  MAP ${CMAKE_SOURCE_DIR}/src/abi/nccl_face.map
  INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/hetccl
  HEADER ${CMAKE_SOURCE_DIR}/include/nccl/nccl.h
  PKGCONFIG ${CMAKE_SOURCE_DIR}/cmake/hetccl-nccl.pc.in)

# RCCL's face. RCCL reports the NCCL base version it follows, not ROCm's:
# 2.30.4 is the RCCL of ROCm 7.x (its ncclGetVersion gives 23004); it has
# every name of NCCL 2.30's API plus its own extras (HETCCL_FACE_RCCL).
hetccl_add_face(rccl_face
  NAME rccl
  SOVERSION 1
  VERSION 2.30.4
  TITLE "RCCL"
  MAP ${CMAKE_SOURCE_DIR}/src/abi/rccl_face.map
  INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/hetccl
  HEADER ${CMAKE_SOURCE_DIR}/include/rccl/rccl.h
  PKGCONFIG ${CMAKE_SOURCE_DIR}/cmake/hetccl-rccl.pc.in
  DEFINITIONS HETCCL_FACE_RCCL=1)
