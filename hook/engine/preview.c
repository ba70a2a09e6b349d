/* cachepin: the target's limits, which a placement and its preview share, and the
 * preview itself (placer.h): what the hook or `apply` would decide now, decided by
 * the same code on the same inputs, with nothing written. */
#define _GNU_SOURCE
#include "placer.h"
#include "bitmap.h"

#include <string.h>

#include "cpulist.h"
#include "topo.h"
#include "util.h"
#include "ledger.h"
#include "topocache.h"

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

/* The spec's own cpuset, when it names one, is a bound, never a size: runc
 * `--cpuset-cpus 1` means CPU 1, not "one CPU". */
int
cp_placer_limits (const struct cp_hostconfig *hc, const struct cp_target *t, const struct cp_container_request *creq,
                  const struct cp_topo *topo, hwloc_bitmap_t cpus, hwloc_bitmap_t mems, cp_error_t *err)
{
  if (t->cgroup == NULL)
    {
      hwloc_bitmap_copy (cpus, topo->allowed);
      hwloc_bitmap_copy (mems, topo->allowed_nodes);
    }
  else if (cp_cgroup_parent_limits (t->cgroup, cpus, mems, err) < 0)
    return cp_error_wrap (err, "cgroup %s%s", t->cgroup->mount, t->cgroup->path);
  cleanup_bitmap hwloc_bitmap_t parent = cp_bitmap_dup (cpus);
  hwloc_bitmap_and (cpus, cpus, hc->cpus);
  hwloc_bitmap_andnot (cpus, cpus, hc->reserved);
  if (!hwloc_bitmap_intersects (cpus, topo->online))
    return nothing_to_hand_out (topo, parent, cpus, err);
  hwloc_bitmap_and (cpus, cpus, topo->online);
  if (creq->bound_cpus)
    {
      hwloc_bitmap_and (cpus, cpus, creq->bound_cpus);
      if (hwloc_bitmap_iszero (cpus))
        {
          cleanup_free char *spec = cp_cpulist_format (creq->bound_cpus);
          return cp_fail_unsatisfiable (err, "linux.resources.cpu.cpus `%s`: none of them is a CPU the parent "
                                             "cgroup allows and the host hands out", spec);
        }
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

/* ------------------------------------------------------------------ preview */

/* Reconcile's liveness as the hook's (placer.c), without its log lines and
   events: a preview decides nothing, so it reports nothing as decided. */
static int
cgroup_cpus (const char *cgroup_mount, const char *cgroup, hwloc_bitmap_t cpus, unsigned long long *ino, void *data)
{
  return cp_cgroup_cpus_in (data, cgroup_mount, cgroup, cpus, ino);
}

static int
read_ledger (const struct cp_hostconfig *hc, struct cp_preview *pv, cp_error_t *err)
{
  pv->ledger_path = cp_xasprintf ("%s/%s", hc->state_dir, CP_LEDGER_FILE);
  if (cp_ledger_read (hc->state_dir, &pv->ledger_state, &pv->ledger, err) < 0)
    {
      if (cp_error_kind (*err) == CP_ERR_INPUT) /* invalid: the host's state, not the caller's input */
        cp_error_reclassify (*err, CP_ERR_RUNTIME);
      return cp_error_wrap (err, "ledger"); /* the message names the file */
    }
  struct cp_ledger_liveness alive = {
    .cgroup_cpus = cgroup_cpus,
    .pid_start_time = cp_ledger_pid_start_time,
    .data = cp_cgroup_mounts_new (),
  };
  int r = cp_ledger_reconcile (pv->ledger, &alive, &pv->gone, err);
  cp_cgroup_mounts_free (alive.data);
  return r < 0 ? cp_error_wrap (err, "ledger %s", pv->ledger_path) : 0;
}

int
cp_preview_open (const struct cp_hostconfig *hc, struct cp_topo *topo, bool want_ledger, const struct cp_target *t,
                 const struct cp_container_request *creq, struct cp_preview *pv, cp_error_t *err)
{
  *pv = (struct cp_preview) { .topo = topo };
  pv->cpus = cp_bitmap_new ();
  pv->mems = cp_bitmap_new ();
  pv->held = cp_bitmap_new ();
  pv->shared = cp_bitmap_new ();
  if (pv->topo == NULL && cp_topocache_load (hc, CP_TOPOCACHE_READ_ONLY, &pv->topo, err) < 0)
    return cp_error_wrap (err, "topology");
  /* What the host config keeps back, for the map: not its `cpus`, or `reserved`. */
  pv->kept_back = cp_bitmap_dup (pv->topo->online);
  hwloc_bitmap_andnot (pv->kept_back, pv->kept_back, hc->cpus);
  hwloc_bitmap_or (pv->kept_back, pv->kept_back, hc->reserved);
  hwloc_bitmap_and (pv->kept_back, pv->kept_back, pv->topo->online);
  if (cp_placer_limits (hc, t, creq, pv->topo, pv->cpus, pv->mems, err) < 0)
    return -1;
  if (want_ledger)
    {
      if (read_ledger (hc, pv, err) < 0)
        return -1;
    }
  else
    {
      static const char empty[] = "{\"version\": 2, \"entries\": []}";
      if (cp_ledger_parse (empty, sizeof empty - 1, &pv->ledger, err) < 0)
        return -1;
    }
  for (size_t i = 0; i < cp_ledger_count (pv->ledger); i++)
    {
      const struct cp_ledger_entry *e = cp_ledger_at (pv->ledger, i);
      if (strcmp (e->id, t->id) != 0) /* a re-apply does not compete with itself */
        cp_ledger_entry_taken (e, NULL, e->mode == CP_MODE_EXCLUSIVE ? pv->held : pv->shared);
    }
  return 0;
}

int
cp_preview_place (const struct cp_preview *pv, const struct cp_target *t, const struct cp_container_request *creq,
                  hwloc_const_bitmap_t occupied, struct cp_plan **plan_out, cp_error_t *err)
{
  if (cp_placer_check_unclaimed (pv->ledger, t, err) < 0)
    return -1;
  return cp_placer_plan_in (pv->ledger, pv->topo, pv->cpus, pv->mems, t, creq, occupied, plan_out, err);
}

void
cp_preview_clear (struct cp_preview *pv)
{
  cp_topo_free (pv->topo);
  hwloc_bitmap_free (pv->cpus);
  hwloc_bitmap_free (pv->mems);
  hwloc_bitmap_free (pv->kept_back);
  hwloc_bitmap_free (pv->held);
  hwloc_bitmap_free (pv->shared);
  cp_ledger_close (pv->ledger);
  free (pv->ledger_path);
  *pv = (struct cp_preview) { 0 };
}
