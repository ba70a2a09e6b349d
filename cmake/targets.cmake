# Builds cachepin's layers (cmake/layers.cmake) as static libraries, once per
# variant: cachepin_add_layers(SUFFIX [EXCLUDE_FROM_ALL] [DEFINITIONS ...] [OPTIONS ...]
# [PRIVATE_OPTIONS ...]) makes
# cp_<layer><SUFFIX> for each layer and cachepin_core<SUFFIX>, an interface library
# of all but support (what the binary runs; tests and benches link it).  The variants
# are the binary's (no suffix), the fault-injection build (tests/stress) and the
# fuzzers' instrumented build (fuzz/).
include(${CMAKE_CURRENT_LIST_DIR}/layers.cmake)

function(cachepin_add_layers suffix)
  cmake_parse_arguments(ARG "EXCLUDE_FROM_ALL" "" "DEFINITIONS;OPTIONS;PRIVATE_OPTIONS" ${ARGN})
  set(exclude)
  if(ARG_EXCLUDE_FROM_ALL)
    set(exclude EXCLUDE_FROM_ALL)
  endif()
  foreach(layer ${CACHEPIN_LAYERS})
    set(dir ${CMAKE_SOURCE_DIR}/${CACHEPIN_LAYER_DIR_${layer}})
    file(GLOB sources CONFIGURE_DEPENDS ${dir}/*.c)
    list(REMOVE_ITEM sources ${CMAKE_SOURCE_DIR}/hook/cli/main.c)
    set(lib cp_${layer}${suffix})
    add_library(${lib} STATIC ${exclude} ${sources})
    # -iquote, not -I: a header named like a system one (hook/host/sched.h) must not
    # stand in for <sched.h>.  "x.h" is ours, <x.h> the system's.
    target_compile_options(${lib} PUBLIC "SHELL:-iquote ${dir}")
    target_compile_definitions(${lib} PUBLIC ${ARG_DEFINITIONS})
    target_compile_options(${lib} PUBLIC ${ARG_OPTIONS} PRIVATE ${ARG_PRIVATE_OPTIONS})
    foreach(used ${CACHEPIN_LAYER_USES_${layer}})
      target_link_libraries(${lib} PUBLIC cp_${used}${suffix})
    endforeach()
  endforeach()
  # What each layer takes from outside: the libraries its own files call.
  target_link_libraries(cp_base${suffix} PUBLIC PkgConfig::HWLOC PkgConfig::JSONC)
  target_link_libraries(cp_host${suffix} PUBLIC PkgConfig::SECCOMP PkgConfig::CGROUP ${CMAKE_DL_LIBS})
  # sd-bus: its headers only; hook/host/systemd.c dlopen()s libsystemd (CMakeLists.txt).
  target_include_directories(cp_host${suffix} PUBLIC ${SYSTEMD_INCLUDE_DIRS})
  target_include_directories(cp_cli${suffix} PUBLIC ${CMAKE_BINARY_DIR}/generated)
  # The protobuf code protoc-c generates from hook/nri/proto (cmake/nri_proto.cmake).
  target_link_libraries(cp_nri${suffix} PUBLIC cp_nri_proto)
  # The kubelet plugin's gRPC: libnghttp2 and its messages (cmake/kubelet_proto.cmake).
  target_link_libraries(cp_grpc${suffix} PUBLIC cp_kubelet_proto PkgConfig::NGHTTP2)
  # libmicrohttpd: the agent's HTTP listener (nri_http.c), its headers only: loaded with
  # dlopen() when a listener is asked for (CMakeLists.txt).
  target_include_directories(cp_agent${suffix} PUBLIC ${MHD_INCLUDE_DIRS})
  target_link_libraries(cp_agent${suffix} PUBLIC ${CMAKE_DL_LIBS})
  # libcurl: the Kubernetes API client (hook/kube/kube_http.c), its headers only: loaded
  # with dlopen() when a command talks to an API server (CMakeLists.txt).
  target_include_directories(cp_kube${suffix} PUBLIC ${CURL_INCLUDE_DIRS})
  target_link_libraries(cp_kube${suffix} PUBLIC ${CMAKE_DL_LIBS})
  add_library(cachepin_core${suffix} INTERFACE)
  target_link_libraries(cachepin_core${suffix} INTERFACE cp_cli${suffix})
endfunction()
