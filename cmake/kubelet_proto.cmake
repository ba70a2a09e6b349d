# The kubelet plugin's protobuf (hook/grpc/proto/README.md says what each .proto is and
# where it comes from): C generated with protoc-c at build time into
# build/generated/kubelet (cmake/protoc_c.cmake), built once into cp_kubelet_proto, which
# every variant of the grpc layer links.
include(${CMAKE_CURRENT_LIST_DIR}/protoc_c.cmake)

cachepin_protoc_c_library(cp_kubelet_proto ${CMAKE_SOURCE_DIR}/hook/grpc/proto ${CMAKE_BINARY_DIR}/generated/kubelet
                          "the kubelet's plugin registration and DRA messages (hook/grpc/proto)"
                          pluginregistration_v1 dra_v1 dra_v1beta1)
