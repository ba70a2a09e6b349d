/* cachepin: what a target may get (placer.c's open step), and what to say when a
 * request asks for more than that (placer_limits.c). */
#ifndef CP_PLACER_LIMITS_H
#define CP_PLACER_LIMITS_H

#include <hwloc.h>

#include "error.h"
#include "request.h"
#include "topo.h"
#include "hostconfig.h"
#include "placer.h"

/* The CPUS and MEMS target T may get: what its parent cgroup allows (without
 * a cgroup yet: what TOPO allows), within the host's hand-out set (HC), minus
 * the reserved CPUs and anything not online, and within the spec's own cpuset
 * when CREQ names one.  When CREQ asks for more CPUs than that, *TOO_MANY is the
 * refusal naming the first of those limits that leaves too few (else NULL). */
int cp_placer_target_limits (const struct cp_hostconfig *hc, const struct cp_target *t,
                             const struct cp_container_request *creq, const struct cp_topo *topo, hwloc_bitmap_t cpus,
                             hwloc_bitmap_t mems, char **too_many, cp_error_t *err);

#endif
