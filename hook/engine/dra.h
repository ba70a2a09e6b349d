/* cachepin: this node's DRA devices now (policy/dra_model.h), from what the hook
 * and every front end read: the host config's align, `cpus`, `reserved` and
 * `isolate`, the topology, and the CPUs the live ledger holds outside DRA (every
 * entry's but a prepared claim's, dra_prepare.h). */
#ifndef CP_DRA_H
#define CP_DRA_H

#include <stdbool.h>

#include "dra_model.h"
#include "hostconfig.h"
#include "error.h"

/* The model of HC's host: TOPO (taken over; NULL: HC's topology, from the cache
 * when valid, never saved) and, with READ_LEDGER, the CPUs the ledger of HC's
 * state directory holds exclusively (reconciled in memory, as `plan` reads it:
 * placer.h's preview), those of every entry but a prepared claim's (origin dra:
 * the scheduler counts those itself).  Nothing is written.  *HELD_ENTRIES (may
 * be NULL): how many entries hold CPUs outside DRA. */
int cp_dra_gather (const struct cp_hostconfig *hc, struct cp_topo *topo, bool read_ledger, struct cp_dra_model **out,
                   unsigned *held_entries, cp_error_t *err);

#endif
