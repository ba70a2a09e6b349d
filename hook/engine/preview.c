/* cachepin: the preview of a placement (placer.h): what the hook or `apply` would decide now, decided by
 * the same code on the same inputs, with nothing written. */
#define _GNU_SOURCE
#include "placer.h"
#include "bitmap.h"

#include <string.h>

#include "cpulist.h"
#include "isolate.h"
#include "topo.h"
#include "util.h"
#include "ledger.h"
#include "topocache.h"
#include "placer_limits.h"

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
  if (cp_placer_target_limits (hc, t, creq, pv->topo, pv->cpus, pv->mems, &pv->too_many, err) < 0)
    return -1;
  if (creq->isolate && hc->isolate != CP_ISOLATE_DENY) /* as the engine's decide does */
    {
      pv->isolate_kept = cp_bitmap_new ();
      cp_isolate_kept (pv->topo, pv->isolate_kept);
    }
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
  if (pv->too_many)
    return cp_fail_unsatisfiable (err, "%s", pv->too_many);
  return cp_placer_plan_in (pv->ledger, pv->topo, pv->cpus, pv->mems, t, creq, occupied, pv->isolate_kept, plan_out,
                            err);
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
  hwloc_bitmap_free (pv->isolate_kept);
  cp_ledger_close (pv->ledger);
  free (pv->ledger_path);
  free (pv->too_many);
  *pv = (struct cp_preview) { 0 };
}
