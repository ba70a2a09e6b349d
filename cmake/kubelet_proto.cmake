# The kubelet plugin's protobuf (hook/grpc/proto/README.md says what each .proto is and
# where it comes from): C generated with protoc-c at build time into
# build/generated/kubelet, never kept in the tree, and built once into cp_kubelet_proto,
# which every variant of the grpc layer links (as cmake/nri_proto.cmake does for the
# NRI messages, whose libprotobuf-c it shares).
set(CACHEPIN_KUBELET_PROTO_DIR ${CMAKE_SOURCE_DIR}/hook/grpc/proto)
set(CACHEPIN_KUBELET_GEN_DIR ${CMAKE_BINARY_DIR}/generated/kubelet)
set(CACHEPIN_KUBELET_PROTOS pluginregistration_v1 dra_v1 dra_v1beta1)

set(kgen_sources)
set(kgen_headers)
set(kproto_files)
foreach(p ${CACHEPIN_KUBELET_PROTOS})
  list(APPEND kgen_sources ${CACHEPIN_KUBELET_GEN_DIR}/${p}.pb-c.c)
  list(APPEND kgen_headers ${CACHEPIN_KUBELET_GEN_DIR}/${p}.pb-c.h)
  list(APPEND kproto_files ${CACHEPIN_KUBELET_PROTO_DIR}/${p}.proto)
endforeach()
add_custom_command(
  OUTPUT ${kgen_sources} ${kgen_headers}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CACHEPIN_KUBELET_GEN_DIR}
  COMMAND ${CACHEPIN_PROTOC_C} -I${CACHEPIN_KUBELET_PROTO_DIR} --c_out=${CACHEPIN_KUBELET_GEN_DIR} ${kproto_files}
  DEPENDS ${kproto_files}
  COMMENT "protoc-c: the kubelet's plugin registration and DRA messages (hook/grpc/proto)"
  VERBATIM)
add_library(cp_kubelet_proto STATIC ${kgen_sources})
target_compile_options(cp_kubelet_proto PRIVATE -w)
target_include_directories(cp_kubelet_proto SYSTEM PUBLIC ${CACHEPIN_KUBELET_GEN_DIR})
target_link_libraries(cp_kubelet_proto PUBLIC PkgConfig::PROTOBUFC)
