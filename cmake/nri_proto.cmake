# The NRI plugin's protobuf (hook/nri/proto/README.md says what each .proto is and where
# it comes from): C generated with protoc-c at build time into build/generated/nri
# (cmake/protoc_c.cmake), built once into cp_nri_proto, which every variant of the nri
# layer (the binary's, the fuzzers', the fault build's) links.
include(${CMAKE_CURRENT_LIST_DIR}/protoc_c.cmake)

cachepin_protoc_c_library(cp_nri_proto ${CMAKE_SOURCE_DIR}/hook/nri/proto ${CMAKE_BINARY_DIR}/generated/nri
                          "the NRI and ttrpc messages (hook/nri/proto)" api status request)
# api.proto has fields named `linux`, which GNU C (gnu11, the style's) predefines as 1:
# undefined for the generated code and for everything that includes its headers
# (__linux__ is the name code tests).
target_compile_options(cp_nri_proto PUBLIC -Ulinux)
