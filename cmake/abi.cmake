# HetCCL's NCCL face: lib/libnccl.so.2 (soname libnccl.so.2, libnccl.so
# beside it for linking), exporting NCCL 2.28's API (nccl* and pnccl* only)
# over libhetccl.so, plus the matching header include/nccl/nccl.h.
#
# Include from the top-level CMakeLists.txt after the hetccl target:
#   include(cmake/abi.cmake)
#
# Install layout (kept out of the default library path on purpose, so that
# installing HetCCL does not replace NVIDIA's NCCL for every program):
#   <libdir>/hetccl/libnccl.so.2   (RUNPATH $ORIGIN/.. finds libhetccl.so)
#   <includedir>/hetccl/nccl.h

file(GLOB HETCCL_ABI_NCCL_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/abi/nccl_face*.c)

# src/abi sits under src/, whose glob feeds libhetccl's objects: the face's
# sources belong to the face only.
get_target_property(_hetccl_abi_objs hetccl_objects SOURCES)
list(FILTER _hetccl_abi_objs EXCLUDE REGEX "/src/abi/")
set_property(TARGET hetccl_objects PROPERTY SOURCES ${_hetccl_abi_objs})
unset(_hetccl_abi_objs)

set(HETCCL_ABI_NCCL_MAP ${CMAKE_SOURCE_DIR}/src/abi/nccl_face.map)
add_library(nccl_face SHARED ${HETCCL_ABI_NCCL_SOURCES})
target_include_directories(nccl_face PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
# The face never needs CUDA's headers: streams are opaque pointers to it.
target_compile_definitions(nccl_face PRIVATE HETCCL_NCCL_NO_CUDA_RUNTIME)
target_compile_options(nccl_face PRIVATE -fvisibility=hidden)
target_link_libraries(nccl_face PRIVATE hetccl ${CMAKE_DL_LIBS})
target_link_options(nccl_face PRIVATE -Wl,--version-script=${HETCCL_ABI_NCCL_MAP} -Wl,--no-undefined)
set_target_properties(nccl_face PROPERTIES
  OUTPUT_NAME nccl
  VERSION 2.28.9
  SOVERSION 2
  LINK_DEPENDS ${HETCCL_ABI_NCCL_MAP}
  # $ORIGIN: the face finds libhetccl.so beside it wherever the build tree
  # is copied (GPU machines); installed, one level up.
  BUILD_RPATH "$ORIGIN"
  INSTALL_RPATH "$ORIGIN/..")

install(TARGETS nccl_face LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/hetccl)
install(FILES ${CMAKE_SOURCE_DIR}/include/nccl/nccl.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hetccl)
configure_file(${CMAKE_SOURCE_DIR}/cmake/hetccl-nccl.pc.in ${CMAKE_BINARY_DIR}/hetccl-nccl.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/hetccl-nccl.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
