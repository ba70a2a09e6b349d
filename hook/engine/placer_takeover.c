/* cachepin: the hook route meeting a placement the NRI plugin made of the same
 * container (placer.h: cp_placer_take_over()).  A node may run both: a pod on the
 * `cachepin` runtime handler while the plugin runs is seen by both, the plugin at
 * CreateContainer (before the cgroup exists: an entry with no pid, containerd told
 * the CPUs in the spec) and the hook at createRuntime (the pid and the cgroup).  A
 * second choice by the hook would move the container off the CPUs containerd just
 * applied and rewrite the entry's choice for no reason; refusing would fail a pod
 * the node meant to place.  So the hook takes the plugin's choice over: the same
 * CPUs, written into the cgroup (what containerd applied from the plugin's answer
 * already), and the entry given the hook's pid and the cgroup's inode, which makes
 * it the hook's (cp_ledger_entry_origin(): an entry with a pid is the hook's, which
 * no plugin settles, owner.h) and released by the hook's poststop. */
#define _GNU_SOURCE
#include "placer.h"

#include <string.h>

#include "bitmap.h"
#include "ledger.h"
#include "util.h"

/* E is a placement decided before its cgroup existed for T's very container: no
   pid (the plugin's; `apply:` ids have none either and are never taken over), and
   T's cgroup or none recorded yet (cp_placer_check_unclaimed() has refused a
   path of another cgroup; an inode of another is a cgroup made again). */
static bool
decided_before (const struct cp_ledger_entry *e, const struct cp_target *t)
{
  return cp_ledger_entry_origin (e) == CP_ORIGIN_NRI && t->pid > 0
         && (e->cgroup_ino == 0 || e->cgroup_ino == t->cgroup_ino);
}

int
cp_placer_take_over (const struct cp_ledger *l, const struct cp_target *t, hwloc_const_bitmap_t cpus,
                     hwloc_const_bitmap_t mems, struct cp_plan **plan_out)
{
  const struct cp_ledger_entry *e = cp_ledger_find (l, t->id);
  if (e == NULL || !decided_before (e, t))
    return 0;
  /* Within what the container may get: its cgroup's parent, the host's hand-out
     set and the spec's cpuset, which is what containerd applied.  When those
     differ (another plugin or the user changed the cpuset after ours answered),
     the spec wins: the hook never writes CPUs outside it, so it places the
     container anew within it, and the new entry replaces this one under the same
     id (one entry, one set of CPUs held). */
  if (hwloc_bitmap_iszero (e->cpus) || !hwloc_bitmap_isincluded (e->cpus, cpus))
    return 0;
  bool mems_fit = e->mems && !hwloc_bitmap_iszero (e->mems) && hwloc_bitmap_isincluded (e->mems, mems);
  struct cp_plan *plan = cp_xcalloc (1, sizeof *plan);
  plan->mode = e->mode;
  plan->cpus = cp_bitmap_dup (e->cpus);
  plan->held = e->held ? cp_bitmap_dup (e->held) : cp_bitmap_new ();
  plan->mems = cp_bitmap_dup (mems_fit ? e->mems : mems);
  plan->reason = cp_xstrdup ("taken over: the placement decided for this container before its cgroup existed "
                             "(the NRI plugin's), kept as containerd applied it");
  *plan_out = plan;
  return 1;
}
