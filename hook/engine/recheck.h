/* cachepin: how often a long-running front end checks that a ledger entry's
 * container is still there (the NRI plugin; issue 22).
 *
 * The hook and `cachepin apply` run once and check every entry at every placement
 * (reconcile: its cgroup's cpuset.cpus and /proc/<pid>/stat, about 17 us an entry).
 * A process that places containers one after another, as `cachepin nri` does, would
 * pay that for every entry on every CreateContainer although hardly any changes
 * between two calls.  With a window set, an entry this process found alive is not
 * looked at again until the window has passed: a container that died in the
 * meantime keeps its CPUs, and a cpuset another manager rewrote (drift) is not seen,
 * for up to the window (CP_PLACER_RECHECK_SECONDS for the plugin) longer than with
 * the hook.  An entry new to this process (placed by the hook, apply or another
 * plugin since), or changed in the ledger (another cgroup, inode, pid or start
 * time, or placed again), is checked at once.  A release (placer.c's
 * release_checks()) does not ask kill(pid, 0) of an entry within its window
 * either; it never marks an entry as seen (it does not check the cgroup). */
#ifndef CP_RECHECK_H
#define CP_RECHECK_H

#include <stdbool.h>

#include "ledger.h"

/* The plugin's window. */
#define CP_PLACER_RECHECK_SECONDS 5

/* Milliseconds of a monotonic clock (tests inject their own). */
typedef long long (*cp_recheck_clock_fn) (void);

/* Check an entry found alive again only after SECONDS (0: at every placement, the
 * default); CLOCK NULL: CLOCK_MONOTONIC.  Each entry's next check is spread over
 * the second half of the window (by a hash of its id), so that the entries found
 * alive by one call do not all fall due in the same later call. */
void cp_placer_recheck_after (unsigned seconds, cp_recheck_clock_fn clock);

/* Read the clock once for the reconcile that follows. */
void cp_recheck_begin (void);

/* For reconcile's `check` (ledger.h): whether E is due to be checked now. */
bool cp_recheck_due (const struct cp_ledger_entry *e, void *data);

/* After a reconcile with cp_recheck_due(): the entries left in L that were due
 * are remembered as found alive now; those no longer in L are forgotten. */
void cp_recheck_seen (const struct cp_ledger *l);

/* Whether a window is set. */
bool cp_recheck_on (void);

#endif
