/* cachepin: the host keeps CPUs of its own when containers are isolated.
 *
 * cachepin.io/isolate makes a container's CPUs a cgroup v2 partition: no other
 * cgroup of the host runs there while it lives.  Two things keep the host usable:
 * isolated CPUs never include the host config's `reserved` (placement never hands
 * those out: the engine takes them out of what a container may get before
 * cp_place(), so CPUS here never holds one), and every NUMA node keeps at least
 * one whole core, all its hardware threads, in no isolated partition, so that the
 * node's own processes and kernel work have somewhere to run.  Pure: a topology
 * model and CPU sets in, a verdict out. */
#ifndef CP_ISOLATE_H
#define CP_ISOLATE_H

#include <hwloc.h>

#include "error.h"
#include "topo.h"

/* May CPUS become one more isolated partition beside ALREADY_ISOLATED (the union of
 * the live isolated entries' CPUs; NULL: none)?  0 when every NUMA node of TOPO
 * with allowed CPUs that CPUS touches still has a core with no PU in CPUS or
 * ALREADY_ISOLATED; -1 with an unsatisfiable error (a valid request this host
 * cannot meet) naming the first node that would have none:
 *   "cachepin.io/isolate: CPUs 2-3 would leave NUMA node 0 no core outside isolated
 *    partitions (the host keeps one core per node)".
 * A node CPUS does not touch is not judged: this partition changes nothing there.
 * Half a core (one hardware thread of two) left outside counts for nothing. */
int cp_isolate_check (const struct cp_topo *topo, hwloc_const_bitmap_t already_isolated, hwloc_const_bitmap_t cpus,
                      cp_error_t *err);

#endif
