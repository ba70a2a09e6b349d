/* cachepin: one long-running front end per state directory and per thing it serves.
 *
 * Two NRI plugins serving one runtime would both answer its CreateContainer (the
 * runtime then fails every annotated pod: two plugins set the same cpuset) and
 * each would take the other's entries for its own.  So a plugin holds, for its
 * whole run, the flock of a file in the state directory named after what it
 * serves (the runtime's socket): instance-<kind>-<hash>.lock, holding the holder's
 * pid and the key in one line for the refusal's message.  The lock goes with the
 * process (flock: a crash or SIGKILL releases it). */
#ifndef CP_INSTANCE_H
#define CP_INSTANCE_H

#include "error.h"

/* Take the instance lock of KIND ("nri") and KEY (what is served) in STATE_DIR
 * (made as the ledger makes it), without waiting: its descriptor (kept open for the
 * process's life; close-on-exec), or -1 (*ERR): CP_ERR_RUNTIME naming the holder's
 * pid when another process holds it, CP_ERR_INPUT when the lock's path is not a
 * regular file (saying what to do), else the system's error. */
int cp_instance_lock (const char *state_dir, const char *kind, const char *key, cp_error_t *err);

#endif
