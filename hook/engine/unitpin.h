/* cachepin: a systemd service kept placed across its restarts (`cachepin apply
 * --unit NAME.service`).
 *
 * A service's cgroup is removed when it stops and made again when it starts, so
 * an entry judged by its cgroup (apply's) is gone at the first restart.  A pinned
 * unit's entry is the unit's, not one cgroup's: the id "apply:unit:NAME.service"
 * (ledger.h, CP_LEDGER_UNIT_PREFIX), placed by `apply --unit-start` (the unit's
 * ExecStartPre= in cachepin's drop-in) on each new cgroup, and held by `release
 * --unit-stop` (its ExecStopPost=) between a stop and the next start: its cgroup's
 * inode forgotten, which makes it pending (cp_ledger_entry_pending()): reconcile
 * keeps it while no cgroup stands, and its CPUs stay held for it.  The next start
 * gets the same CPUs back (cp_unitpin_keep()): a restart does not reshuffle, and
 * never lands on CPUs another exclusive placement took meanwhile, as nothing else
 * could take them.  `release --unit` alone frees them.
 *
 * These are the rules of whose entry it is and what becomes of it; the drop-in
 * and systemctl are the host's (hook/host/unitfile.h), the command line cli's. */
#ifndef CP_UNITPIN_H
#define CP_UNITPIN_H

#include <hwloc.h>

#include "error.h"
#include "hostconfig.h"
#include "placement.h"
#include "placer.h"
#include "ledger.h"

/* The ledger id of unit UNIT ("apply:unit:UNIT"); the caller frees. */
char *cp_unitpin_id (const char *unit);

/* The plan a pinned unit's start keeps: when L's entry of T's id is a unit's
 * (cp_ledger_entry_unit()), held (no inode) or on T's very cgroup, of CREQ's mode
 * and CPU count, and within CPUS (what T may get now), *PLAN_OUT is its CPUs, held
 * CPUs and nodes (MEMS when the entry's do not fit).  1: kept; 0: not (placed as
 * any request is: the request changed, or the CPUs are no longer allowed). */
int cp_unitpin_keep (const struct cp_ledger *l, const struct cp_target *t, hwloc_const_bitmap_t cpus,
                     hwloc_const_bitmap_t mems, const struct cp_container_request *creq, struct cp_plan **plan_out);

/* The unit's stop: ID's entry, if it is a unit's, held for its next start (its
 * cgroup's inode forgotten).  Under the ledger's lock, after reconcile; commits.
 * 1: held; 0: no such entry (released, or never placed: the start found the host
 * full and let it run unplaced). */
int cp_unitpin_hold (const struct cp_hostconfig *hc, const char *id, cp_error_t *err);

#endif
