include_guard(GLOBAL)
# cachepin_protoc_c_library(NAME PROTO_DIR GEN_DIR COMMENT PROTOS...): the C that protoc-c
# generates at build time from PROTO_DIR/<proto>.proto into GEN_DIR (never kept in the
# tree), built once into the static library NAME, which every variant of the layer that
# uses it links.  The generated code is descriptors and thin wrappers around
# libprotobuf-c: its warnings are not ours (-w, and GEN_DIR a SYSTEM include directory
# for the code that includes its headers).
pkg_check_modules(PROTOBUFC REQUIRED IMPORTED_TARGET libprotobuf-c)
find_program(CACHEPIN_PROTOC_C protoc-c REQUIRED)

function(cachepin_protoc_c_library name proto_dir gen_dir comment)
  set(sources)
  set(headers)
  set(protos)
  foreach(p ${ARGN})
    list(APPEND sources ${gen_dir}/${p}.pb-c.c)
    list(APPEND headers ${gen_dir}/${p}.pb-c.h)
    list(APPEND protos ${proto_dir}/${p}.proto)
  endforeach()
  add_custom_command(
    OUTPUT ${sources} ${headers}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${gen_dir}
    COMMAND ${CACHEPIN_PROTOC_C} -I${proto_dir} --c_out=${gen_dir} ${protos}
    DEPENDS ${protos}
    COMMENT "protoc-c: ${comment}"
    VERBATIM)
  add_library(${name} STATIC ${sources})
  target_compile_options(${name} PRIVATE -w)
  target_include_directories(${name} SYSTEM PUBLIC ${gen_dir})
  target_link_libraries(${name} PUBLIC PkgConfig::PROTOBUFC)
endfunction()
