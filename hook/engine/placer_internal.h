/* cachepin: what placer.c and placer_reconcile.c share. */
#ifndef CP_PLACER_INTERNAL_H
#define CP_PLACER_INTERNAL_H

#include "placer.h"

enum cp_reconcile_scope
{
  CP_RECONCILE_ALL,
  CP_RECONCILE_CAS_ASKERS, /* a release: the entries its decisions read (placer_reconcile.c) */
};

/* cp_placer_open_ledger() with SCOPE. */
int cp_placer_open_ledger_in (const struct cp_hostconfig *hc, enum cp_reconcile_scope scope, struct cp_ledger **out,
                              cp_error_t *err);

#ifdef CACHEPIN_FAULT_INJECTION
/* placer.c's fault hook, for placer_reconcile.c's points. */
void cp_placer_fault (enum cp_placer_fault_point point);
#define PLACER_FAULT(point) cp_placer_fault (point)
#else
#define PLACER_FAULT(point) ((void) 0)
#endif

#endif
