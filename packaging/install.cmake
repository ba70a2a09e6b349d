# Run by `cmake --install` (and by cpack): the parts of the install whose content
# depends on where the install goes, or that must not overwrite a file the admin
# owns.  The top-level CMakeLists.txt sets CACHEPIN_SOURCE_DIR, CACHEPIN_BINDIR,
# CACHEPIN_HOOKSDIR and CACHEPIN_CONFDIR first (relative ones are below the
# install-time prefix, so `cmake --install build --prefix /opt/x` gets hooks that
# name /opt/x/bin/cachepin), CACHEPIN_UNITDIR, CACHEPIN_PLUGINDIR and CACHEPIN_BUILD_DIR.

function(cachepin_full out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${dir}" PARENT_SCOPE)
  endif()
endfunction()

cachepin_full(bindir "${CACHEPIN_BINDIR}")
cachepin_full(hooksdir "${CACHEPIN_HOOKSDIR}")
cachepin_full(confdir "${CACHEPIN_CONFDIR}")
cachepin_full(unitdir "${CACHEPIN_UNITDIR}")
cachepin_full(plugindir "${CACHEPIN_PLUGINDIR}")

# hooks.d: podman and CRI-O run the file's "path", which must be the installed
# binary (never the DESTDIR staging copy).
set(CACHEPIN_INSTALLED_BIN "${bindir}/cachepin")
set(staged "${CACHEPIN_BUILD_DIR}/hooks.d") # generated here, then installed
foreach(stage create poststop)
  configure_file("${CACHEPIN_SOURCE_DIR}/deploy/hooks.d/cachepin-${stage}.json.in"
                 "${staged}/cachepin-${stage}.json" @ONLY)
  file(INSTALL "${staged}/cachepin-${stage}.json" DESTINATION "${hooksdir}"
       FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
endforeach()

# The NRI plugin: the systemd unit and the pre-launched form's script, both running the
# installed binary; neither is enabled here (docs/kubernetes.md says why and how).
set(CACHEPIN_INSTALLED_PLUGIN "${plugindir}/50-cachepin")
configure_file("${CACHEPIN_SOURCE_DIR}/deploy/systemd/cachepin-nri.service.in"
               "${CACHEPIN_BUILD_DIR}/systemd/cachepin-nri.service" @ONLY)
file(INSTALL "${CACHEPIN_BUILD_DIR}/systemd/cachepin-nri.service" DESTINATION "${unitdir}"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
configure_file("${CACHEPIN_SOURCE_DIR}/deploy/nri/50-cachepin.in" "${CACHEPIN_BUILD_DIR}/nri/50-cachepin" @ONLY)
file(INSTALL "${CACHEPIN_BUILD_DIR}/nri/50-cachepin" DESTINATION "${plugindir}"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

# The host configuration is the admin's once installed: a reinstall (an upgrade
# from source) keeps an edited file.  The .deb makes it a conffile, so dpkg asks.
if(EXISTS "$ENV{DESTDIR}${confdir}/config.json")
  message(STATUS "Keeping: $ENV{DESTDIR}${confdir}/config.json")
else()
  file(INSTALL "${CACHEPIN_SOURCE_DIR}/packaging/config.json" DESTINATION "${confdir}"
       FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
endif()
