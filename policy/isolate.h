/* cachepin: the host keeps CPUs of its own when containers are isolated.
 *
 * cachepin.io/isolate makes a container's CPUs a cgroup v2 partition: no other
 * cgroup of the host runs there while it lives.  Two things keep the host usable:
 * isolated CPUs never include the host config's `reserved` (placement never hands
 * those out: the engine takes them out of what a container may get before
 * cp_place()), and never the first core of a NUMA node, all its hardware threads:
 * the core holding the node's lowest allowed online CPU.  That is CPU 0's core on
 * node 0, the CPU the kernel boots on, which keeps the interrupts and timers that
 * cannot move and which isolcpus= and nohz_full= setups leave to the host as a
 * rule; on every other node it is one core for the node's own processes and
 * kernel work, whatever else is isolated there.  A fixed core rather than "any one
 * core left" also keeps the rule's answer from depending on the order in which
 * containers come.  Pure: a topology model and CPU sets in, a verdict out. */
#ifndef CP_ISOLATE_H
#define CP_ISOLATE_H

#include <hwloc.h>

#include "error.h"
#include "topo.h"

/* Into OUT (emptied first): the cores the host keeps, the first core of each NUMA
 * node of TOPO with allowed online CPUs.  Placement tries the CPUs without them
 * first for an isolated request (hook/engine/placer.h, cp_placer_plan_in()). */
void cp_isolate_kept (const struct cp_topo *topo, hwloc_bitmap_t out);

/* May CPUS become an isolated partition?  0 when none of them is in a kept core;
 * -1 with an unsatisfiable error (a valid request this host cannot meet) naming the
 * first CPU that is:
 *   "cachepin.io/isolate: CPUs 0-3 include CPU 0, in the first core of NUMA node 0,
 *    which the host keeps (never isolated)". */
int cp_isolate_check (const struct cp_topo *topo, hwloc_const_bitmap_t cpus, cp_error_t *err);

#endif
