# The include rule (cmake/layers.cmake), checked: cmake -DSOURCE_DIR=<tree> -P this.
# Every "x.h" include of every file of a layer must name a header of that layer or of
# a layer it uses; no include may reach through a path ("../x.h", "hook/x.h"): the
# layers' folders are include directories, and a path would step around them.  Fails
# listing every wrong arrow: the file, what it includes, from which layer.
# -DPRETEND=<file relative to the tree>:<header> adds one include to one file, as if
# written there: the test that the check fails on a wrong arrow (CTest unit.layers-wrong).
# It also fails on a .c or .h under hook/ longer than CACHEPIN_HOOK_MAX_LINES lines
# (layers.cmake); -DPRETEND_LINES=<file relative to the tree>:<count> counts one
# file as COUNT lines: the test that it does (CTest unit.layers-long-file).
cmake_minimum_required(VERSION 3.16)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<cachepin tree> -P check-includes.cmake")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/layers.cmake)

# Which layer owns each header, by name (names are unique across the layers).
foreach(layer ${CACHEPIN_LAYERS})
  file(GLOB headers ${SOURCE_DIR}/${CACHEPIN_LAYER_DIR_${layer}}/*.h
                    ${SOURCE_DIR}/${CACHEPIN_LAYER_DIR_${layer}}/*.h.in)
  foreach(h ${headers})
    get_filename_component(name ${h} NAME)
    string(REGEX REPLACE "\\.in$" "" name ${name})
    if(DEFINED owner_${name})
      list(APPEND problems "${h}: a second ${name} (also in layer ${owner_${name}}): header names must be unique")
    endif()
    set(owner_${name} ${layer})
  endforeach()
  foreach(name ${CACHEPIN_LAYER_GENERATED_${layer}})
    set(owner_${name} ${layer})
  endforeach()
endforeach()

set(checked 0)
foreach(layer ${CACHEPIN_LAYERS})
  set(allowed ${layer} ${CACHEPIN_LAYER_USES_${layer}})
  file(GLOB files ${SOURCE_DIR}/${CACHEPIN_LAYER_DIR_${layer}}/*.c ${SOURCE_DIR}/${CACHEPIN_LAYER_DIR_${layer}}/*.h)
  foreach(f ${files})
    math(EXPR checked "${checked} + 1")
    file(RELATIVE_PATH rel ${SOURCE_DIR} ${f})
    file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    if(PRETEND MATCHES "^${rel}:(.*)$")
      list(APPEND lines "#include \"${CMAKE_MATCH_1}\"")
    endif()
    foreach(line ${lines})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*" "\\1" inc "${line}")
      if(inc MATCHES "/")
        list(APPEND problems "${rel}: #include \"${inc}\": by name, not by path")
        continue()
      endif()
      if(NOT DEFINED owner_${inc})
        list(APPEND problems "${rel}: #include \"${inc}\": no layer has this header (a system header takes <>)")
        continue()
      endif()
      list(FIND allowed ${owner_${inc}} found)
      if(found LESS 0)
        list(APPEND problems "${rel}: #include \"${inc}\": layer ${layer} may not use layer ${owner_${inc}} (it may use: ${CACHEPIN_LAYER_USES_${layer}})")
      endif()
    endforeach()
  endforeach()
endforeach()

# The length rule: lines as wc -l counts them (newlines).
file(GLOB_RECURSE hook_files ${SOURCE_DIR}/hook/*.c ${SOURCE_DIR}/hook/*.h)
foreach(f ${hook_files})
  file(RELATIVE_PATH rel ${SOURCE_DIR} ${f})
  if(PRETEND_LINES MATCHES "^${rel}:([0-9]+)$")
    set(n ${CMAKE_MATCH_1})
  else()
    file(READ ${f} text)
    string(REGEX REPLACE "[^\n]" "" newlines "${text}")
    string(LENGTH "${newlines}" n)
  endif()
  if(n GREATER CACHEPIN_HOOK_MAX_LINES)
    list(APPEND problems "${rel}: ${n} lines, more than ${CACHEPIN_HOOK_MAX_LINES}: split it along a seam (cmake/layers.cmake)")
  endif()
endforeach()

if(checked EQUAL 0)
  message(FATAL_ERROR "check-includes: no file found under ${SOURCE_DIR}: wrong SOURCE_DIR")
endif()
if(problems)
  # One line each, as written (a FATAL_ERROR's text is wrapped).
  foreach(p ${problems})
    message(NOTICE "${p}")
  endforeach()
  list(LENGTH problems n)
  message(FATAL_ERROR "check-includes: ${n} problem(s): cmake/layers.cmake says which layer may use which and how long a hook/ file may be (docs/architecture.md)")
endif()
list(LENGTH hook_files n_hook)
message(STATUS "check-includes: ${checked} files follow cmake/layers.cmake; none of the ${n_hook} under hook/ is over ${CACHEPIN_HOOK_MAX_LINES} lines")
