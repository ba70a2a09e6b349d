/* cachepin: what a long-running front end (the NRI agent, `cachepin nri`) needs of
 * the state directory around the engine's steps, which a one-shot run does not:
 * one instance per state directory and runtime, the caches kept between calls,
 * the state repaired once before its sandbox, and what the sandbox cannot repair
 * seen after each call. */
#ifndef CP_DAEMON_H
#define CP_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "hostconfig.h"

/* One KIND ("nri") of front end per state directory of HC and KEY (the runtime it
   serves), for the whole run (instance.h): the lock's descriptor, kept open until
   exit; < 0 (*ERR names the one holding it) when another runs. */
int cp_daemon_lock_instance (const struct cp_hostconfig *hc, const char *kind, const char *key, cp_error_t *err);

/* A process that answers one call after another: the topology model kept while
   its key holds, an entry found alive checked again only after the recheck
   window (recheck.h), the parsed ledger and the journal's records reused while
   their files are provably the ones read (ledger_store.h, journal.h). */
void cp_daemon_keep_caches (void);

/* The state directory as the run started with it (its sandbox reaches that one). */
struct cp_daemon_state
{
  dev_t dev;
  ino_t ino;
};

/* The ledger of HC opened once, before the sandbox: what only root's rights
   repair (a ledger.json or ledger.lock that is a link, a directory, a FIFO: set
   aside) is repaired now; the state directory's identity kept in *ST. */
int cp_daemon_open_state (const struct cp_hostconfig *hc, struct cp_daemon_state *st, cp_error_t *err);

/* What the sandboxed run cannot repair in HC's state directory, or NULL: the
   directory replaced since ST was taken, a ledger file that is not a regular file
   (setting it aside is a rename the sandbox refuses).  The caller frees. */
char *cp_daemon_state_trouble (const struct cp_hostconfig *hc, const struct cp_daemon_state *st);

/* HC's ledger can be read now (without its lock, as `cachepin status` reads it):
   0, or < 0 (*ERR says why).  The readiness probe's second half. */
int cp_daemon_ledger_readable (const struct cp_hostconfig *hc, cp_error_t *err);

/* The service manager told how the agent is (sdnotify.h): cp_daemon_notify_init()
   before the sandbox (true: it listens; *WATCHDOG_USEC its WatchdogSec=, 0: none),
   then "READY=1", "WATCHDOG=1", ... */
bool cp_daemon_notify_init (uint64_t *watchdog_usec);
void cp_daemon_notify (const char *state);

#endif
