# Run by cpack -G DEB (CPACK_PRE_BUILD_SCRIPTS) on the staged tree, before it is packed:
# what Debian's policy asks of a package and a plain `cmake --install` does not do
# (lintian: tests/install/lintian.sh).
#   - man pages gzip-compressed (policy 12.1); `man` reads both, the source install
#     keeps them plain;
#   - /usr/share/doc/cachepin/copyright and changelog.gz (policy 12.5, 12.7; a native
#     package's changelog is changelog.gz), from packaging/debian/.
# The binary is stripped by cpack itself (CPACK_STRIP_FILES).
# CPACK_TEMPORARY_INSTALL_DIRECTORY is the staged root (CPACK_SET_DESTDIR: /usr and /etc
# below it); CPACK_CACHEPIN_DEBIAN_DIR and CPACK_PACKAGE_VERSION come from CMakeLists.txt.

set(root "${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
set(debian "${CPACK_CACHEPIN_DEBIAN_DIR}")
if(NOT IS_DIRECTORY "${root}/usr/bin")
  message(FATAL_ERROR "deb-files.cmake: no usr/bin in the staged tree ${root}")
endif()

# gzip -9n: the best compression, no name or time stamp in the header (reproducible).
function(cachepin_gzip src dst)
  execute_process(COMMAND gzip -9nc "${src}" OUTPUT_FILE "${dst}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "deb-files.cmake: gzip ${src}: ${rc}")
  endif()
  file(CHMOD "${dst}" FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
endfunction()

file(GLOB_RECURSE pages "${root}/usr/share/man/*")
list(FILTER pages EXCLUDE REGEX "\\.gz$")
foreach(page IN LISTS pages)
  cachepin_gzip("${page}" "${page}.gz")
  file(REMOVE "${page}")
endforeach()

# The changelog's newest entry is the version being packed: a release bumps both.
file(STRINGS "${debian}/changelog" top LIMIT_COUNT 1)
if(NOT top MATCHES "^cachepin \\(${CPACK_PACKAGE_VERSION}\\) ")
  message(FATAL_ERROR "deb-files.cmake: packaging/debian/changelog starts with `${top}`, "
                      "not version ${CPACK_PACKAGE_VERSION}: add its entry")
endif()
set(doc "${root}/usr/share/doc/cachepin")
file(MAKE_DIRECTORY "${doc}")
file(COPY_FILE "${debian}/copyright" "${doc}/copyright")
file(CHMOD "${doc}/copyright" FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
cachepin_gzip("${debian}/changelog" "${doc}/changelog.gz")
