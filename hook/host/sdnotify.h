/* cachepin: telling the service manager how a long-running agent is (sd_notify(3)):
 * READY=1 once it serves, WATCHDOG=1 while its loop turns, under a unit with
 * Type=notify and WatchdogSec= (deploy/systemd/cachepin-nri.service.in).
 *
 * libsystemd is loaded with dlopen() as systemd.c loads it, and only where the
 * service manager listens (NOTIFY_SOCKET set): a DaemonSet's container or a
 * foreground run never loads it.  cp_sdnotify_init() runs before the sandbox (the
 * library's files are not readable inside it); each notification afterwards is a
 * datagram on a new unix socket, which the plugin's profile allows (sandbox.h).
 * Nothing here fails the caller: a manager that cannot be told is one warning. */
#ifndef CP_SDNOTIFY_H
#define CP_SDNOTIFY_H

#include <stdbool.h>
#include <stdint.h>

/* Load libsystemd if NOTIFY_SOCKET is set: true when notifications will be sent.
   *WATCHDOG_USEC is the unit's WatchdogSec= in microseconds (0: none). */
bool cp_sdnotify_init (uint64_t *watchdog_usec);

/* "READY=1", "WATCHDOG=1", "STATUS=...": sent when cp_sdnotify_init() said so. */
void cp_sdnotify (const char *state);

#endif
