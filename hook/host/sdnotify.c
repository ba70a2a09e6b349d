/* cachepin: sd_notify through a libsystemd loaded on demand (sdnotify.h). */
#define _GNU_SOURCE
#include "sdnotify.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>

#include "log.h"

#define SD_LIBRARY "libsystemd.so.0"

static const char *const library = SD_LIBRARY;
static __typeof__ (sd_notify) *notify_fn;

bool
cp_sdnotify_init (uint64_t *watchdog_usec)
{
  *watchdog_usec = 0;
  const char *sock = getenv ("NOTIFY_SOCKET");
  if (sock == NULL || *sock == '\0')
    return false;
  void *lib = dlopen (library, RTLD_NOW | RTLD_LOCAL);
  __typeof__ (sd_watchdog_enabled) *watchdog = lib ? (__typeof__ (watchdog)) dlsym (lib, "sd_watchdog_enabled") : NULL;
  notify_fn = lib ? (__typeof__ (notify_fn)) dlsym (lib, "sd_notify") : NULL;
  if (notify_fn == NULL || watchdog == NULL)
    {
      /* The unit waits for READY=1 until its TimeoutStartSec= and then fails: said. */
      cp_log (CP_LOG_WARNING, "systemd: NOTIFY_SOCKET is set but %s cannot be loaded (%s): the service manager is "
                              "not told READY=1 nor WATCHDOG=1", library, lib ? "no sd_notify" : dlerror ());
      notify_fn = NULL;
      return false;
    }
  uint64_t usec = 0;
  if (watchdog (0, &usec) > 0)
    *watchdog_usec = usec;
  return true;
}

void
cp_sdnotify (const char *state)
{
  if (notify_fn && notify_fn (0, state) < 0)
    cp_log (CP_LOG_DEBUG, "systemd: sd_notify %s failed", state);
}
