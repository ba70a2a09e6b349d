# The NRI plugin's protobuf (hook/nri/proto/README.md says what each .proto is and where
# it comes from): C generated with protoc-c at build time into build/generated/nri, never
# kept in the tree, and built once into cp_nri_proto, which every variant of the nri
# layer (the binary's, the fuzzers', the fault build's) links.  The generated code is
# descriptors and thin wrappers around libprotobuf-c: its warnings are not ours (-w,
# and its directory a SYSTEM one for the code that includes its headers).
pkg_check_modules(PROTOBUFC REQUIRED IMPORTED_TARGET libprotobuf-c)
find_program(CACHEPIN_PROTOC_C protoc-c REQUIRED)

set(CACHEPIN_NRI_PROTO_DIR ${CMAKE_SOURCE_DIR}/hook/nri/proto)
set(CACHEPIN_NRI_GEN_DIR ${CMAKE_BINARY_DIR}/generated/nri)
set(CACHEPIN_NRI_PROTOS api status request)

set(gen_sources)
set(proto_files)
foreach(p ${CACHEPIN_NRI_PROTOS})
  list(APPEND gen_sources ${CACHEPIN_NRI_GEN_DIR}/${p}.pb-c.c)
  list(APPEND gen_headers ${CACHEPIN_NRI_GEN_DIR}/${p}.pb-c.h)
  list(APPEND proto_files ${CACHEPIN_NRI_PROTO_DIR}/${p}.proto)
endforeach()
add_custom_command(
  OUTPUT ${gen_sources} ${gen_headers}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CACHEPIN_NRI_GEN_DIR}
  COMMAND ${CACHEPIN_PROTOC_C} -I${CACHEPIN_NRI_PROTO_DIR} --c_out=${CACHEPIN_NRI_GEN_DIR} ${proto_files}
  DEPENDS ${proto_files}
  COMMENT "protoc-c: the NRI and ttrpc messages (hook/nri/proto)"
  VERBATIM)
add_library(cp_nri_proto STATIC ${gen_sources})
target_compile_options(cp_nri_proto PRIVATE -w)
# api.proto has fields named `linux`, which GNU C (gnu11, the style's) predefines as 1:
# undefined for the generated code and for everything that includes its headers
# (__linux__ is the name code tests).
target_compile_options(cp_nri_proto PUBLIC -Ulinux)
target_include_directories(cp_nri_proto SYSTEM PUBLIC ${CACHEPIN_NRI_GEN_DIR})
target_link_libraries(cp_nri_proto PUBLIC PkgConfig::PROTOBUFC)
