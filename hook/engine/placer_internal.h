/* cachepin: what placer.c and placer_reconcile.c share. */
#ifndef CP_PLACER_INTERNAL_H
#define CP_PLACER_INTERNAL_H

#include "placer.h"
#include "isolation.h"
#include "schedctl.h"

enum cp_reconcile_scope
{
  CP_RECONCILE_ALL,
  CP_RECONCILE_CAS_ASKERS, /* a release: the entries its decisions read (placer_reconcile.c) */
};

/* cp_placer_open_ledger() with SCOPE. */
int cp_placer_open_ledger_in (const struct cp_hostconfig *hc, enum cp_reconcile_scope scope, struct cp_ledger **out,
                              cp_error_t *err);

/* cp_placer_decide_in(), with TOO_MANY (when not NULL) the refusal of a request
   for more CPUs than CPUS holds, naming what set the limit, and ISO (may be NULL)
   the request's isolation (isolation.h). */
int cp_placer_decide_with (struct cp_ledger *l, const struct cp_topo *topo, hwloc_const_bitmap_t cpus,
                           hwloc_const_bitmap_t mems, const struct cp_target *t, const struct cp_container_request *creq,
                           hwloc_const_bitmap_t kept_mems, const char *too_many, struct cp_isolate *iso,
                           struct cp_plan **plan_out, cp_error_t *err);

/* The kernel's cache-aware scheduling switch: opened before the sandbox (a probe
   that fails is logged and the switch left alone), and brought where the ledger's
   entries want it (a failure logged). */
void cp_placer_schedctl_open (const struct cp_hostconfig *hc, struct cp_schedctl *sc);
void cp_placer_schedctl_sync (struct cp_schedctl *sc, struct cp_ledger *l);

#ifdef CACHEPIN_FAULT_INJECTION
/* placer.c's fault hook, for placer_reconcile.c's points. */
void cp_placer_fault (enum cp_placer_fault_point point);
#define PLACER_FAULT(point) cp_placer_fault (point)
#else
#define PLACER_FAULT(point) ((void) 0)
#endif

#endif
