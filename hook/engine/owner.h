/* cachepin: which front end may settle which entry of the ledger.
 *
 * The ledger holds the entries of three front ends (ledger.h, cp_ledger_entry_origin()):
 * the hook's, `cachepin apply`'s and the NRI plugin's, and a host may run several
 * plugins, one per runtime (their sockets differ).  A front end releases, adopts or
 * answers for only what is provably its own (this front end, this runtime) and, for
 * a release, provably gone: a pid that exited, a cgroup gone or made again, or the
 * runtime saying the container stopped or no longer exists.  A container the runtime
 * did not list while its cgroup stands, or lists in a state it cannot read
 * (CONTAINER_UNKNOWN, after a runtime restart), is never released for that.
 *
 * The one rule, for every front end: the NRI plugin's events and its Synchronize
 * call these, none decides it alone. */
#ifndef CP_OWNER_H
#define CP_OWNER_H

#include <stdbool.h>

#include "ledger.h"

/* A front end, as its entries record it. */
struct cp_owner
{
  enum cp_ledger_origin origin;
  const char *runtime; /* CP_ORIGIN_NRI: the runtime the plugin serves (cp_ledger_entry's
                          runtime); NULL for the other front ends */
};

/* Whether E is O's: made by O's front end, and for the NRI plugin by the plugin of
 * O's runtime (an entry that records none, written by an older cachepin, is any
 * plugin's). */
bool cp_owner_owns (const struct cp_owner *o, const struct cp_ledger_entry *e);

/* Why E is not O's (for the log line), or NULL when it is.  The caller frees. */
char *cp_owner_not_owned (const struct cp_owner *o, const struct cp_ledger_entry *e);

/* What a runtime says of a container, at Synchronize (listed or not) or in an event. */
enum cp_seen
{
  CP_SEEN_ABSENT,  /* not listed: the runtime does not have it */
  CP_SEEN_CREATED, /* created, not started: no cgroup yet under containerd and CRI-O */
  CP_SEEN_RUNNING, /* running or paused: its cgroup exists and its processes run */
  CP_SEEN_STOPPED, /* stopped: holds nothing */
  CP_SEEN_UNKNOWN, /* the runtime cannot tell (containerd after a restart, a task it
                      cannot read): may run */
};

/* What its front end does with an entry of its own, given what the runtime says. */
enum cp_settle
{
  CP_SETTLE_KEEP,      /* nothing now: pending, judged by its cgroup already, or unknown */
  CP_SETTLE_ADOPT,     /* it runs on its placement: record its cgroup (cp_placer_adopt_cgroup()) */
  CP_SETTLE_RELEASE,   /* provably gone: release it */
  CP_SETTLE_UNAPPLIED, /* it runs, but not on the entry's CPUs: the answer that placed it
                          never reached the runtime (it gave up waiting, or the connection
                          closed first).  It keeps the entry's CPUs, which are held for it,
                          only once the runtime applies them (an update); the front end
                          never adopts its cgroup before (its cpuset would read as a drift,
                          and the drift would withhold CPUs it was never given) */
};

/* The rule for entry E of O: KEEP for an entry not O's.  SPEC_CPUS: the CPUs the
 * runtime says the container's spec has, empty when it has no cpuset (it runs on
 * its parent's CPUs: our answer never reached it); NULL: the runtime did not say. */
enum cp_settle cp_owner_settle (const struct cp_owner *o, const struct cp_ledger_entry *e, enum cp_seen seen,
                                hwloc_const_bitmap_t spec_cpus);

/* The reason for CP_SETTLE_RELEASE of SEEN, for the log: "the runtime says it
 * stopped", "its runtime no longer has it". */
const char *cp_settle_reason (enum cp_seen seen);

#endif
