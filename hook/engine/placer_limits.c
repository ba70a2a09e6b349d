/* What a target may get, and which limit a request for too many CPUs hit. */
#define _GNU_SOURCE
#include "placer_limits.h"
#include "bitmap.h"

#include <string.h>

#include "cpulist.h"
#include "placement.h"
#include "text.h"
#include "util.h"
#include "cgroup.h"

/* Nothing left to hand out, said by what took the parent cgroup's CPUS away:
 * the host config (`cpus`, `reserved`) or the topology, where they are offline
 * (a CPU taken offline after the topology cache was written, or a captured
 * topology with offline CPUs).  CPUS: the parent's CPUs the config hands out. */
static int
nothing_to_hand_out (const struct cp_topo *topo, hwloc_const_bitmap_t parent, hwloc_const_bitmap_t cpus,
                     cp_error_t *err)
{
  cleanup_free char *parent_list = cp_cpulist_format (parent);
  if (hwloc_bitmap_iszero (cpus))
    return cp_fail_unsatisfiable (err, "no CPU left to hand out: the parent cgroup's CPUs (%s) are all outside the "
                                       "configured `cpus` or inside `reserved`", parent_list);
  cleanup_free char *offline = cp_cpulist_format (cpus);
  cleanup_free char *online = cp_cpulist_format (topo->online);
  return cp_fail_unsatisfiable (err, "no CPU left to hand out: the parent cgroup's CPUs that the host config hands "
                                     "out (%s) are all offline (topology `%s` has CPUs %s online)",
                                offline, topo->source, online);
}

/* A request for more CPUs than SET holds, refused by what set the limit (BY,
 * DETAIL: cp_place_too_many()), unless an earlier limit was already named in
 * *OUT: the first limit that leaves fewer than the request asks is the one to
 * change. */
static void
note_limit (const struct cp_container_request *creq, hwloc_const_bitmap_t set, const char *by, const char *detail,
            char **out)
{
  unsigned want = creq->req.cpus;
  if (*out || want == 0 || (unsigned) hwloc_bitmap_weight (set) >= want)
    return;
  /* apply's option as the user typed it; the hook's key (annotation, or the
     count the quota gave) as before: "cpus". */
  const char *what = creq->cpus_source && strncmp (creq->cpus_source, "--", 2) == 0 ? creq->cpus_source : "cpus";
  *out = cp_place_too_many (what, want, set, by, detail);
}

/* The parent cgroup's limit, named: its directory (the caller's text, made
 * safe to show) and the file it was read from. */
static void
note_parent_limit (const struct cp_target *t, const struct cp_container_request *creq, hwloc_const_bitmap_t parent,
                   char **out)
{
  const struct cp_cgroup *cg = t->cgroup;
  /* The path up to the slash before its last name: "" for a child of the
     hierarchy's root, whose parent is the mount point itself. */
  const char *slash = strrchr (cg->path, '/');
  size_t len = slash ? (size_t) (slash - cg->path) : 0;
  cleanup_free char *dir = cp_xasprintf ("%s%.*s", cg->mount, (int) len, cg->path);
  cp_text_sanitize (dir);
  cleanup_free char *by = cp_xasprintf ("the parent cgroup %s allows", dir);
  cleanup_free char *list = cp_cpulist_format (parent);
  cleanup_free char *detail
      = cp_xasprintf ("%s: %s", cg->version == 2 ? "cpuset.cpus.effective" : "cpuset.effective_cpus", list);
  note_limit (creq, parent, by, detail, out);
}

/* The CPUs and nodes the target may get: what its parent cgroup allows (without
 * a cgroup yet: what the topology allows), within the host's hand-out set, minus
 * the reserved CPUs and anything not online, and within the spec's own cpuset
 * when it names one (a bound, never a size: runc `--cpuset-cpus 1` means CPU 1,
 * not "one CPU"). */
int
cp_placer_target_limits (const struct cp_hostconfig *hc, const struct cp_target *t, const struct cp_container_request *creq,
               const struct cp_topo *topo, hwloc_bitmap_t cpus, hwloc_bitmap_t mems, char **too_many, cp_error_t *err)
{
  if (t->cgroup == NULL)
    {
      hwloc_bitmap_copy (cpus, topo->allowed);
      hwloc_bitmap_copy (mems, topo->allowed_nodes);
    }
  else if (cp_cgroup_parent_limits (t->cgroup, cpus, mems, err) < 0)
    return cp_error_wrap (err, "cgroup %s%s", t->cgroup->mount, t->cgroup->path);
  cleanup_bitmap hwloc_bitmap_t parent = cp_bitmap_dup (cpus);
  cleanup_free char *topo_by = cp_xasprintf ("topology `%s` allows", topo->source);
  if (t->cgroup)
    note_parent_limit (t, creq, parent, too_many);
  else
    note_limit (creq, parent, topo_by, NULL, too_many);
  hwloc_bitmap_and (cpus, cpus, hc->cpus);
  hwloc_bitmap_andnot (cpus, cpus, hc->reserved);
  if (!hwloc_bitmap_intersects (cpus, topo->online))
    return nothing_to_hand_out (topo, parent, cpus, err);
  note_limit (creq, cpus, "left by the host config's `cpus` and `reserved`", NULL, too_many);
  hwloc_bitmap_and (cpus, cpus, topo->online);
  cleanup_free char *online_by = cp_xasprintf ("online in topology `%s`", topo->source);
  note_limit (creq, cpus, online_by, NULL, too_many);
  if (creq->bound_cpus)
    {
      hwloc_bitmap_and (cpus, cpus, creq->bound_cpus);
      cleanup_free char *spec = cp_cpulist_format (creq->bound_cpus);
      if (hwloc_bitmap_iszero (cpus))
        return cp_fail_unsatisfiable (err, "linux.resources.cpu.cpus `%s`: none of them is a CPU the parent "
                                           "cgroup allows and the host hands out", spec);
      cleanup_free char *bound_by = cp_xasprintf ("the spec's linux.resources.cpu.cpus `%s` leaves", spec);
      note_limit (creq, cpus, bound_by, NULL, too_many);
    }
  if (creq->bound_mems)
    {
      hwloc_bitmap_and (mems, mems, creq->bound_mems);
      if (hwloc_bitmap_iszero (mems))
        {
          cleanup_free char *spec = cp_cpulist_format (creq->bound_mems);
          return cp_fail_unsatisfiable (err, "linux.resources.cpu.mems `%s`: none of them is a node the parent "
                                             "cgroup allows", spec);
        }
    }
  return 0;
}
