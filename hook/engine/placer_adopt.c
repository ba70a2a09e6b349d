/* cachepin: an entry decided before its cgroup existed, given that cgroup once it
 * does (placer.h: cp_placer_adopt_cgroup()).  A step of its own, beside the placer's,
 * because only the engine changes the ledger: under its lock, after reconcile, with
 * the placement's own refusals (cp_placer_check_unclaimed()) and the ledger's checks
 * (cp_ledger_put()), so that a front end never writes an entry a placement would
 * not have.  Likewise what the front end learns of the container afterwards: that
 * it got a core-scheduling cookie (cp_placer_record_core_sched()). */
#define _GNU_SOURCE
#include "placer.h"

#include <string.h>

#include "bitmap.h"
#include "isolation.h"
#include "ledger.h"
#include "ledger_partition.h"
#include "log.h"
#include "topocache.h"
#include "util.h"

int
cp_placer_adopt_cgroup (const struct cp_hostconfig *hc, const struct cp_owner *owner, const char *id,
                        const struct cp_cgroup *cg, cp_error_t *err)
{
  unsigned long long ino = 0;
  if (cp_cgroup_ino (cg, &ino, err) < 0)
    return cp_error_wrap (err, "cgroup %s%s", cg->mount, cg->path);
  if (ino == 0 || ino > (unsigned long long) CP_LEDGER_MAX_INT)
    return 0; /* nothing the ledger can record: the entry stays as it is */
  cleanup_ledger struct cp_ledger *l = NULL;
  if (cp_placer_open_ledger (hc, &l, err) < 0)
    return -1;
  const struct cp_ledger_entry *e = cp_ledger_find (l, id);
  int r = 0;
  if (e && e->cgroup_ino == 0 && cp_owner_owns (owner, e))
    {
      struct cp_target t = { .id = id, .cgroup_mount = cg->mount, .cgroup_path = cg->path };
      if (cp_placer_check_unclaimed (l, &t, err) < 0)
        return -1;
      struct cp_ledger_entry copy = *e;
      copy.cgroup_mount = (char *) cg->mount;
      copy.cgroup = (char *) cg->path;
      copy.cgroup_ino = ino;
      if (cp_ledger_put (l, &copy, err) < 0)
        return cp_error_wrap (err, "ledger");
      r = 1;
    }
  /* Committed even with nothing recorded: what reconcile dropped stays dropped. */
  if (cp_ledger_commit (l, err) < 0)
    return cp_error_wrap (err, "ledger %s", hc->state_dir);
  return r;
}

int
cp_placer_owned_of (const struct cp_hostconfig *hc, const struct cp_owner *owner, const char *id,
                    const char *cgroup, hwloc_bitmap_t cpus, hwloc_bitmap_t mems, cp_error_t *err)
{
  cleanup_ledger struct cp_ledger *l = NULL;
  if (cp_placer_open_ledger (hc, &l, err) < 0)
    return -1;
  /* Read only: what reconcile dropped on the way is dropped again by the next run
     that commits. */
  const struct cp_ledger_entry *e = cp_ledger_find (l, id);
  if (e == NULL || !cp_owner_owns (owner, e) || (cgroup && strcmp (e->cgroup, cgroup) != 0))
    return 0;
  hwloc_bitmap_copy (cpus, e->cpus);
  hwloc_bitmap_copy (mems, e->mems);
  return 1;
}

int
cp_placer_record_core_sched (const struct cp_hostconfig *hc, const char *id, cp_error_t *err)
{
  cleanup_ledger struct cp_ledger *l = NULL;
  if (cp_placer_open_ledger (hc, &l, err) < 0)
    return -1;
  const struct cp_ledger_entry *e = cp_ledger_find (l, id);
  int r = 0;
  if (e && !e->core_sched)
    {
      struct cp_ledger_entry copy = *e;
      copy.core_sched = true;
      if (cp_ledger_put (l, &copy, err) < 0)
        return cp_error_wrap (err, "ledger");
      r = 1;
    }
  if (cp_ledger_commit (l, err) < 0)
    return cp_error_wrap (err, "ledger %s", hc->state_dir);
  return r;
}

int
cp_placer_isolate_started (const struct cp_hostconfig *hc, const struct cp_target *t, cp_error_t *err)
{
  cleanup_topo struct cp_topo *topo = NULL;
  if (cp_topocache_load (hc, 0, &topo, err) < 0)
    return cp_error_wrap (err, "topology");
  cleanup_ledger struct cp_ledger *l = NULL;
  if (cp_placer_open_ledger (hc, &l, err) < 0)
    return -1;
  const struct cp_ledger_entry *e = cp_ledger_find (l, t->id);
  if (e == NULL || e->isolated || cp_ledger_partition_root (l, t->id) != NULL
      || strcmp (e->cgroup_mount, t->cgroup_mount) != 0 || strcmp (e->cgroup, t->cgroup_path) != 0)
    return cp_ledger_commit (l, err) < 0 ? cp_error_wrap (err, "ledger %s", hc->state_dir) : 0;
  struct cp_isolate iso = { .asked = true, .granted = true };
  cleanup_bitmap hwloc_bitmap_t cpus = cp_bitmap_dup (e->cpus);
  if (cp_isolate_decide (&iso, topo, t->id, cpus, false, err) < 0
      || cp_isolate_apply (&iso, l, t, cpus, false, err) < 0)
    return -1;
  if (!iso.granted && cp_ledger_commit (l, err) < 0)
    return cp_error_wrap (err, "ledger %s", hc->state_dir);
  e = cp_ledger_find (l, t->id);
  return e && e->isolated ? 1 : 0;
}
