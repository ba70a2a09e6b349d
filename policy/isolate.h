/* cachepin: the host keeps CPUs of its own (issue 23's rule).  STUB in branch iso:
 * branch isoreq (I1b) owns this file and its real rule; the merge takes theirs. */
#ifndef CP_ISOLATE_H
#define CP_ISOLATE_H

#include <hwloc.h>

#include "error.h"
#include "topo.h"

/* 0: CPUS may be isolated besides ALREADY_ISOLATED; -1 with ERR otherwise. */
int cp_isolate_check (const struct cp_topo *topo, hwloc_const_bitmap_t already_isolated, hwloc_const_bitmap_t cpus,
                      cp_error_t *err);

#endif
